"""Shards as a user runs them: four ``run.shard`` jobs under Hydra's ``submitit_local`` launcher merged by
``python -m dvoc_bench.merge`` equal the sweep run in one process; a shard killed (SIGKILL) mid-run, merged,
resumed and merged again loses and duplicates nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import HANG_S, ROOT, run_cli
from tests.test_shard import VOLATILE, _by_key, _frames, _lines, _steps

pytestmark = pytest.mark.e2e

SWEEP = ("model=sim-ideal", "tasks=[S1,S2]", "methods=[dvoc,centre]", "starts=random:2", "run.quiet=true")


def _door(name: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", f"dvoc_bench.{name}", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=HANG_S)  # fmt: skip


def _merge(*args: str) -> subprocess.CompletedProcess:
    return _door("merge", *args)


def _report(run_dir: Path, out: Path) -> str:
    p = _door("report", str(run_dir), "--no-figures", "--n-boot", "200", "--out", str(out))
    assert p.returncode == 0, p.stderr[-2000:]
    return (out / "report.md").read_text().replace(str(run_dir), "RUN_DIR")


def test_four_submitit_local_shards_merged_equal_one_process(tmp_path):
    one = tmp_path / "one"
    p = run_cli(*SWEEP, f"hydra.run.dir={one}", timeout=HANG_S)
    assert p.returncode == 0, p.stderr[-2000:]
    sweep = tmp_path / "sweep"
    p = run_cli("-m", "run.shard=0/4,1/4,2/4,3/4", "hydra/launcher=submitit_local", *SWEEP,
                f"hydra.sweep.dir={sweep}", timeout=HANG_S)  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    shards = [json.loads((sweep / str(i) / "shard.json").read_text())["shard"] for i in range(4)]
    assert shards == ["0/4", "1/4", "2/4", "3/4"]
    merged = tmp_path / "merged"
    m = _merge(str(sweep), "--out", str(merged))
    assert m.returncode == 0, m.stderr + m.stdout
    n = len(_lines(one / "trials.jsonl"))
    assert f"{n} of {n} planned trials present" in m.stdout
    assert _by_key(merged / "trials.jsonl") == _by_key(one / "trials.jsonl")
    assert _steps(merged / "steps.jsonl") == _steps(one / "steps.jsonl")
    assert _frames(merged) == _frames(one)
    assert (merged / "summary.md").read_text() == (one / "summary.md").read_text()
    assert _report(merged, tmp_path / "r1") == _report(one, tmp_path / "r2")
    from dvoc_bench.analysis import load_runs

    cols = [sorted(c for c in load_runs(d, cache=False).trials if c.startswith("override")) for d in (merged,
            one)]  # fmt: skip
    assert cols[0] == cols[1]  # the merged run reads as the sweep's overrides, without run.shard
    doc = _door("doctor", str(merged))
    assert doc.returncode == 0 and "clean" in doc.stdout, doc.stdout


def test_a_killed_shard_resumed_and_merged_again_loses_and_duplicates_nothing(tmp_path):
    slow = (*SWEEP, "model.sim.latency_s=0.6")  # the same sweep, each call 0.6 s: the kill lands mid-shard
    one = tmp_path / "one"
    assert run_cli(*slow, f"hydra.run.dir={one}", timeout=HANG_S).returncode == 0
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_cli(*slow, "run.shard=0/2", f"hydra.run.dir={a}", timeout=HANG_S).returncode == 0
    args = [*slow, "run.shard=1/2", "run.max_in_flight=1", f"hydra.run.dir={b}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "dvoc_bench", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(_lines(b / "trials.jsonl")) < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # mid-run: at least one trial written, the rest not
    finally:
        proc.wait()
    written = len(_lines(b / "trials.jsonl"))
    planned_b = len(_lines(b / "plan.jsonl"))
    assert 1 <= written < planned_b, (written, planned_b)
    merged = tmp_path / "merged"
    m = _merge(str(a), str(b), "--out", str(merged))
    assert m.returncode == 1 and "partial merge" in m.stdout, m.stdout + m.stderr
    partial = _by_key(merged / "trials.jsonl")
    r = run_cli(*args, timeout=HANG_S)  # resume the killed shard
    assert r.returncode == 0, r.stderr[-2000:]
    m = _merge(str(a), str(b), "--out", str(merged))
    assert m.returncode == 0, m.stdout + m.stderr
    n = len(_lines(one / "trials.jsonl"))
    assert f"{n - len(partial)} added by this merge" in m.stdout
    final = _by_key(merged / "trials.jsonl")
    assert {k: final[k] for k in partial} == partial  # what the first merge had stays as it was
    assert final == _by_key(one / "trials.jsonl")
    assert _steps(merged / "steps.jsonl") == _steps(one / "steps.jsonl")
    assert _frames(merged) == _frames(one)
    assert VOLATILE  # the compared records leave out only the timing fields
