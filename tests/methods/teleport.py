"""A test-only method, in one file: it registers itself, nothing else in the package is touched.

``teleport`` asks the model once for the target's point (``click_at``) and clicks there; it uses the
protocol knob (so the planner sweeps it) and no start point.
"""

from __future__ import annotations

from dvoc_bench.core.geometry import Frame, Point
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import (
    TrialEnv,
    base_step,
    call_model,
    call_seed,
    error_result,
    finish,
    to_pixels,
)
from dvoc_bench.methods.registry import method
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.protocol import get_protocol, tools_for

NAME = "teleport_test"


@method(NAME, knobs=("protocol",), description="test-only: one click_at, no retries")
async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    snap = env.snapshot
    png = env.clean_png()
    sha = env.save_shot(png)
    text = get_protocol(spec.protocol).oneshot_prompt(
        instruction=snap.instruction, size=snap.size, frame=Frame(spec.coord_frame), attempt=0, previous=None
    )
    req = ModelRequest(
        text=text, image_png=png, image_size=snap.size, tools=tools_for("point"), scene_id=snap.scene_id,
        seed=call_seed(spec.seed, 0), image_rgb=snap.image,
    )  # fmt: skip
    out = await call_model(env, req, "point")
    step = base_step(spec, 0, "click", req, out, sha, env.model_identity)
    if out.error is not None:
        return error_result([step], out.error, None, 1)
    assert out.parsed is not None
    p = to_pixels(out.parsed, "point", spec.coord_frame, req)
    final = p.as_list() if isinstance(p, Point) else None
    return finish(TrialResult(status="ok", stop_reason="hit", final_point=final, iterations=1, steps=[step]))
