"""Typed records of a sweep: what was planned, what each model call did, how each trial ended (§5, §6).

Records are plain dataclasses; :func:`to_jsonable` turns any of them into JSON-ready dicts. Points are
stored as ``[x, y]`` lists in screenshot pixels, boxes as ``[x0, y0, x1, y1]``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import Any

TRIAL_STATUSES = ("ok", "error", "skipped")
"""``ok``: the method ran to a stop reason. ``error``: a model call failed for good. ``skipped``: never run
(dead provider)."""

STOP_REASONS = (
    "act",  # the policy accepted the draft (two small confident reports)
    "abort_oscillation",  # three non-decreasing reported magnitudes
    "abort_stuck",  # two consecutive empty replies
    "max_iterations",  # the iteration cap was reached
    "hit",  # one-shot: an attempt landed on the target (the harness told the model nothing else)
    "attempts_exhausted",  # one-shot: every attempt missed
    "baseline",  # centre / random: no model involved
    "error",  # a model call failed for good
    "skipped",  # the trial never ran
)


@dataclass(frozen=True)
class TrialSpec:
    """One planned trial: everything that can change its outcome. Its ``key`` hashes all of it."""

    key: str
    """Content hash of every outcome-relevant field (see ``dvoc_bench.plan.trial_key``)."""
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
    """``dvoc | oneshot | centre | random``."""
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


@dataclass
class Step:
    """One model call (or one baseline decision) of a trial, as written to ``steps.jsonl``."""

    trial_key: str
    """Key of the trial the call belongs to."""
    index: int
    """0-based call index within the trial."""
    kind: str
    """``verify`` (DVOC offset or absolute check), ``click`` (one-shot), ``baseline``."""
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
    parse_status: str = "ok"
    """``ok``, ``text_fallback`` (numbers recovered from text), ``parse_error`` or ``call_error``."""
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
    decision: str | None = None
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
    """Where ``cost_usd`` came from: ``litellm``, ``cache``, ``simulated``; ``None`` when unknown."""
    image_scale: float | None = None
    """Scale of the image actually sent (``image.max_side``); ``None`` or 1.0 when sent as is."""
    sent_size: list[int] | None = None
    """``[W, H]`` of the image actually sent, when it was resized."""
    raw_tool_calls: list[dict[str, Any]] | None = None
    """The provider's own tool calls when the client rewrote them (pixel answers on a resized image)."""
    cached: bool = False
    """True when the reply came from the response cache."""
    attempts: int = 1
    """Attempts the call took (each retry after a 429, timeout or 5xx counts)."""
    attempt_errors: list[str] = field(default_factory=list)
    """Error class of every failed attempt of this call, in order."""
    retry_wait_s: float = 0.0
    """Seconds this call waited in its provider's gate and in backoff."""
    error_class: str | None = None
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


@dataclass
class TrialResult:
    """How one trial ended: what a method returns (never ``None``, never an exception)."""

    status: str
    """``ok | error | skipped``."""
    stop_reason: str
    """One of :data:`STOP_REASONS`."""
    final_point: list[float] | None
    """Where the harness would click, pixels; ``None`` when there is no point (error before any)."""
    iterations: int = 0
    """DVOC: verifier calls; one-shot: attempts; baselines: 0."""
    model_calls: int = 0
    """Model calls attempted (including failed ones)."""
    parse_errors: int = 0
    """Replies that yielded no usable numbers."""
    tokens_in: int = 0
    """Sum of prompt tokens."""
    tokens_out: int = 0
    """Sum of completion tokens."""
    cost_usd: float | None = None
    """Sum of known costs; ``None`` when no call had a known cost."""
    error_class: str | None = None
    """Error class when ``status == "error"``."""
    error: str | None = None
    """Redacted error text when ``status == "error"``."""
    steps: list[Step] = field(default_factory=list)
    """The calls of the trial (written to ``steps.jsonl``, not to ``trials.jsonl``)."""


@dataclass(frozen=True)
class Probe:
    """What lies under a trial's final point, as the scene reports it (§5). Web scenes ask the live DOM;
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


def to_jsonable(obj: Any) -> Any:
    """Turn records, enums and floats into JSON-safe values (NaN/inf become ``None``)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def probe_fields(probe: Probe | None, box_hit: bool) -> dict[str, Any]:
    """The ``trials.jsonl`` fields that come from probing the final point (``None`` when there is none).

    ``hit`` follows the DOM when the scene has a DOM rule (``hit_rule: dom``), else the box rule
    (``hit_rule: box``); ``hit_box`` always keeps the box rule, so the two can be compared.
    """
    dom = probe is not None and probe.hit is not None
    return {
        "hit": bool(probe.hit) if dom and probe is not None else box_hit,
        "hit_rule": "dom" if dom else "box",
        "hit_box": box_hit,
        "hit_element": probe.hit_element if probe else None,
        "clicked_target": probe.clicked_target if probe else None,
        "blocked_requests": probe.blocked_requests if probe else None,
    }
