"""`python -m dvoc_bench.doctor`: finds what two writers, kills and disk trouble leave in a run directory,
and moves it aside (never deletes) with --repair, keeping the first record of each key."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from dvoc_bench.analysis import load_runs
from dvoc_bench.doctor import main
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.doctor import diagnose, repair
from dvoc_bench.runner.store import RunDirBusy, RunDirLock
from dvoc_bench.runner.sweep import run_sweep
from tests.support import HANG_S, ROOT


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """A real (smoke) run, made in process through the same plan / run / store path as the CLI."""
    run_dir = tmp_path_factory.mktemp("clean")
    run_sweep(quick_setup(["smoke=true"]), run_dir)
    return run_dir


@pytest.fixture
def run_dir(clean_run, tmp_path):
    d = tmp_path / "run"
    shutil.copytree(clean_run, d)
    return d


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def kinds(report) -> Counter:
    return Counter(p.kind for p in report.problems)


def test_a_clean_run_is_clean(clean_run, capsys):
    assert diagnose(clean_run).clean
    assert main([str(clean_run)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("clean")


def break_it(run_dir: Path) -> dict:
    """Every kind of damage, each in a known amount. Returns what was done."""
    trials, steps = run_dir / "trials.jsonl", run_dir / "steps.jsonl"
    t_lines, s_lines = lines(trials), lines(steps)
    parsed = [json.loads(x) for x in t_lines]
    model_trials = [i for i, t in enumerate(parsed) if t["model_calls"] > 0]
    # 1. a second writer: two trials (and their steps) written again
    dup_keys = [parsed[i]["trial_key"] for i in model_trials[:2]]
    dup_steps = [x for x in s_lines if json.loads(x)["trial_key"] in dup_keys]
    with steps.open("ab") as f:
        f.writelines(dup_steps)
    with trials.open("ab") as f:
        f.writelines(t_lines[i] for i in model_trials[:2])
    # 2. an orphan step and a torn line in the middle of steps.jsonl
    orphan = json.loads(s_lines[0])
    orphan["trial_key"] = "0" * 20
    with steps.open("ab") as f:
        f.write((json.dumps(orphan) + "\n").encode())
        f.write(b'{"trial_key": "abc", "index": 0, "reply_te\n')
    # 3. a torn last line of trials.jsonl (a kill mid-write)
    with trials.open("ab") as f:
        f.write(b'{"trial_key": "dead')
    # 4. a corrupt frame and a missing one (both referenced)
    gone = parsed[model_trials[-1]]["trial_key"]  # removed in 6.: its frames must not be the ones broken here
    others = {json.loads(x)["frame_sha"] for x in s_lines if json.loads(x)["trial_key"] != gone}
    shas = sorted(sha for sha in others if sha)  # frames still referenced once the trial is gone
    (run_dir / "frames" / f"{shas[0]}.png").write_bytes(b"not the frame")
    (run_dir / "frames" / f"{shas[1]}.png").unlink()
    # 5. stray temporary files
    (run_dir / "plan.jsonl.tmp").write_text("half a plan")
    (run_dir / "frames" / f".{shas[2]}.tmp").write_bytes(b"half a frame")
    # 6. a planned trial that never finished (its line and steps removed), and a line of another plan
    keep_t = [x for x in lines(trials) if gone not in x.decode("utf-8", "replace")]
    trials.write_bytes(b"".join(keep_t))
    steps.write_bytes(b"".join(x for x in lines(steps) if gone.encode() not in x))
    alien = dict(parsed[0], trial_key="f" * 20, model_calls=0)
    with trials.open("rb+") as f:  # before the torn tail, which must stay the last line
        data = f.read()
        cut = data.rfind(b"\n") + 1
        f.seek(cut)
        f.write((json.dumps(alien) + "\n").encode() + data[cut:])
    return {"dup_keys": dup_keys, "dup_steps": len(dup_steps), "corrupt": shas[0], "missing": shas[1]}


def test_read_only_check_finds_every_kind_and_changes_nothing(run_dir, capsys):
    done = break_it(run_dir)
    before = snapshot(run_dir)
    report = diagnose(run_dir)
    assert kinds(report) == {
        "duplicate_trial": 2,
        "duplicate_step": done["dup_steps"],
        "orphan_step": 1,
        "torn_line": 2,
        "corrupt_frame": 1,
        "missing_frame": 1,
        "stray_tmp": 2,
        "unfinished_trial": 1,
        "unplanned_trial": 1,
    }
    assert main([str(run_dir)]) == 1
    out = capsys.readouterr().out
    assert "2 duplicate trial lines" in out and "1 corrupt frames" in out and "not repairable here" in out
    assert snapshot(run_dir) == before  # read-only


def test_repair_moves_bad_lines_aside_keeps_the_first_record_and_loses_nothing(run_dir):
    done = break_it(run_dir)
    before = {n: lines(run_dir / n) for n in ("trials.jsonl", "steps.jsonl")}
    first_lines = {json.loads(x)["trial_key"]: x for x in reversed(before["trials.jsonl"][:-1])}
    report = repair(run_dir)
    # what is left: only what cannot be repaired here
    assert kinds(report) == {"missing_frame": 2, "unfinished_trial": 1, "unplanned_trial": 1}
    dest = report.moved_to
    assert dest is not None and dest.parent == run_dir / "doctor"
    for name in ("trials", "steps"):
        kept = lines(run_dir / f"{name}.jsonl")
        moved = lines(dest / f"{name}.rejected.jsonl")
        # nothing lost: every original line is either kept or moved, byte for byte
        assert Counter(kept) + Counter(moved) == Counter(before[f"{name}.jsonl"])
    trials = [json.loads(x) for x in lines(run_dir / "trials.jsonl")]
    keys = [t["trial_key"] for t in trials]
    assert len(keys) == len(set(keys))
    for x in lines(run_dir / "trials.jsonl"):  # the first record of each key is the one kept
        assert x == first_lines[json.loads(x)["trial_key"]]
    steps = [json.loads(x) for x in lines(run_dir / "steps.jsonl")]
    assert len({(s["trial_key"], s["index"]) for s in steps}) == len(steps)
    assert {s["trial_key"] for s in steps} <= set(keys)
    # corrupt frame and stray files moved, not deleted
    assert (dest / "files" / "frames" / f"{done['corrupt']}.png").read_bytes() == b"not the frame"
    assert (dest / "files" / "plan.jsonl.tmp").read_text() == "half a plan"
    assert not list(run_dir.glob("*.tmp")) and not list((run_dir / "frames").glob("*.tmp"))
    reasons = [json.loads(x) for x in (dest / "reasons.jsonl").read_text().splitlines()]
    assert Counter(r["kind"] for r in reasons)["duplicate_trial"] == 2
    # the analysis reads it again
    runs = load_runs(run_dir, cache=False)
    assert runs.trials["trial_key"].is_unique and len(runs.trials) == len(keys)
    # a second repair has nothing to move
    again = repair(run_dir)
    assert again.moved == 0 and again.moved_to is None


def test_repair_needs_the_lock_and_the_cli_says_who_has_it(run_dir, capsys):
    break_it(run_dir)
    with RunDirLock(run_dir):
        before = snapshot(run_dir)
        with pytest.raises(RunDirBusy):
            repair(run_dir)
        assert main([str(run_dir), "--repair"]) == 2
        assert f"pid {os.getpid()}" in capsys.readouterr().err
        report = diagnose(run_dir)  # reading is allowed, and says the run is in use
        assert report.holder and report.holder["pid"] == os.getpid()
        assert snapshot(run_dir) == before


@pytest.mark.e2e
def test_doctor_is_a_command(run_dir):
    (run_dir / "trials.jsonl").open("ab").write(lines(run_dir / "trials.jsonl")[0])
    cmd = [sys.executable, "-m", "dvoc_bench.doctor", str(run_dir)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 1 and "1 duplicate trial lines" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([*cmd, "--repair"], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0 and "moved 1 lines/files aside" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([*cmd[:-1], str(run_dir / "nope")], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 2 and "no such run directory" in r.stderr


def test_a_deeply_nested_line_is_a_bad_line_not_a_crash(run_dir, capsys):
    """50,000 levels of nesting in trials.jsonl: the check reports a torn line, the repair moves it aside,
    the loaders skip it; nothing crashes."""
    trials = run_dir / "trials.jsonl"
    good = len(lines(trials))
    with trials.open("ab") as f:
        f.write(b"[" * 50_000 + b"]" * 50_000 + b"\n")
    report = diagnose(run_dir)
    assert kinds(report)["torn_line"] == 1
    assert main([str(run_dir)]) == 1 and "torn" in capsys.readouterr().out
    repair(run_dir)
    assert len(lines(trials)) == good and diagnose(run_dir).clean
    assert len(load_runs(run_dir).trials) == good


def test_a_blank_line_and_a_stray_frame_file_are_moved_aside_not_dropped(run_dir):
    trials = run_dir / "trials.jsonl"
    good = lines(trials)
    trials.write_bytes(good[0] + b"   \n" + b"".join(good[1:]))  # a blank line inside the file
    (run_dir / "frames" / "notes.txt").write_text("not a frame")
    report = diagnose(run_dir)
    assert kinds(report)["torn_line"] == 1 and kinds(report)["stray_file"] == 1
    repair(run_dir)
    assert lines(trials) == good and diagnose(run_dir).clean
    aside = run_dir / "doctor"
    moved = [*aside.rglob("notes.txt"), *aside.rglob("trials.rejected.jsonl")]
    assert len(moved) == 2 and b"   \n" in moved[1].read_bytes()  # nothing dropped


def test_a_folder_that_is_not_a_run_is_one_line_exit_2_not_clean(tmp_path, capsys):
    """Issue 52: `doctor` on a folder that holds no run record said `clean`, exit 0."""
    (tmp_path / "notes.txt").write_text("not a run\n")
    for argv in ([str(tmp_path)], [str(tmp_path), "--repair"]):
        assert main(argv) == 2
        out = capsys.readouterr()
        assert out.out == ""
        assert out.err.splitlines() == [
            f"doctor: not a run directory (none of plan.jsonl, trials.jsonl, steps.jsonl, run.json, "
            f"run_meta.json): {tmp_path}"
        ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # nothing written


def test_a_run_killed_before_its_first_trial_is_still_a_run(tmp_path):
    (tmp_path / "plan.jsonl").write_text("")
    assert diagnose(tmp_path).clean
