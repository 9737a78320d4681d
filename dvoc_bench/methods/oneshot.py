"""One-shot: ask for the target's (x, y) up to ``max_attempts`` times, with no visual feedback.

After each answer the harness checks it with the protocol's retry rule (``oneshot.retry_rule``, default:
inside the target box; the paper's radius rule under ``protocol=paper``) and, on a miss, asks again with
the text saying the previous answer missed. The same clean screenshot is sent every time (downscaled to the
model's input limits and at the size its declared resize gives; the prompt states the size sent, and its
previous answer in those pixels). The final point is the last usable answer mapped back to the screenshot
(clamped to it; an answer outside its frame's declared range is recorded ``out_of_frame`` and not used).

With a native ``prompt_style`` (protocol ``v1`` only; the ``paper`` protocol keeps the authors' wording) the
request is the family's own (:mod:`dvoc_bench.protocol.native`), with no tool, and the reply is read in its
format (docs/frames.md).
"""

from __future__ import annotations

from dvoc_bench.core.geometry import Frame, Point, clamp_point
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.core.scoring import score
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
from dvoc_bench.methods.registry import method
from dvoc_bench.protocol import absent, get_protocol, tools_for
from dvoc_bench.protocol.native import native_prompt, native_text, point_parser


@method(
    "oneshot",
    knobs=("protocol",),
    description="ask for the target's (x, y), retry on a miss",
    max_calls=lambda spec: spec.max_attempts,
)
async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run one one-shot trial; never raises for a model-side failure."""
    snap = env.snapshot
    size, box = snap.size, snap.target_box
    view = env.view()
    shown = await env.clean_frame(view)
    previous: Point | None = None
    protocol = get_protocol(spec.protocol)
    rule = protocol.oneshot_retry_rule(env.oneshot_retry_rule)
    frame = env.rule_for(spec.coord_frame)
    style = env.prompt_style if spec.protocol in ("v1", "-") else "tool_call"
    parser = point_parser(style, frame)
    if spec.offer_absent:  # the "not present" answer, in the tool list or the family's own form
        parser = (
            absent.tool_reader(parser)
            if style == "tool_call"
            else absent.native_reader(style, parser, native_text)
        )
    steps = []
    for i in range(spec.max_attempts):
        shown_previous = None if previous is None else view.to_sent(previous)
        if style == "tool_call":
            text = protocol.oneshot_prompt(
                instruction=snap.instruction,
                size=view.sent,
                frame=Frame(spec.coord_frame),
                attempt=i,
                previous=shown_previous,
                mapping=frame.mapping,
            )
            tools = tools_for("point")
            if spec.offer_absent:
                text, tools = f"{text}\n\n{absent.TOOL_SENTENCE}", absent.offer_tools(tools)
        else:
            text = native_prompt(
                style, instruction=snap.instruction, seen=view.sent, rule=frame, previous=shown_previous
            )
            tools = []
            if spec.offer_absent:
                text = f"{text}\n{absent.native_sentence(style)}"
        req = env.request(shown, text, tools, call_seed(spec.seed, i))
        out = await call_model(env, req, "point", parser=parser)
        step = base_step(
            spec, i, "click", req, out, shown.sha, env.model_identity, view, rule=frame, style=style
        )
        steps.append(step)
        if out.error is not None:
            return error_result(steps, out.error, previous, i + 1)
        assert out.parsed is not None
        if out.parsed.status == "not_present":
            return refused_result(steps, i + 1)
        answer = to_screen(checked(step, out.parsed, "point", frame, req.image_size), view)
        if not isinstance(answer, Point):
            if not protocol.missing_answer_is_zero:
                continue  # unusable reply: recorded, ask again (the text repeats the last usable answer)
            answer = view.to_original(Point(0.0, 0.0))  # a click at (0, 0), as the authors' harness did
        step.values_px = {"x": answer.x, "y": answer.y}
        previous = clamp_point(answer, size)
        step.next_draft = previous.as_list()
        s = score(previous, box, spec.epsilon, spec.hit_radius_min)
        step.true_dist_px = round(s.final_dist_px, 3) if s.final_dist_px is not None else None
        if getattr(s, rule) and snap.truth.absent is None:  # an absent target is never hit: "missed"
            return finish(
                TrialResult(
                    status="ok",
                    stop_reason="hit",
                    final_point=previous.as_list(),
                    iterations=i + 1,
                    steps=steps,
                )
            )
    return finish(
        TrialResult(
            status="ok",
            stop_reason="attempts_exhausted",
            final_point=previous.as_list() if previous else None,
            iterations=spec.max_attempts,
            steps=steps,
        )
    )
