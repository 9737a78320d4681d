"""``python -m dvoc_bench``: run a sweep (Hydra). Heavy imports happen inside the job, not at start-up."""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from dvoc_bench import hydra_hooks  # noqa: F401  (registers ${dvoc_run_name:} for the run / sweep folders)


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    from dvoc_bench.cli import run_job

    code = run_job(cfg)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
