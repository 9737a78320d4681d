"""Typed records of a sweep: what was planned, what each model call did, how each trial ended.

This module is the one list of the values records may take: :data:`Status`, :data:`StopReason`,
:data:`ErrorClass`, :data:`SceneKind`, :data:`StepKind`, :data:`ParseStatus`, :data:`AnswerKind` and
:data:`Decision` (the stop policy's, declared beside it in :mod:`dvoc_bench.core.control`), as ``Literal``
types that the signatures passing them use. Every later feature that
needs a new value (a stop reason, an error class, a scene kind) adds it here, and everything that checks
or groups by them (config validation, the summary, the analysis schema) reads it from here.

Records are plain dataclasses; :func:`to_jsonable` turns any of them into JSON-ready dicts.
:class:`TrialRecord` *is* the ``trials.jsonl`` line and :class:`Step` the ``steps.jsonl`` line. Points are
stored as ``[x, y]`` lists in screenshot pixels, boxes as ``[x0, y0, x1, y1]``.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from dvoc_bench.core.control import Decision, LoopConfig
from dvoc_bench.core.episode_records import EpisodeRecord
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.sample_records import DragRecord as DragRecord
from dvoc_bench.core.sample_records import SampleMeta as SampleMeta
from dvoc_bench.core.scoring import android_control, score
from dvoc_bench.core.som_records import SomRecord as SomRecord

Status = Literal["ok", "error", "skipped"]
"""``ok``: the method ran to a stop reason. ``error``: a model call (or the scene, the detector, the
harness) failed for good. ``skipped``: never run (dead provider, or the cost budget ``run.max_cost_usd``)."""

StopReason = Literal[
    "act",  # the policy accepted the draft (two small confident reports)
    "abort_oscillation",  # three non-decreasing reported magnitudes
    "abort_stuck",  # two consecutive empty replies
    "max_iterations",  # the iteration cap was reached
    "hit",  # one-shot: an attempt landed on the target (the harness told the model nothing else)
    "attempts_exhausted",  # one-shot: every attempt missed
    "baseline",  # centre / random: no model involved
    "selected",  # Set-of-Mark: the model named a valid mark
    "no_valid_id",  # Set-of-Mark: the reply named no valid mark
    "no_marks",  # Set-of-Mark: the detector found nothing to mark (older records; now grounding_error)
    "grounding_error",  # SoM: detector failed or marked nothing; the model got the plain screenshot
    "error",  # a call failed for good
    "skipped",  # the trial never ran
    "episode",  # an episode ran to its end (how: ``episode.end``; its verdict: ``episode_success``)
    "not_present",  # the model answered that the target is not on the screen (no click; docs/absent.md)
]
"""How a trial ended."""

ErrorClass = Literal[
    "rate_limit",  # 429 after every retry
    "timeout",  # the call took longer than the provider's timeout
    "server",  # 5xx
    "connection",  # the endpoint could not be reached
    "auth",  # bad or missing key: ends the provider
    "quota",  # daily or billing quota used up: ends the provider
    "bad_request",  # the provider refused the request as malformed
    "unknown",  # a provider failure the client could not classify
    "provider_dead",  # the provider was ended by another trial's auth / quota failure
    "detector",  # the Set-of-Mark detector failed
    "scene",  # the scene could not be built (a web page hung, navigated away, crashed, had no valid target)
    "internal",  # a bug in the harness (logged with its traceback)
    "budget",  # skipped: starting it could have passed run.max_cost_usd (a resume with more budget runs it)
    "wording",  # skipped: no instruction of the asked wording fits the target alone (wording)
]
"""Class of a failed call or trial (``error_class`` of steps and trials)."""

SceneKind = Literal["synthetic", "web", "desktop", "dataset", "miniwob"]
"""What produced a scene: a Pillow drawing (``synthetic``), a page in a real Chromium (``web``), a Tk
application on an Xvfb display (``desktop``), a screenshot of a standard dataset (``dataset``:
ScreenSpot, ScreenSpot-v2, ScreenSpot-Pro, a manifest) or a MiniWoB++ task page run as an episode
(``miniwob``).
Task sources declare theirs when they register (:mod:`dvoc_bench.scenes.sources`)."""

StepKind = Literal["verify", "click", "select", "baseline", "plan"]
"""``verify``: a DVOC step; ``click``: a one-shot attempt; ``select``: a Set-of-Mark pick; ``plan``: a
model choosing an episode's next step (``episode.plan=model``)."""

ParseStatus = Literal[
    "ok", "text_fallback", "parse_error", "out_of_frame", "call_error", "refusal", "not_present"
]
"""What reading a reply gave: numbers from a tool call, numbers recovered from the text, nothing usable,
numbers outside the declared frame's range (kept in ``values_raw``, never clamped, not used), no reply
at all, a decline (``I'm unable to…``: unusable, not a parse error), or the answer that the target is not
on the screen (read only when offered, ``offer_absent``; it ends the trial with no click, docs/absent.md)."""

AnswerKind = Literal["offset", "point"]
"""What an answer's numbers are: an ``offset`` (``dx, dy``: a DVOC report) or a ``point`` (``x, y``: a
click, a zoom round, an absolute check)."""

TRIAL_STATUSES: tuple[str, ...] = get_args(Status)
STOP_REASONS: tuple[str, ...] = get_args(StopReason)
ERROR_CLASSES: tuple[str, ...] = get_args(ErrorClass)
SCENE_KINDS: tuple[str, ...] = get_args(SceneKind)
STEP_KINDS: tuple[str, ...] = get_args(StepKind)
PARSE_STATUSES: tuple[str, ...] = get_args(ParseStatus)
ANSWER_KINDS: tuple[str, ...] = get_args(AnswerKind)


@dataclass(kw_only=True)
class TrialSpec:
    """One planned trial (a ``plan.jsonl`` line): everything that can change its outcome. Its
    ``trial_key`` hashes all of it."""

    trial_key: str
    """Content hash of every outcome-relevant field (see ``dvoc_bench.runner.plan.trial_key``)."""
    experiment: str
    """Name of the experiment preset that planned it."""
    model: str
    """Name of the model config (``conf/model/<name>.yaml``)."""
    model_id: str
    """Provider model id (LiteLLM spelling) or the simulator profile id."""
    api_base: str | None
    """Endpoint override, part of the model identity."""
    provider: str
    """Provider name; one provider = one rate gate."""
    simulated: bool
    """True when the model is the simulator: every result from it is simulated."""
    coord_frame: str
    """Frame the model config declares for the model's answers (``pixel | norm1000 | norm1``)."""
    task: str
    """Scene / task id (``S1``..``S6``, ``W1``..)."""
    scene_hash: str
    """Content hash of the rendered scene (pixels + geometry + instruction)."""
    method: str
    """A registered method (:mod:`dvoc_bench.methods.registry`)."""
    protocol: str
    """Prompt protocol version (``v1`` corrected, ``paper`` faithful)."""
    alpha: str
    """Alpha schedule: ``decay | constant | undamped | adaptive``."""
    overlay: str
    """Overlay drawn on DVOC frames: ``full | crosshair | none``."""
    predict: str
    """DVOC answer kind: ``relative`` (offset) or ``absolute`` (point turned into an offset)."""
    start: list[float] | None
    """Start point in pixels (DVOC's first draft), ``None`` when the method has none."""
    start_index: int | None
    """1-based index of the start point in the start list (``pos<N>`` of the authors)."""
    rep: int
    """Repeat index, 0-based."""
    seed: int
    """Trial seed, derived from the sweep seed and the key; seeds every RNG of the trial."""
    epsilon: float
    """Convergence threshold on the reported offset, pixels (also the ``within_eps`` rule)."""
    conf_threshold: float
    """Minimum reported confidence for the act rule."""
    window: int
    """Number of consecutive small confident reports needed to act."""
    max_iterations: int
    """DVOC iteration cap."""
    max_attempts: int
    """One-shot attempt cap."""
    alpha_constant: float
    """Alpha of the ``constant`` schedule."""
    hit_radius_min: float = 30.0
    """Minimum of the paper's hit radius ``max(w/2, h/2, min)``."""
    detector: str = "-"
    """SoM methods: the detector backend and a digest of its settings (``cv:1a2b...``); ``-`` otherwise."""
    start_from: Literal["plan", "oneshot"] = "plan"
    """Where a method that ``uses_start`` starts: ``plan`` (the point in ``start``) or ``oneshot``
    (``starts=oneshot``: the model's own one-shot answer, asked first, is DVOC's start; ``start`` is
    ``None``). Part of the trial key only when not ``plan`` (earlier keys are unchanged)."""
    zoom: str = "-"
    """Zoom methods: the crop schedule ``factor/rounds/min_crop`` (``2/2/256``); ``-`` otherwise (then not
    part of the key, so the keys of other methods are unchanged)."""
    label_placement: Literal["corner", "away"] = "corner"
    """Methods that draw the DVOC overlay with labels (overlay ``full`` or ``crosshair``): where the two
    labels go, ``corner`` (the authors': step label top-left, position label bottom-right; always under
    ``protocol=paper``) or ``away`` (the corners of the other half from the crosshair,
    ``overlay.label_placement``). Part of the trial key only when not ``corner``, so the keys of earlier
    records are unchanged, and a record made before the knob existed reads ``corner``, the only placement
    then. ``corner`` also for trials that draw no labels."""
    sweep_seed: int = 0
    """The sweep's ``seed`` (shared by every trial of a sweep; the trial's own ``seed`` derives from the
    key)."""
    adaptive: str = "-"
    """``alpha=adaptive`` trials: the knobs of the ``adaptive:`` block that differ from their defaults, as
    ``name=value`` pairs (``start=0.25``); ``-`` at the defaults and for every other schedule."""
    sampling: str = "-"
    """Trials that call a model: the ``sampling:`` request parameters (``temperature=0.2``); ``-`` when
    none."""
    overlay_style: str = "-"
    """Trials that draw the DVOC overlay: the ``overlay_style:`` sizes and colours that differ from their
    defaults (``crosshair_width=5``); ``-`` at the defaults and for trials without the overlay knob."""
    image: str = "-"
    """Trials that call a model: the global ``image:`` input limits that differ from their defaults
    (``max_side=1568``); ``-`` at the defaults. A model config's own ``image:`` is part of
    ``model_config``."""
    retry_rule: str = "hit"
    """``oneshot.retry_rule``: which rule tells a one-shot model its answer missed."""
    verify_click: bool = False
    """Web and desktop trials: whether the point is also clicked for real (``web.verify_click``,
    ``desktop.verify_click``), which adds the click's verdict to the record."""
    model_config: str = "-"
    """Trials that call a model: ``-`` when the model config is the repository's ``conf/model/<name>.yaml``
    as shipped; otherwise the digest of the config used (a ``model.*`` override or another file of that
    name), so trials of two configs under one name never share a key."""
    drag_start: Literal["source", "model"] = "source"
    """Methods that start from a point (DVOC) on a two-point (drag) task: where the loop of the drag's end
    starts, ``source`` (where the start's loop landed) or ``model`` (where the model first points at the end:
    one ``click_at`` answer for it, asked first), ``dvoc.drag_start``. Part of the trial key only when not
    ``source``."""
    episode_knobs: str = "-"
    """Episode trials (MiniWoB tasks): the ``episode:`` knobs
    (``plan=oracle,scale=4,max_steps=12,wall_s=300``); ``-`` for every other trial (then not in the key)."""
    absent: Literal["off", "remove", "ask_missing"] = "off"
    """The screen's absent-target variant (``absent.variant``): ``off``, ``remove`` (the target taken off the
    screen) or ``ask_missing`` (the instruction names an element it lacks). Keyed only when not ``off``."""
    offer_absent: bool = False
    """Trials that call a model: the request offered a "not present" answer (``absent.offer``: the
    ``not_present`` tool, a family's own form, Set-of-Mark's ``none`` mark). Keyed only when true."""
    device: str = "-"
    """Web trials shown on a phone (``web.device``): the Playwright device name (``Pixel 7``) or the custom
    device's numbers (``custom:412x839@2.625,mobile,touch``); ``-`` for a desktop window and every other
    kind of scene (then not in the key)."""
    variation: str = "-"
    """The variation axes set off their defaults that reach this trial's screen or words (docs/variation.md):
    ``web.*`` on web pages, ``desktop.*`` on desktop programs, ``wording`` on drawn, web and
    desktop scenes, as ``name=value`` pairs (``web.zoom=1.5``); ``-`` for the unvaried scene (then not in
    the key). A varied trial's ``seed`` is its unvaried twin's, so the two pair on one seed."""
    simulated_assumptions: list[str] = dataclasses.field(default_factory=list)
    """Simulated models only: what this trial's result rests on beyond the profile's fit, one marker per
    knob the profile was not fitted for (``frame request assumed``, ``overlay effect assumed``, ``overlay
    style assumed``; :func:`dvoc_bench.models.simulator.assumed_knobs`). Empty for real models. Not part of
    the trial key (it describes the model, not the trial)."""

    def key(self) -> str:
        """The trial key: a hash of every field of the spec but the key itself, the experiment's name, the
        derived seed and the assumption markers (:data:`UNKEYED_SPEC_FIELDS`). A field with a default enters
        only when it differs from it, so the keys of records made before the field existed are unchanged
        (:data:`ALWAYS_KEYED_SPEC_FIELDS` were keyed before that rule)."""
        fields: dict[str, Any] = {}
        for f in dataclasses.fields(TrialSpec):
            if f.name in UNKEYED_SPEC_FIELDS:
                continue
            value = getattr(self, f.name)
            if f.name not in ALWAYS_KEYED_SPEC_FIELDS and _is_default(f, value):
                continue
            fields[f.name] = value
        return key_of(fields)

    @property
    def loop(self) -> LoopConfig:
        """The loop knobs this trial runs with, as the one type the settings and the stop policy use (the
        record keeps them flat: they are part of its key)."""
        return LoopConfig(
            epsilon=self.epsilon,
            threshold=self.conf_threshold,
            window=self.window,
            max_iterations=self.max_iterations,
            alpha_constant=self.alpha_constant,
            hit_radius_min=self.hit_radius_min,
        )


UNKEYED_SPEC_FIELDS = frozenset({"trial_key", "experiment", "seed", "simulated_assumptions"})
"""Spec fields outside the key: the key itself, the preset's name (two presets may plan the same trial), the
seed derived from the key, and the assumption markers (they describe the model, not the trial)."""

ALWAYS_KEYED_SPEC_FIELDS = frozenset({"hit_radius_min", "detector", "sweep_seed"})
"""Fields with a default that were in every key before the default rule of :meth:`TrialSpec.key`."""


def _is_default(f: dataclasses.Field[Any], value: object) -> bool:
    if f.default is not dataclasses.MISSING:
        return bool(value == f.default)
    if f.default_factory is not dataclasses.MISSING:
        return bool(value == f.default_factory())
    return False


def key_of(fields: dict[str, Any]) -> str:
    """Hash of a trial's keyed fields (20 hex digits)."""
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


@dataclass
class Step:
    """One model call (or one baseline decision) of a trial, as written to ``steps.jsonl``."""

    trial_key: str
    """Key of the trial the call belongs to."""
    index: int
    """0-based call index within the trial."""
    kind: StepKind
    """``verify`` (DVOC offset or absolute check), ``click`` (one-shot), ``select`` (Set-of-Mark)."""
    draft: list[float] | None
    """Crosshair position (pixels) the frame showed, or ``None`` for one-shot."""
    true_dist_px: float | None
    """True distance from ``draft`` (or the answered point for one-shot) to the target centre."""
    frame_sha: str | None
    """sha256 of the PNG sent (``frames/<sha>.png``)."""
    request_sha: str | None
    """Hash of the whole request (model, text, image, tools, params)."""
    prompt: str | None
    """The text part of the request."""
    reply_text: str | None
    """Free text the model returned, if any."""
    reply_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls as received: ``[{"name", "arguments"}]``, arguments verbatim (string or object)."""
    parse_status: ParseStatus = "ok"
    """``ok``, ``text_fallback`` (numbers recovered from text), ``parse_error``, ``out_of_frame`` (a point
    outside its declared range: 0–1000 above 1000, pixels outside the image seen; an offset beyond the
    frame's span, ``|d| > 1000`` in 0–1000, ``|dx| > W`` px; in one-shot, DVOC, zoom and the Set-of-Mark
    fallback; not used, never clamped) or ``call_error``."""
    parse_detail: str | None = None
    """Why parsing failed or which fallback was used."""
    values_raw: dict[str, float] | None = None
    """Numbers as the model gave them (``dx, dy`` or ``x, y``, and ``confidence``), in its frame."""
    frame: str | None = None
    """Frame the numbers were read in (the model config's declared frame)."""
    values_px: dict[str, float] | None = None
    """The same numbers converted to pixels (offset for ``verify``, point for ``click``)."""
    confidence: float | None = None
    """Reported confidence, clamped to [0, 1]; ``None`` when missing."""
    reported_offset_px: list[float] | None = None
    """Offset the loop uses (absolute answers are turned into ``answer - draft``)."""
    alpha: float | None = None
    """Gain applied to the reported offset."""
    decision: Decision | None = None
    """Policy decision after this report: ``refine | act | abort_oscillation | abort_stuck``."""
    step_raw: list[float] | None = None
    """``alpha * offset`` before clamping."""
    step_clamped: list[float] | None = None
    """The step actually applied after clamping the next draft to the image."""
    next_draft: list[float] | None = None
    """Draft after the correction (equal to ``draft`` when the loop stops)."""
    latency_s: float | None = None
    """Wall time of the call."""
    tokens_in: int | None = None
    """Prompt tokens reported (or simulated)."""
    tokens_out: int | None = None
    """Completion tokens reported (or simulated)."""
    cost_usd: float | None = None
    """Cost of the call, ``None`` when unknown."""
    cost_source: str | None = None
    """Where ``cost_usd`` came from: ``pricing`` (the model config's block, from the reported token counts),
    ``litellm`` / ``litellm_price_map:<entry>`` (LiteLLM's price), ``cache``, ``simulated``, ``local``,
    ``estimate`` (the reported counts were far below the harness's own estimate: priced with the larger
    counts, see ``est_tokens_in``), or ``bound`` (the reply had no usable usage, see ``usage_fault``: the
    budget charged the call its per-call bound); ``None`` when unknown (no usable usage and no budget)."""
    cost_bound_usd: float | None = None
    """The per-call bound the budget admitted this call with (``run.max_cost_usd``); ``None`` without a
    budget. ``cost_usd`` above it is a call that cost more than it was admitted for."""
    usage_fault: str | None = None
    """What was wrong with the usage the provider reported (no token counts; negative, non-integer or
    non-finite counts or cost; a reply that could not be read), with the values as reported; such usage is
    never summed (``tokens_in`` / ``tokens_out`` stay ``None``, the cost is the bound). ``None``: fine."""
    est_tokens_in: int | None = None
    """The harness's own estimate of the call's prompt tokens (text and tool schemas at 4 characters a
    token, the image sent by the provider's rule: ``dvoc_bench.models.pricing.own_estimate``), recorded only
    when the reported usage was far below it (under a quarter, prompt or completion): then ``cost_usd``, and
    what the budget charged, price the larger of the reported and estimated counts (``cost_source:
    estimate``), while ``tokens_in`` / ``tokens_out`` stay as reported. ``None``: the reported usage held."""
    est_tokens_out: int | None = None
    """The harness's own estimate of the completion tokens (the reply's characters at 4 a token), recorded
    with ``est_tokens_in``."""
    reported_cost_usd: float | None = None
    """What the call would have cost by the counts the provider reported, recorded with ``est_tokens_in``
    (``cost_usd`` is the estimate's)."""
    image_scale: float | None = None
    """Sent pixels per screenshot pixel (horizontally) of the image sent (``image.max_side`` /
    ``max_pixels``, zoom crops); ``None`` when the screenshot was sent as it is."""
    sent_size: list[int] | None = None
    """``[W, H]`` of the image actually sent, when it was resized or cropped (the answer frame's size)."""
    crop: list[int] | None = None
    """``[x0, y0, x1, y1]`` of the screenshot the image showed (zoom), ``None`` for the whole screen."""
    seen_size: list[int] | None = None
    """``[W, H]`` of the image the model saw (its answer frame's size): the size sent, which the harness
    makes the size the model's processor or provider resizes to (``coord_frame.resize``, docs/frames.md);
    ``None`` in records written before it was recorded."""
    frame_rule: str | None = None
    """The answer frame the numbers were read in, in one line: units, axis order and resize rule with its
    parameters (``pixel x-y, smart_resize(factor=28, min_pixels=3136, max_pixels=1003520)``)."""
    prompt_style: str | None = None
    """How the request was asked and its reply read (``tool_call`` or a family's native style); ``None``
    for the tool-call style of records written before it was recorded."""
    raw_tool_calls: list[dict[str, Any]] | None = None
    """Unused since the harness resizes (#20): records written before it may hold the provider's own tool
    calls when the LiteLLM client rewrote pixel answers on a resized image."""
    cached: bool = False
    """True when the reply came from the response cache."""
    attempts: int = 1
    """Attempts the call took (each retry after a 429, timeout or 5xx counts)."""
    attempt_errors: list[ErrorClass] = field(default_factory=list)
    """Error class of every failed attempt of this call, in order."""
    retry_wait_s: float = 0.0
    """Seconds this call waited in its provider's gate and in backoff."""
    error_class: ErrorClass | None = None
    """Class of a failed call (``timeout``, ``rate_limit``, ...)."""
    error: str | None = None
    """Redacted error message of a failed call."""
    reply_chars: int | None = None
    """Characters of the reply as received (text plus every tool call's arguments), before it was bounded
    to ``run.max_reply_chars`` per part; ``None`` when there was no reply."""
    reply_sha256: str | None = None
    """sha256 of the reply as received, before bounding and redaction (``models.base.reply_digest``)."""
    reply_truncated: dict[str, dict[str, Any]] | None = None
    """Parts cut to ``run.max_reply_chars``: ``{"text" | "tool_calls[i].arguments": {"chars", "sha256"}}``
    of the original part; ``None`` when nothing was cut."""
    served_model: str | None = None
    """The model id the server said answered this call (the response's ``model``), when it said one."""
    system_fingerprint: str | None = None
    """The response's ``system_fingerprint`` (OpenAI-compatible servers), when it gave one."""
    engine: str | None = None
    """The serving engine and version the server stated (``vllm 0.8.5`` from vLLM's ``/version``)."""
    drag_end: Literal["from", "to", "both"] | None = None
    """A two-point (drag) trial's call: for the drag's start (``from``), its end (``to``), or both points
    in one answer (``both``); ``None`` for one-point tasks."""
    episode_step: int | None = None
    """Episode trials: the index of the episode step whose grounding made this call; ``None`` otherwise."""


@dataclass(kw_only=True)
class TrialOutcome:
    """How one trial ended (the outcome part of its ``trials.jsonl`` line)."""

    status: Status
    """``ok | error | skipped``."""
    stop_reason: StopReason
    """How the trial ended."""
    final_point: list[float] | None
    """Where the harness would click, pixels; ``None`` when there is no point (error before any)."""
    iterations: int = 0
    """DVOC: verifier calls; one-shot: attempts; baselines: 0."""
    model_calls: int = 0
    """Model calls attempted (including failed ones)."""
    cached_calls: int = 0
    """Of those, the calls answered by the response cache (no provider was asked)."""
    parse_errors: int = 0
    """Replies that yielded no usable numbers."""
    tokens_in: int = 0
    """Sum of prompt tokens."""
    tokens_out: int = 0
    """Sum of completion tokens."""
    cost_usd: float | None = None
    """Sum of known costs; ``None`` when no call had a known cost."""
    error_class: ErrorClass | None = None
    """Error class when ``status`` is ``error`` (or why a ``skipped`` trial was skipped)."""
    error: str | None = None
    """Redacted error text when ``status == "error"``."""
    som: SomRecord | None = None
    """Set-of-Mark methods: what the detector and the pick did; ``None`` for every other method."""
    drop_point: list[float] | None = None
    """A two-point (drag) task: where the drag ends, pixels (``final_point`` is where it starts); ``None``
    for one-point tasks and when the trial gave no end point."""
    episode: EpisodeRecord | None = None
    """Episode trials: the episode's steps and the page's verdict; ``None`` for every other trial."""
    refused: bool = False
    """The trial ended on the model's "not present" answer (``stop_reason`` ``not_present``; no click, no
    ``final_point``): a correct refusal when the target is absent, a miss when it is there."""


@dataclass(kw_only=True)
class TrialResult(TrialOutcome):
    """What a method returns (never ``None``, never an exception): the outcome and the calls it made."""

    steps: list[Step] = field(default_factory=list)
    """The calls of the trial (written to ``steps.jsonl``, not to ``trials.jsonl``)."""

    def outcome(self) -> dict[str, Any]:
        """The outcome fields (everything but ``steps``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(TrialOutcome)}


@dataclass(frozen=True)
class Probe:
    """What lies under a trial's final point, as the scene reports it. Web scenes ask the live DOM;
    synthetic scenes look at their element boxes. Written into ``trials.jsonl`` by ``trial_record``."""

    hit_element: str | None
    """Web: short selector of the DOM element at the point (``document.elementFromPoint``), e.g.
    ``button#edit-bob`` or ``a#card-beta > h3.title``. Synthetic: id of the topmost element whose box
    contains the point. ``None``: nothing there."""
    hit: bool | None
    """Web: the element at the point is the target or inside it. This DOM rule *is* ``hit`` for web trials
    (``hit_rule: dom``). ``None`` when the scene has no such rule (synthetic: the box rule stands)."""
    clicked_target: bool | None = None
    """Web with ``web.verify_click``: a real click at the point, in a fresh copy of the set-up page, fired a
    click listener on the target. ``None`` when no click was made (synthetic scenes, option off)."""
    blocked_requests: int | None = None
    """Web: requests the page attempted that the harness blocked (load, set-up and this trial's click);
    ``None`` for synthetic scenes."""
    clicked_element: str | None = None
    """Desktop with ``desktop.verify_click``: the widget or canvas item that received the real click (same
    form as ``hit_element``). ``None`` when no click was made."""
    hit_rule: Literal["dom", "toolkit", "accessible", "polygon"] | None = None
    """What decided ``hit`` when the scene says so itself: ``accessible`` for application tasks (AT-SPI's
    hit test), ``polygon`` for CUActSpot (inside the rank-1 Target polygon, in no Banned one); ``None``:
    ``dom`` on web scenes, ``toolkit`` on the Tk scenes."""


_PLAIN = frozenset({str, int, bool, type(None)})
"""Types :func:`to_jsonable` returns as they are, tested first (most of a record's values)."""


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
"""A record type's field names, in order (looked up once per type)."""


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return names


def to_jsonable(obj: object) -> Any:
    """Turn records, enums and floats into JSON-safe values (NaN/inf become ``None``)."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is float:
        return obj if math.isfinite(obj) else None  # type: ignore[arg-type]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {name: to_jsonable(getattr(obj, name)) for name in _field_names(t)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


@dataclass(kw_only=True)
class TrialRecord(TrialOutcome, TrialSpec):
    """One ``trials.jsonl`` line: the spec's fields, the outcome, the target and every scoring rule.

    Build it with :meth:`build`; analysis derives its column list from these fields
    (:mod:`dvoc_bench.analysis.schema`).
    """

    scene_kind: SceneKind
    """What produced the scene (the task source's kind)."""
    target_box: list[float]
    """The target element's box ``[x0, y0, x1, y1]``, pixels."""
    target_centre: list[float]
    """Centre of ``target_box``."""
    target_full_box: list[float] | None
    """The target's whole box when ``target_box`` is only its visible part (a web target sticking out of
    the viewport); ``None`` when they are the same."""
    final_dist_px: float | None
    """Distance from the final point to the target centre (3 decimals); ``None`` without a final point."""
    hit: bool
    """The honest rule: the final point is inside the target box, or on web scenes on the target's DOM
    element (``hit_rule``)."""
    within_eps: bool
    """``final_dist_px < epsilon``."""
    hit_radius: bool
    """The paper's rule: ``final_dist_px < max(w/2, h/2, hit_radius_min)``."""
    radius_px: float
    """The paper's radius for this target."""
    wall_s: float
    """Wall time of the trial, seconds."""
    finished_at: str
    """UTC time the trial ended (ISO 8601)."""
    hit_rule: Literal["box", "dom", "toolkit", "accessible", "polygon"]
    """What decided ``hit``: the target box, the DOM element under the point (web), the toolkit's hit
    test (Tk scenes: ``winfo_containing`` / ``canvas.find_overlapping``), the accessibility tree's
    (application tasks: AT-SPI's ``getAccessibleAtPoint``, the target or an accessible inside it), or the
    target polygons (CUActSpot: inside a rank-1 Target polygon and in no Banned one)."""
    hit_box: bool
    """The box rule, kept beside ``hit`` when the DOM decided it."""
    hit_element: str | None
    """What lies under the final point (web: a short DOM selector; synthetic: the element id)."""
    clicked_target: bool | None
    """Web with ``web.verify_click``: a real click at the point fired the target's listener."""
    blocked_requests: int | None
    """Web: requests the page attempted that the harness blocked; ``None`` for other scenes."""
    clicked_element: str | None = None
    """Desktop with ``desktop.verify_click``: what received the real click (widget or canvas item)."""
    sample: SampleMeta | None = None
    """Dataset trials: the sample's metadata (ui type, platform, application, group, data source,
    instruction); ``None`` for the drawn scenes and web pages."""
    drag: DragRecord | None = None
    """Two-point (drag) trials: each point scored on its own target; ``None`` for one-point tasks."""
    episode_success: bool | None = None
    """Episode trials: the page's own verdict (done with a raw reward above 0, its time penalty ignored);
    ``None`` for every other trial."""
    ac_box: bool | None = None
    """Phone trials (``web.device``): AndroidControl's box rule, the final point inside the target box
    (:func:`dvoc_bench.core.scoring.android_control`); ``None`` for every other trial."""
    ac_grown: bool | None = None
    """Phone trials: inside the box scaled ×1.2 about its centre, or within ``0.04 * max(W, H)`` px of
    its centre (Qwen2.5-VL's AndroidControl evaluation); ``None`` otherwise."""
    ac_screen14: bool | None = None
    """Phone trials: within 0.14 of the target centre in screen-normalised coordinates (AITW's tap
    threshold, used on AndroidControl by OS-Atlas and UI-TARS); ``None`` otherwise."""

    @classmethod
    def build(
        cls,
        spec: TrialSpec,
        result: TrialResult,
        target: Box,
        wall_s: float,
        *,
        scene_kind: SceneKind,
        probe: Probe | None = None,
        target_full: Box | None = None,
        sample: SampleMeta | None = None,
        drop: tuple[Box, Probe | None] | None = None,
        screen: Size | None = None,
    ) -> TrialRecord:
        """Score ``result`` against ``target`` under every rule. ``probe`` (what the scene says lies under
        the final point) decides ``hit`` when it carries a DOM verdict; ``hit_box`` keeps the box rule.
        ``drop``: a two-point task's end target and the probe of ``result.drop_point`` (each rule then
        holds when it holds for both points, :class:`DragRecord`). ``screen``: a phone's screenshot size,
        which adds AndroidControl's three conventions (``ac_*``)."""
        final = Point(*result.final_point) if result.final_point is not None else None
        s = score(final, target, spec.epsilon, spec.hit_radius_min)
        dom = probe is not None and probe.hit is not None
        hit = bool(probe.hit) if dom and probe is not None else s.hit
        drag = None
        if drop is not None:
            end_box, end_probe = drop
            end = Point(*result.drop_point) if result.drop_point is not None else None
            e = score(end, end_box, spec.epsilon, spec.hit_radius_min)
            end_dom = end_probe is not None and end_probe.hit is not None
            drag = DragRecord(
                from_hit=hit,
                to_hit=bool(end_probe.hit) if end_dom and end_probe is not None else e.hit,
                from_hit_box=s.hit,
                to_hit_box=e.hit,
                from_hit_radius=s.hit_radius,
                to_hit_radius=e.hit_radius,
                from_within_eps=s.within_eps,
                to_within_eps=e.within_eps,
                to_box=end_box.as_list(),
                to_dist_px=None if e.final_dist_px is None else round(e.final_dist_px, 3),
                to_element=end_probe.hit_element if end_probe else None,
            )
        present = spec.absent == "off"  # an absent target is never hit: a click there is a false click
        both = (lambda a, b: a and b and present) if drag is not None else (lambda a, b: a and present)
        phone = android_control(final if present else None, target, screen) if screen is not None else None
        return cls(
            **{f.name: getattr(spec, f.name) for f in dataclasses.fields(TrialSpec)},
            **result.outcome(),
            scene_kind=scene_kind,
            target_box=target.as_list(),
            target_centre=target.centre.as_list(),
            target_full_box=target_full.as_list() if target_full is not None else None,
            final_dist_px=None if s.final_dist_px is None else round(s.final_dist_px, 3),
            hit=both(hit, drag.to_hit if drag else True),
            within_eps=both(s.within_eps, drag.to_within_eps if drag else True),
            hit_radius=both(s.hit_radius, drag.to_hit_radius if drag else True),
            radius_px=s.radius_px,
            wall_s=round(wall_s, 4),
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            hit_rule=_rule(scene_kind, probe) if dom and probe is not None else "box",
            hit_box=both(s.hit, drag.to_hit_box if drag else True),
            hit_element=probe.hit_element if probe else None,
            clicked_target=probe.clicked_target if probe else None,
            blocked_requests=probe.blocked_requests if probe else None,
            clicked_element=probe.clicked_element if probe else None,
            sample=sample,
            drag=drag,
            episode_success=result.episode.success if result.episode is not None else None,
            ac_box=phone.ac_box if phone is not None else None,
            ac_grown=phone.ac_grown if phone is not None else None,
            ac_screen14=phone.ac_screen14 if phone is not None else None,
        )


def _rule(scene_kind: SceneKind, probe: Probe) -> Literal["dom", "toolkit", "accessible", "polygon"]:
    """The ``hit_rule`` of a probe that decided ``hit``."""
    if probe.hit_rule is not None:
        return probe.hit_rule
    return "toolkit" if scene_kind == "desktop" else "dom"
