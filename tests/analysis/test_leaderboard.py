"""``report RUN --leaderboard FILE.json`` on a dataset run of ours (the project's ScreenSpot-Pro fixture,
simulated models): the ScreenSpot-Pro results schema, every cell the share of hits among that cell's
trials as counted here straight from ``trials.jsonl``, plus the columns no board has; a run without dataset
trials is refused in one line."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from dvoc_bench import report
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.scenes.dataset_fixture import write_fixture
from tests.support import make_run


@pytest.fixture(scope="module")
def pro_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("pro")
    write_fixture(root, "screenspot_pro", (1920, 1080), screens=3, per_screen=2)
    return make_run(tmp_path_factory.mktemp("runs") / "pro", "dataset=screenspot_pro", f"dataset.root={root}",
                    "models=[sim-gemma-4-26b]", "methods=[oneshot,centre]")  # fmt: skip


def test_the_results_schema_of_a_dataset_run(pro_run, tmp_path):
    path = tmp_path / "board.json"
    assert report.main([str(pro_run), "--leaderboard", str(path), "--no-figures", "--n-boot", "20",
                        "--out", str(tmp_path / "rep")]) == 0  # fmt: skip
    board = json.loads(path.read_text())
    trials = [t for t in read_jsonl(pro_run / "trials.jsonl") if t["method"] == "oneshot"]
    entry = board["sim-gemma-4-26b / oneshot [SIMULATED]"]
    # the cells, counted here from the records
    cells: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for t in trials:
        s = t["sample"]
        hit = bool(t["hit"]) and t["status"] == "ok"
        for kind, name in (("group", s["group"]), ("application", s["application"])):
            cells[(kind, name, s["ui_type"])].append(hit)
            cells[(kind, name, "avg")].append(hit)
        cells[("overall", "", s["ui_type"])].append(hit)
        cells[("overall", "", "avg")].append(hit)
    res = entry["results"]
    for (kind, name, col), hits in cells.items():
        got = res["overall"][col] if kind == "overall" else res[kind][name][col]
        assert got == pytest.approx(sum(hits) / len(hits), abs=1e-4), (kind, name, col)
    extra = entry["dvoc_bench"]
    assert extra["trials"] == len(trials) and extra["simulated"] is True
    assert extra["hits"] == sum(bool(t["hit"]) for t in trials)
    lo, hi = extra["interval_95"]
    assert lo <= extra["accuracy"] <= hi
    assert extra["calls_per_sample"] == pytest.approx(sum(t["model_calls"] for t in trials) / len(trials))
    assert extra["usd_per_hit"] is None  # simulated: no dollars
    assert extra["stop_rule"]["method"] == "oneshot" and extra["frame"]
    assert set(board) == {"sim-gemma-4-26b / oneshot [SIMULATED]", "none / centre"}  # centre calls no model


def test_a_run_without_dataset_trials_is_refused(tmp_path, capsys):
    from tests.support import make_run as mk

    run = mk(tmp_path / "syn", "models=[sim-ideal]", "tasks=[S1]", "methods=[centre]")
    assert report.main([str(run), "--leaderboard", str(tmp_path / "b.json"), "--no-figures",
                        "--out", str(tmp_path / "rep")]) == 2  # fmt: skip
    assert "--leaderboard: no dataset trials" in capsys.readouterr().err
