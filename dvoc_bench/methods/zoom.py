"""Iterative zoom: ask for the target's point on the whole screen, crop a window around the answer, send
the crop (downscaled to the model's input limits, never upscaled), ask again, ``zoom.rounds`` times.

Each crop is cut from the full-resolution screenshot: its sides are the previous crop's divided by
``zoom.factor`` (aspect kept, the shorter side at least ``zoom.min_crop``), centred on the last answer and
shifted inside the screen (:func:`dvoc_bench.draw.sending.zoom_window`). Every answer is read in the answer
frame of the image sent (pixels / 0-1000 / 0-1 of the crop as sent) and mapped back to screenshot pixels
through the crop (:meth:`dvoc_bench.draw.sending.View.to_original`); the next crop is placed from that point.
The request carries the crop as metadata (``ModelRequest.crop``; the simulator maps its truth through
it, a real model never sees it). Every round's frame is stored; the step records its crop, scale and
sent size.

The final point is the last usable answer (clamped to the screen), scored like every other method.
``zoom_dvoc`` runs the same rounds, then the DVOC loop on the last crop (the crosshair drawn on the crop as
sent, the draft clamped to the screen) from the last answer, up to ``loop.max_iterations`` more calls. A round
without a usable answer ends the trial there (``abort_stuck``, the last usable point kept; ``protocol=paper``
reads a missing answer as (0, 0) of the image sent, as the authors' harness did). With ``offer_absent`` the
first round (the whole screen) also offers ``not_present`` (docs/absent.md), which ends the trial without a
click; the crops do not (a crop may leave the target out). The prompt of every
round is the protocol's one-shot question about the image sent, with one sentence saying it is an
enlarged part of the screen.
"""

from __future__ import annotations

from dvoc_bench.core.geometry import Frame, Point, clamp_point
from dvoc_bench.core.records import Step, StopReason, TrialResult, TrialSpec
from dvoc_bench.core.scoring import score
from dvoc_bench.draw.sending import View, zoom_window
from dvoc_bench.methods.common import (
    TrialEnv,
    base_step,
    call_model,
    call_seed,
    checked,
    error_result,
    finish,
    refused_result,
    to_screen,
)
from dvoc_bench.methods.dvoc import refine
from dvoc_bench.methods.registry import method
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol import Parsed, absent, get_protocol, parse_reply, tools_for

ZOOMED_NOTE = "This image is an enlarged part of the screen around the element; it shows only that part."
"""The sentence added to the prompt of every round after the first (our wording)."""


def _point(reply: Reply) -> Parsed:
    return parse_reply(reply, "point")


def schedule(label: str) -> tuple[float, int, int]:
    """``(factor, rounds, min_crop)`` of a trial's ``zoom`` field (``2/2/256``)."""
    factor, rounds, min_crop = label.split("/")
    return float(factor), int(rounds), int(min_crop)


async def narrow(spec: TrialSpec, env: TrialEnv) -> tuple[list[Step], Point | None, View, TrialResult | None]:
    """The zoom rounds: ``(steps, last usable point, last view, the result when the trial ended early)``."""
    snap = env.snapshot
    factor, rounds, min_crop = schedule(spec.zoom)
    protocol = get_protocol(spec.protocol)
    frame = Frame(spec.coord_frame)
    view = env.view()
    point: Point | None = None
    steps: list[Step] = []
    for i in range(rounds + 1):
        if i > 0:
            assert point is not None
            view = env.view(zoom_window(point, view.crop, snap.size, factor, min_crop))
        shown = await env.clean_frame(view)
        text = protocol.oneshot_prompt(
            instruction=snap.instruction, size=view.sent, frame=frame, attempt=0, previous=None
        )
        if i > 0:
            text = f"{ZOOMED_NOTE}\n{text}"
        tools = tools_for("point")
        offer = spec.offer_absent and i == 0  # asked on the whole screen only: a crop may not show it
        if offer:
            text, tools = f"{text}\n\n{absent.TOOL_SENTENCE}", absent.offer_tools(tools)
        req = env.request(shown, text, tools, call_seed(spec.seed, i))
        out = await call_model(env, req, "point", parser=absent.tool_reader(_point) if offer else None)
        rule = env.rule_for(spec.coord_frame)
        step = base_step(
            spec,
            i,
            "click",
            req,
            out,
            shown.sha,
            env.model_identity,
            view,
            rule=rule,
        )
        steps.append(step)
        if out.error is not None:
            return steps, point, view, error_result(steps, out.error, point, i + 1)
        assert out.parsed is not None
        if out.parsed.status == "not_present":
            return steps, point, view, refused_result(steps, i + 1)
        answer = to_screen(checked(step, out.parsed, "point", rule, req.image_size), view)  # never clamped
        if not isinstance(answer, Point):
            if not protocol.missing_answer_is_zero:
                return steps, point, view, _done(steps, point, i + 1, "abort_stuck")
            answer = view.to_original(Point(0.0, 0.0))
        step.values_px = {"x": answer.x, "y": answer.y}
        point = clamp_point(answer, snap.size)
        step.next_draft = point.as_list()
        s = score(point, snap.target_box, spec.epsilon, spec.hit_radius_min)
        step.true_dist_px = round(s.final_dist_px, 3) if s.final_dist_px is not None else None
    return steps, point, view, None


@method(
    "zoom",
    knobs=("protocol", "zoom"),
    description="ask on the whole screen, crop around the answer, ask again on the crop (zoom.rounds times)",
    max_calls=lambda spec: 1 + schedule(spec.zoom)[1],
)
async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run one zoom trial; never raises for a model-side failure."""
    steps, point, _, ended = await narrow(spec, env)
    return ended or _done(steps, point, len(steps), "max_iterations")


@method(
    "zoom_dvoc",
    knobs=("protocol", "alpha", "overlay", "predict", "zoom"),
    description="zoom, then DVOC inside the last crop from the zoomed answer",
    max_calls=lambda spec: 1 + schedule(spec.zoom)[1] + spec.max_iterations,
)
async def run_zoom_dvoc(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Zoom rounds, then the DVOC loop on the last crop (crosshair drawn on it) from the last answer."""
    steps, point, view, ended = await narrow(spec, env)
    if ended is not None or point is None:
        return ended or _done(steps, point, len(steps), "abort_stuck")
    return await refine(spec, env, point, view, steps)


def _done(steps: list[Step], point: Point | None, iterations: int, reason: StopReason) -> TrialResult:
    return finish(
        TrialResult(
            status="ok",
            stop_reason=reason,
            final_point=point.as_list() if point else None,
            iterations=iterations,
            steps=steps,
        )
    )
