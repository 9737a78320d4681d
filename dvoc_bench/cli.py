"""The Hydra job body: validate, plan, run, summarise. Terminal output happens here, not in the library."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from dvoc_bench.cli_support import setup_with_choices
from dvoc_bench.config import ConfigError
from dvoc_bench.models.factory import build_model, model_options
from dvoc_bench.progress import Progress
from dvoc_bench.redaction import install_log_redaction
from dvoc_bench.store import RunDirBusy, RunStore, discard_output_subdir
from dvoc_bench.summary import format_table, summarise
from dvoc_bench.sweep import plan, run_trials

log = logging.getLogger(__name__)


def run_job(cfg: DictConfig) -> int:
    """Run one Hydra job; returns the process exit code (2 for a bad config)."""
    hc = HydraConfig.get()
    install_log_redaction()  # every log line of the job (console and run-dir log) passes the redactor
    choices = dict(hc.runtime.choices)
    if choices.get("experiment") == "frame_probe":  # a probe of the models' coordinate frames, not a sweep
        from dvoc_bench.probe import run_job as probe_job

        probe_cfg = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(probe_cfg, dict)
        return probe_job(probe_cfg, choices, Path(hc.runtime.output_dir))
    try:
        plain = OmegaConf.to_container(cfg, resolve=True)
        assert isinstance(plain, dict)
        setup = setup_with_choices(plain, choices)
        model_kw = model_options(plain)  # response cache and image resizing of real models
        specs = plan(setup)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    run_dir = Path(hc.runtime.output_dir)
    quiet = bool(cfg.get("run", {}).get("quiet", False))
    retry_errors = bool(cfg.get("resume", {}).get("retry_errors", False))
    try:
        store = RunStore(run_dir, retry_errors=retry_errors)
    except RunDirBusy as e:  # another process is writing there: change nothing, say who, exit 2
        discard_output_subdir(run_dir, hc.output_subdir)
        print(f"config error: hydra.run.dir: {e}", file=sys.stderr)
        return 2
    with store:
        store.write_plan(specs)
        todo = sum(s.key not in store.finished for s in specs)
        log.info("%d trials planned, %d to run, run dir %s", len(specs), todo, run_dir)
        progress = Progress(todo, quiet=quiet)
        try:
            asyncio.run(
                run_trials(
                    specs,
                    setup,
                    store,
                    lambda m: build_model(m, setup.registry.truth, **model_kw),
                    progress.update,
                )
            )
        finally:
            progress.close()
        keys = {s.key for s in specs}
        trials = [t for t in store.trials() if t["trial_key"] in keys]
    table = format_table(summarise(trials), setup.knobs.epsilon)
    (run_dir / "summary.md").write_text(table + "\n", encoding="utf-8")
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                "experiment": setup.experiment,
                "planned": len(specs),
                "finished": len(trials),
                "simulated": any(t.get("simulated") for t in trials),
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    print(table)
    print(f"\nrun dir: {run_dir}")
    return 0
