import json

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.runner.store import RunStore


def rec(key, **kw):
    return {"trial_key": key, "status": "ok", **kw}


def test_append_and_reopen_skips_finished(tmp_path):
    with RunStore(tmp_path) as s:
        s.append_trial(rec("a"), [{"trial_key": "a", "index": 0}])
        s.append_trial(rec("b"), [])
    s2 = RunStore(tmp_path)
    assert s2.finished == {"a", "b"}
    s2.close()


def test_torn_trial_line_is_cut_and_orphan_steps_dropped(tmp_path):
    with RunStore(tmp_path) as s:
        s.append_trial(rec("a"), [{"trial_key": "a", "index": 0}])
    # Simulate a kill: steps of trial "b" written, its trial line torn half-way.
    with (tmp_path / "steps.jsonl").open("a") as f:
        f.write(json.dumps({"trial_key": "b", "index": 0}) + "\n")
        f.write('{"trial_key": "b", "ind')
    with (tmp_path / "trials.jsonl").open("a") as f:
        f.write('{"trial_key": "b", "sta')
    with RunStore(tmp_path) as s:
        assert s.finished == {"a"}
        s.append_trial(rec("b"), [{"trial_key": "b", "index": 0}])
    trials = list(read_jsonl(tmp_path / "trials.jsonl"))
    steps = list(read_jsonl(tmp_path / "steps.jsonl"))
    assert [t["trial_key"] for t in trials] == ["a", "b"]
    assert [(st["trial_key"], st["index"]) for st in steps] == [("a", 0), ("b", 0)]
    # every line is valid JSON
    for name in ("trials.jsonl", "steps.jsonl"):
        for line in (tmp_path / name).read_text().splitlines():
            json.loads(line)


def test_frames_are_content_addressed(tmp_path):
    with RunStore(tmp_path) as s:
        a = s.save_shot(b"png-bytes-1")
        b = s.save_shot(b"png-bytes-1")
        c = s.save_shot(b"png-bytes-2")
    assert a == b != c
    assert sorted(p.name for p in (tmp_path / "frames").iterdir()) == sorted([f"{a}.png", f"{c}.png"])


def test_nan_is_never_written(tmp_path):
    with RunStore(tmp_path) as s:
        s.append_trial(rec("a", final_dist_px=float("nan")), [])
    assert json.loads((tmp_path / "trials.jsonl").read_text())["final_dist_px"] is None


def test_deleting_the_lock_file_under_a_writer_lets_no_second_writer_in(tmp_path):
    """The lock is the run directory itself: removing ``.lock`` while it is held changes nothing."""
    import os

    import pytest

    from dvoc_bench.core.rundir import LOCK
    from dvoc_bench.runner.store import RunDirBusy, RunDirLock

    with RunDirLock(tmp_path):
        os.unlink(tmp_path / LOCK)
        with pytest.raises(RunDirBusy):
            RunDirLock(tmp_path).acquire()
    with RunDirLock(tmp_path):  # released: the next writer gets it
        pass
