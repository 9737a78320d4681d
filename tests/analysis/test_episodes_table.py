"""The episodes table: success per episode with the plain Wilson interval, locate per point clustered by
episode, failures explained in one line each (issue #54)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dvoc_bench.analysis.episodes import episode_rows, failures, summarise


def _trial(
    key: str,
    method: str,
    seed: int,
    success: bool,
    located: list[bool | None],
    end: str = "verdict",
    error: str | None = None,
) -> dict:
    steps = [{"index": i, "action": "click" if v is not None else "type", "located": v, "drop_located": None,
              "interacted": True, "point": [1.0, 1.0] if v is not None else None, "harness_s": 0.5,
              "ground_s": 0.25 if v is not None else 0.0} for i, v in enumerate(located)]  # fmt: skip
    off = next((i for i, v in enumerate(located) if v is False), None)
    ep = {"task": "enter-text", "family": "type", "seed": seed, "success": success, "end": end,
          "steps": steps, "first_off_target": off, "error": error, "query": "q"}  # fmt: skip
    return {"trial_key": key, "model": "sim-ideal", "simulated": True, "method": method, "status": "ok",
            "model_calls": 2, "episode": json.dumps(ep), "error": None}  # fmt: skip


def test_scores_counted_by_hand() -> None:
    t = pd.DataFrame([
        _trial("a", "oneshot", 0, True, [True, None, True]),
        _trial("b", "oneshot", 1, True, [True, None, True]),
        _trial("c", "oneshot", 2, False, [False, None, True], error="x"),
    ])  # fmt: skip
    e = episode_rows(t)
    row = summarise(e, ["method"]).iloc[0]
    assert (row["episodes"], row["successes"]) == (3, 2)
    assert row["success"] == pytest.approx(2 / 3)
    # Wilson 95 % for 2 of 3, by the textbook formula
    z, n, p = 1.959963984540054, 3, 2 / 3
    mid, half = (
        (p + z * z / (2 * n)) / (1 + z * z / n),
        z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n),
    )
    assert (row["lo"], row["hi"]) == pytest.approx((mid - half, mid + half))
    assert row["locate"] == pytest.approx(5 / 6)  # 6 grounded points, 1 off target
    assert row["locate_lo"] < 5 / 6 < row["locate_hi"]
    assert row["interact"] == 1.0 and row["steps_to_success"] == 3
    assert row["calls_per_success"] == pytest.approx(6 / 2)
    assert row["harness_s_per_step"] == pytest.approx(0.5) and row["ground_s_per_step"] == pytest.approx(0.25)
    (line,) = failures(e)
    assert "seed 2" in line and "first step off target: 0" in line and line.endswith(": x")
