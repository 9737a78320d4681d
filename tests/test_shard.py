"""Shards (``run.shard=I/N``) and their merge (``python -m dvoc_bench.merge``), in process, simulated."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.merge import main as merge_main
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.gates import provider_limits
from dvoc_bench.runner.merge import merge_runs
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.runner.shard import select, shard_of
from dvoc_bench.runner.sweep import plan, run_sweep
from dvoc_bench.runner.trials import TrialRunner
from tests.support import ROOT

SWEEP = ("model=sim-ideal", "tasks=[S1,S2]", "methods=[dvoc,centre]", "starts=random:2")
VOLATILE = {"latency_s", "elapsed_s", "started_at", "finished_at", "wall_s", "retry_wait_s"}
"""Fields of a record that measure the run, not its outcome (compared away)."""


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def _strip(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in VOLATILE}


def _by_key(path: Path) -> dict[str, dict]:
    rows = _lines(path)
    keys = [r["trial_key"] for r in rows]
    assert len(keys) == len(set(keys)), f"{path}: a trial key twice"
    return {r["trial_key"]: _strip(r) for r in rows}


def _steps(path: Path) -> list[tuple]:
    rows = _lines(path)
    return sorted((r["trial_key"], r.get("iteration"), json.dumps(_strip(r), sort_keys=True)) for r in rows)


def _frames(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (d / "frames").glob("*.png")}


def _shards(tmp_path: Path, n: int, *extra: str) -> list[Path]:
    dirs = []
    for i in range(n):
        d = tmp_path / f"shard{i}"
        run_sweep(quick_setup([*SWEEP, f"run.shard={i}/{n}", *extra]), d)
        dirs.append(d)
    return dirs


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[Path, list[Path]]:
    """The sweep in one process, and the same sweep as 4 shards (read only by the tests)."""
    root = tmp_path_factory.mktemp("sweep")
    run_sweep(quick_setup(SWEEP), root / "one")
    return root / "one", _shards(root, 4)


@pytest.mark.parametrize(
    "value, what",
    [("1/4x", "must be I/N"), ("4/4", "out of range"), ("0/0", "at least 1"), ("3", "must be I/N"),
     ("-1/4", "I/N")],  # fmt: skip
)
def test_a_bad_shard_is_one_line_naming_the_key(value, what):
    with pytest.raises(ConfigError) as e:
        load_settings({"run": {"shard": value}})
    assert str(e.value).startswith("run.shard: ") and what in str(e.value) and "\n" not in str(e.value)


def test_the_partition_is_by_key_stable_and_complete():
    specs = plan(quick_setup(SWEEP))
    keys = [s.trial_key for s in specs]
    parts = [select(specs, load_settings({"run": {"shard": f"{i}/3"}}).run.shard_of_sweep) for i in range(3)]
    got = [s.trial_key for p in parts for s in p]
    assert sorted(got) == sorted(keys)  # every trial in exactly one shard
    assert all(parts)  # 20 trials over 3 shards: none empty
    shuffled = specs[:]
    random.Random(1).shuffle(shuffled)
    for i, part in enumerate(parts):  # independent of the plan's order and of the other trials
        shard = load_settings({"run": {"shard": f"{i}/3"}}).run.shard_of_sweep
        assert {s.trial_key for s in select(shuffled, shard)} == {s.trial_key for s in part}
        assert {s.trial_key for s in select(shuffled[:7], shard)} == {s.trial_key for s in part} & set(
            s.trial_key for s in shuffled[:7]
        )
        assert all(shard_of(k, 3) == i for k in (s.trial_key for s in part))


def test_a_shard_keeps_the_sweeps_fingerprint_and_takes_its_part_of_quota_and_budget():
    whole, part = quick_setup(SWEEP), quick_setup([*SWEEP, "run.shard=2/4"])
    assert whole.fingerprint.digest == part.fingerprint.digest
    model = whole.models[0]
    quota = {"providers": {model.provider: {"rpm": 60.0, "rpd": 1000.0}}}
    assert provider_limits(model, load_settings({"scheduler": quota})).rpm == 60.0
    four = load_settings({"run": {"shard": "2/4"}, "scheduler": quota})
    assert (provider_limits(model, four).rpm, provider_limits(model, four).rpd) == (15.0, 250.0)
    own = load_settings({"run": {"shard": "2/4"}, "scheduler": {**quota, "rate_split": 8}})
    assert provider_limits(model, own).rpm == 7.5  # rate_split larger than the shard count: it wins


def test_a_shard_runs_only_its_trials_and_records_the_whole_plan(tmp_path):
    setup = quick_setup([*SWEEP, "run.shard=1/4"])
    whole = plan(quick_setup(SWEEP))
    mine = {s.trial_key for s in whole if shard_of(s.trial_key, 4) == 1}
    assert mine and len(mine) < len(whole)
    summary = run_sweep(setup, tmp_path / "s")
    assert {t["trial_key"] for t in summary.trials} == mine
    assert {p["trial_key"] for p in _lines(tmp_path / "s" / "plan.jsonl")} == mine
    info = json.loads((tmp_path / "s" / "shard.json").read_text())
    got = (info["shard"], info["count"], info["planned_total"], info["planned_shard"])
    assert got == ("1/4", 4, len(whole), len(mine))
    assert info["fingerprint"] == json.loads((tmp_path / "s" / "run_meta.json").read_text())["digest"]
    with pytest.raises(ConfigError, match=r"^run.shard: .* is shard 1/4 .*not 2/4"):
        run_sweep(quick_setup([*SWEEP, "run.shard=2/4"]), tmp_path / "s")
    with pytest.raises(ConfigError, match=r"^run.shard: .* is shard 1/4 .*not the whole sweep"):
        run_sweep(quick_setup(SWEEP), tmp_path / "s")


def test_the_shard_budget_is_its_part_of_the_sweeps(tmp_path, monkeypatch):
    seen = []
    orig = TrialRunner.__init__

    def spy(self, *a, **kw):
        orig(self, *a, **kw)
        seen.append(self.budget.limit if self.budget else None)

    monkeypatch.setattr(TrialRunner, "__init__", spy)
    model = ("model=sim-ideal", "+model.pricing={input_per_mtok: 1.0, output_per_mtok: 1.0}")
    run_sweep(quick_setup([*model, "tasks=[S1]", "methods=[centre]", "run.shard=0/4", "run.max_cost_usd=2"]),
              tmp_path / "b")  # fmt: skip
    assert seen == [0.5]


def test_four_shards_merged_equal_the_sweep_in_one_process(tmp_path, sweep):
    one, dirs = sweep
    out = tmp_path / "merged"
    rep = merge_runs(dirs, out)
    n = len(_lines(one / "trials.jsonl"))
    assert (rep.planned, rep.present, rep.added, rep.partial) == (n, n, n, False)
    assert all(_lines(d / "trials.jsonl") for d in dirs)  # no shard empty: each one merged something
    digests = {json.loads((d / "run_meta.json").read_text())["digest"] for d in (one, *dirs)}
    assert len(digests) == 1  # the shard is not in the fingerprint: every shard has the sweep's
    assert _by_key(out / "trials.jsonl") == _by_key(one / "trials.jsonl")
    assert _steps(out / "steps.jsonl") == _steps(one / "steps.jsonl")
    assert _frames(out) == _frames(one)
    planned = [{p["trial_key"] for p in _lines(d / "plan.jsonl")} for d in (out, one)]
    assert planned[0] == planned[1]
    assert (out / "summary.md").read_text() == (one / "summary.md").read_text()
    from dvoc_bench.analysis import load_runs
    from dvoc_bench.analysis.honest import summary

    def table(d):
        t = load_runs(d, cache=False).trials
        return summary(t).sort_values(["model", "method"]).reset_index(drop=True)

    assert table(out).equals(table(one))
    from dvoc_bench.runner.doctor import diagnose

    assert diagnose(out).clean
    again = merge_runs(dirs, out)  # nothing new: nothing written twice
    assert (again.added, again.frames_copied, again.present) == (0, 0, n)
    assert _by_key(out / "trials.jsonl") == _by_key(one / "trials.jsonl")


def test_a_partial_merge_is_said_and_merging_the_rest_adds_only_it(tmp_path, capsys, sweep):
    one, dirs = sweep
    out = tmp_path / "merged"
    assert merge_main([str(d) for d in dirs[:3]] + ["--out", str(out)]) == 1
    said = capsys.readouterr().out
    assert "partial merge" in said and "shards 3/4 not merged" in said
    first = len(_lines(out / "trials.jsonl"))
    assert merge_main([str(dirs[3]), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    n3 = len(_lines(dirs[3] / "trials.jsonl"))
    assert f"{n3} added by this merge" in said and "partial merge" not in said
    assert len(_by_key(out / "trials.jsonl")) == first + n3 == len(_lines(one / "trials.jsonl"))


def test_a_merge_of_other_settings_is_refused_naming_the_key(tmp_path, capsys):
    a = tmp_path / "a"
    b = tmp_path / "b"
    run_sweep(quick_setup([*SWEEP, "run.shard=0/2"]), a)
    run_sweep(quick_setup([*SWEEP, "run.shard=1/2", "seed=1"]), b)
    out = tmp_path / "m"
    assert merge_main([str(a), str(b), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("config error: SHARD_DIR: ") and "seed: 0 -> 1" in err and "\n" not in err
    assert not (out / "trials.jsonl").exists()


def test_a_shard_held_by_a_running_process_is_refused_naming_it(tmp_path, capsys):
    a = tmp_path / "a"
    run_sweep(quick_setup([*SWEEP, "run.shard=0/2"]), a)
    code = (
        "import sys, time; from dvoc_bench.runner.store import RunDirLock; "
        "RunDirLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code, str(a)], stdout=subprocess.PIPE, text=True,
                              env={"PYTHONPATH": str(ROOT)})  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"
        out = tmp_path / "m"
        assert merge_main([str(a), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"pid {holder.pid}" in err and str(a) in err
        assert not (out / "trials.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    deadline = time.monotonic() + 5
    while merge_main([str(a), "--out", str(tmp_path / "m")]) == 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "m" / "trials.jsonl").exists()


def test_a_skipped_trial_is_replaced_once_a_shard_finished_it(tmp_path, sweep):
    one, dirs = sweep
    out = tmp_path / "merged"
    merge_runs(dirs[:1], out)
    rows = _lines(out / "trials.jsonl")
    victim = rows[0]["trial_key"]
    rows[0] = {**rows[0], "status": "skipped", "error_class": "budget"}  # as a shard held by its budget does
    (out / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = merge_runs(dirs, out)
    assert rep.superseded == 1
    final = _by_key(out / "trials.jsonl")
    assert final[victim]["status"] == "ok" and final == _by_key(one / "trials.jsonl")
    assert [r["trial_key"] for r in _lines(out / "superseded.jsonl")] == [victim]
    assert _steps(out / "steps.jsonl") == _steps(one / "steps.jsonl")  # its steps once, not twice


def test_an_ordinary_run_as_out_is_refused_unless_asked(tmp_path, capsys, sweep):
    """Issue 52: `merge` into an ordinary run of the same sweep wrote merge.json and rewrote its plan."""
    import shutil

    one, dirs = sweep
    out = tmp_path / "run"
    shutil.copytree(one, out)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert merge_main([*map(str, dirs), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"config error: --out: {out} is a run of its own, not a merge's output; merging adds the shards' "
        "trials to it and rewrites its plan: pass --into-run to do that, or give another --out"
    ]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert merge_main([*map(str, dirs), "--out", str(out), "--into-run"]) == 0
    assert (out / "merge.json").is_file() and _by_key(out / "trials.jsonl") == _by_key(one / "trials.jsonl")
    assert merge_main([*map(str, dirs), "--out", str(out)]) == 0  # a merge's output now: merged again
