"""``python -m dvoc_bench``: run a sweep (Hydra). Heavy imports happen inside the job, not at start-up.

Every bad input is one line ``config error: <key>: <what>; allowed: ...`` and exit code 2, including the
errors Hydra raises while composing (an unknown group option, an unknown key, an override that does not
parse). ``HYDRA_FULL_ERROR=1`` still shows Hydra's full trace.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any


def _hydra_main() -> Any:
    """The Hydra app (built on first use: ``--help`` is answered before Hydra and the settings are
    imported)."""
    import hydra
    from omegaconf import DictConfig

    from dvoc_bench.app import hydra_hooks  # noqa: F401  (registers ${dvoc_run_name:} for the run / sweep folders)
    from dvoc_bench.runner.settings import register_defaults

    register_defaults()

    @hydra.main(version_base="1.3", config_path="../conf", config_name="config")
    def main(cfg: DictConfig) -> None:
        from dvoc_bench.app.job import run_job

        code = run_job(cfg)
        if code:
            sys.exit(code)

    return main


def entry() -> None:
    """Run the app; composition errors become one line and exit code 2; a multirun exits with the worst
    code of its jobs, after all of them ran."""
    from dvoc_bench.app.help_page import render, wants_fast_help

    if wants_fast_help(sys.argv[1:]):  # the app's page, without composing the config (docs/cli.md)
        try:
            print(render(), flush=True)
        except BrokenPipeError:  # `--help | head`: the reader left; say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    from dvoc_bench.app.hydra_errors import config_error_line
    from dvoc_bench.app.jobstate import EXIT_CODES_ENV, job_started
    from dvoc_bench.app.own_models import with_own_model_dir
    from dvoc_bench.runner.block_keys import with_block_keys

    sys.argv[1:] = with_own_model_dir(sys.argv[1:])  # model=<name> paths.models=DIR (docs/cli.md)
    sys.argv[1:] = with_block_keys(sys.argv[1:])  # model.ocr.engine=X without + (docs/cli.md)
    main = _hydra_main()
    full = os.environ.get("HYDRA_FULL_ERROR") == "1"
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing its own report
    fd, codes = tempfile.mkstemp(prefix="dvoc-exit-codes-", suffix=".jsonl")
    own = Path(f"/proc/{os.getpid()}/fd/{fd}")
    if own.exists():  # Linux: the file lives only while this process does (a kill leaves nothing in /tmp)
        os.unlink(codes)
        codes = str(own)
    else:
        os.close(fd)
        fd = -1
    os.environ[EXIT_CODES_ENV] = codes  # multirun jobs (in this process or launched ones) append here
    try:
        main()
    except Exception as e:
        line = None if full else config_error_line(e)
        if line is None and isinstance(e, OSError) and e.filename and not job_started() and not full:
            line = f"hydra.run.dir: cannot create or write {e.filename}: {e.strerror or e}"
        if line is None:
            raise
        print(f"config error: {line}", file=sys.stderr)
        sys.exit(2)
    finally:
        with open(codes, encoding="utf-8") as f:
            worst = max((json.loads(x).get("code", 0) for x in f if x.strip()), default=0)
        if fd >= 0:
            os.close(fd)
        else:
            os.unlink(codes)
    if worst:
        sys.exit(worst)


if __name__ == "__main__":
    entry()
