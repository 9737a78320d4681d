"""What every method shares: the trial environment, one safe model call, and step bookkeeping."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dvoc_bench.core.control import AdaptiveConfig
from dvoc_bench.core.frames import FrameRule, frame_rule_of
from dvoc_bench.core.geometry import Box, Frame, Offset, Point, Size, offset_to_pixels, point_to_pixels
from dvoc_bench.core.records import AnswerKind, Step, StepKind, TrialResult, TrialSpec
from dvoc_bench.core.scene import Snapshot
from dvoc_bench.draw.render import OverlayStyle, encode_png
from dvoc_bench.draw.sending import View, model_view, resize_image
from dvoc_bench.draw.workers import Draw, FrameRenderer, make_frame
from dvoc_bench.models.base import Model, ModelCallError, ModelRequest, Reply
from dvoc_bench.models.options import ImageOptions
from dvoc_bench.protocol import Parsed, parse_reply

if TYPE_CHECKING:
    from dvoc_bench.detect.service import DetectorService


@dataclass(frozen=True)
class RenderedFrame:
    """A frame as the model sees it: the pixels, the PNG and its content address."""

    image: np.ndarray
    """``HxWx3`` uint8 pixels."""
    png: bytes
    """The encoded PNG (:func:`dvoc_bench.draw.render.encode_png`)."""
    sha: str
    """sha256 of ``png``: the stored frame's name."""
    view: View | None = None
    """What of the screenshot the frame shows and at which size (``None``: the screenshot as it is)."""


@dataclass
class TrialEnv:
    """Everything a method needs besides its spec. Built once per (scene, model) and shared."""

    snapshot: Snapshot
    """The rendered scene."""
    model: Model | None
    """The model to call (``None`` for the non-visual baselines)."""
    model_identity: str
    """Model id + api base, part of every request hash."""
    save_shot: Callable[[bytes], str]
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
    image: ImageOptions = field(default_factory=ImageOptions)
    """The model's input limits: every frame is sent downscaled to fit them
    (:mod:`dvoc_bench.draw.sending`)."""
    frame_rule: FrameRule | None = None
    """The model's answer frame in full (``coord_frame:``): its resize sizes every image sent; ``None``:
    the trial's ``coord_frame`` word (no resize)."""
    prompt_style: str = "tool_call"
    """How one-shot grounding asks and reads (``prompt_style`` of the model config)."""
    _clean_png: bytes | None = None
    _clean: RenderedFrame | None = None
    _base: tuple[View, np.ndarray] | None = None
    _crop: tuple[View, np.ndarray] | None = None

    def view(self, crop: Box | None = None) -> View:
        """The view of ``crop`` (default: the whole screen) sent within the model's input limits and at the
        size its declared resize gives (:func:`dvoc_bench.draw.sending.model_view`)."""
        return model_view(
            self.snapshot.size, crop, self.image.max_side, self.image.max_pixels, self.frame_rule
        )

    def rule_for(self, coord_frame: str) -> FrameRule:
        """The answer frame of a trial read in ``coord_frame`` (the config's rule with those units)."""
        if self.frame_rule is None:
            return frame_rule_of(coord_frame)
        if self.frame_rule.units == coord_frame:
            return self.frame_rule
        return self.frame_rule.model_copy(update={"units": coord_frame})

    def base(self, view: View) -> np.ndarray:
        """The pixels of ``view`` before any drawing: the screenshot cropped and downscaled. The whole-screen
        view is resized once per environment, and the last crop is kept (``zoom_dvoc`` draws on it)."""
        if view.identity:
            return self.snapshot.image
        hit = self._crop if view.cropped else self._base
        if hit is not None and hit[0] == view:
            return hit[1]
        img = resize_image(self.snapshot.image, view)  # racing threads compute the same pixels
        if view.cropped:
            self._crop = (view, img)
        else:
            self._base = (view, img)
        return img

    def clean_png(self) -> bytes:
        """The unannotated screenshot as PNG, as it is (encoded once, on the calling thread)."""
        if self._clean_png is None:
            self._clean_png = encode_png(self.snapshot.image)
        return self._clean_png

    async def render(self, draw: Draw, *args: Any, view: View | None = None, **kwargs: Any) -> RenderedFrame:
        """The frame ``draw(base, *args, **kwargs)`` on the pixels of ``view`` (default: the whole screen
        within the input limits; coordinates in ``args`` are in its sent pixels), encoded and stored in the
        sweep's render pool (the event loop runs other trials meanwhile). ``draw`` is pure."""
        return await self.renderer.run(self._make, view or self.view(), draw, args, kwargs)

    async def clean_frame(self, view: View | None = None) -> RenderedFrame:
        """The unannotated ``view`` (default: the whole screen), encoded and stored (the whole screen once
        per environment)."""
        view = view or self.view()
        if view.cropped:
            return await self.renderer.run(self._make, view, None, (), {})
        if self._clean is None or self._clean.view != view:
            self._clean = await self.renderer.run(self._make, view, None, (), {})
        return self._clean

    def _make(self, view: View, draw: Draw | None, args: tuple, kwargs: dict[str, Any]) -> RenderedFrame:
        base = self.base(view)
        if draw is None and view.cropped:  # a zoom crop: no overlay will reuse its bands, none cached
            image, png = base, encode_png(base)
        else:
            image, png = make_frame(base, draw, args, kwargs)
        return RenderedFrame(image, png, self.renderer.store(self.save_shot, png), view)

    def request(
        self, frame: RenderedFrame, text: str, tools: list[dict[str, Any]], seed: int, **extra: Any
    ) -> ModelRequest:
        """The request sending ``frame``: its sent size as the image size, its crop as metadata."""
        view = frame.view or self.view()
        crop = view.crop_list()
        return ModelRequest(
            text=text,
            image_png=frame.png,
            image_size=view.sent,
            tools=tools,
            scene_id=self.snapshot.scene_id,
            seed=seed,
            params=self.params,
            image_rgb=frame.image,
            crop=None if crop is None else (crop[0], crop[1], crop[2], crop[3]),
            **extra,
        )


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
    env: TrialEnv,
    req: ModelRequest,
    kind: AnswerKind = "offset",
    *,
    parser: Callable[[Reply], Parsed] | None = None,
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


def to_pixels(parsed: Parsed, kind: AnswerKind, frame: str, req: ModelRequest) -> Point | Offset | None:
    """The parsed numbers converted from the declared frame to pixels of the image sent (``req.image_size``;
    :func:`to_screen` maps them to the screenshot)."""
    if parsed.values is None:
        return None
    fr = Frame(frame)
    if kind == "offset":
        return offset_to_pixels(Offset(parsed.values["dx"], parsed.values["dy"]), fr, req.image_size)
    return point_to_pixels(Point(parsed.values["x"], parsed.values["y"]), fr, req.image_size)


def read_point(parsed: Parsed, rule: FrameRule, seen: Size) -> tuple[Point | None, str | None]:
    """A parsed one-shot point in pixels of the image seen (``seen``: its size), through ``rule``'s units;
    ``(None, detail)`` when the numbers lie outside the frame's declared range (never clamped: the step
    is recorded ``out_of_frame``); ``(None, None)`` when nothing was parsed."""
    value, detail = read_value(parsed, "point", rule, seen)
    assert value is None or isinstance(value, Point)
    return value, detail


def read_value(
    parsed: Parsed, kind: AnswerKind, rule: FrameRule, seen: Size
) -> tuple[Point | Offset | None, str | None]:
    """A parsed answer (``kind``: ``point`` or ``offset``) in pixels of the image seen, through ``rule``'s
    units and mapping (:meth:`FrameRule.to_pixels`); ``(None, "out_of_frame:...")`` when its numbers lie
    outside the frame's declared range (a point: :meth:`FrameRule.in_range`; an offset:
    :meth:`FrameRule.offset_in_range`), never clamped; ``(None, None)`` when nothing was parsed."""
    if parsed.values is None:
        return None, None
    if kind == "offset":
        dx, dy = parsed.values["dx"], parsed.values["dy"]
        if not rule.offset_in_range(dx, dy, seen):
            return None, f"out_of_frame:({dx:g}, {dy:g}) outside {rule.range_words(seen, 'offset')}"
        return rule.offset_to_pixels(dx, dy, seen), None
    x, y = parsed.values["x"], parsed.values["y"]
    if not rule.in_range(x, y, seen):
        return None, f"out_of_frame:({x:g}, {y:g}) outside {rule.range_words(seen)}"
    return rule.to_pixels(x, y, seen), None


def checked(
    step: Step, parsed: Parsed, kind: AnswerKind, rule: FrameRule, seen: Size
) -> Point | Offset | None:
    """:func:`read_value`, recording an answer outside the frame on ``step`` (``parse_status=out_of_frame``,
    the reason in ``parse_detail``; its numbers stay in ``values_raw``)."""
    value, out_of_frame = read_value(parsed, kind, rule, seen)
    if out_of_frame is not None:
        step.parse_status, step.parse_detail = "out_of_frame", out_of_frame
    return value


def to_screen(value: Point | Offset | None, view: View | None) -> Point | Offset | None:
    """A point or offset in pixels of the image sent, in pixels of the screenshot (through the crop and
    the resize of ``view``; ``None`` passes)."""
    if value is None or view is None:
        return value
    return view.to_original(value) if isinstance(value, Point) else view.offset_to_original(value)


def base_step(
    spec: TrialSpec,
    index: int,
    kind: StepKind,
    req: ModelRequest,
    out: CallOutcome,
    frame_sha: str,
    model_identity: str,
    view: View | None = None,
    *,
    rule: FrameRule | None = None,
    style: str = "tool_call",
) -> Step:
    """A step record filled with everything about the call itself (not the loop's reaction); ``view``:
    what the frame showed (its scale, sent size and crop are recorded when it is not the screenshot as
    it is); ``rule``: the answer frame the numbers are read in (default: the spec's ``coord_frame``
    word), recorded with the size the model saw; ``style``: the prompt style asked in."""
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
        seen_size=req.image_size.as_list(),
        frame_rule=(rule or frame_rule_of(spec.coord_frame)).describe(),
        prompt_style=style,
    )
    if view is not None and not view.identity:  # recorded only when the image was cropped or resized
        step.image_scale = round(view.sx, 9)
        step.sent_size = view.sent.as_list()
        step.crop = view.crop_list()
    if err is not None:
        step.parse_status, step.error_class, step.error = "call_error", err.error_class, str(err)
        step.attempts, step.attempt_errors = err.attempts, list(err.attempt_errors)
        step.retry_wait_s = round(err.retry_wait_s, 6)
        step.cost_usd, step.cost_source = err.cost_usd, err.cost_source
        step.cost_bound_usd, step.usage_fault = err.cost_bound_usd, err.usage_fault
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
    step.cost_bound_usd, step.usage_fault = reply.cost_bound_usd, reply.usage_fault
    step.est_tokens_in, step.est_tokens_out = reply.est_tokens_in, reply.est_tokens_out
    step.reported_cost_usd = reply.reported_cost_usd
    step.reply_chars, step.reply_sha256 = reply.full_chars, reply.full_sha256
    step.reply_truncated = reply.truncated
    step.served_model, step.system_fingerprint = reply.served_model, reply.system_fingerprint
    step.engine = reply.engine
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


def refused_result(steps: list[Step], iterations: int) -> TrialResult:
    """A trial ended by the model's "not present" answer (docs/absent.md): no click, ``refused``."""
    return finish(
        TrialResult(
            status="ok",
            stop_reason="not_present",
            final_point=None,
            iterations=iterations,
            steps=steps,
            refused=True,
        )  # fmt: skip
    )
