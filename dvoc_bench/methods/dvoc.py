"""DVOC: draw the draft, ask for the offset to the target, apply a damped correction, repeat (§4)."""

from __future__ import annotations

import dataclasses

from dvoc_bench import control
from dvoc_bench.control import PolicyConfig, Report
from dvoc_bench.geometry import Frame, Offset, Point
from dvoc_bench.methods.common import (
    TrialEnv,
    base_step,
    call_model,
    call_seed,
    error_result,
    finish,
    to_pixels,
)
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.protocol import HistoryEntry, get_protocol, tools_for
from dvoc_bench.records import TrialResult, TrialSpec
from dvoc_bench.registry import method
from dvoc_bench.render import draw_overlay


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
        return await refine(spec, env)
    from dvoc_bench.methods import oneshot

    first = await oneshot.run(dataclasses.replace(spec, max_attempts=1), env)
    if first.status != "ok":
        return first
    start = first.final_point or env.snapshot.size.centre.as_list()
    loop = await refine(dataclasses.replace(spec, start=start, start_from="plan"), env)
    for st in loop.steps:
        st.index += len(first.steps)
    loop.steps = first.steps + loop.steps
    return finish(loop)


async def refine(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """The DVOC loop from ``spec.start``."""
    snap = env.snapshot
    size, target = snap.size, snap.target_box.centre
    protocol = get_protocol(spec.protocol)
    frame = Frame(spec.coord_frame)
    kind = "offset" if spec.predict == "relative" else "point"
    policy = PolicyConfig(epsilon=spec.epsilon, threshold=spec.conf_threshold, window=spec.window)
    assert spec.start is not None, "DVOC needs a start point"
    draft = Point(*spec.start)
    reports: list[Report] = []
    history: list[HistoryEntry] = []
    steps = []
    for i in range(spec.max_iterations):
        label = None
        if spec.overlay != "none":
            label = protocol.overlay_label(draft, frame, size, env.style.circle_radius)
        shown = await env.render(  # in the render pool: the other trials keep running
            draw_overlay,
            protocol.drawn_point(draft),
            mode=spec.overlay,
            iteration=i,
            position_label=label,
            style=env.style,
        )
        text = protocol.dvoc_prompt(
            instruction=snap.instruction,
            size=size,
            frame=frame,
            overlay=spec.overlay,
            predict=spec.predict,
            draft=draft,
            iteration=i,
            history=history,
            circle_radius=env.style.circle_radius,
        )
        req = ModelRequest(
            text=text,
            image_png=shown.png,
            image_size=size,
            tools=tools_for(kind),
            scene_id=snap.scene_id,
            seed=call_seed(spec.seed, i),
            params=env.params,
            image_rgb=shown.image,
        )
        out = await call_model(env, req, kind)
        step = base_step(spec, i, "verify", req, out, shown.sha, env.model_identity)
        step.draft, step.true_dist_px = draft.as_list(), round(draft.dist(target), 3)
        steps.append(step)
        if out.error is not None:
            return error_result(steps, out.error, draft, i + 1)
        assert out.parsed is not None
        value = to_pixels(out.parsed, kind, spec.coord_frame, req)
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
        history.append(HistoryEntry(draft=draft, reported=value, confidence=confidence, next_draft=nxt))
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
            iterations=spec.max_iterations,
            steps=steps,
        )
    )
