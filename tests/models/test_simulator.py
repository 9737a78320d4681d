"""Simulator v0: determinism, frames, crosshair reading, task handling, near-target rates, profiles."""

from __future__ import annotations

import asyncio
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image
from pydantic import ValidationError

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.scene import Element, SceneTruth
from dvoc_bench.models.base import Model, ModelRequest, bound_reply
from dvoc_bench.models.simulator import (
    SimProfile,
    SimulatedModel,
    for_canvas,
    load_profile,
    parse_crosshair_line,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "model"
SIZE = Size(400, 300)
INSTRUCTION = "Click the Save button"

PANEL = Element("panel", "Side panel", Box(0, 0, 60, 299), role="panel", interactive=False)
OPEN = Element("open", "Open", Box(80, 20, 140, 50))
SAVE = Element("save", "Save", Box(300, 230, 360, 260))
TRUTH = SceneTruth("T1", SIZE, INSTRUCTION, "save", SAVE.box, (PANEL, OPEN, SAVE))
TARGET = SAVE.box.centre  # (330, 245)


def _tool(name: str, *params: str) -> dict[str, Any]:
    props = {p: {"type": "number"} for p in params}
    return {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": props, "required": params}},
    }


OFFSET_TOOLS = [_tool("report_offset", "dx", "dy", "confidence")]
POINT_TOOLS = [_tool("click_at", "x", "y", "confidence")]
SOM_TOOLS = [_tool("select_element", "id", "confidence")]


def _canvas(size: Size = SIZE) -> np.ndarray:
    img = np.zeros((size.height, size.width, 3), dtype=np.uint8)
    img[:] = (40, 42, 48)
    for e in TRUTH.elements:
        b = e.box
        img[int(b.y0) : int(b.y1) + 1, int(b.x0) : int(b.x1) + 1] = (90, 160, 90)
    return img


BASE = _canvas()


def _with_crosshair(p: tuple[int, int], img: np.ndarray = BASE) -> np.ndarray:
    """The overlay's crosshair: pure red, 3 px bars, 15 px arms (clipped at the edges)."""
    out = img.copy()
    x, y = p
    out[max(y - 1, 0) : y + 2, max(x - 15, 0) : x + 16] = (255, 0, 0)
    out[max(y - 15, 0) : y + 16, max(x - 1, 0) : x + 2] = (255, 0, 0)
    return out


def _text(task: bool = True, position: str | None = None) -> str:
    lines = ["You see a screenshot with a red crosshair."]
    if task:
        lines.append(f"Task: {INSTRUCTION}")
    if position is not None:
        lines.append(f"Crosshair position: {position}")
    lines.append("Call the tool with your answer.")
    return "\n".join(lines)


def _req(
    image: np.ndarray | None,
    text: str,
    seed: int = 0,
    tools: list[dict[str, Any]] = OFFSET_TOOLS,
    png: bytes | None = None,
) -> ModelRequest:
    return ModelRequest(text, png, SIZE, tools, "T1", seed, image_rgb=image)


def _model(sim: Mapping[str, Any] | SimProfile, name: str = "sim-test") -> SimulatedModel:
    profile = sim if isinstance(sim, SimProfile) else SimProfile.from_mapping(sim)
    return SimulatedModel(name, profile, lambda scene_id: TRUTH)


def _args(model: SimulatedModel, req: ModelRequest) -> dict[str, Any]:
    reply = model.respond(req)
    assert len(reply.tool_calls) == 1, reply
    assert isinstance(reply.tool_calls[0].arguments, str)
    return json.loads(reply.tool_calls[0].arguments)


EXACT_PIXEL = {"frames": {"pixel": 1}, "noise": {"scale_px": 0.0}}
EXACT_NORM = {"frames": {"norm1000": 1}, "noise": {"scale_px": 0.0}}
IDEAL = load_profile(CONF / "sim-ideal.yaml")


def _binom_ok(k: int, n: int, p: float, z: float = 4.0) -> bool:
    return abs(k / n - p) <= z * math.sqrt(p * (1 - p) / n) + 1 / n


# -------------------------------------------------------------------------------- determinism


def test_same_request_same_reply_independent_of_order() -> None:
    sim = {"frames": {"norm1000": 1}, "noise": {"scale_px": 5.0}, "outlier": {"p": 0.3}}
    req = _req(_with_crosshair((120, 90)), _text(), seed=7)
    first = _model(sim).respond(req)
    other = _model(sim)
    for s in range(5):  # unrelated calls first: no shared state may leak into the answer
        other.respond(_req(_with_crosshair((200, 100)), _text(), seed=s))
    assert other.respond(req) == first
    assert _model(sim).respond(req) == first


def test_different_seed_different_noise() -> None:
    model = _model({"frames": {"pixel": 1}, "noise": {"scale_px": 5.0}})
    image = _with_crosshair((120, 90))
    answers = {model.respond(_req(image, _text(), seed=s)).tool_calls[0].arguments for s in range(6)}
    assert len(answers) >= 4


@pytest.mark.parametrize("rate", [0.0, 0.5, 0.8])
def test_repeats_on_identical_input_are_samples_at_the_repeat_rate(rate: float) -> None:
    """The trial seed enters every draw: two calls on the identical input (different seeds) repeat each other
    only when both give the modal answer (``rate**2``), otherwise they are independent draws."""
    model = _model({"frames": {"pixel": 1}, "noise": {"scale_px": 8.0}, "consistency": {"offset": rate}})
    image = _with_crosshair((120, 90))
    n = 400
    same = sum(
        model.respond(_req(image, _text(), seed=2 * i)) == model.respond(_req(image, _text(), seed=2 * i + 1))
        for i in range(n)
    )
    assert _binom_ok(same, n, rate**2 + 0.01)


def test_the_modal_answer_belongs_to_the_whole_input() -> None:
    """A different image (even one pixel of an overlay) or a different prompt is a different input: with a
    repeat rate of 1 identical inputs always agree and different ones do not share their answer."""
    model = _model({"frames": {"pixel": 1}, "noise": {"scale_px": 8.0}, "consistency": {"offset": 1.0}})
    image = _with_crosshair((120, 90))
    other = image.copy()
    other[5, 5] = (255, 255, 255)
    a = [_args(model, _req(image, _text(), seed=s)) for s in range(3)]
    assert a[0] == a[1] == a[2]
    b = [_args(model, _req(other, _text(), seed=s)) for s in range(20)]
    c = [_args(model, _req(image, _text() + " ", seed=s)) for s in range(20)]
    assert b[0] != a[0] or c[0] != a[0]
    assert sum(x == a[0] for x in b + c) <= 2


def test_png_only_request_is_decoded_and_deterministic() -> None:
    buf = io.BytesIO()
    Image.fromarray(_with_crosshair((100, 80))).save(buf, format="PNG")
    req = _req(None, _text(), png=buf.getvalue())
    a = _args(_model(EXACT_PIXEL), req)
    assert (a["dx"], a["dy"]) == (230, 165)
    assert _model(EXACT_PIXEL).respond(req) == _model(EXACT_PIXEL).respond(req)


# ------------------------------------------------------------------------------------ frames


def test_ideal_profile_reports_true_pixel_offset() -> None:
    model = _model(IDEAL, "sim-ideal")
    rng = np.random.default_rng(1)
    errs = []
    for i in range(150):
        px, py = int(rng.integers(20, SIZE.width - 20)), int(rng.integers(20, SIZE.height - 20))
        a = _args(model, _req(_with_crosshair((px, py)), _text(), seed=i))
        errs += [a["dx"] - (TARGET.x - px), a["dy"] - (TARGET.y - py)]
        assert a["confidence"] == 1.0
    errs_abs = np.abs(errs)
    assert errs_abs.mean() < 1.6 and errs_abs.max() <= 10


def test_norm1000_profile_scales_offsets_per_axis() -> None:
    model = _model({"frames": {"norm1000": 1}, "noise": {"scale_px": 4.5}})
    rng = np.random.default_rng(2)
    t, r = [], []
    for i in range(300):
        px = int(rng.integers(15, 200))  # x offsets 130-315 px, y offsets 95-230 px: far from target
        py = int(rng.integers(15, 150))
        a = _args(model, _req(_with_crosshair((px, py)), _text(), seed=i))
        t.append((TARGET.x - px, TARGET.y - py))
        r.append((a["dx"], a["dy"]))
    t_arr, r_arr = np.asarray(t, float), np.asarray(r, float)
    gain = (t_arr * r_arr).sum(axis=0) / (t_arr * t_arr).sum(axis=0)  # slope through the origin
    expected = np.array([1000 / (SIZE.width - 1), 1000 / (SIZE.height - 1)])
    # Laplace(4.5 px) noise: slope sd ~ sqrt(2)*4.5*g / sqrt(sum t^2) < 0.003 g; allow 1 %.
    assert np.all(np.abs(gain / expected - 1) < 0.01), gain


def test_truth_is_scaled_to_a_resized_image() -> None:
    half = Size(200, 150)
    small = np.ascontiguousarray(_with_crosshair((100, 80))[::2, ::2])  # crosshair now at (50, 40)
    req = ModelRequest(_text(), None, half, OFFSET_TOOLS, "T1", 0, image_rgb=small)
    a = _args(_model(EXACT_PIXEL), req)
    assert (a["dx"], a["dy"]) == (115, round(122.5 - 40))


def test_norm1_rounds_to_three_decimals() -> None:
    a = _args(
        _model({"frames": {"norm1": 1}, "noise": {"scale_px": 0.0}}),
        _req(_with_crosshair((100, 80)), _text()),
    )
    assert a["dx"] == round(230 / 399, 3) and a["dy"] == round(165 / 299, 3)


# ------------------------------------------------------------------------------ crosshair position


def test_crosshair_read_from_pixels_wins_over_text() -> None:
    a = _args(_model(EXACT_PIXEL), _req(_with_crosshair((123, 77)), _text(position="(10, 10) px")))
    assert (a["dx"], a["dy"]) == (207, 168)


def test_crosshair_clipped_at_the_edge() -> None:
    a = _args(_model(EXACT_PIXEL), _req(_with_crosshair((0, 299)), _text()))
    assert (a["dx"], a["dy"]) == (330, -54)


@pytest.mark.parametrize(
    "position",
    [
        "(123, 77) px",
        f"({123 * 1000 / 399:.0f}, {77 * 1000 / 299:.0f}) in 0-1000 units",
        "(0.308, 0.258) in 0-1 units",
    ],
)
def test_crosshair_read_from_text_when_not_drawn(position: str) -> None:
    assert parse_crosshair_line(_text(position=position), SIZE) is not None
    a = _args(_model(EXACT_PIXEL), _req(BASE, _text(position=position)))
    assert abs(a["dx"] - 207) <= 1 and abs(a["dy"] - 168) <= 1


def test_unknown_crosshair_position() -> None:
    a = _args(_model(EXACT_PIXEL), _req(BASE, _text()))
    assert (a["dx"], a["dy"]) == (0, 0)
    a = _args(_model(EXACT_PIXEL), _req(None, _text()))  # text-only call
    assert (a["dx"], a["dy"]) == (0, 0)
    a = _args(_model({**EXACT_PIXEL, "unknown_position": "guess_centre"}), _req(BASE, _text()))
    assert (a["dx"], a["dy"]) == (round(330 - 199.5), round(245 - 149.5))


def test_mixed_frame_only_without_position_line() -> None:
    model = _model({"frames": {"mixed": 1}, "noise": {"scale_px": 0.0}})
    image = _with_crosshair((100, 80))
    g = np.array([1000 / 399, 1000 / 299])
    a = _args(model, _req(image, _text()))  # H2: r = g*T - P
    assert (a["dx"], a["dy"]) == (round(330 * g[0] - 100), round(245 * g[1] - 80))
    a = _args(model, _req(image, _text(position="(100, 80) px")))  # stated -> norm1000: r = g*(T - P)
    assert (a["dx"], a["dy"]) == (round(230 * g[0]), round(165 * g[1]))


# ------------------------------------------------------------------------------------ task / modes


def test_prompt_without_task_aims_at_first_interactive_element() -> None:
    model = _model({"frames": {"pixel": 1}, "oneshot": {"noise_px": 0.0}})
    a = _args(model, _req(BASE, _text(task=False), tools=POINT_TOOLS))
    assert (a["x"], a["y"]) == (110, 35)  # OPEN, not the non-interactive panel, not the target
    a = _args(model, _req(BASE, _text(task=True), tools=POINT_TOOLS))
    assert (a["x"], a["y"]) == (330, 245)
    rnd = _model({"frames": {"pixel": 1}, "oneshot": {"noise_px": 0.0}, "no_task": "random_element"})
    picks = {tuple(_args(rnd, _req(BASE, _text(task=False), s, POINT_TOOLS)).values())[:2] for s in range(30)}
    assert picks == {(110, 35), (330, 245)}


def test_point_mode_in_norm1000() -> None:
    a = _args(
        _model({**EXACT_NORM, "oneshot": {"noise_px": 0.0, "confidence": 0.9}}),
        _req(BASE, _text(), tools=POINT_TOOLS),
    )
    assert (a["x"], a["y"], a["confidence"]) == (round(330 * 1000 / 399), round(245 * 1000 / 299), 0.9)


def test_select_element_not_supported_and_reply_fields() -> None:
    model = _model({**EXACT_PIXEL, "tokens": {"in_per_call": 11, "out_per_call": 3}})
    reply = model.respond(_req(BASE, _text(), tools=SOM_TOOLS))
    assert reply.tool_calls == [] and reply.text == "not supported by the simulator"
    reply = model.respond(_req(_with_crosshair((100, 80)), _text()))
    assert reply.tool_calls[0].name == "report_offset"
    assert (reply.tokens_in, reply.tokens_out, reply.cost_usd, reply.cost_source) == (11, 3, 0.0, "simulated")
    assert isinstance(model, Model) and model.simulated


def test_complete_matches_respond() -> None:
    model = _model(EXACT_PIXEL)
    req = _req(_with_crosshair((100, 80)), _text())
    # complete() = respond() plus what every client records: the length and sha256 of the reply
    assert asyncio.run(model.complete(req)) == bound_reply(model.respond(req), model.max_reply_chars)


def test_complete_answers_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34 item 6: finding the crosshair (milliseconds of numpy per image) runs in the model's own
    thread, not on the sweep's event loop, and the reply is the same as computed inline."""
    import threading

    import dvoc_bench.models.simulator.model as sim_model

    where: list[str] = []
    real = sim_model.find_marker

    def spy(image):
        where.append(threading.current_thread().name)
        return real(image)

    monkeypatch.setattr(sim_model, "find_marker", spy)
    model = _model(EXACT_PIXEL)
    req = _req(_with_crosshair((100, 80)), _text())

    async def call() -> tuple[Any, str]:
        return await model.complete(req), threading.current_thread().name

    reply, loop_thread = asyncio.run(call())
    assert len(where) == 1 and where[0] != loop_thread and where[0].startswith(sim_model.THREAD_PREFIX)
    assert reply == bound_reply(_model(EXACT_PIXEL).respond(req), model.max_reply_chars)


# ------------------------------------------------------------------------------------ rates


def test_near_target_and_no_tool_call_rates() -> None:
    sim = {
        **EXACT_PIXEL,
        "near": {"p_zero_below_30": 0.3, "p_zero_30_100": 0.2, "p_reverse_30_100": 0.25},
        "p_no_tool_call": 0.1,
    }
    model = _model(sim)
    n = 400
    near_img, mid_img = _with_crosshair((320, 235)), _with_crosshair((270, 245))  # 14 px / 60 px away
    near = [model.respond(_req(near_img, _text(), seed=s)) for s in range(n)]
    mid = [model.respond(_req(mid_img, _text(), seed=s)) for s in range(n)]
    calls = [json.loads(r.tool_calls[0].arguments) for r in near if r.tool_calls]
    assert _binom_ok(n - len(calls), n, 0.1)
    assert _binom_ok(sum(c["dx"] == 0 and c["dy"] == 0 for c in calls), len(calls), 0.3)
    mid_calls = [json.loads(r.tool_calls[0].arguments) for r in mid if r.tool_calls]
    zeros = sum(c["dx"] == 0 for c in mid_calls)
    reversed_ = sum(c["dx"] == -60 for c in mid_calls)
    assert _binom_ok(zeros, len(mid_calls), 0.2)
    assert _binom_ok(reversed_, len(mid_calls) - zeros, 0.25)
    assert all(c["dx"] in (0, 60, -60) for c in mid_calls)


def _zero_reports(model: SimulatedModel, at: tuple[int, int], n: int) -> int:
    """How many of ``n`` calls (seeds 0..n-1) with the crosshair at ``at`` answer (0, 0)."""
    img = _with_crosshair(at)
    calls = [_args(model, _req(img, _text(), seed=s)) for s in range(n)]
    return sum(c["dx"] == 0 and c["dy"] == 0 for c in calls)


def test_zero_rule_box_stops_on_the_element_not_by_distance() -> None:
    """``near.zero_rule: box``: (0, 0) only while the crosshair is on the box aimed at (or at most 10 px off
    it), whatever the distance to the centre; the distance rates are not used."""
    sim = {
        **EXACT_PIXEL,
        "near": {"zero_rule": "box", "p_zero_in_box": 0.6, "p_zero_box_near": 0.2, "p_zero_below_30": 1.0},
    }
    model = _model(sim)
    n = 300

    def zeros(at: tuple[int, int]) -> int:
        return _zero_reports(model, at, n)

    # SAVE is (300, 230)-(360, 260): inside but 28 px from the centre / 5 px outside / 12 px outside
    assert _binom_ok(zeros((302, 245)), n, 0.6)
    assert _binom_ok(zeros((295, 245)), n, 0.2)
    assert zeros((288, 245)) == 0  # 42 px from the centre, 12 px off the box: never (0, 0)
    assert zeros((330, 272)) == 0  # 27 px below the centre, outside: the distance rate (1.0) is not used


def test_zero_rule_box_splits_the_in_box_rate_by_the_distance_to_the_centre() -> None:
    """``p_zero_in_box_below_15`` / ``_below_30``: on the box, the (0, 0) rate rises as the crosshair nears
    the box's centre (Gemini 3.1 FL: 15 of 17 within 15 px, 48 of 82 at 15-30, 43 of 114 further); the
    distance is the perceived offset's (exact here: no noise)."""
    sim = {
        **EXACT_PIXEL,
        "near": {
            "zero_rule": "box",
            "p_zero_in_box_below_15": 0.9,
            "p_zero_in_box_below_30": 0.5,
            "p_zero_in_box": 0.1,
            "p_zero_box_near": 0.0,
        },
    }
    model = _model(sim)
    n = 300

    def zeros(at: tuple[int, int]) -> int:
        return _zero_reports(model, at, n)

    # SAVE is (300, 230)-(360, 260), centre (330, 245)
    assert _binom_ok(zeros((325, 248)), n, 0.9)  # 6 px from the centre
    assert _binom_ok(zeros((310, 245)), n, 0.5)  # 20 px
    assert _binom_ok(zeros((302, 240)), n, 0.5)  # 28.4 px
    assert _binom_ok(zeros((359, 236)), n, 0.1)  # 30.4 px: the outer rate
    without = {**sim, "near": {"zero_rule": "box", "p_zero_in_box": 0.1}}  # no split: one rate
    model = _model(without)
    assert _binom_ok(zeros((325, 248)), n, 0.1)


def _moved(box: Box, dx: float, dy: float) -> SceneTruth:
    """TRUTH with its target (SAVE) moved by ``(dx, dy)``, same size."""
    moved = Box(box.x0 + dx, box.y0 + dy, box.x1 + dx, box.y1 + dy)
    save = Element("save", "Save", moved)
    return SceneTruth("T1", SIZE, INSTRUCTION, "save", moved, (PANEL, OPEN, save))


@pytest.mark.parametrize("at", [(325, 248), (302, 240), (292, 150), (120, 245)])
def test_the_stop_decision_does_not_peek_at_the_true_box(monkeypatch: pytest.MonkeyPatch, at) -> None:
    """Issue 34, no peeking: with what the model perceives held fixed (its target estimate T^ and the
    crosshair it reads from the same pixels), moving the true box leaves every reply as it was: the (0, 0)
    decision and the in-span axis drop compare the crosshair with the box *around T^*, not with the truth.
    The box moves onto the crosshair and away from it; T^ stays at SAVE's centre."""
    import dvoc_bench.models.simulator.model as sim_model

    monkeypatch.setattr(sim_model, "perceive", lambda *a, **k: TARGET)  # the perceived target, fixed
    sim = {
        "frames": {"pixel": 1},
        "near": {"zero_rule": "box", "p_zero_in_box": 0.7, "p_zero_box_near": 0.5},
        "axis_drop": {"p_x": 0.0, "p_y": 0.0, "p_x_in_span": 0.6, "p_y_in_span": 0.6},
    }
    profile = SimProfile.from_mapping(sim)
    img = _with_crosshair(at)
    cx, cy = at
    # the true box: where it is / centred on the crosshair / 200 px away from both
    truths = [TRUTH, _moved(SAVE.box, cx - TARGET.x, cy - TARGET.y), _moved(SAVE.box, -200.0, -150.0)]
    replies = []
    for truth in truths:
        model = SimulatedModel("sim-test", profile, lambda scene_id, t=truth: t)
        replies.append([_args(model, _req(img, _text(), seed=s)) for s in range(60)])
    assert replies[0] == replies[1] == replies[2]


def test_the_stop_follows_the_perceived_target() -> None:
    """The other side of it: the model stops when *it believes* the crosshair is on the button. With the
    perceived target noisy (scale 40 px), a crosshair on the true centre is stopped at less often than
    with exact perception, and one 40 px off the button sometimes is."""
    near = {"zero_rule": "box", "p_zero_in_box": 1.0, "p_zero_box_near": 1.0}
    exact = _model({**EXACT_PIXEL, "near": near})
    noisy = _model({"frames": {"pixel": 1}, "noise": {"scale_px": 40.0}, "near": near})
    n = 200
    assert _zero_reports(exact, (330, 245), n) == n
    assert _zero_reports(noisy, (330, 245), n) < 0.9 * n
    assert _zero_reports(exact, (330, 200), n) == 0  # 30 px above SAVE: beyond the 10 px near band
    assert _zero_reports(noisy, (330, 200), n) > 0


def test_axis_drop_in_span_applies_while_aligned_with_the_box() -> None:
    """``axis_drop.p_x_in_span``: dx is reported 0 at that rate while the crosshair lies within the x span of
    the box aimed at (at most 10 px outside it), whatever the offset; the rule of ``p_x`` otherwise."""
    model = _model({**EXACT_PIXEL, "axis_drop": {"p_x": 0.0, "p_y": 0.0, "p_x_in_span": 1.0}})
    aligned = [_args(model, _req(_with_crosshair((292, 150)), _text(), seed=s)) for s in range(20)]
    assert {(a["dx"], a["dy"]) for a in aligned} == {(0, 95)}  # 8 px left of SAVE's x span: dx 38 dropped
    a = _args(model, _req(_with_crosshair((320, 150)), _text()))
    assert (a["dx"], a["dy"]) == (0, 95)  # within the span, 10 px off: dropped too
    off = [_args(model, _req(_with_crosshair((280, 150)), _text(), seed=s)) for s in range(20)]
    assert {(a["dx"], a["dy"]) for a in off} == {(50, 95)}  # 20 px left of it: never


def test_shrink_axis_drop_and_informative_confidence() -> None:
    sim = {
        **EXACT_PIXEL,
        "near": {"shrink_below_100": 0.5},
        "axis_drop": {"p": 1.0},
        "confidence": {"by_distance": [{"max_px": 30, "values": [1.0]}, {"max_px": None, "values": [0.8]}]},
    }
    model = _model(sim)
    a = _args(model, _req(_with_crosshair((270, 205)), _text()))  # (60, 40) px, shrunk to (30, 20)
    assert (a["dx"], a["dy"], a["confidence"]) == (30, 0, 1.0)  # the axes are judged before the shrink
    a = _args(model, _req(_with_crosshair((270, 245)), _text()))  # (60, 0): a drop would leave (0, 0)
    assert (a["dx"], a["dy"], a["confidence"]) == (30, 0, 1.0)
    a = _args(model, _req(_with_crosshair((100, 80)), _text()))  # both axes > 30: only the smaller drops
    assert (a["dx"], a["dy"], a["confidence"]) == (230, 0, 0.8)


def test_the_shrink_starts_at_its_edge() -> None:
    """``near.shrink_below_px``: offsets shorter than the edge are shrunk, longer ones reported whole (the
    default edge is the first profiles' 100 px)."""
    at = _with_crosshair((270, 245))  # 60 px left of SAVE's centre
    for edge, expected in ((100.0, 30), (61.0, 30), (60.0, 60), (45.0, 60)):
        near = {"shrink_below_100": 0.5} | ({} if edge == 100.0 else {"shrink_below_px": edge})
        a = _args(_model({**EXACT_PIXEL, "near": near}), _req(at, _text()))
        assert (a["dx"], a["dy"]) == (expected, 0), edge
    near = {"shrink_below_100": 0.5, "shrink_below_px": 100.0}
    assert (
        SimProfile.from_mapping({"near": near}).digest()
        == SimProfile.from_mapping({"near": {"shrink_below_100": 0.5}}).digest()
    )


# ------------------------------------------------------------------------------------ profiles


@pytest.mark.parametrize("path", sorted(CONF.glob("sim-*.yaml")), ids=lambda p: p.name)
def test_profile_yaml_loads(path: Path) -> None:
    cfg = yaml.safe_load(path.read_text())
    assert cfg["kind"] == "simulator" and cfg["provider"] == "simulator" and cfg["api_base"] is None
    assert cfg["model_id"] == "sim/" + path.stem.removeprefix("sim-") and cfg["name"] == path.stem
    ideal = path.stem in ("sim-ideal", "sim-ideal-1568", "sim-ideal-touch")  # hand-set
    native = {"sim-ideal-touch": "touch1000"}.get(path.stem, "pixel")  # the phone agent speaks touch units
    assert cfg["coord_frame"] == (native if ideal else "norm1000")
    assert "v0" in path.read_text() or ideal
    model = SimulatedModel.from_config(cfg, lambda scene_id: TRUTH)
    reply = model.respond(_req(_with_crosshair((100, 80)), _text()))
    assert reply.text is not None or reply.tool_calls


def test_all_four_profiles_exist() -> None:
    names = {p.stem for p in CONF.glob("sim-*.yaml")}
    assert {"sim-ideal", "sim-gemma-4-26b", "sim-gemma-4-31b", "sim-gemini-3.1-flash-lite"} <= names


# The digests of the committed profiles: the digest seeds every call, so a change here changes every
# simulated reply of that model. Simulator v2 (issue 16): profiles re-fitted (repeat rate from identical-input
# pairs) and written exactly as `python -m dvoc_bench.calibrate` writes them; then sim.perception (the
# localiser of the crosshair, set by hand: calibration/overlay.py); then sim-ideal's
# perception.knows_crosshair (issue 52: it reads the crosshair where the prompt states it).
COMMITTED_DIGESTS = {
    "sim-gemini-3.1-flash-lite": "c16cbcf04511081f",
    "sim-gemma-4-26b": "f25caab8a7ef9003",
    "sim-gemma-4-31b": "ee7aba7735a4851d",
    "sim-ideal": "d13c0094f0d7b4fe",
    "sim-ideal-1568": "d13c0094f0d7b4fe",  # the same profile behind a 1568-px input limit
    "sim-ideal-touch": "69e7f968eb238359",  # the same, answering in the touch frame it is asked for
}


def test_committed_profile_digests_are_unchanged() -> None:
    assert {p.stem: load_profile(p).digest() for p in CONF.glob("sim-*.yaml")} == COMMITTED_DIGESTS
    assert SimProfile().digest() == "0f73fb04c2559023"
    assert SimProfile.from_mapping({"som": {}}).digest() == SimProfile().digest()  # a default som is left out


def _error(mapping: Any) -> str:
    with pytest.raises(ConfigError) as e:
        SimProfile.from_mapping(mapping)
    msg = str(e.value)
    assert "\n" not in msg and isinstance(e.value, ValueError)
    return msg


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        # unknown keys, at every depth
        ({"nosie": {}}, "sim.nosie: unknown key; allowed: frames, gain, noise, "),
        (
            {"near": {"p_zero_below_40": 0.1}},
            "sim.near.p_zero_below_40: unknown key; "
            "allowed: p_zero_below_30, p_zero_30_100, p_reverse_30_100, shrink_below_100, shrink_below_px, "
            "zero_rule, p_zero_in_box, p_zero_box_near, p_zero_in_box_below_15, p_zero_in_box_below_30",
        ),
        (
            {"confidence": {"by_distance": [{"max_px": 30, "valeus": [1.0]}]}},
            "sim.confidence.by_distance.0.valeus",
        ),
        (
            {"oneshot": {"frames": {"pixels": 1}}},
            "sim.oneshot.frames.pixels: unknown key; allowed: pixel, norm1000",
        ),
        ({"canvas": [{"size": [800, 600], "noise": {"scale": 1}}]}, "sim.canvas.0.noise.scale: unknown key"),
        # NaN and infinity
        ({"noise": {"scale_px": NAN}}, "sim.noise.scale_px: must be a finite number, got nan"),
        ({"latency_s": INF}, "sim.latency_s: must be a finite number, got inf"),
        ({"gain": [1.0, NAN]}, "sim.gain.1: must be a finite number, got nan"),
        ({"axis_drop": {"max_px": NAN}}, "sim.axis_drop.max_px: must be a number >= 0, or null for no bound"),
        ({"confidence": {"values": [NAN]}}, "sim.confidence.values.0: must be a finite number, got nan"),
        # out of range
        (
            {"near": {"p_zero_below_30": 1.5}},
            "sim.near.p_zero_below_30: must be less than or equal to 1, got 1.5",
        ),
        (
            {"consistency": {"point": -0.1}},
            "sim.consistency.point: must be greater than or equal to 0, got -0.1",
        ),
        ({"noise": {"scale_px": -1}}, "sim.noise.scale_px: must be greater than or equal to 0, got -1"),
        ({"som": {"neighbours": 0}}, "sim.som.neighbours: must be greater than or equal to 1, got 0"),
        ({"confidence": 2}, "sim.confidence.values.0: must be less than or equal to 1, got 2"),
        (
            {"no_task": "salient"},
            "sim.no_task: unknown value 'salient'; allowed: first_element, random_element",
        ),
        ({"noise": {"dist": "gauss"}}, "sim.noise.dist: unknown value 'gauss'; allowed: laplace, student_t"),
        (
            {"oneshot": {"wrong_element_only": "maybe"}},
            "sim.oneshot.wrong_element_only: must be true or false",
        ),
        ({"canvas": [{"gain": [1, 1]}]}, "sim.canvas.0.size: required, not given"),
        # cross-field rules
        (
            {"outlier": {"min_px": 50, "max_px": 40}},
            "sim.outlier.max_px: must be at least min_px (50)",
        ),
        ({"outlier": {"min_px": 300}}, "sim.outlier.max_px: must be at least min_px (300)"),
        (
            {"confidence": {"by_distance": [{"max_px": 30}, {"max_px": 30}]}},
            "sim.confidence.by_distance: max_px must be strictly ascending (item 1: 30 after 30)",
        ),
        (
            {"canvas": [{"size": [800, 600]}, {"size": [800, 600]}]},
            "sim.canvas: each size may appear once; item 1 repeats 800x600 (item 0)",
        ),
        ({"frames": {"pixel": 0.0}}, "sim.frames: the weights must have a positive sum"),
        (
            {"oneshot": {"confidence": {"values": [0.5, 1.0], "probs": [1.0]}}},
            "sim.oneshot.confidence.probs: must have as many items as values (2)",
        ),
        ({"confidence": {"values": [0.5], "probs": [0.0]}}, "sim.confidence.probs: must have a positive sum"),
    ],
)
def test_a_bad_profile_value_is_one_line_naming_the_key(mapping: dict[str, Any], message: str) -> None:
    assert _error(mapping).startswith(message)


def test_a_bad_profile_in_a_model_config_names_the_model() -> None:
    from dvoc_bench.models.config import ModelConfig
    from dvoc_bench.models.factory import build_model

    cfg = ModelConfig(
        name="sim-x",
        kind="simulator",
        model_id="sim/x",
        provider="simulator",
        coord_frame="norm1000",
        sim={"noise": {"scale_px": -1}},
    )
    with pytest.raises(
        ConfigError, match=r"^model sim-x: sim\.noise\.scale_px: must be greater than or equal to 0, got -1$"
    ):
        build_model(cfg, lambda scene_id: TRUTH)


def test_profile_shorthands_and_defaults() -> None:
    prof = SimProfile.from_mapping(
        {
            "frames": {"pixel": 1, "mixed": 3},  # the weights not named are 0; normalised
            "confidence": 0.9,  # a number means always that value
            "oneshot": {"confidence": None},  # null = the default (always 1.0)
            "axis_drop": {"max_px": None},  # null = no bound
            "som": {"confidence": {"values": [0.5, 1.0]}},  # equal probabilities by default
        }
    )
    assert (prof.frames.pixel, prof.frames.norm1000, prof.frames.norm1, prof.frames.mixed) == (
        0.25,
        0.0,
        0.0,
        0.75,
    )
    assert (prof.confidence.values, prof.confidence.probs) == ((0.9,), (1.0,))
    assert prof.oneshot.confidence == SimProfile().oneshot.confidence
    assert prof.axis_drop.max_px == math.inf and SimProfile().axis_drop.max_px == math.inf
    assert prof.som.confidence is not None and prof.som.confidence.probs == (0.5, 0.5)
    assert SimProfile().frames.weights(position_stated=False) == {
        "pixel": 0,
        "norm1000": 1,
        "norm1": 0,
        "mixed": 0,
    }
    with pytest.raises(ValidationError):  # immutable
        prof.noise.scale_px = 3.0  # type: ignore[misc]


def test_canvas_override_replaces_sections() -> None:
    prof = SimProfile.from_mapping(
        {
            "noise": {"scale_px": 1.0},
            "canvas": [{"size": [400, 300], "noise": {"scale_px": 7.0}, "gain": [2, 1]}],
        }
    )
    here = for_canvas(prof, SIZE)
    assert (here.noise.scale_px, here.gain, here.frames) == (7.0, (2.0, 1.0), prof.frames)
    assert for_canvas(prof, Size(800, 600)) is prof


def test_probabilities_are_renormalised_and_validated() -> None:
    prof = SimProfile.from_mapping({"confidence": {"values": [0.8, 0.9, 1.0], "probs": [0.10, 0.55, 0.34]}})
    assert math.isclose(sum(prof.confidence.probs), 1.0)
    with pytest.raises(ValueError, match="sim.near.p_zero_below_30"):
        SimProfile.from_mapping({"near": {"p_zero_below_30": 1.5}})
    with pytest.raises(ValueError, match="sim.no_task"):
        SimProfile.from_mapping({"no_task": "salient"})


def test_text_only_reads_the_estimate_from_the_papers_history() -> None:
    """No overlay, no position line: the model takes the last history line's arrow as where it is (the
    paper's undamped point), and without a history it does not know (issue 16 item 1, text part)."""
    from dvoc_bench.core.geometry import Offset, Point
    from dvoc_bench.models.simulator.reading import history_position
    from dvoc_bench.protocol.paper import dvoc_prompt
    from dvoc_bench.protocol.prompts import HistoryEntry

    h = [
        HistoryEntry(Point(100, 50), Offset(40, 20), 0.9, Point(140, 70)),
        HistoryEntry(Point(140, 70), Offset(100, 90), 0.9, Point(190, 115)),
    ]
    text = dvoc_prompt(instruction=INSTRUCTION, overlay="none", predict="relative", history=h)
    assert history_position(text) == Point(240, 160)  # 140 + 100, 70 + 90: what the text says, not 190, 115
    model = _model(EXACT_PIXEL)
    a = _args(model, _req(BASE, text))
    assert (a["dx"], a["dy"]) == (TARGET.x - 240, TARGET.y - 160)
    first = dvoc_prompt(instruction=INSTRUCTION, overlay="none", predict="relative", history=[])
    assert history_position(first) is None
    assert (_args(model, _req(BASE, first))["dx"], _args(model, _req(BASE, first))["dy"]) == (0, 0)


def test_the_same_frame_is_looked_at_once_and_its_evidence_is_the_pixels(monkeypatch) -> None:
    """The identical first frames of repeats are analysed once (the evidence cache), and a different frame is
    analysed anew: the cache is keyed by the pixels, not by the scene or the seed."""
    import dvoc_bench.models.simulator.model as sim_model

    looked: list[tuple[int, int]] = []
    real = sim_model.find_marker

    def counting(image: np.ndarray):
        looked.append(image.shape[:2])
        return real(image)

    monkeypatch.setattr(sim_model, "find_marker", counting)
    model = _model(EXACT_PIXEL)
    a, b = _with_crosshair((200, 150)), _with_crosshair((260, 110))
    ev_a = model.evidence(_req(a, _text(), seed=1))
    assert model.evidence(_req(a.copy(), _text(), seed=2)) == ev_a  # same pixels, other seed: cached
    assert len(looked) == 1
    ev_b = model.evidence(_req(b, _text(), seed=1))
    assert len(looked) == 2
    assert ev_a is not None and ev_b is not None
    assert abs(ev_a.point.x - 200) <= 1 and abs(ev_b.point.x - 260) <= 1
