import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dvoc_bench.core.control import AdaptiveConfig, LoopConfig, Report, alpha, correct, decide
from dvoc_bench.core.geometry import Offset, Point, Size

P = LoopConfig(epsilon=30.0, threshold=0.5, window=2)


def rep(dx, dy=0.0, conf=0.9):
    return Report(Offset(dx, dy), conf)


EMPTY = Report(None, None)


def test_decay_schedule_is_one_half_quarter():
    rs = [rep(100)] * 5
    assert [alpha("decay", rs[: i + 1]) for i in range(5)] == [1.0, 0.5, 0.25, 0.25, 0.25]
    assert alpha("undamped", rs) == 1.0
    assert alpha("constant", rs, constant=0.3) == 0.3
    with pytest.raises(ValueError, match="allowed"):
        alpha("bogus", rs)


def test_act_needs_two_small_confident_reports():
    assert decide([rep(10)], P) == "refine"
    assert decide([rep(100), rep(10), rep(5)], P) == "act"
    assert decide([rep(100), rep(10, conf=0.4), rep(5)], P) == "refine"
    assert decide([rep(100), rep(29.9), rep(29.9 * 0.5)], P) == "act"
    assert decide([rep(100), rep(30), rep(5)], P) == "refine"  # strict < epsilon


def test_oscillation_rule_runs_first_and_includes_ties():
    assert decide([rep(50), rep(60), rep(70)], P) == "abort_oscillation"
    assert decide([rep(50), rep(50), rep(50)], P) == "abort_oscillation"
    # Upstream quirk kept: three zero reports abort before they can act.
    assert decide([rep(0), rep(0), rep(0)], P) == "abort_oscillation"
    assert decide([rep(60), rep(50), rep(70)], P) == "refine"


def test_stuck_on_two_empty_replies():
    assert decide([rep(100), EMPTY, EMPTY], P) == "abort_stuck"
    assert decide([rep(100), Report(Offset(0, 0), 0.0), Report(Offset(0, 0), 0.0)], P) == "abort_stuck"
    assert decide([rep(100), EMPTY], P) == "refine"


def test_empty_reply_never_acts():
    assert decide([rep(100), rep(5), EMPTY], P) == "refine"


def test_upstream_simulated_verifier_cases():
    """The authors' three simulated-verifier tests, as facts about the rules (upstream-facts §7)."""
    # constant (0, 0) conf 1 -> act after 2 iterations
    assert decide([rep(0, conf=1.0)], P) == "refine" and decide([rep(0, conf=1.0)] * 2, P) == "act"
    # constant (3, 0) from (200, 200): one correction to (203, 200), then act
    c = correct(Point(200, 200), Offset(3, 0), alpha("decay", [rep(3)]), Size(800, 600))
    assert c.next_draft == Point(203, 200)
    # constant (100, 0) conf 0.5 aborts through the non-decreasing rule on the third report
    rs = [rep(100, conf=0.5)] * 3
    assert decide(rs[:2], P) == "refine" and decide(rs, P) == "abort_oscillation"


def test_correct_clamps_and_records_both_steps():
    c = correct(Point(790, 10), Offset(50, -40), 1.0, Size(800, 600))
    assert c.next_draft == Point(799, 0)
    assert c.step_raw == Offset(50, -40) and c.step_clamped == Offset(9, -10)
    assert correct(Point(5, 5), None, 1.0, Size(800, 600)).next_draft == Point(5, 5)


offsets = st.builds(Offset, st.floats(-500, 500), st.floats(-500, 500))
reports = st.lists(
    st.one_of(st.builds(Report, offsets, st.floats(0, 1)), st.just(EMPTY)), min_size=1, max_size=20
)


@given(reports)
def test_decision_is_always_valid_and_prefix_stable(rs):
    d = decide(rs, P)
    assert d in {"refine", "act", "abort_oscillation", "abort_stuck"}
    if d == "act":
        assert all(not r.empty and r.magnitude < 30 and r.conf >= 0.5 for r in rs[-2:])


@given(reports)
def test_adaptive_alpha_stays_within_bounds(rs):
    a = alpha("adaptive", rs)
    cfg = AdaptiveConfig()
    assert cfg.floor <= a <= cfg.cap


def test_adaptive_damps_on_sign_flip_and_relaxes_on_progress():
    flip = [rep(100), rep(-80)]
    assert alpha("adaptive", flip) == 0.5
    assert alpha("adaptive", flip + [rep(-20)]) == 0.75
    assert alpha("adaptive", [rep(100), rep(120)]) == 0.5  # growth damps
    assert alpha("adaptive", [rep(100), rep(90)]) == 1.0  # slight progress keeps alpha


@given(st.floats(1, 400), st.floats(0.2, 3.0))
def test_gain_mismatch_contraction(dist, gain):
    """With gain g and alpha a, the residual after one step is |1 - a g| times the distance."""
    size = Size(10_000, 10_000)
    c = correct(Point(0, 0), Offset(dist * gain, 0), 1.0, size)
    assert math.isclose(dist - c.next_draft.x, dist * (1 - gain), abs_tol=1e-6)


def test_act_boundaries_are_strict_on_epsilon_and_inclusive_on_the_threshold():
    """``act`` needs magnitude < epsilon (a report of exactly epsilon does not qualify) and confidence >=
    threshold (a report of exactly the threshold does)."""
    cfg = LoopConfig(epsilon=30.0, threshold=0.5, window=2)
    assert decide([rep(29.999, conf=0.5), rep(29.999, conf=0.5)], cfg) == "act"
    assert decide([rep(30.0, conf=0.9), rep(29.0, conf=0.9)], cfg) == "refine"  # d == epsilon: not small
    assert decide([rep(29.0, conf=0.9), rep(29.0, conf=0.4999)], cfg) == "refine"  # just below threshold
