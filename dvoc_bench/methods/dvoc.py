"""DVOC: draw the draft, ask for the offset to the target, apply a damped correction, repeat.

The loop runs in screenshot pixels; what the model sees and reads is in pixels of the image sent (the
screenshot downscaled to the model's input limits, :mod:`dvoc_bench.draw.sending`): the crosshair is drawn
there at the style's sizes, the prompt and the history state positions there, and the answer is mapped
back before the correction."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from dvoc_bench.core import control
from dvoc_bench.core.control import Report
from dvoc_bench.core.geometry import Frame, Offset, Point
from dvoc_bench.core.records import AnswerKind, Step, TrialResult, TrialSpec
from dvoc_bench.draw.render import draw_overlay
from dvoc_bench.draw.sending import View
from dvoc_bench.methods.common import (
    TrialEnv,
    base_step,
    call_model,
    call_seed,
    checked,
    error_result,
    finish,
    refused_result,
    to_pixels,
    to_screen,
)
from dvoc_bench.methods.registry import method
from dvoc_bench.models.base import Reply
from dvoc_bench.protocol import HistoryEntry, absent, get_protocol, parse_reply, tools_for
from dvoc_bench.protocol.parse import Parsed


@method(
    "dvoc",
    knobs=("protocol", "alpha", "overlay", "predict"),
    uses_start=True,
    description="draw the guess, ask for the offset to the target, apply a damped correction, repeat",
    max_calls=lambda spec: spec.max_iterations + (spec.start_from == "oneshot"),
)
async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run one DVOC trial from ``spec.start`` (``start_from="oneshot"``: from the model's own one-shot
    answer, asked first as step 0; the image centre when that answer is unusable); never raises for a
    model-side failure. ``iterations`` counts the DVOC calls only."""
    if spec.start_from != "oneshot":
        assert spec.start is not None, "DVOC needs a start point"
        return await refine(spec, env, Point(*spec.start), env.view())
    from dvoc_bench.methods import oneshot

    first = await oneshot.run(dataclasses.replace(spec, max_attempts=1), env)
    if first.status != "ok":
        return first
    start = first.final_point or env.snapshot.size.centre.as_list()
    spec = dataclasses.replace(spec, start=start, start_from="plan")
    loop = await refine(spec, env, Point(*start), env.view())
    for st in loop.steps:
        st.index += len(first.steps)
    loop.steps = first.steps + loop.steps
    return finish(loop)


def _reader(kind: AnswerKind) -> Callable[[Reply], Parsed]:
    """The reader of a DVOC reply that may be the ``not_present`` tool."""
    return absent.tool_reader(lambda reply: parse_reply(reply, kind))


async def refine(
    spec: TrialSpec, env: TrialEnv, start: Point, view: View, steps: list[Step] | None = None
) -> TrialResult:
    """The DVOC loop from ``start`` (screenshot pixels) on ``view`` (the whole screen, or a zoom crop): at
    most ``spec.max_iterations`` calls, numbered after the ``steps`` already made (kept in the result)."""
    snap = env.snapshot
    size, target = snap.size, snap.target_box.centre
    protocol = get_protocol(spec.protocol)
    frame = Frame(spec.coord_frame)
    # the config's one mapping: what the overlay and the prompt write is what its answers are read with
    mapping = env.rule_for(spec.coord_frame).mapping
    kind: AnswerKind = "offset" if spec.predict == "relative" else "point"
    policy = spec.loop
    draft = start
    reports: list[Report] = []
    history: list[HistoryEntry] = []
    steps = list(steps or [])
    first = len(steps)
    sent = view.sent
    for n in range(spec.max_iterations):
        i = first + n
        shown_draft = view.to_sent(draft)
        label = None
        if spec.overlay != "none":
            label = protocol.overlay_label(shown_draft, frame, sent, env.style.circle_radius, mapping)
        shown = await env.render(  # in the render pool: the other trials keep running
            draw_overlay,
            protocol.drawn_point(shown_draft),
            view=view,
            mode=spec.overlay,
            iteration=n,
            position_label=label,
            style=env.style,
            labels=spec.label_placement,
        )
        text = protocol.dvoc_prompt(
            instruction=snap.instruction,
            size=sent,
            frame=frame,
            overlay=spec.overlay,
            predict=spec.predict,
            draft=shown_draft,
            iteration=n,
            history=history,
            circle_radius=env.style.circle_radius,
            labels=spec.label_placement,
            mapping=mapping,
        )
        tools = tools_for(kind)
        if spec.offer_absent:  # the "not present" answer (docs/absent.md)
            text, tools = f"{text}\n\n{absent.TOOL_SENTENCE}", absent.offer_tools(tools)
        req = env.request(shown, text, tools, call_seed(spec.seed, i))
        out = await call_model(env, req, kind, parser=_reader(kind) if spec.offer_absent else None)
        rule = env.rule_for(spec.coord_frame)
        step = base_step(
            spec,
            i,
            "verify",
            req,
            out,
            shown.sha,
            env.model_identity,
            view,
            rule=rule,
        )
        step.draft, step.true_dist_px = draft.as_list(), round(draft.dist(target), 3)
        steps.append(step)
        if out.error is not None:
            return error_result(steps, out.error, draft, i + 1)
        assert out.parsed is not None
        if out.parsed.status == "not_present":
            return refused_result(steps, i + 1)
        if protocol.checks_offset_range:  # an answer outside its frame is recorded, never clamped
            value = to_screen(checked(step, out.parsed, kind, rule, req.image_size), view)
        else:  # the authors' harness moved by whatever it read
            value = to_screen(to_pixels(out.parsed, kind, spec.coord_frame, req), view)
        if isinstance(value, Point):  # absolute answer: the loop still works on offsets
            step.values_px = {"x": value.x, "y": value.y}
            value = value - draft
        elif isinstance(value, Offset):
            step.values_px = {"dx": value.dx, "dy": value.dy}
        confidence = out.parsed.confidence
        if value is None and protocol.missing_answer_is_zero:  # no usable numbers: (0, 0), confidence 0
            value, confidence = Offset(0.0, 0.0), 0.0
        report = Report(value, confidence)
        reports.append(report)
        step.reported_offset_px = value.as_list() if value is not None else None
        decision = control.decide(reports, policy)
        step.decision = decision
        nxt = draft
        if decision == "refine":
            a = control.alpha(spec.alpha, reports, constant=spec.alpha_constant, adaptive=env.adaptive)
            corr = control.correct(draft, value, a, size)
            step.alpha, nxt = a, corr.next_draft
            step.step_raw, step.step_clamped = corr.step_raw.as_list(), corr.step_clamped.as_list()
        step.next_draft = nxt.as_list()
        history.append(  # as the model saw them: in pixels of the image sent
            HistoryEntry(
                draft=shown_draft,
                reported=None if value is None else view.offset_to_sent(value),
                confidence=confidence,
                next_draft=view.to_sent(nxt),
            )
        )
        if decision != "refine":
            return finish(
                TrialResult(
                    status="ok",
                    stop_reason=decision,
                    final_point=draft.as_list(),
                    iterations=i + 1,
                    steps=steps,
                )
            )
        draft = nxt
    return finish(
        TrialResult(
            status="ok",
            stop_reason="max_iterations",
            final_point=draft.as_list(),
            iterations=first + spec.max_iterations,
            steps=steps,
        )
    )
