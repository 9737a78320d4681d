"""Issue 14, failure 1: two processes, one run directory.

Before the lock, two `python -m dvoc_bench ... hydra.run.dir=R` started together both ran every trial
(every trial line and step twice) and load_runs(R) failed with pandas' MergeError.
"""

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dvoc_bench.analysis import load_runs
from dvoc_bench.analysis.loaders import hydra_dir, read_overrides
from dvoc_bench.core.rundir import LOCK, read_jsonl
from dvoc_bench.runner.store import RunDirBusy, RunDirLock, RunStore
from tests.support import ROOT, run_cli

pytestmark = pytest.mark.e2e



def sweep_cmd(run_dir: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "dvoc_bench",
        "model=local-sim",
        "tasks=[S1,S2]",
        "methods=[dvoc,oneshot,centre]",
        "starts=random:2",
        "repeats=2",
        "seed=7",
        "cache.enabled=false",
        "run.quiet=true",
        f"hydra.run.dir={run_dir}",
        *extra,
    ]


def tree(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every file under ``root``: size, mtime and content hash."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(root))] = (
                st.st_size,
                st.st_mtime_ns,
                hashlib.sha256(p.read_bytes()).hexdigest(),
            )
        elif p.is_dir():
            out[str(p.relative_to(root)) + "/"] = (0, 0, "")
    return out


def test_two_processes_on_one_run_dir_one_is_refused_and_nothing_is_doubled(slow_sim, tmp_path):
    run_dir = tmp_path / "R"
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "DVOC_SIM_URL": slow_sim}
    procs = [
        subprocess.Popen(
            sweep_cmd(run_dir), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], [o[1][-2000:] for o in outs]
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    lines = [ln for ln in outs[loser][1].splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("config error: hydra.run.dir: "), lines[0]
    assert f"pid {procs[winner].pid}" in lines[0] and socket.gethostname() in lines[0], lines[0]

    plan = [p["trial_key"] for p in read_jsonl(run_dir / "plan.jsonl")]
    trials = [t["trial_key"] for t in read_jsonl(run_dir / "trials.jsonl")]
    steps = [(s["trial_key"], s["index"]) for s in read_jsonl(run_dir / "steps.jsonl")]
    assert len(plan) == 2 * 3 * 2 * 2 and len(set(plan)) == len(plan)
    assert sorted(trials) == sorted(plan)  # every planned trial exactly once
    assert steps and len(set(steps)) == len(steps)  # no step twice
    # one Hydra output folder: the winner's; the refused process removed its own
    subdirs = [p.name for p in (run_dir / ".hydra").iterdir()]
    assert len(subdirs) == 1 and (run_dir / ".hydra" / subdirs[0] / "config.yaml").is_file()
    assert hydra_dir(run_dir) == run_dir / ".hydra" / subdirs[0]
    runs = load_runs(run_dir, cache=False)
    assert len(runs.trials) == len(plan) and runs.trials["trial_key"].is_unique


def test_a_refused_process_changes_nothing_not_even_a_torn_line(tmp_path):
    run_dir = tmp_path / "R"
    r = run_cli("smoke=true", "run.quiet=true", f"hydra.run.dir={run_dir}")
    assert r.returncode == 0, r.stderr[-2000:]
    with (run_dir / "trials.jsonl").open("a") as f:
        f.write('{"trial_key": "torn')  # a resume would cut this: it must not happen under a foreign lock
    with RunDirLock(run_dir) as lock:
        assert lock.held
        before = tree(run_dir)
        r = run_cli("smoke=true", "run.quiet=true", f"hydra.run.dir={run_dir}")
        after = tree(run_dir)
    assert r.returncode == 2, r.stderr[-2000:]
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("config error: hydra.run.dir: "), lines
    assert f"pid {os.getpid()}" in lines[0] and socket.gethostname() in lines[0]
    assert after == before
    r = run_cli("smoke=true", "run.quiet=true", f"hydra.run.dir={run_dir}")  # lock released: resumes
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(list((run_dir / ".hydra").iterdir())) == 2  # one output folder per invocation that ran


def test_the_lock_is_exclusive_across_processes_and_released_on_close(tmp_path):
    code = (
        "import sys; from dvoc_bench.runner.store import RunStore, RunDirBusy\n"
        "try:\n    RunStore(sys.argv[1])\nexcept RunDirBusy as e:\n    print(e); sys.exit(3)\n"
    )
    store = RunStore(tmp_path)
    info = json.loads((tmp_path / LOCK).read_text())
    assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 3, r.stderr
    msg = r.stdout.strip()
    assert "\n" not in msg and f"pid {os.getpid()}" in msg and socket.gethostname() in msg
    with pytest.raises(RunDirBusy):  # a second store in the same process is refused too
        RunStore(tmp_path)
    store.close()
    t0 = time.monotonic()
    RunStore(tmp_path).close()  # free again, at once
    assert time.monotonic() - t0 < 5
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_loaders_refuse_duplicate_trial_keys_with_a_clear_error(tmp_path):
    r = run_cli("smoke=true", "run.quiet=true", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr[-2000:]
    lines = (tmp_path / "trials.jsonl").read_text().splitlines(keepends=True)
    with (tmp_path / "trials.jsonl").open("a") as f:
        f.writelines(lines[:3])
    with pytest.raises(ValueError, match="3 trial keys appear more than once") as e:
        load_runs(tmp_path, cache=False)
    assert "dvoc_bench.doctor" in str(e.value) and "MergeError" not in type(e.value).__name__


def test_loaders_read_the_first_invocations_hydra_folder_and_the_old_layout(tmp_path):
    old = tmp_path / "old"
    (old / ".hydra").mkdir(parents=True)
    (old / ".hydra" / "overrides.yaml").write_text("- repeats=3\n")
    assert hydra_dir(old) == old / ".hydra" and read_overrides(old) == {"repeats": 3}
    new = tmp_path / "new"
    for stamp, rep in (("2025-01-02_10-00-00-000001", 5), ("2025-01-01_10-00-00-000001", 4)):
        (new / ".hydra" / stamp).mkdir(parents=True)
        (new / ".hydra" / stamp / "overrides.yaml").write_text(f"- repeats={rep}\n")
    assert read_overrides(new) == {"repeats": 4}
    assert hydra_dir(tmp_path / "none") is None and read_overrides(tmp_path / "none") == {}
