"""The episodes table: every rate per episode, clustered by the episode's task and page seed with the one
interval function (the plain Wilson interval when every (task, seed) is one episode), failures explained in
one line each, methods compared paired on the same episodes (issue #54)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from dvoc_bench.analysis.episodes import episode_rows, failures, first_wrong, paired, summarise
from dvoc_bench.analysis.intervals import paired_difference_interval

Z = 1.959963984540054


def textbook_wilson(p: float, n: float) -> tuple[float, float]:
    """The Wilson score interval written out (an independent check of the library's)."""
    mid = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return mid - half, mid + half


def _trial(
    key: str,
    method: str,
    seed: int,
    success: bool,
    located: list[bool | None],
    end: str = "verdict",
    error: str | None = None,
    start: int = 0,
    cost: float = 0.0,
) -> dict:
    steps = [{"index": i, "action": "click" if v is not None else "type", "located": v, "drop_located": None,
              "interacted": True, "point": [1.0, 1.0] if v is not None else None, "harness_s": 0.5,
              "ground_s": 0.25 if v is not None else 0.0} for i, v in enumerate(located)]  # fmt: skip
    off = next((i for i, v in enumerate(located) if v is False), None)
    ep = {"task": "enter-text", "family": "type", "seed": seed, "success": success, "end": end,
          "steps": steps, "first_off_target": off, "error": error, "query": "q"}  # fmt: skip
    return {"trial_key": key, "model": "sim-ideal", "simulated": True, "method": method, "status": "ok",
            "model_calls": 2, "cost_usd": cost, "episode": json.dumps(ep), "error": None,
            "start_index": start, "rep": seed}  # fmt: skip


def test_scores_counted_by_hand() -> None:
    t = pd.DataFrame([
        _trial("a", "oneshot", 0, True, [True, None, True], cost=0.01),
        _trial("b", "oneshot", 1, True, [True, None, True], cost=0.01),
        _trial("c", "oneshot", 2, False, [False, None, True], error="x", cost=0.02),
    ])  # fmt: skip
    e = episode_rows(t)
    row = summarise(e, ["method"]).iloc[0]
    assert (row["episodes"], row["successes"]) == (3, 2)
    assert row["success"] == pytest.approx(2 / 3)
    # one episode per (task, seed): the clustered interval is Wilson 95 % for 2 of 3, the textbook formula
    assert (row["lo"], row["hi"]) == pytest.approx(textbook_wilson(2 / 3, 3))
    assert row["locate"] == pytest.approx(5 / 6)  # 6 grounded points, 1 off target
    assert row["locate_lo"] < 5 / 6 < row["locate_hi"]
    assert row["interact"] == 1.0 and row["steps_to_success"] == 3
    assert row["calls_per_success"] == pytest.approx(6 / 2)
    assert row["usd_per_success"] == pytest.approx(0.04 / 2)
    assert row["first_wrong"] == "step 0: 1"
    assert row["harness_s_per_step"] == pytest.approx(0.5) and row["ground_s_per_step"] == pytest.approx(0.25)
    (line,) = failures(e)
    assert "seed 2" in line and "first step off target: 0" in line and line.endswith(": x")


def test_start_points_on_one_seeded_page_are_one_cluster() -> None:
    """The same three pages run from a second start point with the same outcomes: six episodes, but the
    information of fewer than six. By hand: clusters (task, seed) hold 2, 2, 0 successes of 2 each, p =
    2/3; the ratio estimator's variance 3/2 * sum((y - 2p)^2) / 6^2 = 1/9 over the binomial variance with
    its own small-sample factor 6/5 * p(1-p) / 6 = 2/45 is a design effect of 2.5, so the Wilson interval
    runs on 6 / 2.5 = 2.4 episodes."""
    t = pd.DataFrame([
        _trial(f"{s}{start}", "oneshot", s, s < 2, [s < 2], start=start) for s in range(3) for start in (0, 1)
    ])  # fmt: skip
    row = summarise(episode_rows(t), ["method"]).iloc[0]
    assert row["episodes"] == 6 and row["success"] == pytest.approx(2 / 3)
    assert (row["lo"], row["hi"]) == pytest.approx(textbook_wilson(2 / 3, 2.4))
    assert row["hi"] - row["lo"] > textbook_wilson(2 / 3, 6)[1] - textbook_wilson(2 / 3, 6)[0]
    assert (row["locate_lo"], row["locate_hi"]) == pytest.approx(textbook_wilson(2 / 3, 2.4))


def test_methods_are_compared_paired_on_the_same_episodes() -> None:
    """Four seeds, one episode each per method: dvoc wins seeds 0 and 1, loses none, both win seed 2, both
    fail seed 3. One episode per (task, seed): the interval is Newcombe's unclustered one."""
    wins = {"dvoc": [True, True, True, False], "oneshot": [False, False, True, False]}
    t = pd.DataFrame([
        _trial(f"{m}{s}", m, s, ok, [ok]) for m, seq in wins.items() for s, ok in enumerate(seq)
    ])  # fmt: skip
    (row,) = paired(episode_rows(t)).to_dict("records")
    assert (row["a"], row["b"], row["pairs"], row["episodes (task, seed)"]) == ("dvoc", "oneshot", 4, 4)
    assert (row["a_only"], row["b_only"], row["diff"]) == (2, 0, pytest.approx(0.5))
    assert row["mcnemar_p"] == pytest.approx(0.5)  # exact two-sided: 2 * (1/2)^2
    assert (row["lo"], row["hi"]) == pytest.approx(paired_difference_interval(1, 2, 0, 1))
    assert (row["wins"], row["ties"], row["losses"]) == (2, 2, 0) and row["rule"] == "episode_success"


def test_first_wrong_names_each_failure() -> None:
    t = pd.DataFrame([
        _trial("a", "som", 0, False, [True, False]),
        _trial("b", "som", 1, False, [True, True]),
        _trial("c", "som", 2, False, [False]),
        _trial("d", "som", 3, True, [True]),
    ])  # fmt: skip
    assert first_wrong(episode_rows(t)) == "step 0: 1, step 1: 1, none off target: 1"


def test_the_report_section_has_the_paired_table(tmp_path) -> None:
    """The report's episodes section names its interval once and prints the paired table with McNemar's p
    (the section the report writes for ``scene_kind=miniwob`` trials)."""
    from dvoc_bench.analysis.report import Report, _episodes_section

    wins = {"dvoc": [True, True, True, False], "oneshot": [False, False, True, False]}
    t = pd.DataFrame([
        _trial(f"{m}{s}", m, s, ok, [ok]) for m, seq in wins.items() for s, ok in enumerate(seq)
    ]).assign(scene_kind="miniwob")  # fmt: skip
    rep = Report(tmp_path, figures=False)
    _episodes_section(rep, t)
    text = "\n".join(rep.lines)
    assert "Wilson 95 %, clustered by episode (task, seed)" in text
    assert "Newcombe (Wilson) 95 %, paired, clustered by episode (task, seed)" in text
    (row,) = [ln for ln in text.splitlines() if ln.startswith("| sim-ideal [SIMULATED] | dvoc | oneshot |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:6] == ["4", "4", "75.0%"] and "episode_success" in cells
