"""protocol=paper: the authors' semantics (upstream-facts §1–§3), in our words, beside v1."""

import re

from dvoc_bench.core.geometry import Frame, Offset, Point, Size
from dvoc_bench.protocol import HistoryEntry, get_protocol
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

SIZE = Size(800, 600)


def prompt(protocol, overlay="full", predict="relative", history=(), iteration=0):
    return get_protocol(protocol).dvoc_prompt(
        instruction="Click the BLUE button",
        size=SIZE,
        frame=Frame.NORM1000,
        overlay=overlay,
        predict=predict,
        draft=Point(190.7, 382.2),
        iteration=iteration,
        history=list(history),
    )


def test_paper_dvoc_prompt_withholds_size_position_and_frame():
    text = prompt("paper")
    assert "Click the BLUE button" in text and "pixel" in text and "report_offset" in text
    assert "800" not in text and "Crosshair position" not in text and "0-1000" not in text
    assert "190" not in text  # the position is never stated outside the history
    assert "click_at" in prompt("paper", predict="absolute")


def test_paper_history_arrow_points_to_the_undamped_sum():
    h = HistoryEntry(
        draft=Point(184, 426), reported=Offset(6, -94), confidence=0.9, next_draft=Point(190, 332)
    )
    h2 = HistoryEntry(
        draft=Point(190, 332), reported=Offset(50, 287), confidence=0.95, next_draft=Point(215, 475.5)
    )
    text = prompt("paper", history=[h, h2], iteration=2)
    assert "(184,426)" in text and "dx=6 dy=-94" in text and "=> (190,332)" in text
    assert "=> (240,619)" in text  # 190+50, 332+287: not where the crosshair went (215, 476)
    assert "(215" not in text
    v1 = prompt("v1", history=[h, h2], iteration=2)
    assert "went to (269, 794)" in v1  # v1 shows the actual next position, in the model's frame


def test_paper_text_only_overlay_never_states_the_position_at_step_zero():
    text = prompt("paper", overlay="none")
    assert "history" in text
    assert not re.search(r"\(\s*\d+\s*,\s*\d+\s*\)", text)  # no position anywhere: the model cannot know


def test_paper_oneshot_first_call_has_no_task():
    first = get_protocol("paper").oneshot_prompt(
        instruction="Click the BLUE button",
        size=SIZE,
        frame=Frame.NORM1000,
        attempt=0,
        previous=None,
    )
    retry = get_protocol("paper").oneshot_prompt(
        instruction="Click the BLUE button",
        size=SIZE,
        frame=Frame.NORM1000,
        attempt=1,
        previous=None,
    )
    assert "BLUE" not in first and "pixel" in first
    assert "Click the BLUE button" in retry and "(0, 0)" in retry  # a missing answer reads as (0, 0)


def test_paper_label_is_truncated_pixels_with_fixed_radius():
    assert (
        get_protocol("paper").overlay_label(Point(454.9, 352.7), Frame.NORM1000, SIZE, 30)
        == "(454, 352) +/- 30px"
    )
    assert (
        get_protocol("v1").overlay_label(Point(454.9, 352.7), Frame.NORM1000, SIZE, 30) == "(569, 589) /1000"
    )


def run(tmp_path, *overrides):
    res = run_sweep(quick_setup(overrides), tmp_path)
    return res.specs, res.trials


def test_paper_reads_every_answer_as_pixels_and_reproduces_the_oneshot_artefact(tmp_path):
    specs, trials = run(tmp_path, "models=[sim-gemma-4-26b]", "methods=[oneshot]", "protocols=[paper,v1]")
    frames = {(s.protocol, s.coord_frame) for s in specs}
    assert frames == {("paper", "pixel"), ("v1", "norm1000")}

    def rate(protocol):
        ts = [t for t in trials if t["protocol"] == protocol]
        return sum(t["hit_radius"] for t in ts) / len(ts)

    # upstream: 11-18 % naive success for the Gemma models under the paper's harness, all from S4
    assert rate("paper") <= 0.3
    assert {t["task"] for t in trials if t["protocol"] == "paper" and t["hit_radius"]} <= {"S4"}
    assert rate("v1") >= 0.9
    paper_first = [t for t in trials if t["protocol"] == "paper" and t["task"] == "S4"]
    assert all(t["iterations"] == 1 for t in paper_first)  # S4's normalised and pixel targets are close
