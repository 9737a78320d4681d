"""The canary (``experiment=canary``): the simulator configs give an offline canary whose answers match the
stored ones; a stored answer moved beyond the tolerance, or a changed verdict, is a drift: a loud console
line, ``canary.json`` in the run directory and a section of the report."""

from __future__ import annotations

import json
import shutil

import pytest

from dvoc_bench import report
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.runner import canary
from tests.support import HANG_S, run_cli


@pytest.fixture(scope="module")
def canary_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("canary") / "run"
    p = run_cli("experiment=canary", f"hydra.run.dir={run_dir}", timeout=HANG_S)
    assert p.returncode == 0, p.stderr[-2000:]
    return run_dir, p.stdout


def test_the_offline_canary_matches_its_stored_answers(canary_run):
    run_dir, out = canary_run
    assert "canary: sim-gemma-4-26b: 15 answers within 5 px of the stored ones, same verdicts" in out
    assert "CANARY DRIFT" not in out
    results = json.loads((run_dir / "canary.json").read_text())
    assert {r["model"]: (r["status"], r["compared"]) for r in results} == {
        "sim-gemma-4-26b": ("ok", 15), "sim-ideal": ("ok", 15)}  # fmt: skip
    assert all(r["simulated"] for r in results)


def test_a_moved_answer_is_a_drift_and_the_report_says_so(canary_run, tmp_path):
    run_dir, _ = canary_run
    stored = tmp_path / "stored"
    shutil.copytree(canary.canary_dir(), stored)
    path = stored / "sim-gemma-4-26b.json"
    body = json.loads(path.read_text())
    key = sorted(body["answers"])[0]
    x, y = body["answers"][key]["final"]
    body["answers"][key]["final"] = [x + 6.0, y]  # 6 px: beyond the 5 px tolerance
    key2 = sorted(body["answers"])[1]
    body["answers"][key2]["final"][0] += 4.0  # 4 px: within it
    key3 = sorted(body["answers"])[2]
    body["answers"][key3]["hit"] = not body["answers"][key3]["hit"]
    path.write_text(json.dumps(body))
    trials = list(read_jsonl(run_dir / "trials.jsonl"))
    results = canary.check(trials, stored)
    gemma = next(r for r in results if r.model == "sim-gemma-4-26b")
    assert gemma.status == "drift" and [d["key"] for d in gemma.drifts] == sorted([key, key3])
    moved = next(d for d in gemma.drifts if d["key"] == key)
    assert moved["moved_px"] == pytest.approx(6.0, abs=0.01) and "moved 6.0 px > 5 px" in moved["why"]
    assert "verdict changed" in next(d for d in gemma.drifts if d["key"] == key3)["why"]
    lines = canary.lines(results, run_dir)
    assert lines[0].startswith("WARNING: CANARY DRIFT: sim-gemma-4-26b: 2 of 15 answers")
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    canary.write(copy, results, trials)
    assert report.main([str(copy), "--no-figures", "--n-boot", "20", "--out", str(tmp_path / "rep")]) == 0
    text = (tmp_path / "rep" / "report.md").read_text()
    assert "| run | sim-gemma-4-26b [SIMULATED] | DRIFT | 15 | 2 | 5 |" in text
    assert "**WARNING: 2 canary answers drifted**" in text
