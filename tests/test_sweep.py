"""End-to-end science checks on the simulator (in process, through the same plan/run/store path)."""

import pytest

from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.summary import summarise
from dvoc_bench.runner.sweep import run_sweep


def run(tmp_path, *overrides):
    return run_sweep(quick_setup(overrides), tmp_path).trials


def rate(trials, method, rule="hit"):
    ts = [t for t in trials if t["method"] == method and t["status"] == "ok"]
    assert ts
    return sum(t[rule] for t in ts) / len(ts)


def test_declaring_the_frame_correctly_is_what_makes_oneshot_work(tmp_path):
    """The paper's artefact: a norm1000 model read as pixels 'fails'; read as norm1000 it hits."""
    common = ("models=[sim-gemma-4-26b]", "methods=[oneshot]", "repeats=2")
    right = run(tmp_path / "right", *common)
    wrong = run(tmp_path / "wrong", *common, "declare_frame=pixel")
    assert {t["coord_frame"] for t in right} == {"norm1000"}
    assert {t["coord_frame"] for t in wrong} == {"pixel"}
    assert rate(right, "oneshot") >= 0.9
    assert rate(wrong, "oneshot") <= 0.3
    assert rate(right, "oneshot") - rate(wrong, "oneshot") >= 0.6


def test_non_visual_baselines_are_low(tmp_path):
    trials = run(tmp_path, "methods=[centre,random]", "repeats=3")
    assert all(t["model"] == "none" and t["model_calls"] == 0 and not t["simulated"] for t in trials)
    # centre hits only the two centred targets (S1, S2): 2 of 6 tasks
    assert abs(rate(trials, "centre") - 2 / 6) < 1e-9
    assert rate(trials, "random") < 0.1


def test_dvoc_converges_with_an_ideal_model_and_records_each_rule(tmp_path):
    trials = run(tmp_path, "models=[sim-ideal]", "methods=[dvoc]", "alphas=[decay,undamped,adaptive]")
    assert rate(trials, "dvoc") == 1.0
    for t in trials:
        assert t["stop_reason"] == "act"
        r = t["radius_px"]
        assert t["hit_radius"] == (t["final_dist_px"] < r)
        assert t["within_eps"] == (t["final_dist_px"] < t["epsilon"])
    rows = summarise(trials)  # alpha varies, so it becomes a column of the table
    assert sorted(r["alpha"] for r in rows) == ["adaptive", "decay", "undamped"]
    assert all(r["n"] == 6 * 5 and r["hit"] == 1.0 for r in rows)


@pytest.mark.e2e
def test_wrong_declared_frame_makes_dvoc_overshoot(tmp_path):
    """Read as pixels, a norm1000 model's offsets carry the 1.25/1.67 gain: more iterations or worse."""
    right = run(tmp_path / "r", "models=[sim-gemma-4-26b]", "methods=[dvoc]", "alphas=[undamped]")
    wrong = run(
        tmp_path / "w",
        "models=[sim-gemma-4-26b]",
        "methods=[dvoc]",
        "alphas=[undamped]",
        "declare_frame=pixel",
    )
    it = lambda ts: sum(t["iterations"] for t in ts) / len(ts)  # noqa: E731
    assert rate(right, "dvoc") >= 0.9
    assert it(wrong) > it(right) or rate(wrong, "dvoc") < rate(right, "dvoc")


def test_an_unawaited_task_exception_is_one_line_never_a_traceback(caplog):
    """A SIGTERM with calls in flight: their tasks fail with connection errors while the loop shuts down;
    the loop reports each in one line (debug during the shutdown, a warning otherwise), no traceback."""
    import asyncio
    import logging

    from dvoc_bench.runner.sweep import _loop_error

    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.DEBUG, logger="dvoc_bench.runner.sweep"):
            err = ConnectionError("Connection error.")
            shutdown = "unhandled exception during asyncio.run() shutdown"
            _loop_error(loop, {"message": shutdown, "exception": err})
            _loop_error(loop, {"message": "Task exception was never retrieved", "exception": err})
    finally:
        loop.close()
    recs = [r for r in caplog.records if r.name == "dvoc_bench.runner.sweep"]
    assert [r.levelno for r in recs] == [logging.DEBUG, logging.WARNING]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in recs)
    assert "ConnectionError: Connection error." in recs[1].getMessage()
