"""Set-of-Mark: detector -> numbered marks -> the model picks a number -> click that box's centre.

One trial (seed ``ui-grounding-som.txt``):

1. The sweep's detector (``env.detector``) finds boxes on the clean screenshot (pixel backends once per
   screenshot; the oracle per trial, its errors seeded by the trial).
2. Boxes covering more than ``detect.max_area_frac`` of the screen are dropped; the rest are numbered by
   score and drawn (:mod:`dvoc_bench.draw.som_render`); the marked frame is stored like every frame.
3. One ``select_element(id, confidence)`` call with the element list in the model's frame
   (:mod:`dvoc_bench.protocol.som`). A valid id puts the final point on that mark's centre
   (``stop_reason = "selected"``). A reply naming no valid id (unknown number, no usable call) is recorded
   as a parse error and ends the trial without a point (``"no_valid_id"``).
4. The seed's fallback: when the detector fails (``DetectorError``) or leaves nothing to mark, the model
   still gets the plain screenshot, with an empty element list and ``grounding.error`` saying why; ``som``
   asks one ``click_at`` on it (:func:`dvoc_bench.protocol.som.som_fallback_prompt`) and its answer is the
   final point; ``som_dvoc`` runs plain DVOC from the centre. Both end ``stop_reason =
   "grounding_error"`` with ``som.marks = 0`` and ``som.grounding_error`` set.

Besides the usual fields, a SoM trial records in its ``som`` field
(:class:`~dvoc_bench.core.records.SomRecord`)
the detector backend, the boxes it found, the marks drawn (``mark_boxes``: ``[x0, y0, x1, y1, score]`` in
harness pixels, id = position + 1), the tag placement and how many tags overlap another (``tag_layout``,
``tag_overlaps``), whether any mark covers the target centre (``target_detected``: the
detector's recall for the task), the detector's time for the screenshot, and the chosen id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from dvoc_bench.core.geometry import Frame, Point, clamp_point
from dvoc_bench.core.records import ErrorClass, SomRecord, Step, StopReason, TrialResult, TrialSpec
from dvoc_bench.detect.types import DetectorError
from dvoc_bench.draw.som_render import Mark, draw_marks, marks_from_detections, plan_marks
from dvoc_bench.methods.common import (
    CallOutcome,
    TrialEnv,
    base_step,
    call_model,
    call_seed,
    checked,
    finish,
    to_screen,
)
from dvoc_bench.methods.registry import method
from dvoc_bench.models.base import ModelCallError, ModelRequest, Reply
from dvoc_bench.protocol import Parsed, absent, get_protocol, parse_reply, tools_for
from dvoc_bench.protocol.som import parse_select, som_fallback_prompt, som_tools

_UNKNOWN_ID_RE = re.compile(r"unknown_id:(\d+)")


@dataclass
class Selection:
    """Outcome of the SoM part of a trial."""

    result: TrialResult
    """``som`` filled with the detector and the pick; ``steps`` holds the select call (if one was made)."""
    point: Point | None
    """Centre of the chosen mark, ``None`` when there is none."""
    stop_reason: StopReason
    """``selected | no_valid_id | not_present | grounding_error | error``."""
    call_error: ModelCallError | None = None
    """The failed call, when the model call failed."""
    grounding_error: str | None = None
    """Why no marks were shown (then no call was made yet: the method falls back)."""


def _point(reply: Reply) -> Parsed:
    return parse_reply(reply, "point")


def no_marks_error(boxes: int, marked: int) -> str:
    """Our wording of ``grounding.error`` when the detector ran but nothing was marked."""
    if boxes == 0:
        return "the detector found no interface elements on this screenshot"
    return (
        f"the detector returned {boxes} boxes, but each covers more than half of the screenshot "
        "(a page or panel, not a control), so none was marked"
    )


async def _call(env: TrialEnv, req: ModelRequest, valid_ids: set[int], offer: bool = False) -> CallOutcome:
    """One select call (``offer``: the ``none`` mark is a valid answer, read as not present); a
    transport/provider failure is returned, never raised."""
    if offer:
        ids = valid_ids | {absent.NONE_MARK}
        return await call_model(env, req, parser=absent.som_reader(lambda reply: parse_select(reply, ids)))
    return await call_model(env, req, parser=lambda reply: parse_select(reply, valid_ids))


def set_error(sel_result: TrialResult, error_class: ErrorClass, message: str) -> TrialResult:
    """Mark a SoM result as an ``error`` trial (message cut to 300 characters)."""
    sel_result.status, sel_result.stop_reason = "error", "error"
    sel_result.error_class, sel_result.error = error_class, message[:300]
    return sel_result


async def select(spec: TrialSpec, env: TrialEnv) -> Selection:
    """Detect, mark, ask, and read the pick (the part ``som`` and ``som_dvoc`` share)."""
    snap = env.snapshot
    size, target = snap.size, snap.target_box
    som = SomRecord()
    res = TrialResult(status="ok", stop_reason="selected", final_point=None, som=som)
    if env.detector is None:
        return Selection(set_error(res, "detector", "no detector configured for a SoM method"), None, "error")
    som.backend, som.config_digest = env.detector.backend, env.detector.cfg.digest()
    try:
        run = await env.detector.detect(snap.image, snap.truth, spec.seed)
    except DetectorError as e:
        som.boxes, som.marks = 0, 0
        som.grounding_error = f"the detector failed: {type(e).__name__}: {e}"[:300]
        return Selection(res, None, "grounding_error", grounding_error=som.grounding_error)
    frac = env.detector.cfg.max_area_frac
    marks: list[Mark] = marks_from_detections(run.detections, size, max_area_frac=frac)
    som.boxes, som.marks = len(run.detections), len(marks)
    som.mark_boxes = [[round(v, 2) for v in m.box.as_list()] + [round(m.score, 4)] for m in marks]
    som.target_detected = any(m.box.contains(target.centre) for m in marks)
    som.detector_ms = round(run.wall_ms, 3)
    som.inference_ms = None if run.inference_ms is None else round(run.inference_ms, 3)
    if not marks:
        som.grounding_error = no_marks_error(len(run.detections), 0)
        return Selection(res, None, "grounding_error", grounding_error=som.grounding_error)
    view = env.view()  # marks laid out, drawn and stated in pixels of the image sent (input limits)
    drawn = marks if view.identity else [replace(m, box=view.box_to_sent(m.box)) for m in marks]
    layout = plan_marks(env.base(view), drawn, tag_layout=env.detector.cfg.tag_layout)
    som.tag_layout, som.tag_overlaps = layout.mode, layout.tag_overlaps
    shown = await env.render(draw_marks, drawn, layout=layout, view=view)
    frame = Frame(spec.coord_frame)
    text = get_protocol(spec.protocol).som_prompt(
        instruction=snap.instruction, size=view.sent, frame=frame, marks=drawn
    )
    if spec.offer_absent:  # the ``none`` mark (docs/absent.md)
        text = f"{text}\n\n{absent.SOM_SENTENCE}"
    req = env.request(shown, text, som_tools(), call_seed(spec.seed, 0))
    by_id = {m.id: m for m in marks}
    out = await _call(env, req, set(by_id), spec.offer_absent)
    step: Step = base_step(
        spec, 0, "select", req, out, shown.sha, env.model_identity, view, rule=env.rule_for(spec.coord_frame)
    )
    res.steps = [step]
    if out.error is not None:
        return Selection(res, None, "error", out.error)
    assert out.parsed is not None
    if out.parsed.status == "not_present":
        som.chosen_id, som.chosen_valid = absent.NONE_MARK, True
        return Selection(res, None, "not_present")
    if out.parsed.values is not None:
        som.chosen_id = int(out.parsed.values["id"])
        step.values_raw = {**(step.values_raw or {}), "id": som.chosen_id}
    else:
        m = _UNKNOWN_ID_RE.search(out.parsed.detail or "")
        som.chosen_id = int(m.group(1)) if m else None
        if som.chosen_id is not None:
            step.values_raw = {"id": som.chosen_id}
    mark = by_id.get(som.chosen_id) if som.chosen_id is not None and out.parsed.values is not None else None
    som.chosen_valid = mark is not None
    if mark is None:
        return Selection(res, None, "no_valid_id")
    point = mark.box.centre
    step.values_px = {"x": point.x, "y": point.y}
    step.next_draft = point.as_list()
    step.true_dist_px = round(point.dist(target.centre), 3)
    som.point, som.hit = point.as_list(), target.contains(point)
    return Selection(res, point, "selected")


@method(
    "som",
    knobs=("protocol", "detector"),
    description="Set-of-Mark: a detector boxes the elements, the model picks a numbered mark",
    max_calls=lambda spec: 1,
    per_input=True,
)
async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run one Set-of-Mark trial; never raises for a model- or detector-side failure."""
    sel = await select(spec, env)
    res = sel.result
    if sel.call_error is not None:
        e = sel.call_error
        set_error(res, e.error_class, str(e))
        return finish(res)
    if res.status == "error":
        return finish(res)
    if sel.grounding_error is not None:
        return await fallback_click(spec, env, res, sel.grounding_error)
    res.stop_reason = sel.stop_reason
    res.refused = sel.stop_reason == "not_present"
    res.final_point = sel.point.as_list() if sel.point is not None else None
    res.iterations = len(res.steps)
    return finish(res)


async def fallback_click(spec: TrialSpec, env: TrialEnv, res: TrialResult, error: str) -> TrialResult:
    """The seed's fallback for ``som``: one ``click_at`` on the plain screenshot, the error stated."""
    snap = env.snapshot
    view = env.view()
    shown = await env.clean_frame(view)
    frame = Frame(spec.coord_frame)
    text = som_fallback_prompt(instruction=snap.instruction, size=view.sent, frame=frame, error=error)
    tools = tools_for("point")
    if spec.offer_absent:  # the ``not_present`` tool in place of the ``none`` mark
        text, tools = f"{text}\n\n{absent.TOOL_SENTENCE}", absent.offer_tools(tools)
    req = env.request(shown, text, tools, call_seed(spec.seed, 0))
    out = await call_model(
        env, req, "point", parser=absent.tool_reader(_point) if spec.offer_absent else None
    )
    step = base_step(
        spec, 0, "click", req, out, shown.sha, env.model_identity, view, rule=env.rule_for(spec.coord_frame)
    )
    res.steps, res.iterations = [step], 1
    if out.error is not None:
        return finish(set_error(res, out.error.error_class, str(out.error)))
    assert out.parsed is not None
    if out.parsed.status == "not_present":
        res.stop_reason, res.refused = "not_present", True
        return finish(res)
    answer = to_screen(
        checked(step, out.parsed, "point", env.rule_for(spec.coord_frame), req.image_size), view
    )
    if not isinstance(answer, Point) and get_protocol(spec.protocol).missing_answer_is_zero:
        answer = view.to_original(Point(0.0, 0.0))
    res.stop_reason = "grounding_error"
    if isinstance(answer, Point):
        step.values_px = {"x": answer.x, "y": answer.y}
        point = clamp_point(answer, snap.size)
        step.next_draft = point.as_list()
        step.true_dist_px = round(point.dist(snap.target_box.centre), 3)
        res.final_point = point.as_list()
    return finish(res)
