"""The Hydra job body: validate, plan, run, summarise. Terminal output happens here, not in the library."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from dvoc_bench.cli_support import setup_with_choices
from dvoc_bench.config import ConfigError
from dvoc_bench.progress import Progress
from dvoc_bench.redaction import install_log_redaction
from dvoc_bench.store import RunDirBusy, discard_output_subdir
from dvoc_bench.sweep import plan, run_sweep

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
        specs = plan(setup)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    run_dir = Path(hc.runtime.output_dir)
    quiet = bool(cfg.get("run", {}).get("quiet", False))
    retry_errors = bool(cfg.get("resume", {}).get("retry_errors", False))
    progress = Progress(len(specs), quiet=quiet)
    try:
        summary = run_sweep(setup, run_dir, specs=specs, retry_errors=retry_errors, on_done=progress.update)
    except RunDirBusy as e:  # another process is writing there: change nothing, say who, exit 2
        discard_output_subdir(run_dir, hc.output_subdir)
        print(f"config error: hydra.run.dir: {e}", file=sys.stderr)
        return 2
    finally:
        progress.close()
    print((run_dir / "summary.md").read_text(encoding="utf-8").rstrip("\n"))
    print(f"\nrun dir: {run_dir}")
    log.info("%d trials run, %d finished in all", summary.ran, len(summary.trials))
    return 0
