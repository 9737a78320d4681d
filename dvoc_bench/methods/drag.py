"""Two-point (drag) tasks: where the drag starts and where it ends, in one trial.

A task whose truth has two ends (:attr:`dvoc_bench.core.scene.SceneTruth.ends`: CUActSpot's drags) runs
here instead of the method's one-point ``run``:

- ``oneshot`` asks for both points in ONE call, in the family's own drag form
  (:mod:`dvoc_bench.protocol.drag`; ``tool_call``: the ``drag_points`` tool), each point mapped through
  the model's declared frame and the image sent exactly as a single point; on a miss of either point
  (the one-shot retry rule, on each end's target) it asks again, up to ``max_attempts`` calls.
- every other method grounds each end on its own, the end's task being the drag's text with a line saying
  which end to point at: DVOC runs its loop once per end, Set-of-Mark picks a mark per end, zoom zooms per
  end. A method that starts from a point (DVOC) starts the end's loop where the start's landed
  (``dvoc.drag_start=source``) or at the model's own one-shot answer for the end (``model``, asked first).

The result's ``final_point`` is the start's point, ``drop_point`` the end's (Set-of-Mark keeps both
picks in its ``som`` block: the start's as for one point, the end's in ``drop_*``, :func:`both_picks`);
every step says which end it was for (``Step.drag_end``: ``from``, ``to``, or ``both`` for a one-call
answer). A failed call ends the trial as an error with what it had.
"""

from __future__ import annotations

import dataclasses
import hashlib

from dvoc_bench.core.geometry import Point, clamp_point
from dvoc_bench.core.records import SomRecord, Step, TrialResult, TrialSpec
from dvoc_bench.core.scene import Snapshot
from dvoc_bench.core.scoring import score
from dvoc_bench.methods.common import (
    TrialEnv,
    base_step,
    call_model,
    call_seed,
    checked,
    error_result,
    finish,
    to_screen,
)
from dvoc_bench.methods.registry import MethodInfo
from dvoc_bench.protocol import get_protocol
from dvoc_bench.protocol.drag import drag_parser, drag_prompt, drag_tools, split

RETRY_NOTE = "Your previous answer, from {a} to {b} in these units, did not do this drag; look again."
"""The sentence added to a one-call drag's retry (our wording)."""


def is_drag(env: TrialEnv) -> bool:
    """True when the trial's task has two points (a drag)."""
    return len(env.snapshot.truth.ends) == 2


def ends_grounded(info: MethodInfo, two_point: bool) -> int:
    """How many times a trial runs the method's one-point grounding: twice on a drag (once per end), once
    otherwise; one-shot asks for both ends in one call per attempt, so once."""
    return 2 if two_point and info.name != "oneshot" else 1


def end_start_calls(info: MethodInfo, spec: TrialSpec, two_point: bool) -> int:
    """Calls a drag adds besides its groundings: the end's one-shot answer DVOC starts from with
    ``dvoc.drag_start=model`` (one ``click_at``; none when the method starts from one-shot anyway)."""
    return int(two_point and info.uses_start and spec.drag_start == "model" and spec.start_from != "oneshot")


def drag_bound(info: MethodInfo, spec: TrialSpec, two_point: bool) -> int | None:
    """The most model calls a trial can make (:meth:`MethodInfo.call_bound`), on a two-point task when
    ``two_point``: a one-point trial's per end grounded (:func:`ends_grounded`) plus
    :func:`end_start_calls`; ``None`` when the method does not say."""
    one = info.call_bound(spec)
    if one is None:
        return None
    return ends_grounded(info, two_point) * one + end_start_calls(info, spec, two_point)


def drag_calls(info: MethodInfo, spec: TrialSpec, env: TrialEnv) -> int:
    """:func:`drag_bound` of the trial's own task (0 when the method does not say)."""
    return drag_bound(info, spec, is_drag(env)) or 0


def end_env(env: TrialEnv, i: int) -> TrialEnv:
    """The environment of end ``i`` (0: start, 1: end): the same screen and model, the end's truth (its
    target, its instruction, its id for the simulator's truth lookup)."""
    snap = env.snapshot
    end = Snapshot(truth=snap.truth.ends[i], image=snap.image, content_hash=snap.content_hash)
    return dataclasses.replace(env, snapshot=end)


def end_seed(seed: int) -> int:
    """The seed the end's run uses (its calls differ from the start's, reproducibly)."""
    return int(hashlib.sha256(f"drag-end:{seed}".encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


async def run_drag(info: MethodInfo, spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """One two-point trial of method ``info``; never raises for a model-side failure."""
    if info.name == "oneshot":
        return await oneshot_drag(spec, env)
    first = await info.run(spec, end_env(env, 0))
    for st in first.steps:
        st.drag_end = "from"
    if first.status != "ok" or first.stop_reason == "not_present":  # a refused start refuses the drag
        return first
    to_spec = dataclasses.replace(spec, seed=end_seed(spec.seed))
    if info.uses_start:
        if spec.drag_start == "model":
            to_spec = dataclasses.replace(to_spec, start=None, start_from="oneshot")
        else:
            landed = first.final_point or env.snapshot.size.centre.as_list()
            to_spec = dataclasses.replace(to_spec, start=landed, start_from="plan")
    second = await info.run(to_spec, end_env(env, 1))
    for st in second.steps:
        st.drag_end = "to"
        st.index += len(first.steps)
    return finish(
        TrialResult(
            status=second.status,
            stop_reason=second.stop_reason,
            final_point=first.final_point,
            drop_point=second.final_point,
            iterations=first.iterations + second.iterations,
            error_class=second.error_class,
            error=second.error,
            som=both_picks(first, second),
            steps=first.steps + second.steps,
        )
    )


def both_picks(first: TrialResult, second: TrialResult) -> SomRecord | None:
    """The Set-of-Mark record of a drag: the start's (``first.som``, its detector and marks) with the
    end's pick beside it (``drop_*``); ``None`` for a method without marks."""
    if first.som is None:
        return None
    end = second.som
    if end is None:
        return first.som
    return dataclasses.replace(
        first.som,
        drop_chosen_id=end.chosen_id,
        drop_chosen_valid=end.chosen_valid,
        drop_point=end.point,
        drop_hit=end.hit,
        drop_target_detected=end.target_detected,
        drop_mark_box=(
            end.mark_boxes[end.chosen_id - 1]
            if end.chosen_valid and end.chosen_id is not None and 0 < end.chosen_id <= len(end.mark_boxes)
            else None
        ),
        drop_start_source=end.start_source,
    )


async def oneshot_drag(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Both points in one call per attempt (module docstring)."""
    snap = env.snapshot
    start_box, end_box = (e.target_box for e in snap.truth.ends)
    view = env.view()
    shown = await env.clean_frame(view)
    protocol = get_protocol(spec.protocol)
    rule_name = protocol.oneshot_retry_rule(env.oneshot_retry_rule)
    frame = env.rule_for(spec.coord_frame)
    style = env.prompt_style if spec.protocol in ("v1", "-") else "tool_call"
    parser = drag_parser(style, frame)
    steps: list[Step] = []
    last: tuple[Point, Point] | None = None
    for i in range(spec.max_attempts):
        text = drag_prompt(style, instruction=snap.instruction, seen=view.sent, rule=frame)
        if last is not None:
            a, b = (frame.from_pixels(view.to_sent(p), view.sent) for p in last)
            text += "\n" + RETRY_NOTE.format(a=f"({a.x:g}, {a.y:g})", b=f"({b.x:g}, {b.y:g})")
        tools = drag_tools() if style == "tool_call" else []
        req = env.request(shown, text, tools, call_seed(spec.seed, i))
        out = await call_model(env, req, "point", parser=parser)
        step = base_step(
            spec, i, "click", req, out, shown.sha, env.model_identity, view, rule=frame, style=style
        )
        step.drag_end = "both"
        steps.append(step)
        if out.error is not None:
            res = error_result(steps, out.error, last[0] if last else None, i + 1)
            res.drop_point = last[1].as_list() if last else None
            return res
        assert out.parsed is not None
        ends = [to_screen(checked(step, p, "point", frame, req.image_size), view) for p in split(out.parsed)]
        if not all(isinstance(p, Point) for p in ends):
            continue  # unusable (or outside the frame): recorded, ask again
        start, end = (clamp_point(p, snap.size) for p in ends if isinstance(p, Point))
        step.values_px = {"x": start.x, "y": start.y, "to_x": end.x, "to_y": end.y}
        step.next_draft = start.as_list()
        last = (start, end)
        s = score(start, start_box, spec.epsilon, spec.hit_radius_min)
        e = score(end, end_box, spec.epsilon, spec.hit_radius_min)
        step.true_dist_px = None if s.final_dist_px is None else round(s.final_dist_px, 3)
        if getattr(s, rule_name) and getattr(e, rule_name):
            return finish(TrialResult(status="ok", stop_reason="hit", final_point=start.as_list(),
                                      drop_point=end.as_list(), iterations=i + 1, steps=steps))  # fmt: skip
    return finish(
        TrialResult(
            status="ok",
            stop_reason="attempts_exhausted",
            final_point=last[0].as_list() if last else None,
            drop_point=last[1].as_list() if last else None,
            iterations=spec.max_attempts,
            steps=steps,
        )
    )
