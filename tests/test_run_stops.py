"""What stops a run rather than failing its trials (issue #51): the run directory replaced under a running
writer (item 3: the lock holds the directory, not an inode) and a full disk (item 11). Either way the run
stops with one line naming the path, nothing it recorded points at what is missing, no unfinished trial is
recorded as an error, and a resume completes the run."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from dvoc_bench import merge as merge_door
from dvoc_bench.core.rundir import PLAN, SHOTS, STEPS, SUMMARY, TRIALS, read_jsonl, shot_name
from dvoc_bench.runner import store as store_mod
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.doctor import diagnose
from dvoc_bench.runner.store import RunStopped, RunStore
from dvoc_bench.runner.sweep import run_sweep
from tests.support import HANG_S, ROOT, need, run_cli

SWEEP = ["model=sim-gemma-4-26b", "tasks=[S1,S2]", "methods=[dvoc,oneshot]", "starts=random:2"]


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def trials(d: Path) -> list[dict]:
    return list(read_jsonl(d / TRIALS))


def planned(d: Path) -> set[str]:
    return {p["trial_key"] for p in read_jsonl(d / PLAN)}


def complete(d: Path) -> None:
    """Every planned trial finished ok once, nothing the records reference missing."""
    rows = trials(d)
    assert sorted(t["trial_key"] for t in rows) == sorted(planned(d))
    assert all(t["status"] == "ok" for t in rows), [t.get("error") for t in rows if t["status"] != "ok"]
    rep = diagnose(d)
    assert rep.clean, rep.lines()


# ------------------------------------------------------------------------------ item 3: a replaced dir


def replace_dir(r: Path) -> Path:
    """``mv R R.moved; cp -a R.moved R``."""
    moved = r.with_name(r.name + ".moved")
    os.rename(r, moved)
    shutil.copytree(moved, r, symlinks=True)
    return moved


def test_a_writer_stops_at_its_next_write_once_its_directory_is_replaced(tmp_path):
    r = tmp_path / "R"
    store = RunStore(r)
    sha = store.save_shot(b"first")
    store.append_trial({"trial_key": "a", "status": "ok"}, [{"trial_key": "a", "index": 0, "frame_sha": sha}])
    moved = replace_dir(r)
    second = RunStore(r)  # the copy is another directory: a second writer can take it ...
    try:
        with pytest.raises(RunStopped) as e:  # ... so the first one stops before it writes again
            store.save_shot(b"second")
        msg = str(e.value)
        assert "\n" not in msg and f"{r} was replaced" in msg and str(moved) in msg
        with pytest.raises(RunStopped):
            store.append_trial({"trial_key": "b", "status": "ok"}, [])
    finally:
        store.close()
        second.close()
    two = hashlib.sha256(b"second").hexdigest()
    assert not (r / SHOTS / shot_name(two)).exists() and not (moved / SHOTS / shot_name(two)).exists()
    assert [t["trial_key"] for t in trials(moved)] == ["a"] == [t["trial_key"] for t in trials(r)]


def test_a_trial_ending_after_the_replacement_is_written_whole_where_its_shots_are(tmp_path):
    r = tmp_path / "R"
    store = RunStore(r)
    sha = store.save_shot(b"shot")  # the trial's shot went to the locked directory ...
    moved = replace_dir(r)
    before = snapshot(r)
    with pytest.raises(RunStopped):  # ... so its record goes there too, and the writer stops
        store.append_trial(
            {"trial_key": "a", "status": "ok"}, [{"trial_key": "a", "index": 0, "frame_sha": sha}]
        )
    store.close()
    assert snapshot(r) == before  # nothing written by the name
    assert [t["trial_key"] for t in trials(moved)] == ["a"] and (moved / SHOTS / shot_name(sha)).is_file()
    assert [s["frame_sha"] for s in read_jsonl(moved / STEPS)] == [sha]


def test_a_sweep_whose_directory_is_replaced_stops_and_its_records_point_at_nothing_missing(
    tmp_path, monkeypatch
):
    r = tmp_path / "R"
    real = RunStore.append_trial
    seen: dict[str, object] = {}

    def append_then_replace(self, record, steps):
        real(self, record, steps)
        if not seen:  # after the first trial: mv R R.moved; cp -a R.moved R
            seen["old"] = replace_dir(r)
            seen["copy"] = snapshot(r)  # what the copy held

    monkeypatch.setattr(RunStore, "append_trial", append_then_replace)
    with pytest.raises(RunStopped) as e:
        run_sweep(quick_setup(SWEEP), r)
    assert "\n" not in str(e.value) and "was replaced" in str(e.value)
    old = seen["old"]
    assert isinstance(old, Path)
    assert snapshot(r) == seen["copy"]  # the first writer wrote nothing more into the copy
    assert not (r / SUMMARY).exists() and not (old / SUMMARY).exists()  # stopped before the summary
    assert not [t for t in trials(old) if t["status"] != "ok"]
    rep = diagnose(old)
    assert {p.kind for p in rep.problems} <= {"unfinished_trial"}, rep.lines()  # no missing frame
    monkeypatch.setattr(RunStore, "append_trial", real)
    run_sweep(quick_setup(SWEEP), old)  # a resume of the locked directory completes it
    complete(old)


def test_the_issues_form_mv_and_cp_a_under_a_running_sweep(tmp_path):
    r = tmp_path / "R"
    args = [*SWEEP, "model.sim.latency_s=0.15", "run.max_in_flight=1", "run.quiet=true", f"hydra.run.dir={r}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "dvoc_bench", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + HANG_S
        while not trials(r) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        moved = replace_dir(r)  # mv R R.moved; cp -a R.moved R, while it runs
        copy = snapshot(r)
        _, err = proc.communicate(timeout=HANG_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("run stopped: ") and f"{r} was replaced" in last and str(moved) in last
    assert "Traceback" not in err
    assert snapshot(r) == copy  # the running writer wrote nothing into the copy
    rep = diagnose(moved)
    assert {p.kind for p in rep.problems} <= {"unfinished_trial"}, rep.lines()  # no frame missing
    p = run_cli(*args[:-1], f"hydra.run.dir={moved}")  # a resume of the directory it locked
    assert p.returncode == 0, p.stderr[-2000:]
    complete(moved)


# ----------------------------------------------------------------------------- item 11: a full disk


def fail_after(monkeypatch, n: int) -> list[int]:
    """The store's one write function: its ``n``-th write meets a full disk, having written half of its
    bytes (a torn line or shot); the disk has room again after it (another process freed some), so whatever
    the run still tried to write would land."""
    real, calls = store_mod._write_all, [0]

    def write(fd: int, data: bytes) -> None:
        calls[0] += 1
        if calls[0] != n:
            return real(fd, data)
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(store_mod, "_write_all", write)
    return calls


@pytest.mark.parametrize("n", [1, 4, 9, 15])  # a shot, steps or a trial line: each the first to fail
def test_a_full_disk_stops_the_run_records_no_unfinished_trial_and_a_resume_completes_it(
    tmp_path, monkeypatch, n
):
    r = tmp_path / "R"
    calls = fail_after(monkeypatch, n)
    with pytest.raises(RunStopped) as e:
        run_sweep(quick_setup(SWEEP), r)
    msg = str(e.value)
    assert calls[0] >= n and "\n" not in msg and "the disk is full" in msg and str(r) in msg
    assert not [t for t in trials(r) if t["status"] != "ok"]  # nothing recorded as a finished error
    monkeypatch.undo()
    run_sweep(quick_setup(SWEEP), r)  # the same command again, with space
    complete(r)


def test_a_full_disk_during_a_merge_is_one_line_and_merging_again_completes_it(tmp_path, monkeypatch, capsys):
    src = tmp_path / "R"
    run_sweep(quick_setup(SWEEP), src)
    out = tmp_path / "merged"
    real = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("dvoc_bench.core.rundir.os.fsync", full)
    assert merge_door.main([str(src), "--out", str(out)]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("merge: ") and "the disk is full" in err
    monkeypatch.setattr("dvoc_bench.core.rundir.os.fsync", real)
    assert merge_door.main([str(src), "--out", str(out)]) == 0
    assert sorted(t["trial_key"] for t in trials(out)) == sorted(t["trial_key"] for t in trials(src))


# ------------------------------------------------------------------- a real full disk (a small tmpfs)


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(mnt)], capture_output=True,
                       text=True)  # fmt: skip
    need("MOUNT", None if p.returncode == 0 else f"cannot mount a tmpfs here ({p.stderr.strip()[:200]})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_real_full_disk_is_one_line_naming_it_exit_4_and_a_resume_finishes(small_disk):
    r = small_disk / "run"
    args = [*SWEEP, "tasks=[S1,S2,S3]", "starts=random:3", "run.quiet=true", f"hydra.run.dir={r}"]
    p = run_cli(*args)
    assert p.returncode == 4, p.stderr[-2000:]
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("run stopped: ") and f"mounted at {small_disk}" in last and "resume with:" in last
    assert "Traceback" not in p.stderr
    assert not [t for t in trials(r) if t["status"] != "ok"]
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    p = run_cli(*args)
    assert p.returncode == 0, p.stderr[-2000:]
    complete(r)
