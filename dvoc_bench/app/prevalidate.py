"""A multirun checks every job's values before its first job runs.

Hydra's basic sweeper composes each job before launching it (an unknown key or group option fails
early), but the values are validated by the settings inside the job: ``-m alphas=[decay],[teleport]``
ran job 0's 270 trials before job 1 said ``alphas: unknown value 'teleport'``. :class:`ValidateJobs`
(a Hydra callback, ``conf/config.yaml``) expands the sweep as the basic sweeper does, composes each job's
config and sets it up as the job will (settings, registries, model files, plan), with nothing written,
no model called and no browser, display or program started: the plan renders the drawn tasks only (pages,
programs and dataset samples are planned unrendered and without their unvaried twins,
:func:`dvoc_bench.runner.sweep.plan` with ``check``), so a multirun of 13 variations on live pages does not
render every page 26 times before its first job. The first bad job is the one line
``config error: <key>: <what> (job N: <overrides>)`` and exit code 2; no job runs and no sweep folder is
made.

Hydra ignores an exception raised by a callback (it warns and goes on), so the refusal is a
``SystemExit``. Sweepers other than the basic one (``hydra/sweeper=optuna`` ...) choose their jobs as
they go: those are left to each job.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.redaction import redact

BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def job_overrides(config: DictConfig) -> list[list[str]] | None:
    """Each job's overrides, in the basic sweeper's order; ``None`` for another sweeper."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    sweeper = OmegaConf.select(config, "hydra.sweeper", default=None)
    if sweeper is None or sweeper.get("_target_") != BASIC_SWEEPER:
        return None
    args = [f"{k}={v}" for k, v in (sweeper.get("params") or {}).items()]
    args += list(OmegaConf.select(config, "hydra.overrides.task", default=[]) or [])
    parsed = OverridesParser.create().parse_overrides(args)
    return [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


def check_job(overrides: list[str], config_name: str | None, searchpath: list[str] | None = None) -> None:
    """Compose one job's config and set it up as the job does; raises ``ConfigError`` (or Hydra's own
    composition error) for a bad value."""
    from hydra import compose

    from dvoc_bench.runner.compose import check_shorthands, experiment_name, model_choice
    from dvoc_bench.runner.settings import load_settings

    check_shorthands(overrides)
    cfg = compose(config_name=config_name or "config", overrides=[*overrides, *(searchpath or [])],
                  return_hydra_config=True)  # fmt: skip
    choices = dict(cfg.hydra.runtime.choices)
    OmegaConf.set_struct(cfg, False)
    del cfg["hydra"]
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    settings = load_settings(plain)
    if choices.get("experiment") == "frame_probe":  # a probe, not a sweep: its models are read when it runs
        return
    from dvoc_bench.runner.setup import setup_from_settings
    from dvoc_bench.runner.sweep import plan

    setup = setup_from_settings(settings, experiment_name(choices), model_choice(choices))
    try:
        plan(setup, check=True)  # pages and programs are not rendered here: the job renders its own
    finally:
        setup.registry.close()


def first_bad_job(config: DictConfig, config_name: str | None) -> str | None:
    """The ``config error`` line of the first job whose values are refused, or ``None``."""
    from dvoc_bench.app.hydra_errors import config_error_line

    jobs = job_overrides(config)
    if not jobs or len(jobs) < 2:  # one job: it validates itself before running anything
        return None
    hydra_args = list(OmegaConf.select(config, "hydra.overrides.hydra", default=[]) or [])
    searchpath = [o for o in hydra_args if o.startswith("hydra.searchpath=")]  # model=<name> paths.models=DIR
    logging.disable(logging.WARNING)  # a job's own warnings are said when it runs, not twice
    try:
        for num, overrides in enumerate(jobs):
            try:
                check_job(overrides, config_name, searchpath)
            except ConfigError as e:
                line = str(e)
            except Exception as e:
                said = config_error_line(e)
                if said is None:
                    raise
                line = said
            else:
                continue
            return f"{redact(line)} (job {num}: {' '.join(overrides)})"
    finally:
        logging.disable(logging.NOTSET)
    return None


class ValidateJobs(Callback):
    """Refuses a multirun whose jobs' values do not all validate, before the first job runs."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        line = first_bad_job(config, kwargs.get("config_name"))
        if line is not None:
            from dvoc_bench.runner.summary import EXIT_CONFIG

            print(f"config error: {line}", file=sys.stderr)
            raise SystemExit(EXIT_CONFIG)
