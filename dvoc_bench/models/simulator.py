"""The simulator: a stochastic stand-in for a vision-language model (DESIGN §7, upstream-facts §9).

The simulator sees what a model sees (the image pixels and the prompt text) plus the scene's ground truth,
looked up by ``request.scene_id``. It never reads harness state or the protocol module: the paper's
artefacts and the corrected protocol's gains must *emerge* from one mechanism, not from switches.

Mechanism of one call (every random draw comes from a per-call generator, see *Determinism*):

1. **Mode** from the tools offered: ``report_offset`` -> an offset answer; ``click_at`` -> a point answer;
   ``select_element`` -> a Set-of-Mark pick (item 13) when the prompt carries an element list, else a
   text-only reply "not supported by the simulator" (no tool call). With no known tool the reply is text
   only as well.
2. **Task.** If ``truth.instruction`` occurs in the prompt text, the intended element is the target box.
   Otherwise (a prompt without the task, like the paper's first one-shot call) the model goes for the first
   interactive element in drawing order (``no_task: first_element``) or a random one (``random_element``).
3. **Perceived target** ``T^`` = the intended element's centre + per-axis inlier noise (Laplace or
   Student-t, ``noise.scale_px``), clamped to the canvas. With probability ``outlier.p`` the centre is
   replaced first: by another interactive element's centre (share ``outlier.wrong_element_share``) or by a
   displacement of uniform magnitude in ``[min_px, max_px]`` in a uniformly random direction.
4. **Crosshair** ``P^`` (offset mode): the red crosshair found in the pixels (``render.find_crosshair``);
   if none is drawn, the ``Crosshair position: (X, Y) UNIT`` line of the text, converted to pixels per its
   unit (``px``, ``in 0-1000 units``, ``in 0-1 units``; the rule of ``geometry.point_to_pixels``). With
   neither, the model does not know where the crosshair is and answers ``(0, 0)``
   (``unknown_position: zero``) or assumes the image centre (``guess_centre``).
5. **Native frame** per call from the mixture ``frames`` over ``pixel``, ``norm1000``, ``norm1`` and
   ``mixed``. ``mixed`` is upstream-facts §9.1 H2: the target read in 0-1000 units, the crosshair read in
   pixels from the drawn label, ``r = g*T^ - P^`` with ``g = 1000/(W-1), 1000/(H-1)``. It needs a prompt that
   does not state the crosshair position; when the text has a ``Crosshair position:`` line, the ``mixed``
   weight goes to ``norm1000``. Offsets and points leave pixels with the factor of ``geometry``
   (``(W-1)/1000`` px per norm1000 unit).
6. **Near-target behaviour** on the perceived offset ``t^`` (px; for ``mixed`` the confused ``g*T^ - P^``,
   which the model takes for pixels): below 30 px it reports ``(0, 0)`` with ``near.p_zero_below_30``; at
   30-100 px it reports ``(0, 0)`` with ``near.p_zero_30_100`` and otherwise reverses the direction with
   ``near.p_reverse_30_100``; below 100 px ``t^`` is multiplied by ``near.shrink_below_100``. Then each axis
   with ``|t^_axis| > 30`` is reported as 0 with ``axis_drop.p`` (never both axes in one reply: an all-zero
   report belongs to the near-target rule).
7. **Gain**: the native-frame offset is multiplied per axis by ``gain = [gx, gy]`` (offsets only; points
   are absolute and get no gain).
8. **Rounding** like real models: integers for pixel / norm1000 / mixed, 3 decimals for norm1.
9. **Confidence** from the categorical ``confidence.values / probs``, or, when ``confidence.by_distance`` is
   set, from the first bucket whose ``max_px`` is at least the magnitude of the offset the model believes
   in after step 6 (px, before frame conversion and gain). That makes a Gemini-like profile informative
   (§9.5) and gives ``(0, 0)`` reports the first bucket (§9.4: (0,0) reports come with confidence 1.0).
10. With probability ``p_no_tool_call`` the reply carries no tool call, only a short text.
11. **Point mode** (one-shot / absolute): ``T^`` with ``oneshot.noise_px`` inlier noise and
    ``oneshot.outlier_p`` outliers, in the native frame (``oneshot.frames`` if given, else ``frames`` with
    ``mixed`` counted as ``norm1000``: there is no crosshair to mix with), confidence from
    ``oneshot.confidence``.
12. The tool call's arguments are a JSON *string*, as Gemini sends them, e.g.
    ``{"dx": 49, "dy": 159, "confidence": 0.9}``. Tokens come from ``tokens``, the cost is 0.0 with
    ``cost_source="simulated"``, the latency is ``latency_s`` (``complete`` sleeps only when it is > 0).

13. **Select mode** (Set-of-Mark): the marks are read from the prompt's ``Marked elements: {"elements":
    [...]}`` line, in the units its ``Element list units:`` line names (pixels, 0-1000 or 0-1; converted
    with the rule of ``geometry.point_to_pixels``). The perceived target ``T^`` is drawn as in point mode
    (``oneshot.noise_px``, ``oneshot.outlier_p``); the pick is the smallest mark box containing ``T^``.
    When none contains it, the nearest mark (by distance to its box) is named with probability
    ``som.guess_unmarked``, otherwise the reply has no tool call. With probability ``som.confusion`` the
    pick moves to one of the ``som.neighbours`` marks nearest to it (centre distance): the confusion
    toward nearby boxes. Confidence from ``som.confidence`` (default: ``oneshot.confidence``). The reply
    is ``select_element({"id": n, "confidence": c})``. ``p_no_tool_call`` applies as in the other modes.

Knobs added by the calibration (issue 8; each default keeps the behaviour above):

14. **Per-canvas overrides** ``canvas: [{size: [W, H], frames, gain, noise, outlier, near, axis_drop,
    confidence, oneshot}]``: a call on a scene whose own size is ``W x H`` uses the sections given there
    instead of the top-level ones (the authors' models answered differently on 800x600 and 1280x720
    screens: more mixed-frame answers and more noise on the web pages, upstream-facts §9.1-9.2).
15. ``no_task_target``: probability that a prompt without the task still aims at the real target (the
    element that stands out) instead of ``no_task``'s pick (§9.6: first one-shot calls landed on the
    target in 58-68 % of the authors' trials).
16. ``latency: {median_s, sigma, scale}``: per-call latency drawn from a log-normal with that median and
    log-sd (fitted on the authors' records) times ``scale``, added to ``latency_s``. ``scale`` is 0 in
    the committed profiles, so offline sweeps stay fast; ``scale: 1`` gives realistic waits. The draw
    comes from a child of the call's generator, so the reply itself does not depend on it.
17. ``consistency: {offset, point}``: probability that a call draws from a generator seeded by its
    *situation* (profile, scene, image size, whether the task is in the text, and in offset mode the
    crosshair position) instead of the per-call one, so the same situation gets the same answer, as a
    real model gives at low temperature (§9.6 "fixation": Gemini repeated the identical one-shot answer in
    79 % of its retries and the identical offset in 90 % of the calls that saw the crosshair where it
    was before). The choice itself uses the per-call generator. ``instance`` (an integer, 0 by default)
    only relabels the random streams: another simulated instance of the same model.

Ground truth is scaled to the size of the image sent when the harness resized the screenshot
(``request.image_size`` differs from the scene's size).

Determinism: there is no global RNG. Each call seeds ``numpy.random.default_rng`` with an integer taken from
sha256 over the profile identity (model name + a digest of the profile), ``request.seed``, ``request.text``
and sha256 of the PNG bytes (or of the raw array when only ``image_rgb`` is given). The same request gives
the same reply whatever the call order or transport, as long as the PNG bytes are part of the request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.geometry import (
    Box,
    Frame,
    Offset,
    Point,
    Size,
    clamp_point,
    offset_from_pixels,
    point_from_pixels,
    point_to_pixels,
)
from dvoc_bench.models.base import MAX_REPLY_CHARS, ModelRequest, Reply, ToolCall, bound_reply
from dvoc_bench.render import find_crosshair
from dvoc_bench.scenes.types import Element, SceneTruth

__all__ = [
    "AxisDropSpec",
    "CanvasSpec",
    "ConfidenceBucket",
    "ConfidenceSpec",
    "ConsistencySpec",
    "FrameMix",
    "LatencySpec",
    "NearSpec",
    "NoiseSpec",
    "OneShotSpec",
    "OutlierSpec",
    "SimProfile",
    "SimulatedModel",
    "SomSpec",
    "TokensSpec",
    "load_profile",
    "parse_crosshair_line",
]

NATIVE_FRAMES = ("pixel", "norm1000", "norm1", "mixed")
"""Frames a simulated answer can be given in; ``mixed`` is the H2 frame of upstream-facts §9.1."""

NOT_SUPPORTED = "not supported by the simulator"
"""Text of the reply when only ``select_element`` is offered."""

NO_TOOL_TEXT = "I looked at the screenshot but I am not sure where the target is."
"""Text of a reply without a tool call (``p_no_tool_call``)."""

NEAR_PX = 30.0
"""Inner near-target threshold (px) of §9.2's bins."""
MID_PX = 100.0
"""Outer near-target threshold (px) of §9.2's bins."""
AXIS_DROP_MIN_PX = 30.0
"""Only an axis further off than this can be dropped (§9.3's definition)."""


# ------------------------------------------------------------------------------------ config helpers


def _keys(d: Any, allowed: Sequence[str], where: str) -> Mapping[str, Any]:
    """Check that ``d`` is a mapping with only ``allowed`` keys; the error names the offending key."""
    if not isinstance(d, Mapping):
        raise ValueError(f"{where}: expected a mapping, got {type(d).__name__}")
    for key in d:
        if key not in allowed:
            raise ValueError(f"unknown simulator profile key {where}.{key} (known: {', '.join(allowed)})")
    return d


def _num(v: Any, where: str, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError(f"{where} must be a number, got {v!r}")
    x = float(v)
    if math.isnan(x) or not lo <= x <= hi:
        raise ValueError(f"{where} must be in [{lo}, {hi}], got {v!r}")
    return x


def _prob(v: Any, where: str) -> float:
    return _num(v, where, 0.0, 1.0)


def _choice(v: Any, options: Sequence[str], where: str) -> str:
    if v not in options:
        raise ValueError(f"{where} must be one of {', '.join(options)}, got {v!r}")
    return str(v)


def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


# ------------------------------------------------------------------------------------------ profile


@dataclass(frozen=True)
class FrameMix:
    """Mixture weights of the native frame, sampled once per call (normalised on load)."""

    pixel: float = 0.0
    """Weight of answers in screenshot pixels."""
    norm1000: float = 1.0
    """Weight of answers in Gemini's 0-1000 normalised frame."""
    norm1: float = 0.0
    """Weight of answers in the 0-1 normalised frame."""
    mixed: float = 0.0
    """Weight of H2 answers (target in 0-1000 units, crosshair in pixels); only possible when the prompt
    does not state the crosshair position, otherwise it is added to ``norm1000``."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "frames") -> FrameMix:
        d = _keys(d, _field_names(cls), where)
        w = {k: _num(d.get(k, 0.0), f"{where}.{k}", 0.0) for k in _field_names(cls)}
        total = sum(w.values())
        if total <= 0:
            raise ValueError(f"{where}: the weights must have a positive sum")
        return cls(**{k: v / total for k, v in w.items()})

    def weights(self, position_stated: bool) -> dict[str, float]:
        """Weights per frame for one call; ``mixed`` folds into ``norm1000`` when the position is stated."""
        w = {"pixel": self.pixel, "norm1000": self.norm1000, "norm1": self.norm1, "mixed": self.mixed}
        if position_stated:
            w["norm1000"] += w.pop("mixed")
            w["mixed"] = 0.0
        return w


@dataclass(frozen=True)
class NoiseSpec:
    """Inlier perception noise of the target, per axis, in pixels."""

    dist: str = "laplace"
    """``laplace`` or ``student_t``."""
    scale_px: float = 0.0
    """Scale parameter in px (Laplace ``b``: MAD-sd = 1.03 b; Student-t scale: MAD-sd = 1.13 s at df 3)."""
    df: float = 3.0
    """Degrees of freedom of the Student-t (ignored for Laplace)."""
    rel: float = 0.0
    """Offset mode only (calibration): each axis of the offset the model believes in is multiplied by
    ``exp(rel * z)``, ``z`` from this family with scale 1 (clipped to +-2): an error that grows with the
    distance measured and never flips the direction; 0 = none."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "noise") -> NoiseSpec:
        d = _keys(d, _field_names(cls), where)
        return cls(
            dist=_choice(d.get("dist", "laplace"), ("laplace", "student_t"), f"{where}.dist"),
            scale_px=_num(d.get("scale_px", 0.0), f"{where}.scale_px", 0.0),
            df=_num(d.get("df", 3.0), f"{where}.df", 1e-6),
            rel=_num(d.get("rel", 0.0), f"{where}.rel", 0.0),
        )

    def sample(self, rng: np.random.Generator, scale_px: float | None = None) -> tuple[float, float]:
        """One ``(ex, ey)`` draw in px; ``scale_px`` overrides the profile's scale."""
        s = self.scale_px if scale_px is None else scale_px
        if s <= 0:
            return 0.0, 0.0
        e = rng.laplace(0.0, s, 2) if self.dist == "laplace" else s * rng.standard_t(self.df, 2)
        return float(e[0]), float(e[1])


@dataclass(frozen=True)
class OutlierSpec:
    """Gross perception errors: the wrong element, or a large displacement."""

    p: float = 0.0
    """Probability that a call's perceived target is an outlier."""
    wrong_element_share: float = 0.5
    """Share of outliers that take another interactive element's centre (the rest are displacements)."""
    min_px: float = 100.0
    """Smallest displacement magnitude in px."""
    max_px: float = 250.0
    """Largest displacement magnitude in px."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "outlier") -> OutlierSpec:
        d = _keys(d, _field_names(cls), where)
        out = cls(
            p=_prob(d.get("p", 0.0), f"{where}.p"),
            wrong_element_share=_prob(d.get("wrong_element_share", 0.5), f"{where}.wrong_element_share"),
            min_px=_num(d.get("min_px", 100.0), f"{where}.min_px", 0.0),
            max_px=_num(d.get("max_px", 250.0), f"{where}.max_px", 0.0),
        )
        if out.max_px < out.min_px:
            raise ValueError(f"{where}.max_px must be >= {where}.min_px")
        return out


@dataclass(frozen=True)
class NearSpec:
    """Near-target behaviour on the perceived offset (px), bins of upstream-facts §9.2."""

    p_zero_below_30: float = 0.0
    """Probability of reporting ``(0, 0)`` when the perceived offset is below 30 px."""
    p_zero_30_100: float = 0.0
    """Probability of reporting ``(0, 0)`` when it is 30-100 px."""
    p_reverse_30_100: float = 0.0
    """Probability of reversing the direction at 30-100 px (among non-zero reports)."""
    shrink_below_100: float = 1.0
    """Gain factor applied to perceived offsets below 100 px (under-reporting near the target)."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "near") -> NearSpec:
        d = _keys(d, _field_names(cls), where)
        return cls(
            p_zero_below_30=_prob(d.get("p_zero_below_30", 0.0), f"{where}.p_zero_below_30"),
            p_zero_30_100=_prob(d.get("p_zero_30_100", 0.0), f"{where}.p_zero_30_100"),
            p_reverse_30_100=_prob(d.get("p_reverse_30_100", 0.0), f"{where}.p_reverse_30_100"),
            shrink_below_100=_num(d.get("shrink_below_100", 1.0), f"{where}.shrink_below_100", 0.0),
        )


@dataclass(frozen=True)
class AxisDropSpec:
    """Axis dropping: one component reported as 0 while that axis is far off (§9.3)."""

    p: float = 0.0
    """Probability, per axis with ``|t^_axis| > 30`` px, that the axis is reported as 0."""
    p_x: float | None = None
    """Probability for the x axis alone (calibration: Gemini drops x far more often than y); ``None``
    = ``p``."""
    p_y: float | None = None
    """Probability for the y axis alone; ``None`` = ``p``."""
    max_px: float = math.inf
    """Axes are dropped only while the perceived offset is shorter than this (calibration: none of the
    authors' models dropped an axis beyond 300 px); ``null`` / ``.inf`` = no bound."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "axis_drop") -> AxisDropSpec:
        d = _keys(d, _field_names(cls), where)
        px, py, mx = d.get("p_x"), d.get("p_y"), d.get("max_px")
        return cls(
            p=_prob(d.get("p", 0.0), f"{where}.p"),
            p_x=None if px is None else _prob(px, f"{where}.p_x"),
            p_y=None if py is None else _prob(py, f"{where}.p_y"),
            max_px=math.inf if mx is None else _num(mx, f"{where}.max_px", 0.0),
        )

    def per_axis(self) -> tuple[float, float]:
        """``(p for x, p for y)``."""
        return (self.p if self.p_x is None else self.p_x, self.p if self.p_y is None else self.p_y)


def _categorical(d: Mapping[str, Any], where: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    values = d.get("values", [1.0])
    probs = d.get("probs", [1.0] * len(values) if isinstance(values, Sequence) else None)
    if not isinstance(values, Sequence) or isinstance(values, str) or not values:
        raise ValueError(f"{where}.values must be a non-empty list")
    if not isinstance(probs, Sequence) or isinstance(probs, str) or len(probs) != len(values):
        raise ValueError(f"{where}.probs must be a list as long as {where}.values")
    vs = tuple(_num(v, f"{where}.values", 0.0, 1.0) for v in values)
    ps = tuple(_num(p, f"{where}.probs", 0.0) for p in probs)
    total = sum(ps)
    if total <= 0:
        raise ValueError(f"{where}.probs must have a positive sum")
    return vs, tuple(p / total for p in ps)


@dataclass(frozen=True)
class ConfidenceBucket:
    """A confidence distribution used when the reported offset is at most ``max_px``."""

    max_px: float
    """Upper bound (px, inclusive) of the reported-offset magnitude; ``null`` / ``.inf`` = no bound."""
    values: tuple[float, ...]
    """Confidence values."""
    probs: tuple[float, ...]
    """Their probabilities (normalised on load)."""

    @classmethod
    def from_mapping(cls, d: Any, where: str) -> ConfidenceBucket:
        d = _keys(d, _field_names(cls), where)
        raw = d.get("max_px")
        max_px = math.inf if raw is None else _num(raw, f"{where}.max_px", 0.0)
        values, probs = _categorical(d, where)
        return cls(max_px=max_px, values=values, probs=probs)


@dataclass(frozen=True)
class ConfidenceSpec:
    """Categorical self-reported confidence (§9.5)."""

    values: tuple[float, ...] = (1.0,)
    """Confidence values."""
    probs: tuple[float, ...] = (1.0,)
    """Their probabilities (normalised on load)."""
    by_distance: tuple[ConfidenceBucket, ...] = ()
    """Optional buckets by reported-offset magnitude (ascending ``max_px``); when set they replace
    ``values / probs`` (which still serve reports beyond the last bucket)."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "confidence") -> ConfidenceSpec:
        if isinstance(d, (int, float)) and not isinstance(d, bool):
            return cls(values=(_num(d, where, 0.0, 1.0),), probs=(1.0,))
        d = _keys(d, _field_names(cls), where)
        values, probs = _categorical(d, where)
        raw = d.get("by_distance") or []
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise ValueError(f"{where}.by_distance must be a list")
        buckets = tuple(
            ConfidenceBucket.from_mapping(b, f"{where}.by_distance[{i}]") for i, b in enumerate(raw)
        )
        if any(a.max_px >= b.max_px for a, b in zip(buckets, buckets[1:], strict=False)):
            raise ValueError(f"{where}.by_distance must have strictly ascending max_px")
        return cls(values=values, probs=probs, by_distance=buckets)

    def sample(self, rng: np.random.Generator, distance_px: float) -> float:
        """One confidence draw for a report of magnitude ``distance_px``."""
        values, probs = self.values, self.probs
        for bucket in self.by_distance:
            if distance_px <= bucket.max_px:
                values, probs = bucket.values, bucket.probs
                break
        return float(values[int(rng.choice(len(values), p=np.asarray(probs)))])


@dataclass(frozen=True)
class OneShotSpec:
    """Point answers (``click_at``): one-shot and absolute-mode calls (§9.6)."""

    noise_px: float = 1.0
    """Inlier noise scale in px (same distribution family as ``noise``)."""
    outlier_p: float = 0.0
    """Outlier probability (magnitudes and element share from ``outlier``)."""
    frames: FrameMix | None = None
    """Native-frame mixture for points; ``None`` = the offset mixture with ``mixed`` counted as
    ``norm1000``."""
    confidence: ConfidenceSpec = field(default_factory=ConfidenceSpec)
    """Confidence of point answers (a number means always that value)."""
    wrong_element_only: bool = False
    """Calibration: an outlier is always another element, so a scene with a single element has none (the
    authors' models never missed a single-element scene once the task was given); False = as ``outlier``."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "oneshot") -> OneShotSpec:
        d = _keys(d, _field_names(cls), where)
        frames = d.get("frames")
        conf = d.get("confidence")
        weo = d.get("wrong_element_only", False)
        if not isinstance(weo, bool):
            raise ValueError(f"{where}.wrong_element_only must be true or false, got {weo!r}")
        return cls(
            noise_px=_num(d.get("noise_px", 1.0), f"{where}.noise_px", 0.0),
            outlier_p=_prob(d.get("outlier_p", 0.0), f"{where}.outlier_p"),
            frames=None if frames is None else FrameMix.from_mapping(frames, f"{where}.frames"),
            confidence=ConfidenceSpec()
            if conf is None
            else ConfidenceSpec.from_mapping(conf, f"{where}.confidence"),
            wrong_element_only=weo,
        )


@dataclass(frozen=True)
class TokensSpec:
    """Token counts reported per call (constant placeholders: the records hold no usable counts)."""

    in_per_call: int = 0
    """Prompt tokens per call."""
    out_per_call: int = 0
    """Completion tokens per call."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "tokens") -> TokensSpec:
        d = _keys(d, _field_names(cls), where)
        return cls(
            in_per_call=int(_num(d.get("in_per_call", 0), f"{where}.in_per_call", 0)),
            out_per_call=int(_num(d.get("out_per_call", 0), f"{where}.out_per_call", 0)),
        )


@dataclass(frozen=True)
class SomSpec:
    """Set-of-Mark picks (``select_element``); the perception noise is the point mode's."""

    confusion: float = 0.05
    """Probability that the pick moves to a nearby mark instead."""
    neighbours: int = 3
    """A confused pick is uniform over this many marks nearest to the right one (centre distance)."""
    guess_unmarked: float = 1.0
    """When no mark contains the perceived target: probability of naming the nearest mark anyway
    (otherwise the reply carries no tool call)."""
    confidence: ConfidenceSpec | None = None
    """Confidence of picks; ``None`` = ``oneshot.confidence``."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "som") -> SomSpec:
        d = _keys(d, _field_names(cls), where)
        conf = d.get("confidence")
        return cls(
            confusion=_prob(d.get("confusion", 0.05), f"{where}.confusion"),
            neighbours=int(_num(d.get("neighbours", 3), f"{where}.neighbours", 1)),
            guess_unmarked=_prob(d.get("guess_unmarked", 1.0), f"{where}.guess_unmarked"),
            confidence=None if conf is None else ConfidenceSpec.from_mapping(conf, f"{where}.confidence"),
        )


# ------------------------------------------------------------------ calibration extensions (issue 8)


def _gain(value: Any, where: str) -> tuple[float, float]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
        raise ValueError(f"{where} must be a list [gx, gy], got {value!r}")
    return (_num(value[0], f"{where}[0]"), _num(value[1], f"{where}[1]"))


@dataclass(frozen=True)
class CanvasSpec:
    """Sections that replace the top-level ones on scenes of one size (``None`` = keep the top level)."""

    size: tuple[int, int]
    """Scene size ``(W, H)`` in pixels this entry applies to (the scene's own size, before any resize)."""
    frames: FrameMix | None = None
    """Native-frame mixture on this canvas."""
    gain: tuple[float, float] | None = None
    """Per-axis gain on this canvas."""
    noise: NoiseSpec | None = None
    """Inlier noise on this canvas."""
    outlier: OutlierSpec | None = None
    """Outlier process on this canvas."""
    near: NearSpec | None = None
    """Near-target behaviour on this canvas."""
    axis_drop: AxisDropSpec | None = None
    """Axis dropping on this canvas."""
    confidence: ConfidenceSpec | None = None
    """Confidence of offset answers on this canvas."""
    oneshot: OneShotSpec | None = None
    """Point answers on this canvas."""

    @classmethod
    def from_mapping(cls, d: Any, where: str) -> CanvasSpec:
        d = _keys(d, _field_names(cls), where)
        size = d.get("size")
        if not isinstance(size, Sequence) or isinstance(size, str) or len(size) != 2:
            raise ValueError(f"{where}.size must be a list [W, H], got {size!r}")
        w, h = (int(_num(v, f"{where}.size[{i}]", 1)) for i, v in enumerate(size))
        kw: dict[str, Any] = {"size": (w, h)}
        parsers: dict[str, Callable[[Any, str], Any]] = {
            "frames": FrameMix.from_mapping,
            "gain": _gain,
            "noise": NoiseSpec.from_mapping,
            "outlier": OutlierSpec.from_mapping,
            "near": NearSpec.from_mapping,
            "axis_drop": AxisDropSpec.from_mapping,
            "confidence": ConfidenceSpec.from_mapping,
            "oneshot": OneShotSpec.from_mapping,
        }
        for key, parse in parsers.items():
            if d.get(key) is not None:
                kw[key] = parse(d[key], f"{where}.{key}")
        return cls(**kw)


def _canvases(value: Any, where: str) -> tuple[CanvasSpec, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ValueError(f"{where} must be a list of {{size: [W, H], ...}} entries")
    out = tuple(CanvasSpec.from_mapping(c, f"{where}[{i}]") for i, c in enumerate(value))
    sizes = [c.size for c in out]
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"{where}: each size may appear once, got {sizes}")
    return out


@dataclass(frozen=True)
class LatencySpec:
    """Per-call latency: a log-normal draw (median, log-sd) times ``scale``; off while ``scale`` is 0."""

    median_s: float = 0.0
    """Median seconds per call (fitted: the authors' wall time per call)."""
    sigma: float = 0.0
    """Standard deviation of the log of the latency."""
    scale: float = 0.0
    """Multiplier of the draw: 0 = no sampled latency (the default), 1 = realistic."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "latency") -> LatencySpec:
        d = _keys(d, _field_names(cls), where)
        return cls(
            median_s=_num(d.get("median_s", 0.0), f"{where}.median_s", 0.0),
            sigma=_num(d.get("sigma", 0.0), f"{where}.sigma", 0.0),
            scale=_num(d.get("scale", 0.0), f"{where}.scale", 0.0),
        )

    def sample(self, rng: np.random.Generator) -> float:
        """Seconds for one call (0 when off)."""
        if self.scale <= 0 or self.median_s <= 0:
            return 0.0
        return float(self.scale * self.median_s * math.exp(self.sigma * rng.standard_normal()))


@dataclass(frozen=True)
class ConsistencySpec:
    """Probability, per mode, that a call answers from its situation's generator (same situation, same
    answer) rather than from the per-call one."""

    offset: float = 0.0
    """``report_offset`` calls; the situation includes the crosshair position."""
    point: float = 0.0
    """``click_at`` calls (one-shot, absolute mode)."""

    @classmethod
    def from_mapping(cls, d: Any, where: str = "consistency") -> ConsistencySpec:
        d = _keys(d, _field_names(cls), where)
        return cls(
            offset=_prob(d.get("offset", 0.0), f"{where}.offset"),
            point=_prob(d.get("point", 0.0), f"{where}.point"),
        )


_CANVAS_SECTIONS = ("frames", "gain", "noise", "outlier", "near", "axis_drop", "confidence", "oneshot")


def for_canvas(prof: SimProfile, size: Size) -> SimProfile:
    """``prof`` with the ``canvas`` entry of a scene of ``size`` applied (itself when none matches)."""
    for c in prof.canvas:
        if c.size == (size.width, size.height):
            changes = {k: getattr(c, k) for k in _CANVAS_SECTIONS if getattr(c, k) is not None}
            return dataclasses.replace(prof, **changes) if changes else prof
    return prof


def _point_outliers(prof: SimProfile, truth: SceneTruth, aimed: str | None) -> tuple[OutlierSpec, float]:
    """Outlier process of a point answer: the profile's, or with ``oneshot.wrong_element_only`` always
    another interactive element (none when the scene has no other)."""
    if not prof.oneshot.wrong_element_only:
        return prof.outlier, prof.oneshot.outlier_p
    others = any(e.id != aimed for e in _interactive(truth))
    return dataclasses.replace(
        prof.outlier, wrong_element_share=1.0
    ), prof.oneshot.outlier_p if others else 0.0


def _gain_jitter(o: Offset, noise: NoiseSpec, rng: np.random.Generator) -> Offset:
    """Each axis of ``o`` times ``exp(noise.rel * z)`` (``z`` from the noise family, scale 1, clipped to
    +-2); unchanged, with no draw, when ``rel`` is 0."""
    if noise.rel <= 0:
        return o
    zx, zy = noise.sample(rng, 1.0)
    fx = math.exp(noise.rel * max(-2.0, min(2.0, zx)))
    fy = math.exp(noise.rel * max(-2.0, min(2.0, zy)))
    return Offset(o.dx * fx, o.dy * fy)


def _aim(
    truth: SceneTruth, text: str, prof: SimProfile, rng: np.random.Generator
) -> tuple[Point, str | None]:
    """:func:`_intended`, except that a prompt without the task aims at the target with ``no_task_target``
    (no extra draw when it is 0, so older profiles keep their random stream)."""
    task_given = bool(truth.instruction) and truth.instruction in text
    if prof.no_task_target > 0 and not task_given and rng.random() < prof.no_task_target:
        return truth.target_box.centre, truth.target_id
    return _intended(truth, text, prof.no_task, rng)


_SECTIONS: dict[str, Callable[[Any, str], Any]] = {
    "frames": FrameMix.from_mapping,
    "noise": NoiseSpec.from_mapping,
    "outlier": OutlierSpec.from_mapping,
    "near": NearSpec.from_mapping,
    "axis_drop": AxisDropSpec.from_mapping,
    "confidence": ConfidenceSpec.from_mapping,
    "oneshot": OneShotSpec.from_mapping,
    "tokens": TokensSpec.from_mapping,
    "som": SomSpec.from_mapping,
    "canvas": _canvases,
    "latency": LatencySpec.from_mapping,
    "no_task_target": _prob,
    "consistency": ConsistencySpec.from_mapping,
    "instance": lambda v, where: int(_num(v, where, 0)),
}


@dataclass(frozen=True)
class SimProfile:
    """Everything that makes one simulated model: the ``sim:`` block of a ``conf/model/sim-*.yaml``."""

    frames: FrameMix = field(default_factory=FrameMix)
    """Native-frame mixture of offset answers."""
    gain: tuple[float, float] = (1.0, 1.0)
    """Per-axis gain multiplier applied in the native frame."""
    noise: NoiseSpec = field(default_factory=NoiseSpec)
    """Inlier noise of the perceived target."""
    outlier: OutlierSpec = field(default_factory=OutlierSpec)
    """Outlier process of the perceived target."""
    near: NearSpec = field(default_factory=NearSpec)
    """Near-target behaviour."""
    axis_drop: AxisDropSpec = field(default_factory=AxisDropSpec)
    """Axis dropping."""
    confidence: ConfidenceSpec = field(default_factory=ConfidenceSpec)
    """Confidence of offset answers."""
    oneshot: OneShotSpec = field(default_factory=OneShotSpec)
    """Point answers."""
    p_no_tool_call: float = 0.0
    """Probability of a reply without a tool call."""
    no_task: str = "first_element"
    """Element aimed at when the prompt lacks the task: ``first_element | random_element``."""
    unknown_position: str = "zero"
    """Answer when the crosshair position is unknown: ``zero`` (report (0,0)) | ``guess_centre``."""
    tokens: TokensSpec = field(default_factory=TokensSpec)
    """Token counts per call."""
    latency_s: float = 0.0
    """Simulated latency per call in seconds (``complete`` sleeps when > 0)."""
    som: SomSpec = field(default_factory=SomSpec)
    """Set-of-Mark picks."""
    canvas: tuple[CanvasSpec, ...] = ()
    """Per-canvas overrides (calibration; empty = the top-level sections everywhere)."""
    no_task_target: float = 0.0
    """Probability that a prompt without the task still aims at the target (calibration)."""
    latency: LatencySpec = field(default_factory=LatencySpec)
    """Sampled per-call latency (calibration; off while ``latency.scale`` is 0)."""
    consistency: ConsistencySpec = field(default_factory=ConsistencySpec)
    """Same situation, same answer (calibration; 0 = every call draws afresh)."""
    instance: int = 0
    """A label that changes every random stream but no distribution: another simulated instance of the same
    model (validation averages over a few, since a consistent model's situation draws are shared by all
    repeats)."""

    @classmethod
    def from_mapping(cls, d: Any) -> SimProfile:
        """Build and validate a profile; unknown keys raise ``ValueError`` naming the key (dotted path)."""
        d = _keys(_plain(d), _field_names(cls), "sim")
        kw: dict[str, Any] = {}
        for key, value in d.items():
            if key in _SECTIONS:
                kw[key] = _SECTIONS[key](value, f"sim.{key}")
            elif key == "gain":
                if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != 2:
                    raise ValueError(f"sim.gain must be a list [gx, gy], got {value!r}")
                kw[key] = (_num(value[0], "sim.gain[0]"), _num(value[1], "sim.gain[1]"))
            elif key == "p_no_tool_call":
                kw[key] = _prob(value, "sim.p_no_tool_call")
            elif key == "no_task":
                kw[key] = _choice(value, ("first_element", "random_element"), "sim.no_task")
            elif key == "unknown_position":
                kw[key] = _choice(value, ("zero", "guess_centre"), "sim.unknown_position")
            elif key == "latency_s":
                kw[key] = _num(value, "sim.latency_s", 0.0)
        return cls(**kw)

    def digest(self) -> str:
        """Stable content hash of the profile (part of the per-call seed). A default ``som`` block is left
        out, so profiles written before Set-of-Mark keep their hash (and their replies)."""
        d = dataclasses.asdict(self)
        if self.som == SomSpec():
            d.pop("som")
        blob = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _plain(d: Any) -> Any:
    """Turn an OmegaConf container into plain Python (other inputs pass through)."""
    if type(d).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(d, resolve=True)
    return d


def load_profile(path_or_mapping: str | Path | Mapping[str, Any]) -> SimProfile:
    """Load a profile from a model YAML path, a whole model config (with ``sim:``) or a ``sim`` mapping."""
    if isinstance(path_or_mapping, (str, Path)):
        import yaml

        data = yaml.safe_load(Path(path_or_mapping).read_text())
    else:
        data = _plain(path_or_mapping)
    if isinstance(data, Mapping) and "sim" in data:
        data = data["sim"]
    return SimProfile.from_mapping(data)


# --------------------------------------------------------------------------------- pure helpers

_POS_RE = re.compile(
    r"^[ \t]*crosshair position:[ \t]*\([ \t]*([-+]?\d+(?:\.\d+)?)[ \t]*,[ \t]*([-+]?\d+(?:\.\d+)?)[ \t]*\)"
    r"[ \t]*([^\n]*)",
    re.IGNORECASE | re.MULTILINE,
)
"""A ``Crosshair position: (X, Y) UNIT`` line (at the start of a line, tolerant of spacing and case)."""
_POS_LINE_RE = re.compile(r"^[ \t]*crosshair position:", re.IGNORECASE | re.MULTILINE)
"""Any line stating the crosshair position (even one whose numbers cannot be read)."""


def _unit_frame(unit: str) -> Frame:
    u = unit.strip().lower().replace("\u2013", "-").replace("\u2212", "-")
    if re.match(r"in 0\s*-\s*1000\b", u):
        return Frame.NORM1000
    if re.match(r"in 0\s*-\s*1\b", u):
        return Frame.NORM1
    return Frame.PIXEL  # "px" or no unit: the plain reading of a coordinate pair


def parse_crosshair_line(text: str, size: Size) -> Point | None:
    """The crosshair position stated in ``text`` (``Crosshair position: (X, Y) UNIT``), in pixels."""
    m = _POS_RE.search(text)
    if m is None:
        return None
    p = Point(float(m.group(1)), float(m.group(2)))
    return point_to_pixels(p, _unit_frame(m.group(3)), size)


_MARKS_RE = re.compile(r"^[ \t]*marked elements:[ \t]*(\{.*)$", re.IGNORECASE | re.MULTILINE)
"""The ``Marked elements: {"elements": [...]}`` line of a Set-of-Mark prompt."""
_UNITS_RE = re.compile(r"^[ \t]*element list units:[ \t]*([^\n.]*)", re.IGNORECASE | re.MULTILINE)
"""The ``Element list units: ...`` line."""


def parse_marks(text: str, size: Size) -> list[tuple[int, Box]]:
    """The marks listed in a SoM prompt as ``(id, box in pixels)``; empty when there is no readable list.

    Units come from the ``Element list units:`` line (``pixels``, ``0-1000``, ``0-1``; pixels without it).
    """
    m = _MARKS_RE.search(text)
    if m is None:
        return []
    try:
        data, _ = json.JSONDecoder().raw_decode(m.group(1))
    except ValueError:
        return []
    u = _UNITS_RE.search(text)
    unit = u.group(1).strip().lower().replace("\u2013", "-") if u else "pixels"
    frame = Frame.PIXEL
    if "1000" in unit:
        frame = Frame.NORM1000
    elif re.match(r"0\s*-\s*1\b", unit):
        frame = Frame.NORM1
    marks: list[tuple[int, Box]] = []
    for e in data.get("elements", []) if isinstance(data, Mapping) else []:
        try:
            ident = int(e["id"])
            x0, y0, x1, y1 = (float(v) for v in e["box"])
        except (KeyError, TypeError, ValueError):
            continue
        a = point_to_pixels(Point(x0, y0), frame, size)
        b = point_to_pixels(Point(x1, y1), frame, size)
        marks.append((ident, Box(min(a.x, b.x), min(a.y, b.y), max(a.x, b.x), max(a.y, b.y))))
    return marks


def _box_distance(b: Box, p: Point) -> float:
    """Distance from ``p`` to the box (0 inside)."""
    dx = max(b.x0 - p.x, 0.0, p.x - b.x1)
    dy = max(b.y0 - p.y, 0.0, p.y - b.y1)
    return math.hypot(dx, dy)


def _tool_names(tools: Sequence[Mapping[str, Any]]) -> set[str]:
    names: set[str] = set()
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            names.add(fn["name"])
    return names


def _scale_box(b: Box, sx: float, sy: float) -> Box:
    return Box(b.x0 * sx, b.y0 * sy, b.x1 * sx, b.y1 * sy)


def _truth_in_image(truth: SceneTruth, size: Size) -> SceneTruth:
    """Ground truth in pixels of the image sent (differs from the scene's when the harness resized it)."""
    if size == truth.size:
        return truth
    sx, sy = size.width / truth.size.width, size.height / truth.size.height
    return dataclasses.replace(
        truth,
        size=size,
        target_box=_scale_box(truth.target_box, sx, sy),
        elements=tuple(dataclasses.replace(e, box=_scale_box(e.box, sx, sy)) for e in truth.elements),
    )


def _interactive(truth: SceneTruth) -> list[Element]:
    return [e for e in truth.elements if e.interactive]


def _intended(
    truth: SceneTruth, text: str, no_task: str, rng: np.random.Generator
) -> tuple[Point, str | None]:
    """Centre of the element the model aims at, and its id (``None`` for a bare target box)."""
    if truth.instruction and truth.instruction in text:
        return truth.target_box.centre, truth.target_id
    elems = _interactive(truth)
    if not elems:
        return truth.target_box.centre, truth.target_id
    e = elems[0] if no_task == "first_element" else elems[int(rng.integers(len(elems)))]
    return e.box.centre, e.id


def _perceive(
    truth: SceneTruth,
    centre: Point,
    aimed_id: str | None,
    noise: NoiseSpec,
    noise_px: float,
    outlier: OutlierSpec,
    outlier_p: float,
    rng: np.random.Generator,
) -> Point:
    """Perceived target ``T^`` in px: centre (or an outlier) + inlier noise, clamped to the canvas."""
    if outlier_p > 0 and rng.random() < outlier_p:
        others = [e for e in _interactive(truth) if e.id != aimed_id]
        if others and rng.random() < outlier.wrong_element_share:
            centre = others[int(rng.integers(len(others)))].box.centre
        else:
            mag = float(rng.uniform(outlier.min_px, outlier.max_px))
            ang = float(rng.uniform(0.0, 2.0 * math.pi))
            centre = Point(centre.x + mag * math.cos(ang), centre.y + mag * math.sin(ang))
    ex, ey = noise.sample(rng, noise_px)
    return clamp_point(Point(centre.x + ex, centre.y + ey), truth.size)


def _sample_frame(weights: Mapping[str, float], rng: np.random.Generator) -> str:
    names = list(NATIVE_FRAMES)
    p = np.asarray([weights.get(n, 0.0) for n in names], dtype=float)
    return names[int(rng.choice(len(names), p=p / p.sum()))]


def _near_target(o: Offset, near: NearSpec, axis_drop: AxisDropSpec, rng: np.random.Generator) -> Offset:
    """Apply §9.2/§9.3 near-target behaviour and axis dropping to a perceived offset (px)."""
    d = o.magnitude
    if d < NEAR_PX:
        if rng.random() < near.p_zero_below_30:
            return Offset(0.0, 0.0)
    elif d < MID_PX:
        if rng.random() < near.p_zero_30_100:
            return Offset(0.0, 0.0)
        if rng.random() < near.p_reverse_30_100:
            o = o.scaled(-1.0)
    if d < MID_PX:
        o = o.scaled(near.shrink_below_100)
    p_x, p_y = axis_drop.per_axis()
    if (p_x > 0 or p_y > 0) and d < axis_drop.max_px:
        drop_x = abs(o.dx) > AXIS_DROP_MIN_PX and rng.random() < p_x
        drop_y = abs(o.dy) > AXIS_DROP_MIN_PX and rng.random() < p_y
        if drop_x and drop_y:  # never both: keep the larger component
            drop_x, drop_y = abs(o.dx) < abs(o.dy), abs(o.dx) >= abs(o.dy)
        o = Offset(0.0 if drop_x else o.dx, 0.0 if drop_y else o.dy)
    return o


def _round(v: float, frame: str) -> float | int:
    if frame == "norm1":
        return round(v, 3)
    return int(round(v))


def _frame_of(name: str) -> Frame:
    return Frame.PIXEL if name == "mixed" else Frame(name)


def _decode(req: ModelRequest) -> np.ndarray | None:
    if req.image_rgb is not None:
        return np.asarray(req.image_rgb)
    if req.image_png is None:
        return None
    from PIL import Image

    with Image.open(io.BytesIO(req.image_png)) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)


def _image_digest(req: ModelRequest) -> bytes:
    if req.image_png is not None:
        return hashlib.sha256(req.image_png).digest()
    if req.image_rgb is not None:
        arr = np.ascontiguousarray(req.image_rgb)
        h = hashlib.sha256(str(arr.shape).encode())
        h.update(arr.tobytes())
        return h.digest()
    return hashlib.sha256(b"").digest()


# ---------------------------------------------------------------------------------------- model


class SimulatedModel:
    """A simulated VLM answering :class:`ModelRequest` from the pixels, the text and the scene truth."""

    simulated = True

    def __init__(self, name: str, profile: SimProfile, truth: Callable[[str], SceneTruth]):
        self.name = name
        """Config name of the model."""
        self.profile = profile
        """The calibrated behaviour."""
        self.truth = truth
        """Ground-truth lookup by scene id."""
        self._identity = f"{name}|{profile.digest()}".encode()
        self.max_reply_chars = MAX_REPLY_CHARS
        """Characters kept of a reply's text and tool arguments (``run.max_reply_chars``), as a client."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], truth: Callable[[str], SceneTruth]) -> SimulatedModel:
        """Build from a whole model config (``name`` + ``sim:``), e.g. a loaded ``conf/model/sim-*.yaml``."""
        cfg = _plain(cfg)
        return cls(str(cfg["name"]), load_profile(cfg), truth)

    def rng_for(self, req: ModelRequest) -> np.random.Generator:
        """The per-call generator: a pure function of the profile identity and the request content."""
        h = hashlib.sha256(self._identity)
        h.update(b"|" + str(int(req.seed)).encode() + b"|")
        h.update(req.text.encode())
        h.update(_image_digest(req))
        return np.random.default_rng(int.from_bytes(h.digest()[:16], "big"))

    async def complete(self, request: ModelRequest) -> Reply:
        reply = bound_reply(self.respond(request), self.max_reply_chars)  # the records a real client writes
        delay = self.latency_for(request)
        if delay != reply.latency_s:
            reply = dataclasses.replace(reply, latency_s=delay)
        if delay > 0:
            await asyncio.sleep(delay)
        return reply

    def latency_for(self, req: ModelRequest) -> float:
        """Seconds the call takes: ``latency_s`` plus the ``latency`` draw (from a child generator of the
        call's, so the reply does not depend on whether latency is sampled)."""
        lat = self.profile.latency
        if lat.scale <= 0 or lat.median_s <= 0:
            return self.profile.latency_s
        return self.profile.latency_s + lat.sample(self.rng_for(req).spawn(1)[0])

    def respond(self, req: ModelRequest) -> Reply:
        """Answer one request synchronously (deterministic in the request)."""
        prof = self.profile
        names = _tool_names(req.tools)
        if "report_offset" in names:
            mode = "offset"
        elif "click_at" in names:
            mode = "point"
        elif "select_element" in names:
            marks = parse_marks(req.text, req.image_size)
            if not marks:
                return self._reply(NOT_SUPPORTED, None)
            mode = "select"
        else:
            return self._reply(NO_TOOL_TEXT, None)
        rng = self.rng_for(req)
        if rng.random() < prof.p_no_tool_call:
            return self._reply(NO_TOOL_TEXT, None)
        size = req.image_size
        scene = self.truth(req.scene_id)
        truth = _truth_in_image(scene, size)
        prof = for_canvas(prof, scene.size)
        rng = self.situation_rng(req, prof, mode, truth, rng)
        centre, aimed = _aim(truth, req.text, prof, rng)
        if mode == "point":
            return self._point(truth, size, centre, aimed, rng, prof)
        if mode == "select":
            return self._select(truth, marks, centre, aimed, rng)
        return self._offset(req, truth, size, centre, aimed, rng, prof)

    def situation_rng(
        self, req: ModelRequest, prof: SimProfile, mode: str, truth: SceneTruth, rng: np.random.Generator
    ) -> np.random.Generator:
        """``rng``, or with probability ``consistency.<mode>`` a generator seeded by the call's situation
        (no draw at all when that probability is 0, so older profiles keep their random stream)."""
        c = {"offset": prof.consistency.offset, "point": prof.consistency.point}.get(mode, 0.0)
        if c <= 0 or rng.random() >= c:
            return rng
        task = bool(truth.instruction) and truth.instruction in req.text
        where = ""
        if mode == "offset":
            image = _decode(req)
            p = find_crosshair(image, width=3) if image is not None else None
            p = p if p is not None else parse_crosshair_line(req.text, req.image_size)
            where = "none" if p is None else f"{round(p.x)},{round(p.y)}"
        key = f"{mode}|{req.scene_id}|{req.image_size.width}x{req.image_size.height}|{task}|{where}"
        h = hashlib.sha256(self._identity + b"|situation|" + key.encode())
        return np.random.default_rng(int.from_bytes(h.digest()[:16], "big"))

    def _select(
        self,
        truth: SceneTruth,
        marks: list[tuple[int, Box]],
        centre: Point,
        aimed: str | None,
        rng: np.random.Generator,
    ) -> Reply:
        prof = self.profile
        t_hat = _perceive(
            truth, centre, aimed, prof.noise, prof.oneshot.noise_px, prof.outlier, prof.oneshot.outlier_p, rng
        )
        u_guess, u_confuse, u_pick = rng.random(3)
        inside = [(b.area, i) for i, (_, b) in enumerate(marks) if b.contains(t_hat)]
        if inside:
            pick = min(inside)[1]
        elif u_guess < prof.som.guess_unmarked:
            pick = min(range(len(marks)), key=lambda i: (_box_distance(marks[i][1], t_hat), i))
        else:
            return self._reply(NO_TOOL_TEXT, None)
        if len(marks) > 1 and u_confuse < prof.som.confusion:
            c = marks[pick][1].centre
            others = sorted((marks[i][1].centre.dist(c), i) for i in range(len(marks)) if i != pick)
            near = others[: prof.som.neighbours]
            pick = near[int(u_pick * len(near))][1]
        conf = (prof.som.confidence or prof.oneshot.confidence).sample(rng, 0.0)
        args = {"id": marks[pick][0], "confidence": conf}
        return self._reply(None, ToolCall("select_element", json.dumps(args)))

    def _point(
        self,
        truth: SceneTruth,
        size: Size,
        centre: Point,
        aimed: str | None,
        rng: np.random.Generator,
        prof: SimProfile | None = None,
    ) -> Reply:
        prof = self.profile if prof is None else prof
        outlier, outlier_p = _point_outliers(prof, truth, aimed)
        t_hat = _perceive(truth, centre, aimed, prof.noise, prof.oneshot.noise_px, outlier, outlier_p, rng)
        mix = prof.oneshot.frames or prof.frames
        frame = _sample_frame(mix.weights(position_stated=True), rng)
        p = point_from_pixels(t_hat, Frame(frame), size)
        conf = prof.oneshot.confidence.sample(rng, 0.0)
        args = {"x": _round(p.x, frame), "y": _round(p.y, frame), "confidence": conf}
        return self._reply(None, ToolCall("click_at", json.dumps(args)))

    def _offset(
        self,
        req: ModelRequest,
        truth: SceneTruth,
        size: Size,
        centre: Point,
        aimed: str | None,
        rng: np.random.Generator,
        prof: SimProfile | None = None,
    ) -> Reply:
        prof = self.profile if prof is None else prof
        t_hat = _perceive(truth, centre, aimed, prof.noise, None, prof.outlier, prof.outlier.p, rng)
        image = _decode(req)
        p_hat = find_crosshair(image, width=3) if image is not None else None
        if p_hat is None:
            p_hat = parse_crosshair_line(req.text, size)
        stated = _POS_LINE_RE.search(req.text) is not None
        frame = _sample_frame(prof.frames.weights(position_stated=stated), rng)
        if p_hat is None:
            if prof.unknown_position == "zero":
                args = {"dx": 0, "dy": 0, "confidence": prof.confidence.sample(rng, 0.0)}
                return self._reply(None, ToolCall("report_offset", json.dumps(args)))
            p_hat = size.centre
        if frame == "mixed":  # H2: target in 0-1000 units, crosshair in pixels; believed to be pixels
            g_t = point_from_pixels(t_hat, Frame.NORM1000, size)
            belief = _near_target(_gain_jitter(g_t - p_hat, prof.noise, rng), prof.near, prof.axis_drop, rng)
            native = belief
        else:
            belief = _near_target(
                _gain_jitter(t_hat - p_hat, prof.noise, rng), prof.near, prof.axis_drop, rng
            )
            native = offset_from_pixels(belief, _frame_of(frame), size)
        gx, gy = prof.gain
        conf = prof.confidence.sample(rng, belief.magnitude)
        args = {"dx": _round(native.dx * gx, frame), "dy": _round(native.dy * gy, frame), "confidence": conf}
        return self._reply(None, ToolCall("report_offset", json.dumps(args)))

    def _reply(self, text: str | None, call: ToolCall | None) -> Reply:
        tok = self.profile.tokens
        return Reply(
            text=text,
            tool_calls=[call] if call is not None else [],
            tokens_in=tok.in_per_call,
            tokens_out=tok.out_per_call,
            cost_usd=0.0,
            cost_source="simulated",
            latency_s=self.profile.latency_s,
        )
