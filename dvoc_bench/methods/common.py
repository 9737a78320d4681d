"""What every method shares: the trial environment, one safe model call, and step bookkeeping."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dvoc_bench.control import AdaptiveConfig
from dvoc_bench.geometry import Frame, Offset, Point, offset_to_pixels, point_to_pixels
from dvoc_bench.models.base import Model, ModelCallError, ModelRequest, Reply
from dvoc_bench.protocol import Parsed, parse_reply
from dvoc_bench.records import Step, TrialResult, TrialSpec
from dvoc_bench.render import OverlayStyle, encode_png
from dvoc_bench.scenes.types import Snapshot
from dvoc_bench.workers import Draw, FrameRenderer, make_frame

if TYPE_CHECKING:
    from dvoc_bench.detect.service import DetectorService


@dataclass(frozen=True)
class RenderedFrame:
    """A frame as the model sees it: the pixels, the PNG and its content address."""

    image: np.ndarray
    """``HxWx3`` uint8 pixels."""
    png: bytes
    """The encoded PNG (:func:`dvoc_bench.render.encode_png`)."""
    sha: str
    """sha256 of ``png``: the stored frame's name."""


@dataclass
class TrialEnv:
    """Everything a method needs besides its spec. Built once per (scene, model) and shared."""

    snapshot: Snapshot
    """The rendered scene."""
    model: Model | None
    """The model to call (``None`` for the non-visual baselines)."""
    model_identity: str
    """Model id + api base, part of every request hash."""
    save_frame: Callable[[bytes], str]
    """Stores a PNG content-addressed and returns its sha256."""
    style: OverlayStyle = field(default_factory=OverlayStyle)
    """Overlay sizes and colours."""
    adaptive: AdaptiveConfig = field(default_factory=AdaptiveConfig)
    """Knobs of the adaptive alpha schedule."""
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters passed with every request."""
    oneshot_retry_rule: str = "hit"
    """Which rule tells the one-shot model its answer missed: ``hit | hit_radius | within_eps``."""
    detector: DetectorService | None = None
    """The sweep's shared Set-of-Mark detector (built lazily on first use); ``None`` without SoM methods."""
    renderer: FrameRenderer = field(default_factory=lambda: FrameRenderer(0))
    """Where frames are drawn, encoded and stored: the sweep's render pool (default: inline)."""
    _clean_png: bytes | None = None
    _clean: RenderedFrame | None = None

    def clean_png(self) -> bytes:
        """The unannotated screenshot as PNG (encoded once, on the calling thread)."""
        if self._clean_png is None:
            self._clean_png = encode_png(self.snapshot.image)
        return self._clean_png

    async def render(self, draw: Draw, *args: Any, **kwargs: Any) -> RenderedFrame:
        """The frame ``draw(screenshot, *args, **kwargs)``, encoded and stored in the sweep's render pool
        (the event loop runs other trials meanwhile). ``draw`` is pure and returns a new array."""
        return await self.renderer.run(self._make, draw, args, kwargs)

    async def clean_frame(self) -> RenderedFrame:
        """The unannotated screenshot, encoded and stored once per environment."""
        if self._clean is None:
            self._clean = await self.renderer.run(self._make, None, (), {})
        return self._clean

    def _make(self, draw: Draw | None, args: tuple, kwargs: dict[str, Any]) -> RenderedFrame:
        image, png = make_frame(self.snapshot.image, draw, args, kwargs)
        return RenderedFrame(image, png, self.renderer.store(self.save_frame, png))


def call_seed(trial_seed: int, index: int) -> int:
    """Per-call seed derived from the trial seed and the call index (31-bit, provider friendly)."""
    h = hashlib.sha256(f"{trial_seed}:{index}".encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


def trial_rng(spec: TrialSpec) -> np.random.Generator:
    """The trial's own generator (no global RNG anywhere)."""
    return np.random.default_rng(spec.seed)


@dataclass
class CallOutcome:
    """One model call with its timing, reply (or error) and parse."""

    reply: Reply | None
    parsed: Parsed | None
    error: ModelCallError | None
    latency_s: float


async def call_model(
    env: TrialEnv, req: ModelRequest, kind: str = "offset", *, parser: Callable[[Reply], Parsed] | None = None
) -> CallOutcome:
    """Call the model and parse the reply (``parse_reply(reply, kind)`` unless a ``parser`` is given);
    a transport/provider failure is returned, never raised."""
    assert env.model is not None
    t0 = time.perf_counter()
    try:
        reply = await env.model.complete(req)
    except ModelCallError as e:
        return CallOutcome(None, None, e, time.perf_counter() - t0)
    latency = reply.latency_s or (time.perf_counter() - t0)
    parsed = parser(reply) if parser is not None else parse_reply(reply, kind)
    return CallOutcome(reply, parsed, None, latency)


def to_pixels(parsed: Parsed, kind: str, frame: str, req: ModelRequest) -> Point | Offset | None:
    """The parsed numbers converted from the declared frame to pixels."""
    if parsed.values is None:
        return None
    fr = Frame(frame)
    if kind == "offset":
        return offset_to_pixels(Offset(parsed.values["dx"], parsed.values["dy"]), fr, req.image_size)
    return point_to_pixels(Point(parsed.values["x"], parsed.values["y"]), fr, req.image_size)


def base_step(
    spec: TrialSpec,
    index: int,
    kind: str,
    req: ModelRequest,
    out: CallOutcome,
    frame_sha: str,
    model_identity: str,
) -> Step:
    """A step record filled with everything about the call itself (not the loop's reaction)."""
    reply, parsed, err = out.reply, out.parsed, out.error
    step = Step(
        trial_key=spec.trial_key,
        index=index,
        kind=kind,
        draft=None,
        true_dist_px=None,
        frame_sha=frame_sha,
        request_sha=req.sha(model_identity),
        prompt=req.text,
        reply_text=reply.text if reply else None,
        reply_tool_calls=[{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls]
        if reply
        else [],
        frame=spec.coord_frame,
        latency_s=round(out.latency_s, 6),
    )
    if err is not None:
        step.parse_status, step.error_class, step.error = "call_error", err.error_class, str(err)
        step.attempts, step.attempt_errors = err.attempts, list(err.attempt_errors)
        step.retry_wait_s = round(err.retry_wait_s, 6)
        return step
    assert reply is not None and parsed is not None
    step.parse_status, step.parse_detail = parsed.status, parsed.detail
    step.values_raw = dict(parsed.values) if parsed.values else None
    if parsed.confidence is not None:
        step.values_raw = {**(step.values_raw or {}), "confidence": parsed.confidence}
    step.confidence = parsed.confidence
    step.tokens_in, step.tokens_out, step.cost_usd = reply.tokens_in, reply.tokens_out, reply.cost_usd
    step.cached = reply.cached
    step.cost_source = reply.cost_source
    step.reply_chars, step.reply_sha256 = reply.full_chars, reply.full_sha256
    step.reply_truncated = reply.truncated
    if reply.image_scale != 1.0:  # recorded only when the image was really resized
        step.image_scale = reply.image_scale
        step.sent_size = list(reply.sent_size) if reply.sent_size else None
    if reply.raw_tool_calls:
        step.raw_tool_calls = [{"name": c.name, "arguments": c.arguments} for c in reply.raw_tool_calls]
    step.attempts, step.attempt_errors = reply.attempts, list(reply.attempt_errors)
    step.retry_wait_s = round(reply.retry_wait_s, 6)
    return step


def finish(result: TrialResult) -> TrialResult:
    """Fill the usage totals of a result from its steps."""
    result.model_calls = len(result.steps)
    result.cached_calls = sum(s.cached for s in result.steps)
    result.parse_errors = sum(s.parse_status == "parse_error" for s in result.steps)
    result.tokens_in = sum(s.tokens_in or 0 for s in result.steps)
    result.tokens_out = sum(s.tokens_out or 0 for s in result.steps)
    costs = [s.cost_usd for s in result.steps if s.cost_usd is not None]
    result.cost_usd = sum(costs) if costs else None
    return result


def error_result(steps: list[Step], err: ModelCallError, final: Point | None, iterations: int) -> TrialResult:
    """A trial ended by a failed call: completed steps are kept."""
    return finish(
        TrialResult(
            status="error",
            stop_reason="error",
            final_point=final.as_list() if final else None,
            iterations=iterations,
            error_class=err.error_class,
            error=str(err),
            steps=steps,
        )
    )
