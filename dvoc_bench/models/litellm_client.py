"""The LiteLLM client: every real provider behind the :class:`~dvoc_bench.models.base.Model` protocol.

One call = one ``user`` turn (the prompt text, then the PNG as a ``data:`` URL), the tool schemas, an
optional ``tool_choice``, and the sampling parameters (model config ``params:`` overridden by the request's
``params``, i.e. the sweep's ``sampling:``; the per-call ``seed`` when the config says ``send_seed``). No
LiteLLM retries: a failed call raises :class:`ModelCallError` with one of the classes ``rate_limit`` (with
``retry_after`` when the provider said), ``timeout``, ``server``, ``connection``, ``auth``, ``quota``,
``bad_request``, ``unknown``; retrying is the scheduler's job.

LiteLLM costs about two seconds to import: it is imported on the first call (never by ``import
dvoc_bench`` or ``--help``), with ``LITELLM_LOCAL_MODEL_COST_MAP=True`` so it does not fetch its price
list from the network.

**Keys.** The key is read from the environment variable the provider config names (``key_env``) when the
client is built, kept in a private attribute, passed to LiteLLM per call, and registered for redaction:
every error string this module produces goes through :func:`redact`, and a logging filter redacts records
of LiteLLM, OpenAI, httpx and the root handlers. An error is read only as far as its first
``ERROR_SCAN_CHARS`` (:func:`redact_head`): a 30 MB error body costs what 8 KB cost. LiteLLM's own secret
scan (a regex over the whole error text, on the event loop) is turned off at import. A provider without a
key gets the placeholder ``no-key``, so an ``OPENAI_API_KEY`` of the user's environment is never sent to a
local server.

**Usage.** The reply's token counts are checked (:func:`~dvoc_bench.models.pricing.checked_usage`): no
counts (LiteLLM reports a missing ``usage`` as zeros), negative, fractional or non-finite ones, and a
negative or non-finite cost are a provider fault, kept in ``Reply.usage_fault`` with the values as
reported; the counts are then ``None`` and the cost unknown (the budget charges such a call its bound).
Counts far below the harness's own estimate of the call (:func:`~dvoc_bench.models.pricing.under_reported`)
are not believed either: the call is priced with the larger counts (``cost_source="estimate"``), the estimate
and the reported counts' cost recorded beside them (``est_tokens_in``, ``est_tokens_out``,
``reported_cost_usd``). A
reply LiteLLM cannot read at all (NaN counts) fails as ``server`` with ``answered`` set.

**Cost.** A model config's ``pricing:`` block (:mod:`dvoc_bench.models.pricing`) prices every call from the
reply's token counts (``cost_source="pricing"``); else ``Reply.cost_usd`` is LiteLLM's ``response_cost``
(``cost_source="litellm"``); failing that
``litellm.completion_cost`` on the response, priced as the config's ``cost_model`` when set
(``"litellm_price_map"`` / ``"litellm_price_map:<cost_model>"``); ``None`` with ``cost_source=None``
when LiteLLM does not know the model (no guess).

**Images.** The client sends the request's PNG as it is: the harness has already cropped and downscaled it
to the model's input limits (``image.max_side``, ``image.max_pixels``; :mod:`dvoc_bench.draw.sending`), and
the prompt states the size sent, so every answer frame refers to the image the model received.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dvoc_bench.core.jsonread import loads
from dvoc_bench.core.records import ErrorClass
from dvoc_bench.core.redaction import (
    NO_KEY,
    install_log_redaction,
    redact,
    redact_head,
    redact_value,
    register_secret,
)
from dvoc_bench.core.text import safe_text
from dvoc_bench.models import error_bodies
from dvoc_bench.models.base import (
    CROP_FIELD,
    MAX_REPLY_CHARS,
    ModelCallError,
    ModelRequest,
    Reply,
    ToolCall,
    bound_reply,
)
from dvoc_bench.models.config import ModelConfig, require_key
from dvoc_bench.models.options import ImageOptions, model_image
from dvoc_bench.models.pricing import (
    Pricing,
    checked_usage,
    cost_fault,
    litellm_pricing,
    own_estimate,
    under_reported,
)

log = logging.getLogger(__name__)

__all__ = ["LiteLLMModel", "classify_exception", "import_litellm"]

ERROR_MAX_CHARS = 300
"""Error strings are cut to this length (after redaction)."""
UNREADABLE = "Invalid response object"
"""LiteLLM's words for a reply it received but could not read (a 200 with NaN token counts, for one)."""
UNREADABLE_FAULT = "the provider answered, but its reply could not be read (non-finite usage, for one)"
"""The ``usage_fault`` of such a call: the provider may have billed it, so the budget charges its bound."""
ERROR_SCAN_CHARS = 8192
"""Characters of an error's text that are read at all (classified, redacted): an error body of any size
costs what its first 8 KB cost."""

# -------------------------------------------------------------------------------------------- import

_IMPORT_LOCK = threading.Lock()
_LITELLM: list[Any] = []


def import_litellm() -> Any:
    """The ``litellm`` module, imported once (lazily, with the local price map and quiet logging)."""
    with _IMPORT_LOCK:
        if not _LITELLM:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            os.environ.setdefault("LITELLM_LOG", "ERROR")
            # LiteLLM's own secret scan runs a regex over every failed call's whole error text on the
            # event loop (a 30 MB error body: minutes); ours bounds the text first (redact_head)
            os.environ["LITELLM_DISABLE_REDACT_SECRETS"] = "true"
            t0 = time.perf_counter()
            import litellm

            _disable_litellm_redaction()
            error_bodies.install(litellm)  # error bodies cut to 64 KB (gzip inflated bounded) on arrival
            litellm.suppress_debug_info = True
            litellm.set_verbose = False
            litellm.drop_params = True
            install_log_redaction()
            log.debug("litellm imported in %.2f s", time.perf_counter() - t0)
            _LITELLM.append(litellm)
        return _LITELLM[0]


def _disable_litellm_redaction() -> None:
    """Turn LiteLLM's secret scan off even if it was imported before ``LITELLM_DISABLE_REDACT_SECRETS``
    was set (the switch is read once, at its import)."""
    try:
        import litellm._logging as litellm_logging
    except ImportError:  # a LiteLLM without it has no such scan
        return
    if hasattr(litellm_logging, "_ENABLE_SECRET_REDACTION"):
        litellm_logging._ENABLE_SECRET_REDACTION = False


# -------------------------------------------------------------------------------------------- errors

_RETRY_IN_RE = re.compile(
    r"(?i)(?:retry in|retry after|try again in)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|sec|seconds)?"
)
_RETRY_DELAY_RE = re.compile(r"(?i)retry_?delay[\"']?\s*[:=]\s*[\"']?([0-9]+(?:\.[0-9]+)?)s")
_QUOTA_WORDS = (
    "insufficient_quota",
    "per day",
    "perday",
    "billing",
    "credits",
    "quota exceeded for quota metric",
)


def _status(e: BaseException) -> int | None:
    code = getattr(e, "status_code", None)
    if code is None:
        resp = getattr(e, "response", None)
        code = getattr(resp, "status_code", None)
    try:
        return int(code) if code is not None else None
    except (TypeError, ValueError):
        return None


def _headers(e: BaseException) -> dict[str, str]:
    out: dict[str, str] = {}
    for src in (
        getattr(getattr(e, "response", None), "headers", None),
        getattr(e, "litellm_response_headers", None),
    ):
        if src is None:
            continue
        try:
            out.update({str(k).lower(): str(v) for k, v in dict(src).items()})
        except (TypeError, ValueError):
            continue
    return out


def parse_retry_after(value: str | None, message: str = "") -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or HTTP date) or the provider's message."""
    if value:
        v = value.strip()
        try:
            secs = float(v)
            return secs if math.isfinite(secs) and secs >= 0 else None
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(v)
            return max(0.0, when.timestamp() - time.time())
        except (TypeError, ValueError, IndexError):
            pass
    m = _RETRY_DELAY_RE.search(message) or _RETRY_IN_RE.search(message)
    if m:
        secs = float(m.group(1))
        if m.re is _RETRY_IN_RE and (m.group(2) or "").lower() == "ms":
            secs /= 1000.0
        return secs
    return None


def _names(e: BaseException) -> set[str]:
    return {c.__name__ for c in type(e).__mro__}


def _chain_names(e: BaseException) -> set[str]:
    """Class names along the cause/context chain (LiteLLM wraps a refused connection in a '500')."""
    out: set[str] = set()
    seen: BaseException | None = e
    for _ in range(12):
        if seen is None:
            break
        out |= _names(seen)
        seen = seen.__cause__ or seen.__context__
    return out


_TIMEOUTS = {
    "Timeout",
    "APITimeoutError",
    "TimeoutError",
    "ReadTimeout",
    "ConnectTimeout",
    "ServerTimeoutError",
}
_CONNECTION = {"APIConnectionError", "ConnectError", "ConnectionError", "ClientConnectorError", "OSError"}


def classify_exception(e: BaseException, secrets: set[str] | frozenset[str] | None = None) -> ModelCallError:
    """Map a LiteLLM / OpenAI / transport exception to a :class:`ModelCallError` with a redacted message."""
    names, code, chain = _names(e), _status(e), _chain_names(e)
    # bounded (and redacted) before anything scans it: a 30 MB error body costs what its head costs
    raw = redact_head(f"{type(e).__name__}: {e}", ERROR_SCAN_CHARS, secrets)
    low = raw.lower()
    retry: float | None = None
    cls: ErrorClass
    if chain & _TIMEOUTS or code == 408:
        cls = "timeout"
    elif code == 429 or "RateLimitError" in names:
        cls = "quota" if any(w in low for w in _QUOTA_WORDS) else "rate_limit"
        if cls == "rate_limit":
            retry = parse_retry_after(_headers(e).get("retry-after"), raw)
    elif code == 402 or "BudgetExceededError" in names:
        cls = "quota"
    elif (
        code in (401, 403)
        or names & {"AuthenticationError", "PermissionDeniedError"}
        or "api key not valid" in low
        or "api_key_invalid" in low
    ):
        cls = "auth"
    elif chain & _CONNECTION:
        cls = "connection"  # before the 5xx rule: LiteLLM reports a refused connection as a 500
    elif (code is not None and code >= 500) or names & {
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
    }:
        cls = "server"
    elif (code is not None and 400 <= code < 500) or names & {
        "BadRequestError",
        "NotFoundError",
        "UnprocessableEntityError",
        "ContextWindowExceededError",
        "ContentPolicyViolationError",
        "UnsupportedParamsError",
    }:
        cls = "bad_request"
    else:
        cls = "unknown"
    msg = redact(" ".join(raw.split()), secrets)[:ERROR_MAX_CHARS]
    return ModelCallError(cls, msg, retry)


# --------------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class ClientSettings:
    """Everything of a model config the client uses (no key)."""

    model_id: str
    """LiteLLM model id (``gemini/...``, ``openrouter/...``, ``openai/...`` with ``api_base``...)."""
    api_base: str | None
    """Endpoint override (local servers)."""
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters of the config (temperature, max_tokens, ...)."""
    send_seed: bool = True
    """Send the per-call ``seed`` (LiteLLM drops it for providers that do not take one)."""
    tool_choice: str | None = None
    """Default ``tool_choice`` when the request has none."""
    timeout_s: float = 120.0
    """Timeout of one call (model config, else the provider's)."""
    image: ImageOptions = field(default_factory=ImageOptions)
    """The model's input limits (the harness resizes to them; part of the cache fingerprint)."""
    cost_model: str | None = None
    """LiteLLM price-map entry to price the calls with when LiteLLM does not know ``model_id``."""
    key_env: str | None = None
    """Environment variable holding the key (the name only)."""
    pricing: Pricing | None = None
    """The config's ``pricing:`` block: prices every call from its token counts (before LiteLLM's map)."""
    image_tokens: str = "patch28"
    """The provider's image-token rule (:data:`dvoc_bench.models.pricing.IMAGE_RULES`): the harness's own
    estimate of a call's tokens, against which reported usage is checked."""

    @classmethod
    def from_config(cls, cfg: ModelConfig, image: ImageOptions | None = None) -> ClientSettings:
        prov = cfg.provider_config
        return cls(
            model_id=cfg.model_id,
            api_base=cfg.api_base,
            params=dict(cfg.params),
            send_seed=cfg.send_seed,
            tool_choice=cfg.tool_choice,
            timeout_s=float(cfg.timeout_s or (prov.timeout_s if prov else 120.0)),
            image=model_image(cfg.image, image, f"model {cfg.name}: "),
            cost_model=cfg.cost_model,
            key_env=prov.key_env if prov else None,
            pricing=cfg.pricing,
            image_tokens=prov.image_tokens if prov else "patch28",
        )


SERVED_MAX_CHARS = 200
"""Bound on what a server says of itself (the model id it served, its fingerprint)."""


def _text_or_none(v: Any) -> str | None:
    """A server's word about itself as recorded: bounded, redacted, valid UTF-8 (``None``: it said none)."""
    if not isinstance(v, str) or not v:
        return None
    return safe_text(redact(v[:SERVED_MAX_CHARS]))


ENGINE_TIMEOUT_S = 3.0
"""How long the one ``/version`` request of a client may take."""


def server_engine(api_base: str, timeout_s: float = ENGINE_TIMEOUT_S) -> str | None:
    """The serving engine and version an OpenAI-compatible server states: vLLM answers ``GET /version``
    (beside ``/v1``) with ``{"version": "0.8.5"}``, recorded as ``vllm 0.8.5``. ``None`` when the server
    does not say (another engine, a hosted API, no answer within ``timeout_s``); never raises. Asked only
    of a server the config names (``api_base``), with no key."""
    import urllib.error
    import urllib.request

    root = api_base.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    if not root.startswith(("http://", "https://")):
        return None
    try:
        with urllib.request.urlopen(root + "/version", timeout=timeout_s) as r:  # noqa: S310 (config URL)
            body = loads(r.read(4096).decode("utf-8", "replace"))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    version = body.get("version") if isinstance(body, dict) else None
    if not isinstance(version, str) or not version or len(version) > 64:
        return None
    return f"vllm {safe_text(version)}"


class LiteLLMModel:
    """A real (or HTTP-served) model called through LiteLLM."""

    def __init__(
        self, cfg: ModelConfig, image: ImageOptions | None = None, max_reply_chars: int = MAX_REPLY_CHARS
    ):
        self.name = cfg.name
        """Config name of the model."""
        self.simulated = cfg.simulated
        """True for ``simulated: true`` configs (``local-sim``): the answers come from the simulator."""
        self.coord_frame = cfg.coord_frame
        """The declared answer frame."""
        self.identity = cfg.identity
        """Model id + api base."""
        self.settings = ClientSettings.from_config(cfg, image)
        """What is sent with every call."""
        self.max_reply_chars = int(max_reply_chars)
        """Characters kept of a reply's text and of each tool call's arguments (``run.max_reply_chars``)."""
        if cfg.provider_config is not None:
            require_key(cfg.name, cfg.provider_config)
        key = os.environ.get(self.settings.key_env) if self.settings.key_env else None
        self._key = key or NO_KEY
        register_secret(key)
        install_log_redaction()  # handlers added since the import (a new job's, a test's) get the filter too
        self._engine: list[str | None] = []
        """The serving engine and version of ``api_base`` (:func:`server_engine`), asked once."""

    def __repr__(self) -> str:  # never show the key
        return f"LiteLLMModel({self.name!r}, {self.identity!r})"

    def cache_fingerprint(self) -> dict[str, Any]:
        """What besides the request changes the reply (part of the response-cache key; no key)."""
        s = self.settings
        return {
            "params": s.params,
            "send_seed": s.send_seed,
            "tool_choice": s.tool_choice,
            "max_side": s.image.max_side,  # as before the harness resized: old cache entries stay valid
            "pixel_answers": None,
            **({"max_pixels": s.image.max_pixels} if s.image.max_pixels else {}),
        }

    def request_kwargs(self, req: ModelRequest) -> dict[str, Any]:
        """The ``litellm.acompletion`` arguments for ``req`` (no key)."""
        s = self.settings
        kw: dict[str, Any] = {"model": s.model_id, "messages": req.messages()}
        if s.api_base:
            kw["api_base"] = s.api_base
        if req.tools:
            kw["tools"] = req.tools
            choice = req.tool_choice or s.tool_choice
            if choice:
                kw["tool_choice"] = choice
        kw.update(s.params)
        kw.update(req.params)
        if s.send_seed:
            kw["seed"] = int(req.seed)
        if self.simulated and req.crop is not None:  # the local simulator maps its truth through the crop;
            extra = kw.get("extra_body")
            extra = extra if isinstance(extra, dict) else {}
            kw["extra_body"] = {**extra, CROP_FIELD: [float(v) for v in req.crop]}  # never to a real provider
        kw.update(timeout=s.timeout_s, num_retries=0, max_retries=0, drop_params=True)
        return kw

    async def complete(self, request: ModelRequest) -> Reply:
        # the first call imports LiteLLM off the event loop (about 2 s), later calls find it loaded
        litellm = _LITELLM[0] if _LITELLM else await asyncio.to_thread(import_litellm)
        kw = self.request_kwargs(request)
        t0 = time.perf_counter()
        try:
            resp = await litellm.acompletion(api_key=self._key, **kw)
        except Exception as e:  # every provider failure becomes a classified, redacted ModelCallError
            err = classify_exception(e, {self._key})
            if UNREADABLE in str(e):  # LiteLLM got a reply it could not read (e.g. NaN token counts)
                err.answered, err.usage_fault = 1, UNREADABLE_FAULT
            log.debug("%s: %s", self.name, err)
            raise err from None
        latency = time.perf_counter() - t0
        if not self._engine and self.settings.api_base:  # once per client: what the server says it runs
            self._engine.append(await asyncio.to_thread(server_engine, self.settings.api_base))
        try:
            return self._reply(litellm, resp, request, latency)
        except Exception as e:  # a response LiteLLM accepted but that has no readable shape
            msg = redact_head(f"unreadable response: {type(e).__name__}: {e}", ERROR_MAX_CHARS)
            err = ModelCallError("server", msg)
            err.answered, err.usage_fault = 1, f"{UNREADABLE_FAULT}: {msg}"
            raise err from None

    def _reply(self, litellm: Any, resp: Any, req: ModelRequest, latency: float) -> Reply:
        if not resp.choices:  # no candidate at all (e.g. a blocked prompt): an empty reply, parsed as such
            empty = bound_reply(Reply(text=None), self.max_reply_chars)
            return Reply(
                text=None,
                latency_s=latency,
                finish_reason=None,
                full_chars=empty.full_chars,
                full_sha256=empty.full_sha256,
            )
        choice = resp.choices[0]
        msg = choice.message
        text = msg.content
        if isinstance(text, list):  # content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict)) or None
        calls = [
            ToolCall(getattr(c.function, "name", None), getattr(c.function, "arguments", None))
            for c in (getattr(msg, "tool_calls", None) or [])
        ]
        # right here, before anything keeps or copies it: at most max_reply_chars of the text and of each
        # call's arguments (length and sha256 of the original recorded), and no key in what is kept
        bounded = bound_reply(
            Reply(text=text or None, tool_calls=calls), self.max_reply_chars, redact_value, redact_head
        )
        text, calls = bounded.text, bounded.tool_calls
        usage = getattr(resp, "usage", None)
        tokens_in, tokens_out, fault = checked_usage(
            getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
        )
        cost, source = None, None
        if fault is None:  # usage the provider did not report, or reported wrong, is never priced
            cost, source = self._cost(litellm, resp, tokens_in, tokens_out, int(req.image_png is not None))
            bad = None if cost is None else cost_fault(cost)
            if bad is not None:
                cost, source, fault = None, None, f"{bad} ({source}, from tokens {tokens_in}/{tokens_out})"
        est: tuple[int, int] | None = None
        reported_cost = None
        if fault is None and tokens_in is not None and not self.simulated:  # a simulator's are placeholders
            est = self._own_estimate(req, bounded.full_chars)
            larger = under_reported((tokens_in, tokens_out), est)
            if larger is None:
                est = None
            else:  # far below our own count: priced (and charged) by the larger one, both recorded
                reported_cost = cost
                cost, source = self._price(larger, int(req.image_png is not None))
                if cost is None:
                    fault = (
                        f"reported usage {tokens_in}/{tokens_out} tokens is far below the harness's estimate "
                        f"{est[0]}/{est[1]}, and no price is known to cost the estimate"
                    )
        return Reply(
            text=text if text else None,
            tool_calls=calls,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost_usd=cost,
            cost_source=source,
            usage_fault=fault,
            est_tokens_in=est[0] if est else None,
            est_tokens_out=est[1] if est else None,
            reported_cost_usd=reported_cost,
            latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            full_chars=bounded.full_chars,
            full_sha256=bounded.full_sha256,
            truncated=bounded.truncated,
            served_model=_text_or_none(getattr(resp, "model", None)),
            system_fingerprint=_text_or_none(getattr(resp, "system_fingerprint", None)),
            engine=self._engine[0] if self._engine else None,
        )

    def _own_estimate(self, req: ModelRequest, reply_chars: int | None) -> tuple[int, int]:
        """The harness's own ``(prompt, completion)`` token estimate of this call
        (:func:`~dvoc_bench.models.pricing.own_estimate`)."""
        chars = len(req.text) + (len(json.dumps(req.tools)) if req.tools else 0)
        image = req.image_size if req.image_png is not None else None
        return own_estimate(self.settings.image_tokens, chars, image, reply_chars or 0)

    def _price(self, tokens: tuple[int, int], images: int) -> tuple[float | None, str | None]:
        """The cost of ``tokens`` at the config's ``pricing:`` block, else LiteLLM's map entry
        (``cost_model`` or ``model_id``); ``(None, None)`` when neither knows the model."""
        p = self.settings.pricing or litellm_pricing(str(self.settings.cost_model or self.settings.model_id))
        if p is None:
            return None, None
        return p.cost(tokens[0], tokens[1], images), "estimate"

    def _cost(
        self, litellm: Any, resp: Any, tokens_in: Any = None, tokens_out: Any = None, images: int = 1
    ) -> tuple[float | None, str | None]:
        p = self.settings.pricing
        if p is not None:
            tin = tokens_in if isinstance(tokens_in, int) else None
            tout = tokens_out if isinstance(tokens_out, int) else None
            c = p.cost(tin, tout, images)
            return (c, "pricing") if c is not None else (None, None)
        hidden = getattr(resp, "_hidden_params", None) or {}
        c = hidden.get("response_cost") if isinstance(hidden, dict) else None
        if isinstance(c, (int, float)) and not isinstance(c, bool):
            return float(c), "litellm"  # a negative or non-finite one is the caller's fault to report
        cm = self.settings.cost_model
        try:
            c = litellm.completion_cost(completion_response=resp, model=cm) if cm else None
        except Exception:  # unknown model: the cost stays unknown
            c = None
        if isinstance(c, (int, float)) and not isinstance(c, bool):
            return float(c), f"litellm_price_map:{cm}"
        return None, None
