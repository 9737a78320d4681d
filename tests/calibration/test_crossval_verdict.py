"""The cross-validation's verdict: agreement only where the simulated interval has width and the simulator
beats a baseline fitted on the held-out group's own kind (not a pooled fallback). Fast: hand-made fold
records and the committed ``scene_validation.json``; no sweep."""

from __future__ import annotations

from dvoc_bench.benchmarks import readme_numbers
from dvoc_bench.calibration import crossval as cv
from dvoc_bench.core import scene_check


def rec(
    lo: int, hi: int, *, p: float = 0.5, sim: float = -1.0, mm: float = -5.0, scene: float = -5.0, note=""
):
    return {
        "kind": "cell",
        "unit": "m/dvoc",
        "k": lo,
        "n": 30,
        "sim": {"lo": lo, "hi": hi, "p": p, "log_score": sim},
        "rate_model_method": {"lo": 0, "hi": 30, "p": 0.5, "log_score": mm},
        "rate_scene": {"lo": 0, "hi": 30, "p": 0.5, "log_score": scene},
        "note": note,
    }


def test_point_and_near_point_intervals_are_never_agreement():
    assert cv.interval_kind(rec(5, 5)) == "point"
    assert cv.interval_kind(rec(21, 22)) == "near-point" == cv.interval_kind(rec(20, 22))
    assert cv.interval_kind(rec(20, 23)) == ""
    assert cv.verdict(rec(5, 5, p=1.0, sim=-0.0)).startswith("no claim: point interval (tests the frame")
    assert cv.verdict(rec(20, 22)).startswith("no claim: near-point interval")
    assert cv.verdict(rec(20, 23)) == "agrees (beats the model/method rate and scene rate)"
    assert cv.verdict(rec(5, 5, p=0.01)) == "disagrees (p < 0.05)"


def test_a_pooled_baseline_is_named_and_not_counted():
    pooled_mm = "gemma DVOC steps from the other models; model/method: pooled rate for gemma/dvoc"
    r = rec(10, 20, note=pooled_mm)
    assert cv.pooled_baselines(r) == ["model/method rate"]
    assert cv.verdict(r) == "agrees (beats the scene rate; model/method rate pooled, not counted)"
    # beating only the pooled one is no agreement
    assert cv.verdict(rec(10, 20, sim=-3.0, mm=-9.0, scene=-2.0, note=pooled_mm)) == (
        "no claim: not better than scene rate"
    )
    both = "model/method: pooled rate for a; scene: pooled rate for S2"
    assert cv.verdict(rec(10, 20, note=both)) == "no claim: both baselines fell back to the pooled rate"
    # the structured field of new records wins over the note
    assert cv.pooled_baselines({**rec(10, 20, note=both), "pooled": ["scene rate"]}) == ["scene rate"]


def test_fold_records_carry_the_pooled_baselines():
    unit = cv.Unit("cell", "m/dvoc", frozenset(), (), "paper_main", ("m",))
    score = {"lo": 1, "hi": 9, "p": 0.5, "log_score": -1.0}
    fold = cv.Fold(unit, 10, 5, score, score, score, "scene: pooled rate for S3", 0.0, 0.0)
    (r,) = cv.fold_records([fold])
    assert r["pooled"] == ["scene rate"]


def test_the_committed_table_marks_what_it_cannot_claim():
    """On the committed cross-validation: the four one-shot / absolute-mode point intervals and S5's are
    points, S3's near-point; no agreement rests on a pooled baseline alone or on an interval without
    width."""
    recs = scene_check.load()["table"]
    by = {r["unit"]: r for r in recs}
    points = {u for u, r in by.items() if cv.interval_kind(r) == "point"}
    assert points == {
        "predict=absolute",
        "gemini-3.1-flash-lite/oneshot",
        "gemma-4-26b/oneshot",
        "gemma-4-31b/oneshot",
        "S5",
    }
    assert cv.interval_kind(by["S3"]) == "near-point"
    agree = [r for r in recs if cv.verdict(r).startswith("agrees")]
    assert len(agree) == 8
    for r in agree:
        own = [key for name, key, _ in cv.BASELINES if name not in cv.pooled_baselines(r)]
        assert own and r["sim"]["hi"] - r["sim"]["lo"] > cv.NEAR_POINT_WIDTH
        assert all(r["sim"]["log_score"] > r[key]["log_score"] for key in own)
    assert (
        "agreement (an interval with width, better than the baselines fitted on the unit's own kind) in 8"
        in (readme_numbers.crossval_use_block())
    )
