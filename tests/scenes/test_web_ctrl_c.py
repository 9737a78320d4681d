"""Ctrl-C at a terminal reaches the whole foreground process group: our process, Playwright's driver and
(unless Playwright detaches it) the browser. The run must see it as one interrupt, not as a browser that
vanished under it: no traceback, no trial recorded as failed by a closed page, the resume finishes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dvoc_bench.core.rundir import read_jsonl
from tests.support import HANG_S, ROOT, chromium_or_skip

pytestmark = pytest.mark.e2e

SLOW = ("model=sim-ideal", "model.sim.latency_s=0.4", "tasks=[W1,W2]", "methods=[oneshot]",
        "starts=random:8", "run.max_in_flight=2", "cache.enabled=false", "run.quiet=true")  # fmt: skip


def _start(run: Path, sigint: signal.Handlers = signal.SIG_DFL) -> subprocess.Popen[str]:
    """The sweep in a process group of its own, SIGINT at its default (as a terminal's foreground job) or
    ignored (as a job started in the background of a non-interactive shell)."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "PYTHONUNBUFFERED": "1"}  # its log lines as they come
    return subprocess.Popen(
        [sys.executable, "-m", "dvoc_bench", *SLOW, f"hydra.run.dir={run}"], cwd=ROOT, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )  # fmt: skip


def _ctrl_c(p: subprocess.Popen[str]) -> tuple[str, str]:
    os.killpg(p.pid, signal.SIGINT)  # the whole group, as the terminal sends it
    return p.communicate(timeout=HANG_S)


def test_ctrl_c_to_the_process_group_mid_sweep_records_no_false_failure(tmp_path):
    chromium_or_skip()
    run = tmp_path / "run"
    p = _start(run)
    deadline = time.monotonic() + HANG_S
    while time.monotonic() < deadline and sum(1 for _ in read_jsonl(run / "trials.jsonl")) < 2:
        time.sleep(0.1)
    out, err = _ctrl_c(p)
    assert p.returncode == 130, out + err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "interrupted: the finished trials are saved" in err
    done = list(read_jsonl(run / "trials.jsonl"))
    assert 0 < len(done) < 16
    # Playwright's driver, given the same SIGINT, used to close the browser itself: the trials in flight
    # were recorded as failed ("Target page, context or browser has been closed") before the interrupt
    assert [t["status"] for t in done] == ["ok"] * len(done), [t.get("error") for t in done]
    cmd = err.split("resume with: ")[1].strip()
    r = subprocess.run(cmd.replace("python -m", f"{sys.executable} -m", 1), shell=True, cwd=ROOT,
                       capture_output=True, text=True, timeout=HANG_S)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert len({t["trial_key"] for t in read_jsonl(run / "trials.jsonl")}) == 16


def test_ctrl_c_while_pages_render_is_one_line_and_leaves_no_run(tmp_path):
    chromium_or_skip()
    run = tmp_path / "run"
    p = _start(run)
    assert p.stdout is not None
    for line in p.stdout:  # the browser is up (Hydra logs to stdout): the pages are rendered for the plan
        if "launched from" in line:
            break
    out, err = _ctrl_c(p)
    assert p.returncode == 130, out + err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    assert "interrupted while planning: no trial had run" in err
    assert not (run / "trials.jsonl").exists()


def test_a_run_that_ignores_sigint_keeps_its_browser_when_the_group_gets_one(tmp_path):
    """A background job ignores SIGINT; Playwright's driver (which installs its own handler) must not close
    the browser under it: with Playwright's default it did, and the run ended in a traceback."""
    chromium_or_skip()
    run = tmp_path / "run"
    p = _start(run, signal.SIG_IGN)
    assert p.stdout is not None
    for line in p.stdout:  # the browser is up, the pages render
        if "launched from" in line:
            break
    out, err = _ctrl_c(p)
    assert p.returncode == 0, out + err[-3000:]
    done = list(read_jsonl(run / "trials.jsonl"))
    assert len(done) == 16 and [t["status"] for t in done] == ["ok"] * 16, [t.get("error") for t in done]
