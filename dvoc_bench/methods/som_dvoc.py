"""SoM -> DVOC: the Set-of-Mark pick is DVOC's starting point, then the ordinary DVOC loop refines it.

The SoM part is :func:`dvoc_bench.methods.som.select` (one ``select_element`` call on the marked frame);
the DVOC part is :func:`dvoc_bench.methods.dvoc.run` itself, called with the spec's start replaced by the
chosen mark's centre. Without a valid id DVOC starts from the image centre and the record says so
(``som.start_source = "centre"``); a failed select call ends the trial as an error. When grounding fails
(the detector fails or marks nothing) no select call is made: plain DVOC runs from the centre, the trial
ends ``grounding_error`` (the loop's own end in ``som.fallback_stop_reason``), as the seed's fallback.

Steps: the select call is step 0, DVOC's calls follow (indices shifted by one); ``iterations`` counts the
DVOC calls. When the planner leaves DVOC's knobs unset for this method (``alpha``, ``overlay``, ``predict``
recorded as ``-``), the defaults ``decay`` / ``full`` / ``relative`` are used and recorded in
``som.dvoc_alpha`` / ``som.dvoc_overlay`` / ``som.dvoc_predict``.
"""

from __future__ import annotations

import dataclasses

from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods import dvoc
from dvoc_bench.methods.common import TrialEnv, finish
from dvoc_bench.methods.registry import method
from dvoc_bench.methods.som import select, set_error

NOT_APPLICABLE = "-"
"""The planner's value for a knob that does not apply to a method."""

DEFAULTS = {"alpha": "decay", "overlay": "full", "predict": "relative"}
"""DVOC knobs used when the plan leaves them unset for ``som_dvoc``."""


def dvoc_spec(spec: TrialSpec, start: list[float]) -> TrialSpec:
    """The spec DVOC runs with: the SoM start, and the default DVOC knobs where the plan has none."""

    def knob(name: str) -> str:
        planned: str = getattr(spec, name)
        return DEFAULTS[name] if planned == NOT_APPLICABLE else planned

    return dataclasses.replace(
        spec, start=start, alpha=knob("alpha"), overlay=knob("overlay"), predict=knob("predict")
    )


@method(
    "som_dvoc",
    knobs=("protocol", "alpha", "overlay", "predict", "detector"),
    description="Set-of-Mark pick, then DVOC refines it",
    max_calls=lambda spec: 1 + spec.max_iterations,
    per_input=True,  # DVOC starts from the chosen mark, never from the plan's start point
)
async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run one SoM -> DVOC trial; never raises for a model- or detector-side failure."""
    sel = await select(spec, env)
    res = sel.result
    assert res.som is not None
    if sel.call_error is not None:
        e = sel.call_error
        return finish(set_error(res, e.error_class, str(e)))
    if res.status == "error":
        return finish(res)
    if sel.stop_reason == "not_present":  # the ``none`` mark: no click, no loop
        res.stop_reason, res.refused, res.iterations = "not_present", True, len(res.steps)
        return finish(res)
    if sel.point is not None:
        start, res.som.start_source = sel.point, "som"
    else:
        start, res.som.start_source = env.snapshot.size.centre, "centre"
    dspec = dvoc_spec(spec, start.as_list())
    res.som.dvoc_alpha, res.som.dvoc_overlay, res.som.dvoc_predict = dspec.alpha, dspec.overlay, dspec.predict
    loop = await dvoc.run(dspec, env)
    offset = len(res.steps)
    for s in loop.steps:
        s.index += offset
    res.steps = res.steps + loop.steps
    res.status, res.stop_reason, res.final_point = loop.status, loop.stop_reason, loop.final_point
    res.iterations, res.error_class, res.error = loop.iterations, loop.error_class, loop.error
    res.refused = loop.refused
    if sel.grounding_error is not None and loop.status == "ok":
        res.som.fallback_stop_reason, res.stop_reason = loop.stop_reason, "grounding_error"
    return finish(res)
