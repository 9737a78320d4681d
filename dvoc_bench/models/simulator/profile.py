"""The simulator's profile: the ``sim:`` block of a ``conf/model/sim-*.yaml``, declared once.

Each section is a settings model on :mod:`dvoc_bench.core.declare` (unknown keys, non-finite numbers and
out-of-range values are errors; instances are immutable) and lists each knob once, with its type, default,
range and docstring. A bad value is a :class:`~dvoc_bench.core.declare.ConfigError` of one line naming the
dotted key, e.g. ``sim.noise.scale_px: must be greater than or equal to 0, got -1``. What each knob does is
described in :mod:`dvoc_bench.models.simulator` (the numbered steps of one call).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import BeforeValidator, Field, StrictBool, ValidationInfo, field_validator, model_validator

from dvoc_bench.core.assumptions import assumed_labels, registered_knobs
from dvoc_bench.core.declare import Declared, NonNegFloat, NonNegInt, PosFloat, PosInt, Prob, validate
from dvoc_bench.core.geometry import Size

__all__ = [
    "NATIVE_FRAMES",
    "AxisDropSpec",
    "CanvasSpec",
    "ConfidenceBucket",
    "ConfidenceSpec",
    "ASSUMPTION_LABELS",
    "ConsistencySpec",
    "FittedFor",
    "FrameMix",
    "LatencySpec",
    "NearSpec",
    "NoiseSpec",
    "OneShotSpec",
    "OutlierSpec",
    "PerceptionSpec",
    "SimProfile",
    "SomSpec",
    "TokensSpec",
    "assumed_knobs",
    "for_canvas",
    "load_profile",
]

NATIVE_FRAMES = ("pixel", "norm1000", "norm1", "mixed")
"""Frames a simulated answer can be given in; ``mixed`` is the H2 frame of the model-frame test
(docs/simulator.md)."""


def _none_is_no_bound(v: Any) -> Any:
    if v is None:
        return math.inf
    if isinstance(v, float) and math.isnan(v):
        raise ValueError("must be a number >= 0, or null for no bound")
    return v


Bound = Annotated[float, Field(allow_inf_nan=True, ge=0.0), BeforeValidator(_none_is_no_bound)]
"""A bound in px, >= 0; ``null`` or ``.inf`` = no bound (held as ``math.inf``)."""
Gain = tuple[float, float]
"""A per-axis factor ``[gx, gy]``."""


class FrameMix(Declared):
    """Mixture weights of the native frame, sampled once per call. A block that names some weights leaves
    the others at 0; the weights are normalised to sum 1 on load."""

    pixel: NonNegFloat = 0.0
    """Weight of answers in screenshot pixels."""
    norm1000: NonNegFloat = 1.0
    """Weight of answers in Gemini's 0-1000 normalised frame."""
    norm1: NonNegFloat = 0.0
    """Weight of answers in the 0-1 normalised frame."""
    mixed: NonNegFloat = 0.0
    """Weight of H2 answers (target in 0-1000 units, crosshair in pixels); only possible when the prompt
    does not state the crosshair position, otherwise it is added to ``norm1000``."""

    @model_validator(mode="before")
    @classmethod
    def _unnamed_weights_are_zero(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data:
            return {**dict.fromkeys(NATIVE_FRAMES, 0.0), **data}
        return data

    @model_validator(mode="after")
    def _normalised(self) -> FrameMix:
        total = sum(getattr(self, k) for k in NATIVE_FRAMES)
        if total <= 0:
            raise ValueError("the weights must have a positive sum")
        for k in NATIVE_FRAMES:  # the instance is not visible to anyone yet: normalise it in place
            object.__setattr__(self, k, getattr(self, k) / total)
        return self

    def weights(self, position_stated: bool) -> dict[str, float]:
        """Weights per frame for one call; ``mixed`` folds into ``norm1000`` when the position is stated."""
        w = {"pixel": self.pixel, "norm1000": self.norm1000, "norm1": self.norm1, "mixed": self.mixed}
        if position_stated:
            w["norm1000"] += w.pop("mixed")
            w["mixed"] = 0.0
        return w


class NoiseSpec(Declared):
    """Inlier perception noise of the target, per axis, in pixels."""

    dist: Literal["laplace", "student_t"] = "laplace"
    """Distribution family: ``laplace`` or ``student_t``."""
    scale_px: NonNegFloat = 0.0
    """Scale parameter in px (Laplace ``b``: MAD-sd = 1.03 b; Student-t scale: MAD-sd = 1.13 s at df 3)."""
    df: PosFloat = 3.0
    """Degrees of freedom of the Student-t (ignored for Laplace)."""
    rel: NonNegFloat = 0.0
    """Offset mode only (calibration): each axis of the offset the model believes in is multiplied by
    ``exp(rel * z)``, ``z`` from this family with scale 1 (clipped to +-2): an error that grows with the
    distance measured and never flips the direction; 0 = none."""

    within_target: StrictBool = False
    """An oracle of the harness, not a model of perception (``sim-ideal``): a perceived point that leaves
    the box of the element aimed at is put back into it, half a pixel in from its edges so that a pixel
    answer's rounding keeps it there (a box under 1 px wide: its middle). Only when the centre aimed at
    lies in that box (an outlier is left where it fell). A target smaller than the noise (precision-cua's
    1.6 px carets against 1 px Laplace noise) is then hit, as an ideal model would. The draw itself is
    unchanged, so the profile keeps its digest and its random stream. Fitted profiles: ``false``."""

    def sample(self, rng: np.random.Generator, scale_px: float | None = None) -> tuple[float, float]:
        """One ``(ex, ey)`` draw in px; ``scale_px`` overrides the profile's scale."""
        s = self.scale_px if scale_px is None else scale_px
        if s <= 0:
            return 0.0, 0.0
        e = rng.laplace(0.0, s, 2) if self.dist == "laplace" else s * rng.standard_t(self.df, 2)
        return float(e[0]), float(e[1])


class OutlierSpec(Declared):
    """Gross perception errors: the wrong element, or a large displacement."""

    p: Prob = 0.0
    """Probability that a call's perceived target is an outlier."""
    wrong_element_share: Prob = 0.5
    """Share of outliers that take another interactive element's centre (the rest are displacements)."""
    min_px: NonNegFloat = 100.0
    """Smallest displacement magnitude in px."""
    max_px: NonNegFloat = Field(250.0, validate_default=True)
    """Largest displacement magnitude in px (at least ``min_px``)."""

    @field_validator("max_px")
    @classmethod
    def _at_least_min(cls, v: float, info: ValidationInfo) -> float:
        lo = info.data.get("min_px")
        if lo is not None and v < lo:
            raise ValueError(f"must be at least min_px ({lo:g})")
        return v


class NearSpec(Declared):
    """Near-target behaviour on the perceived offset (px), bins of the residual statistics."""

    p_zero_below_30: Prob = 0.0
    """Probability of reporting ``(0, 0)`` when the perceived offset is below 30 px."""
    p_zero_30_100: Prob = 0.0
    """Probability of reporting ``(0, 0)`` when it is 30-100 px."""
    p_reverse_30_100: Prob = 0.0
    """Probability of reversing the direction at 30-100 px (among non-zero reports)."""
    shrink_below_100: NonNegFloat = 1.0
    """Gain factor applied to perceived offsets shorter than ``shrink_below_px`` (under-reporting near the
    target; the name keeps the first profiles' edge of 100 px)."""
    shrink_below_px: PosFloat = 100.0
    """Where the shrink starts (px of the perceived offset; calibration: the edge of largest likelihood
    among :data:`~dvoc_bench.calibration.fit.SHRINK_EDGES`. Gemini 3.1 FL reported 0.8-0.9 of the distance
    at 30-60 px and all of it from 60 px: a shrink up to 100 px made the simulated model stop early)."""
    zero_rule: Literal["distance", "box"] = "distance"
    """What decides a ``(0, 0)`` report: ``distance``, the perceived offset's bins above; ``box``, whether
    the perceived crosshair lies on the element aimed at (calibration: 112 of Gemini 3.1 FL's 118 zero
    reports came with the crosshair inside the target box or within 10 px of it, none 30-100 px off it,
    so a large button stops the loop early and a small one never does). Under ``box`` the two distance
    rates are not used. The box is the one the model perceives: the element's size around its own noisy
    estimate of the target (:func:`~dvoc_bench.models.simulator.behaviour.perceived_box_distance`), never
    the true box; "from the centre" below is the length of the perceived offset."""
    p_zero_in_box: Prob = 0.0
    """``zero_rule: box``: probability of ``(0, 0)`` when the perceived crosshair lies inside the box."""
    p_zero_box_near: Prob = 0.0
    """``zero_rule: box``: probability of ``(0, 0)`` when it lies outside, at most ``BOX_NEAR_PX`` (10 px)
    from the box; further off the report is never ``(0, 0)``."""
    p_zero_in_box_below_15: Prob | None = None
    """``zero_rule: box``: the in-box rate while the perceived crosshair is less than 15 px from the centre
    of the box aimed at; ``None`` = ``p_zero_in_box`` (calibration: Gemini 3.1 FL reported (0, 0) in 15 of
    17 in-box replies within 15 px of the centre, 48 of 82 at 15-30 px, 43 of 114 further: the rate rises
    as the crosshair nears the centre)."""
    p_zero_in_box_below_30: Prob | None = None
    """``zero_rule: box``: the in-box rate at 15-30 px from the box centre (below 30 px when
    ``p_zero_in_box_below_15`` is ``None``); ``None`` = ``p_zero_in_box``, which then holds from 30 px on."""


class AxisDropSpec(Declared):
    """Axis dropping: one component reported as 0 while that axis is far off."""

    p: Prob = 0.0
    """Probability, per axis with ``|t^_axis| > 30`` px, that the axis is reported as 0."""
    p_x: Prob | None = None
    """Probability for the x axis alone (calibration: Gemini drops x far more often than y); ``None``
    = ``p``."""
    p_y: Prob | None = None
    """Probability for the y axis alone; ``None`` = ``p``."""
    max_px: Bound = math.inf
    """Axes are dropped only while the perceived offset is shorter than this (calibration: none of the
    authors' models dropped an axis beyond 300 px); ``null`` / ``.inf`` = no bound."""
    max_axis_px: Bound = math.inf
    """An axis further off than this (its own component, px) is never dropped (calibration: Gemini dropped
    x only while x was at most 100 px off); ``null`` / ``.inf`` = no bound."""
    p_x_in_span: Prob | None = None
    """Probability of reporting ``dx = 0`` while the perceived crosshair lies within the x span of the box
    aimed at (at most ``BOX_NEAR_PX`` outside it), whatever the offset and reach; ``None`` = the rule of
    ``p_x`` (calibration: Gemini on 800x600 said dx = 0 in 33 % of such non-zero replies, and dropped x in
    6 % of the others: it is "aligned with the button")."""
    p_y_in_span: Prob | None = None
    """The same for the y axis and the box's y span; ``None`` = ``p_y``."""

    def per_axis(self) -> tuple[float, float]:
        """``(p for x, p for y)``."""
        return (self.p if self.p_x is None else self.p_x, self.p if self.p_y is None else self.p_y)


class _Categorical(Declared):
    """Confidence values and their probabilities (``probs`` defaults to equal weights)."""

    number_means_always: ClassVar[bool] = False
    """Whether a bare number stands for ``{values: [number]}``."""

    values: Annotated[tuple[Prob, ...], Field(min_length=1)] = (1.0,)
    """Confidence values, each in [0, 1]."""
    probs: tuple[NonNegFloat, ...] = (1.0,)
    """Their probabilities, as long as ``values`` (normalised on load; default: equal)."""

    @model_validator(mode="before")
    @classmethod
    def _shorthands(cls, data: Any) -> Any:
        if cls.number_means_always and isinstance(data, (int, float)) and not isinstance(data, bool):
            return {"values": [data], "probs": [1.0]}
        values = data.get("values") if isinstance(data, Mapping) else None
        if isinstance(values, (list, tuple)) and "probs" not in data:
            return {**data, "probs": [1.0] * len(values)}
        return data

    @field_validator("probs")
    @classmethod
    def _normalised(cls, v: tuple[float, ...], info: ValidationInfo) -> tuple[float, ...]:
        values = info.data.get("values")
        if values is not None and len(v) != len(values):
            raise ValueError(f"must have as many items as values ({len(values)})")
        total = sum(v)
        if total <= 0:
            raise ValueError("must have a positive sum")
        return tuple(p / total for p in v)


class ConfidenceBucket(_Categorical):
    """A confidence distribution used when the reported offset is at most ``max_px``."""

    max_px: Bound = math.inf
    """Upper bound (px, inclusive) of the reported-offset magnitude; ``null`` / ``.inf`` = no bound."""


class ConfidenceSpec(_Categorical):
    """Categorical self-reported confidence; a bare number means always that value."""

    number_means_always: ClassVar[bool] = True

    by_distance: tuple[ConfidenceBucket, ...] = ()
    """Optional buckets by reported-offset magnitude (strictly ascending ``max_px``); when set they replace
    ``values / probs`` (which still serve reports beyond the last bucket)."""

    @field_validator("by_distance", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return () if v is None else v

    @field_validator("by_distance")
    @classmethod
    def _ascending(cls, v: tuple[ConfidenceBucket, ...]) -> tuple[ConfidenceBucket, ...]:
        for i, (a, b) in enumerate(zip(v, v[1:], strict=False)):
            if a.max_px >= b.max_px:
                raise ValueError(
                    f"max_px must be strictly ascending (item {i + 1}: {b.max_px:g} after {a.max_px:g})"
                )
        return v

    def sample(self, rng: np.random.Generator, distance_px: float) -> float:
        """One confidence draw for a report of magnitude ``distance_px``."""
        values, probs = self.values, self.probs
        for bucket in self.by_distance:
            if distance_px <= bucket.max_px:
                values, probs = bucket.values, bucket.probs
                break
        return float(values[int(rng.choice(len(values), p=np.asarray(probs)))])


def _none_is_default(v: Any) -> Any:
    return ConfidenceSpec() if v is None else v


class OneShotSpec(Declared):
    """Point answers (``click_at``): one-shot and absolute-mode calls."""

    noise_px: NonNegFloat = 1.0
    """Inlier noise scale in px (same distribution family as ``noise``)."""
    outlier_p: Prob = 0.0
    """Outlier probability (magnitudes and element share from ``outlier``)."""
    frames: FrameMix | None = None
    """Native-frame mixture for points; ``None`` = the offset mixture with ``mixed`` counted as
    ``norm1000``."""
    confidence: Annotated[ConfidenceSpec, BeforeValidator(_none_is_default)] = Field(
        default_factory=ConfidenceSpec
    )
    """Confidence of point answers (a number means always that value; ``null`` = always 1.0)."""
    wrong_element_only: StrictBool = False
    """Calibration: an outlier is always another element, so a scene with a single element has none (the
    authors' models never missed a single-element scene once the task was given); False = as ``outlier``.
    Only ``true`` / ``false``: a string such as ``"yes"`` is an error."""


class TokensSpec(Declared):
    """Token counts reported per call (constant placeholders: the records hold no usable counts)."""

    in_per_call: NonNegInt = 0
    """Prompt tokens per call."""
    out_per_call: NonNegInt = 0
    """Completion tokens per call."""


class SomSpec(Declared):
    """Set-of-Mark picks (``select_element``); the perception noise is the point mode's."""

    confusion: Prob = 0.05
    """Probability that the pick moves to a nearby mark instead."""
    neighbours: PosInt = 3
    """A confused pick is uniform over this many marks nearest to the right one (centre distance)."""
    guess_unmarked: Prob = 1.0
    """When no mark contains the perceived target: probability of naming the nearest mark anyway
    (otherwise the reply carries no tool call)."""
    confidence: ConfidenceSpec | None = None
    """Confidence of picks; ``None`` = ``oneshot.confidence``."""


class CanvasSpec(Declared):
    """Sections that replace the top-level ones on scenes of one size (``None`` = keep the top level)."""

    size: tuple[PosInt, PosInt]
    """Scene size ``[W, H]`` in pixels this entry applies to (the scene's own size, before any resize)."""
    frames: FrameMix | None = None
    """Native-frame mixture on this canvas."""
    gain: Gain | None = None
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


_CANVAS_SECTIONS = ("frames", "gain", "noise", "outlier", "near", "axis_drop", "confidence", "oneshot")
"""The sections a ``canvas`` entry can replace."""


class LatencySpec(Declared):
    """Per-call latency: a log-normal draw (median, log-sd) times ``scale``; off while ``scale`` is 0."""

    median_s: NonNegFloat = 0.0
    """Median seconds per call (fitted: the authors' wall time per call)."""
    sigma: NonNegFloat = 0.0
    """Standard deviation of the log of the latency."""
    scale: NonNegFloat = 0.0
    """Multiplier of the draw: 0 = no sampled latency (the default), 1 = realistic."""

    def sample(self, rng: np.random.Generator) -> float:
        """Seconds for one call (0 when off)."""
        if self.scale <= 0 or self.median_s <= 0:
            return 0.0
        return float(self.scale * self.median_s * math.exp(self.sigma * rng.standard_normal()))


class ConsistencySpec(Declared):
    """Probability, per mode, that a call answers from its situation's generator (same situation, same
    answer) rather than from the per-call one."""

    offset: Prob = 0.0
    """``report_offset`` calls; the situation includes the crosshair position."""
    point: Prob = 0.0
    """``click_at`` calls (one-shot, absolute mode)."""


class PerceptionSpec(Declared):
    """How the crosshair is perceived in the pixels (:mod:`dvoc_bench.models.simulator.perception`): the
    localiser finds the most cross-like structure and its effective salience ``s`` (contrast against the
    local background x sqrt(arm length), divided by ``1 + clutter_weight * clutter``); the defaults read
    a visible marker exactly."""

    sigma_px: NonNegFloat = 0.0
    """Localisation error: per-axis Gaussian sd of ``sigma_px / s`` px (0 = exact)."""
    detect_salience: NonNegFloat = 0.0
    """Effective salience at which the marker is seen half the time (0 = always seen above
    ``min_salience``); a missed marker leaves the model to the prompt text, as with no overlay."""
    detect_slope: PosFloat = 4.0
    """Steepness of the seen probability ``1 / (1 + (detect_salience / s) ** detect_slope)``."""
    clutter_weight: NonNegFloat = 0.0
    """How much line energy around the marker (circle, labels, nearby text) lowers its salience."""
    min_salience: NonNegFloat = 1.0
    """Below this salience nothing in the image counts as a marker (a screenshot without overlay still
    has crossing strokes: about 0.6 at most on S1-S6, up to about 2.4 on the web pages)."""
    min_contrast: Prob = 0.0
    """Below this contrast (0-1) nothing counts as a marker either: long faint crossing lines of a page
    (contrast about 0.17 on S5) are not taken for the crosshair."""
    knows_crosshair: bool = False
    """An oracle of the harness, not a model of perception: the crosshair is where the prompt states it
    (``Crosshair position:``, else the history's last arrow), the pixels only when the prompt does not say
    (``sim-ideal``: its DVOC converges wherever its one-shot hits, on a red target under the red crosshair
    too). Profiles fitted to real models keep their localiser (``false``)."""


class FittedFor(Declared):
    """The knobs a profile's parameters were fitted for. A trial under any other value rests on an assumption
    of the profile, and its records and table rows say so (:func:`assumed_knobs`)."""

    protocols: tuple[str, ...] = ("paper",)
    """Prompt protocols of the records the fit read (the authors' records: ``paper``, whose prompt asks for
    pixels without the image size). Under another protocol the answer to its frame request is assumed
    (``obeys_requested_frame``)."""
    overlays: tuple[str, ...] = ("full",)
    """Overlay modes seen in the fitted records. Others rest on the perception model's assumptions."""
    overlay_style: Literal["default", "any"] = "default"
    """``default``: fitted for the authors' colours and sizes only; another ``overlay_style`` is assumed."""
    knobs: dict[str, tuple[str, ...]] = {}
    """Fitted values of further knobs registered with
    :func:`dvoc_bench.core.assumptions.register_assumed_knob` (by their ``fitted_key``); a registered knob not
    named here counts as fitted for its ``default_fitted`` values only."""


ASSUMPTION_LABELS = {k.name.replace("protocol", "frame"): k.label for k in registered_knobs()}
"""The marker text of each built-in assumed knob (``[SIMULATED; overlay effect assumed]``); the registry
is :mod:`dvoc_bench.core.assumptions`."""


class SimProfile(Declared):
    """Everything that makes one simulated model: the ``sim:`` block of a ``conf/model/sim-*.yaml``."""

    frames: FrameMix = Field(default_factory=FrameMix)
    """Native-frame mixture of offset answers."""
    gain: Gain = (1.0, 1.0)
    """Per-axis gain multiplier applied in the native frame."""
    noise: NoiseSpec = Field(default_factory=NoiseSpec)
    """Inlier noise of the perceived target."""
    outlier: OutlierSpec = Field(default_factory=OutlierSpec)
    """Outlier process of the perceived target."""
    near: NearSpec = Field(default_factory=NearSpec)
    """Near-target behaviour."""
    axis_drop: AxisDropSpec = Field(default_factory=AxisDropSpec)
    """Axis dropping."""
    confidence: ConfidenceSpec = Field(default_factory=ConfidenceSpec)
    """Confidence of offset answers."""
    oneshot: OneShotSpec = Field(default_factory=OneShotSpec)
    """Point answers."""
    p_no_tool_call: Prob = 0.0
    """Probability of a reply without a tool call."""
    no_task: Literal["first_element", "random_element"] = "first_element"
    """Element aimed at when the prompt lacks the task: ``first_element | random_element``."""
    unknown_position: Literal["zero", "guess_centre"] = "zero"
    """Answer when the crosshair position is unknown: ``zero`` (report (0,0)) | ``guess_centre``."""
    tokens: TokensSpec = Field(default_factory=TokensSpec)
    """Token counts per call."""
    latency_s: NonNegFloat = 0.0
    """Simulated latency per call in seconds (``complete`` sleeps when > 0)."""
    som: SomSpec = Field(default_factory=SomSpec)
    """Set-of-Mark picks."""
    canvas: tuple[CanvasSpec, ...] = ()
    """Per-canvas overrides, at most one per size (calibration; empty = the top-level sections
    everywhere)."""
    no_task_target: Prob = 0.0
    """Probability that a prompt without the task still aims at the target (calibration)."""
    latency: LatencySpec = Field(default_factory=LatencySpec)
    """Sampled per-call latency (calibration; off while ``latency.scale`` is 0)."""
    consistency: ConsistencySpec = Field(default_factory=ConsistencySpec)
    """Same situation, same answer (calibration; 0 = every call draws afresh)."""
    perception: PerceptionSpec = Field(default_factory=PerceptionSpec)
    """How the crosshair is perceived in the pixels (a localiser that knows no colour)."""
    obeys_requested_frame: Prob = 0.0
    """ASSUMPTION (no record tests it): probability that a call answers in the frame the prompt requests
    explicitly (the v1 frame statement: pixels of a stated image size, 0-1000, or 0-1) instead of the native
    frame mixture. The authors' prompts asked for pixels and got mostly 0-1000 answers (that behaviour is
    the fitted ``frames``); an explicit request was never tried, so the default 0 assumes it changes
    nothing, and every result under ``protocols=[v1]`` is marked ``frame request assumed``."""
    refuses_absent: Prob = 0.0
    """Probability that a call answers "not present" when the screen's target is absent (the scene truth
    says so: ``absent.variant``) and the request offers that answer (the ``not_present`` tool, Set-of-Mark's
    ``none`` mark); docs/absent.md. The authors' records hold no absent target, so a fitted profile keeps 0
    (it never refuses: every absent trial of it is a false click); ``sim-ideal`` sets 1 (it knows the
    truth). Drawn from a generator of its own and left out of the digest: the other answers stay as they
    were."""
    fitted_for: FittedFor | None = None
    """The knobs the parameters were fitted for (written by the calibration); ``None`` for a hand-set
    profile, whose results carry no assumption marker beyond ``[SIMULATED]``."""
    instance: NonNegInt = 0
    """A label that changes every random stream but no distribution: another simulated instance of the same
    model (validation averages over a few, since a consistent model's situation draws are shared by all
    repeats)."""

    @field_validator("canvas")
    @classmethod
    def _one_per_size(cls, v: tuple[CanvasSpec, ...]) -> tuple[CanvasSpec, ...]:
        seen: dict[tuple[int, int], int] = {}
        for i, c in enumerate(v):
            if c.size in seen:
                w, h = c.size
                raise ValueError(f"each size may appear once; item {i} repeats {w}x{h} (item {seen[c.size]})")
            seen[c.size] = i
        return v

    @classmethod
    def from_mapping(cls, d: Any, prefix: str = "sim.") -> SimProfile:
        """Build and validate a profile; a bad value is a :class:`~dvoc_bench.core.declare.ConfigError` (a
        ``ValueError``) of one line naming the dotted key after ``prefix``."""
        return validate(cls, plain(d), prefix=prefix)

    def digest(self) -> str:
        """Stable content hash of the profile (part of the per-call seed). A default ``som`` block is left
        out, so profiles written before Set-of-Mark keep their hash (and their replies)."""
        d = self.model_dump()
        if self.som == SomSpec():
            d.pop("som")
        d.pop("fitted_for")  # a label, not behaviour
        d.pop("refuses_absent")  # drawn apart, on absent screens only: every other answer stays
        if self.obeys_requested_frame == 0:
            d.pop("obeys_requested_frame")
        for noise in [d["noise"], *(c["noise"] for c in d["canvas"] if c.get("noise"))]:
            noise.pop("within_target")  # bounds the same draw: the stream stays (NoiseSpec.within_target)
        if self.perception == PerceptionSpec():
            d.pop("perception")
        elif not self.perception.knows_crosshair:
            d["perception"].pop("knows_crosshair")  # the default: fitted profiles keep their digest
        for drop in [d["axis_drop"], *(c["axis_drop"] for c in d["canvas"] if c.get("axis_drop"))]:
            if drop.get("max_axis_px") == math.inf:
                drop.pop("max_axis_px")  # the default: older profiles keep their digest
            for k in ("p_x_in_span", "p_y_in_span"):
                if k in drop and drop[k] is None:
                    drop.pop(k)
        for near in [d["near"], *(c["near"] for c in d["canvas"] if c.get("near"))]:
            if (
                near.get("zero_rule") == "distance"
                and not near.get("p_zero_in_box")
                and not near.get("p_zero_box_near")
            ):  # the defaults: profiles with the distance rule keep their digest
                for k in ("zero_rule", "p_zero_in_box", "p_zero_box_near"):
                    near.pop(k, None)
            for k in ("p_zero_in_box_below_15", "p_zero_in_box_below_30"):
                if k in near and near[k] is None:
                    near.pop(k)
            if near.get("shrink_below_px") == 100.0:
                near.pop("shrink_below_px")  # the first profiles' edge: their digest
        blob = json.dumps(d, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def assumed_knobs(
    sim: Mapping[str, Any] | None,
    *,
    protocol: str,
    overlay: str,
    default_style: bool = True,
    extra: Mapping[str, str] | None = None,
) -> list[str]:
    """The assumption markers of one trial of a profile (a raw ``sim:`` mapping): the knobs among the
    trial's that the profile's ``fitted_for`` does not list (``-`` = the knob does not apply), through
    :func:`dvoc_bench.core.assumptions.assumed_labels`. ``extra``: values of further registered knobs
    (crops, zoom, datasets). Empty for a profile without ``fitted_for``."""
    ff = (sim or {}).get("fitted_for") if isinstance(sim, Mapping) else None
    if not ff:
        return []
    f = FittedFor.model_validate(ff).model_dump()
    style = "-" if overlay == "-" else ("default" if default_style else "custom")
    values = {"protocol": protocol, "overlay": overlay, "overlay_style": style, **dict(extra or {})}
    return assumed_labels(f, values)


def for_canvas(prof: SimProfile, size: Size) -> SimProfile:
    """``prof`` with the ``canvas`` entry of a scene of ``size`` applied (itself when none matches)."""
    for c in prof.canvas:
        if c.size == (size.width, size.height):
            changes = {k: getattr(c, k) for k in _CANVAS_SECTIONS if getattr(c, k) is not None}
            return prof.model_copy(update=changes) if changes else prof
    return prof


def plain(d: Any) -> Any:
    """Turn an OmegaConf container into plain Python (other inputs pass through)."""
    if type(d).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        return OmegaConf.to_container(d, resolve=True)
    return d


def load_profile(path_or_mapping: str | Path | Mapping[str, Any]) -> SimProfile:
    """Load a profile from a model YAML path, a whole model config (with ``sim:``) or a ``sim`` mapping."""
    if isinstance(path_or_mapping, (str, Path)):
        from dvoc_bench.core import yamlio

        data = yamlio.safe_load(Path(path_or_mapping).read_text(encoding="utf-8"))
    else:
        data = plain(path_or_mapping)
    if isinstance(data, Mapping) and "sim" in data:
        data = data["sim"]
    return SimProfile.from_mapping(data)
