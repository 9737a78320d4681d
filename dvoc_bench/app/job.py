"""The Hydra job body: validate, plan, run, summarise. Terminal output happens here, not in the library.

Exit codes (:data:`dvoc_bench.runner.summary.EXIT_OK` ...): 0 done; 2 bad input, nothing ran (one line
``config error: <key>: ...``); 3 model trials ran and none ended ``ok``; 130 interrupted, 143 terminated
by SIGTERM (finished trials are saved; the printed command resumes). A multirun exits with the worst
code of its jobs after all of them ran (``dvoc_bench.__main__.entry`` collects them through the file named
by ``DVOC_EXIT_CODES``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from dvoc_bench.app.jobstate import EXIT_CODES_ENV, mark_started
from dvoc_bench.app.progress import Progress
from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.redaction import install_log_redaction, redact
from dvoc_bench.core.rundir import SUMMARY
from dvoc_bench.runner.compose import check_shorthands, experiment_name, model_choice
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.runner.setup import setup_from_settings
from dvoc_bench.runner.store import RunDirBusy, RunStopped, discard_output_subdir
from dvoc_bench.runner.summary import (
    EXIT_CONFIG,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STOPPED,
    EXIT_TERMINATED,
    exit_code,
    run_report,
)
from dvoc_bench.runner.sweep import plan, run_sweep

log = logging.getLogger(__name__)


class Terminated(KeyboardInterrupt):
    """SIGTERM during a job: handled as Ctrl-C is (the finished trials are saved, the resume command is
    printed), with exit code 143."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def run_job(cfg: DictConfig) -> int:
    """Run one Hydra job; returns its exit code. In a multirun the code is recorded, and 0 returned, so
    the other jobs still run (``entry`` exits with the worst code at the end)."""
    mark_started()
    hc = HydraConfig.get()
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        code = _run(cfg, hc)
    finally:
        signal.signal(signal.SIGTERM, previous)
    path = os.environ.get(EXIT_CODES_ENV)
    if hc.mode == RunMode.MULTIRUN and path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"job": hc.job.num, "code": code}) + "\n")
        return 0
    return code


def _resume_command(hc: Any, run_dir: Path) -> str:
    """The command that resumes this run: the same overrides, pointed at the same run dir."""
    overrides = [o for o in hc.overrides.task if not o.startswith(("hydra.run.dir=", "hydra.sweep."))]
    return " ".join(
        ["python -m dvoc_bench", *map(shlex.quote, overrides), shlex.quote(f"hydra.run.dir={run_dir}")]
    )


def _check_writable(run_dir: Path) -> None:
    """A run dir that cannot be written is a bad input, said before any trial runs."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=run_dir, prefix=".write-check-"):
            pass
    except OSError as e:
        raise ConfigError(f"hydra.run.dir: cannot write to {run_dir}: {e.strerror or e}") from None


def _discard_fresh_dir(run_dir: Path, subdir: str | None) -> None:
    """A plan-only or refused invocation leaves no run behind: its Hydra output folder goes, and a run
    directory that holds nothing else (a fresh one: only Hydra's job log) goes with it. An existing run is
    left as it was."""
    discard_output_subdir(run_dir, subdir)
    try:
        left = list(run_dir.iterdir())
    except OSError:
        return
    if all(p.is_file() and p.suffix == ".log" for p in left):
        for p in left:
            p.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            run_dir.rmdir()
            # then runs/<experiment>/ and runs/ while empty, never above the working directory
            cwd = Path.cwd().resolve()
            for parent in run_dir.resolve().parents:
                if parent == cwd or cwd not in parent.parents:
                    break
                parent.rmdir()


def _probe(cfg: DictConfig, choices: dict[str, Any], run_dir: Path, hc_subdir: str | None) -> int:
    """The frame probe: a verdict per model, printed with the run dir."""
    from dvoc_bench.runner.probe import format_verdicts, run_probe

    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    try:
        verdicts = run_probe(load_settings(plain), model_choice(choices), run_dir)
    except ConfigError as e:
        _discard_fresh_dir(run_dir, hc_subdir)
        print(f"config error: {redact(str(e))}", file=sys.stderr)
        return EXIT_CONFIG
    print(format_verdicts(verdicts))
    for v in verdicts:
        print(f"{v.model}: answers in {v.verdict} (declared {v.declared})")
    print(f"\nrun dir: {run_dir}")
    return EXIT_OK


def _run(cfg: DictConfig, hc: Any) -> int:
    install_log_redaction()  # every log line of the job (console and run-dir log) passes the redactor
    choices = dict(hc.runtime.choices)
    run_dir = Path(hc.runtime.output_dir)
    try:
        check_shorthands(hc.overrides.task)
    except ConfigError as e:
        _discard_fresh_dir(run_dir, hc.output_subdir)
        print(f"config error: {redact(str(e))}", file=sys.stderr)
        return EXIT_CONFIG
    if choices.get("experiment") == "frame_probe":  # a probe of the models' coordinate frames, not a sweep
        return _probe(cfg, choices, run_dir, hc.output_subdir)
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(plain, dict)
        settings = load_settings(plain)
        plan_only = settings.run.plan_only
        if not plan_only:
            _check_writable(run_dir)
        setup = setup_from_settings(settings, experiment_name(choices), model_choice(choices))
        specs = plan(setup)
        if plan_only:  # sizes the sweep: no model called, no key needed, nothing written
            from dvoc_bench.runner.sizing import plan_lines

            lines = plan_lines(setup, specs)
    except ConfigError as e:  # refused: nothing ran, and the run folder Hydra made goes
        _discard_fresh_dir(run_dir, hc.output_subdir)
        print(f"config error: {redact(str(e))}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM while scenes render (seconds on pages and programs)
        _discard_fresh_dir(run_dir, hc.output_subdir)
        how = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        print(f"\n{how} while planning: no trial had run", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED
    if plan_only:
        print("\n".join(lines))
        _discard_fresh_dir(run_dir, hc.output_subdir)
        return EXIT_OK
    quiet, retry_errors = settings.run.quiet, settings.resume.retry_errors
    progress: list[Progress] = []
    try:
        summary = run_sweep(
            setup,
            run_dir,
            specs=specs,
            retry_errors=retry_errors,
            on_start=lambda n: progress.append(Progress(n, quiet=quiet)),
            on_done=lambda record: progress[0].update(record),
        )
    except (RunDirBusy, ConfigError) as e:  # busy, or a resume with other settings: nothing changed
        _discard_fresh_dir(run_dir, hc.output_subdir)
        print(f"config error: {'hydra.run.dir: ' if isinstance(e, RunDirBusy) else ''}{e}", file=sys.stderr)
        return EXIT_CONFIG
    except RunStopped as e:  # a full disk, the run dir replaced: the finished trials are saved
        for p in progress:
            p.close()
        print(f"run stopped: {redact(str(e))}; resume with: {_resume_command(hc, run_dir)}", file=sys.stderr)
        return EXIT_STOPPED
    except KeyboardInterrupt as e:
        for p in progress:
            p.close()
        how = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        print(f"\n{how}: the finished trials are saved; resume with: {_resume_command(hc, run_dir)}",
              file=sys.stderr)  # fmt: skip
        return EXIT_TERMINATED if isinstance(e, Terminated) else EXIT_INTERRUPTED
    finally:
        for p in progress:
            p.close()
    print((run_dir / SUMMARY).read_text(encoding="utf-8").rstrip("\n"))
    resume = summary.resume
    lines = run_report(
        summary.trials,
        ran=summary.ran,
        skipped_items=resume.skipped if resume else None,
        added_items=resume.added if resume else None,
        spend=summary.spend,
        budget_usd=summary.budget_usd,
    )
    lines.append(summary.shots_line)
    if settings.run.shard is not None:
        lines.append(
            f"shard {settings.run.shard}: {len(summary.specs)} of the sweep's {len(specs)} trials; bring the "
            "shards together with: python -m dvoc_bench.merge SHARD_DIR... --out RUN_DIR"
        )
    if choices.get("experiment") == "canary":  # the answers against the stored ones (docs/imports.md)
        from dvoc_bench.runner import canary

        results = canary.check(summary.trials)
        canary.write(run_dir, results, summary.trials)
        lines += canary.lines(results, run_dir)
    print("\n" + "\n".join(redact(line) for line in lines))
    print(f"run dir: {run_dir}")
    return exit_code(summary.trials)
