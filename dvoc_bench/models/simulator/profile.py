"""The simulator's profile: the ``sim:`` block of a ``conf/model/sim-*.yaml``, with its validation (an
unknown key raises ``ValueError`` naming the dotted key). What each knob does is described in
:mod:`dvoc_bench.models.simulator` (the numbered steps of one call).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.geometry import Size

__all__ = [
    "NATIVE_FRAMES",
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
    "SomSpec",
    "TokensSpec",
    "for_canvas",
    "load_profile",
]

NATIVE_FRAMES = ("pixel", "norm1000", "norm1", "mixed")
"""Frames a simulated answer can be given in; ``mixed`` is the H2 frame of upstream-facts §9.1."""

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
        d = _keys(plain(d), _field_names(cls), "sim")
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


def plain(d: Any) -> Any:
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
        data = plain(path_or_mapping)
    if isinstance(data, Mapping) and "sim" in data:
        data = data["sim"]
    return SimProfile.from_mapping(data)
