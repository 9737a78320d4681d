"""Prices of model calls and the per-call estimates of the plan and the budget.

**Where a price comes from**, first match wins (:func:`price_of`):

1. the model config's own ``pricing: {input_per_mtok, output_per_mtok, per_image}`` block (USD per million
   prompt / completion tokens, and per image sent); the LiteLLM client then records the cost of every call
   from the reply's token counts with it (``cost_source: pricing``);
2. LiteLLM's local cost map (the JSON that ships with LiteLLM, read as a file: LiteLLM is not imported),
   under the config's ``cost_model`` when set, else its ``model_id``;
3. the in-process simulator: free (its calls cost 0.0);
4. otherwise the price is **unknown**: the plan says so (never ``$0``) and ``run.max_cost_usd`` refuses
   the model.

**Tokens of one call** (:func:`call_estimate`): the prompt text and tool schemas, :data:`TEXT_TOKENS`
(measured: our prompts are 570-1,800 characters, about 150-450 tokens, plus the tool schema; the DVOC
history grows the prompt), plus the image's tokens by the provider's rule (``image_tokens:`` in
``conf/provider/<name>.yaml``) applied to the size of the image sent (the scene, downscaled to
``image.max_side`` when set); the reply, :data:`OUTPUT_TOKENS` (a tool call is about 40) or the request's
``max_tokens`` when smaller. A previous run (``run.plan_from``) replaces these by its measured means.

Image rules (:data:`IMAGE_RULES`):

- ``gemini`` (Gemini API: Gemini and Gemma): 258 tokens per 768x768 tile, ``ceil(W/768)*ceil(H/768)``
  tiles; an image with both sides <= 384 px is one 258-token image.
- ``openai``: fit in 2048x2048, then shrink until the short side is <= 768; ``85 + 170`` per 512x512 tile
  (high detail).
- ``anthropic``: fit the long side in 1568 px; ``W*H/750`` tokens.
- ``patch28`` (vLLM, Ollama, OpenRouter, the simulator server): one token per 28x28 patch,
  ``ceil(W/28)*ceil(H/28)`` (Qwen2.5-VL's merged patches; a generic ViT estimate elsewhere).
- ``none``: no image tokens (the in-process simulator, whose token counts are placeholders).

**Usage reported far below ours** (:func:`under_reported`): the harness estimates every answered call's
tokens itself (:func:`own_estimate`: the prompt text and tool schemas at :data:`CHARS_PER_TOKEN` characters a
token, plus the image sent by the provider's rule; the reply's characters likewise). When a provider reports
less than :data:`UNDER_REPORT` of that estimate for the prompt or the completion, the call is priced (and the
budget charged) with the larger count, and the step records the estimate (``est_tokens_in``,
``est_tokens_out``) and the cost of the reported counts (``reported_cost_usd``) beside it
(``cost_source: estimate``).
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.models.config import ModelConfig, Pricing
from dvoc_bench.models.options import ImageOptions

TEXT_TOKENS = 500
"""Estimated prompt tokens of one call without the image (prompt text and tool schemas)."""
OUTPUT_TOKENS = 100
"""Estimated completion tokens of one call (a tool call is about 40; some models add reasoning)."""
CHARS_PER_TOKEN = 4.0
"""Characters per token of the harness's own estimate of a call's text (English and JSON: 3-4.5)."""
UNDER_REPORT = 0.25
"""A reported count below this share of the harness's own estimate is not believed (the estimate may be off
by a factor of two either way; a provider reporting 1 token for a 1,000-token prompt is not)."""
BOUND_MARGIN = 2.0
"""The budget's per-call bound is this times the estimated cost of a call (or the dearest call seen)."""


@dataclass(frozen=True)
class Price:
    """The price of a model's calls and where it comes from (``pricing`` ``None``: unknown)."""

    pricing: Pricing | None
    """The rates; ``None`` when no source knows the model."""
    source: str
    """Where they come from, or why there are none (one phrase)."""


@lru_cache(maxsize=1)
def litellm_cost_map() -> dict[str, Any]:
    """LiteLLM's local cost map, read from the installed package's JSON without importing LiteLLM."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return {}
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / "model_prices_and_context_window_backup.json"
    try:
        return load_file(path)
    except (OSError, ValueError):
        return {}


def litellm_pricing(key: str) -> Pricing | None:
    """Rates of ``key`` (``gemini/gemini-2.5-flash-lite``, or without the provider prefix) in the map."""
    m = litellm_cost_map()
    for k in (key, key.split("/", 1)[1] if "/" in key else None):
        e = m.get(k) if k else None
        if isinstance(e, dict) and e.get("input_cost_per_token") is not None:
            return Pricing(
                input_per_mtok=float(e["input_cost_per_token"]) * 1e6,
                output_per_mtok=float(e.get("output_cost_per_token") or 0.0) * 1e6,
                per_image=float(e.get("input_cost_per_image") or 0.0),
            )
    return None


def price_of(cfg: ModelConfig) -> Price:
    """Where the price of ``cfg``'s calls comes from (module docstring, first match wins)."""
    own = cfg.pricing
    if own is not None:
        return Price(own, f"pricing: block of conf/model/{cfg.name}.yaml")
    key = str(cfg.cost_model or cfg.model_id)
    if cfg.kind != "simulator":
        found = litellm_pricing(key)
        if found is not None:
            return Price(found, f"LiteLLM's local cost map ({key})")
    if cfg.kind == "simulator":
        return Price(Pricing(input_per_mtok=0.0, output_per_mtok=0.0), "in-process simulator (free)")
    return Price(None, f"no pricing: block, and LiteLLM's local cost map has no {key}")


IMAGE_RULES = {
    "gemini": "258 tokens per 768x768 tile (both sides <= 384 px: one image, 258)",
    "openai": "fit 2048x2048, short side <= 768, 85 + 170 per 512x512 tile",
    "anthropic": "long side <= 1568 px, W*H/750",
    "patch28": "one token per 28x28 patch",
    "none": "no image tokens",
}
"""The image-token rules, by the name a provider config gives (``image_tokens:``)."""


def image_tokens(rule: str, size: Size) -> int:
    """Prompt tokens of one image of ``size`` (pixels as sent) under ``rule`` (:data:`IMAGE_RULES`)."""
    w, h = float(size.width), float(size.height)
    if rule == "none":
        return 0
    if rule == "gemini":
        if w <= 384 and h <= 384:
            return 258
        return 258 * math.ceil(w / 768) * math.ceil(h / 768)
    if rule == "openai":
        s = min(1.0, 2048 / max(w, h))
        w, h = w * s, h * s
        s = min(1.0, 768 / min(w, h))
        w, h = w * s, h * s
        return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)
    if rule == "anthropic":
        s = min(1.0, 1568 / max(w, h))
        return math.ceil(w * s * h * s / 750)
    if rule == "patch28":
        return math.ceil(w / 28) * math.ceil(h / 28)
    raise ValueError(f"unknown image-token rule {rule!r}; allowed: {', '.join(IMAGE_RULES)}")


def sent_size(cfg: ModelConfig, size: Size, image: ImageOptions | None = None) -> Size:
    """The size of the image sent for a screenshot of ``size``: downscaled to the model's input limits (its
    config's own ``image:`` block over the sweep's) and through its declared resize (``coord_frame:``), as
    the harness does (:func:`dvoc_bench.draw.sending.model_view`)."""
    from dvoc_bench.draw.sending import model_view
    from dvoc_bench.models.options import model_image

    limits = model_image(cfg.image, image)
    return model_view(size, None, limits.max_side, limits.max_pixels, cfg.frame).sent


@dataclass(frozen=True)
class CallEstimate:
    """What one call of a model is expected to use and cost."""

    tokens_in: float
    """Prompt tokens (text and image)."""
    tokens_out: float
    """Completion tokens."""
    cost_usd: float | None
    """Cost of the call; ``None`` when the price is unknown."""
    price: Price
    """The price and its source."""
    how: str
    """How the tokens were found (the rule, or the earlier run)."""


def image_rule(cfg: ModelConfig) -> str:
    """The image-token rule of ``cfg``'s provider (``none`` for the in-process simulator)."""
    if cfg.kind == "simulator":
        return "none"
    pc = cfg.provider_config
    return pc.image_tokens if pc is not None else "patch28"


def call_estimate(
    cfg: ModelConfig,
    size: Size,
    image: ImageOptions | None = None,
    params: dict[str, Any] | None = None,
    measured: tuple[float, float] | None = None,
) -> CallEstimate:
    """Tokens and cost of one call of ``cfg`` on a screenshot of ``size``; ``measured`` (mean prompt and
    completion tokens per call of an earlier run) replaces the rule-based token estimate."""
    price = price_of(cfg)
    if measured is not None:
        tin, tout = measured
        how = "tokens per call measured in the earlier run"
    else:
        rule = image_rule(cfg)
        sent = sent_size(cfg, size, image)
        tin = TEXT_TOKENS + image_tokens(rule, sent)
        cap = {**cfg.params, **(params or {})}.get("max_tokens")
        tout = min(OUTPUT_TOKENS, int(cap)) if isinstance(cap, int) and cap > 0 else OUTPUT_TOKENS
        how = (
            f"{TEXT_TOKENS} text + image {sent.width}x{sent.height} by the {rule} rule ({IMAGE_RULES[rule]})"
        )
    p = price.pricing
    cost = None if p is None else p.cost(round(tin), round(tout))
    return CallEstimate(float(tin), float(tout), cost, price, how)


def _bad_count(name: str, v: Any) -> str | None:
    """Why ``v`` is not a usable token count, or ``None`` when it is one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return f"{name}={v!r} is not a number"
    if isinstance(v, float) and not math.isfinite(v):
        return f"{name}={v!r} is not finite"
    if v < 0:
        return f"{name}={v!r} is negative"
    if isinstance(v, float) and not v.is_integer():
        return f"{name}={v!r} is not a whole number"
    return None


def checked_usage(tokens_in: Any, tokens_out: Any) -> tuple[int | None, int | None, str | None]:
    """The token counts of a reply as they may be summed, and what was wrong with them (``None``: fine).

    A reply with no prompt count, or zero prompt tokens (LiteLLM fills a missing ``usage`` with zeros, and
    no request of ours has an empty prompt), has *no token counts*; a count that is negative, non-finite,
    fractional or not a number is a provider fault (a missing completion count alone is fine). Either way
    both counts are dropped (never summed) and the fault names the values as reported.
    """
    if tokens_in in (None, 0) and tokens_out in (None, 0):
        counts = f"prompt_tokens={tokens_in!r}, completion_tokens={tokens_out!r}"
        return None, None, f"no token counts in the reply ({counts})"
    bad = [_bad_count("prompt_tokens", tokens_in)]
    if tokens_out is not None:
        bad.append(_bad_count("completion_tokens", tokens_out))
    if tokens_in == 0:
        bad.append("prompt_tokens=0 with completion tokens reported")
    faults = [b for b in bad if b]
    if faults:
        return None, None, "invalid token counts: " + "; ".join(faults)
    return int(tokens_in), None if tokens_out is None else int(tokens_out), None


def cost_fault(cost: Any) -> str | None:
    """Why ``cost`` (USD of one call) cannot be summed, or ``None`` when it can (a finite number >= 0)."""
    if isinstance(cost, bool) or not isinstance(cost, (int, float)):
        return f"cost {cost!r} is not a number"
    if not math.isfinite(cost):
        return f"cost {cost!r} is not finite"
    return f"cost {cost!r} is negative" if cost < 0 else None


def own_estimate(rule: str, text_chars: int, image: Size | None, reply_chars: int) -> tuple[int, int]:
    """The harness's own estimate of one answered call's ``(prompt, completion)`` tokens: ``text_chars``
    (prompt text and tool schemas) and ``reply_chars`` at :data:`CHARS_PER_TOKEN`, plus the image sent
    (``None``: none) by the image-token ``rule`` (:data:`IMAGE_RULES`)."""
    tin = math.ceil(max(0, text_chars) / CHARS_PER_TOKEN) + (image_tokens(rule, image) if image else 0)
    return tin, math.ceil(max(0, reply_chars) / CHARS_PER_TOKEN)


def under_reported(reported: tuple[int, int | None], estimate: tuple[int, int]) -> tuple[int, int] | None:
    """The counts to price when a reported one is far below the estimate (under :data:`UNDER_REPORT` of
    it): each the larger of the two; ``None`` when the reported counts hold."""
    tin, tout = reported[0], reported[1] or 0
    low = tin < UNDER_REPORT * estimate[0] or tout < UNDER_REPORT * estimate[1]
    return (max(tin, estimate[0]), max(tout, estimate[1])) if low else None
