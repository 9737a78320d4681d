"""Non-visual baselines: no model call. They bound what a click can achieve by chance."""

from __future__ import annotations

from dvoc_bench.core.geometry import Point
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv, trial_rng
from dvoc_bench.methods.registry import method


@method("centre", calls_model=False, description="click the centre of the screen (no model)")
async def run_centre(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Click the centre pixel of the screenshot."""
    return TrialResult(status="ok", stop_reason="baseline", final_point=env.snapshot.size.centre.as_list())


@method("random", calls_model=False, description="click a uniformly random pixel (no model)")
async def run_random(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Click a uniformly random pixel (the trial's own generator, so it is reproducible)."""
    size = env.snapshot.size
    rng = trial_rng(spec)
    p = Point(float(rng.uniform(0, size.width - 1)), float(rng.uniform(0, size.height - 1)))
    return TrialResult(status="ok", stop_reason="baseline", final_point=p.as_list())
