"""Redaction of API keys (keys never reach a record, a log line, the console or an error).

:func:`redact` removes every registered key (and any echoed fragment of one, at least eight characters)
and key-shaped tokens (``Bearer ...``, ``?key=...``, ``sk-...``, ``AIza...``, ``api_key: ...``) from a
text; :func:`redact_value` does the same through lists and mappings. Keys are registered by the clients
that read them (:func:`register_secret`); :func:`install_log_redaction` puts a filter on the root
handlers and the third-party loggers that print headers. Where it is applied: the LiteLLM client on every
reply (text, tool calls) and error, the response cache on write and read, the run store on every record,
and the log handlers.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import Any

NO_KEY = "no-key"
"""Key sent to servers that need none (keeps the OpenAI SDK from reading ``OPENAI_API_KEY``)."""

REDACTED = "[REDACTED]"

_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
_MIN_SECRET = 6
_FRAGMENT = 8
"""An echoed fragment of at least this many characters of a registered key is redacted too."""

_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',;}]+"),
    re.compile(r"(?i)([?&](?:key|api_key|api-key|access_token)=)[^&\s\"']+"),
    re.compile(
        r"(?i)((?:x-goog-api-key|x-api-key|api[_-]?key|authorization|openai_api_key)[\"']?\s*[:=]\s*[\"']?)"
        r"(?!\[REDACTED\])[^\s\"',;}]+"
    ),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),
)
"""Key shapes redacted even when the key was never registered (echoed ``Bearer``, ``?key=``, ``sk-``...)."""

_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-+/=.:]{" + str(_FRAGMENT) + ",}")


def register_secret(value: str | None) -> None:
    """Remember a key so :func:`redact` removes it (and fragments of it) from any text."""
    if value and len(value) >= _MIN_SECRET and value != NO_KEY:
        with _SECRETS_LOCK:
            _SECRETS.add(value)


def redact(text: str, secrets: set[str] | frozenset[str] | None = None) -> str:
    """``text`` without any registered (or given) key, fragment of one, or key-shaped token."""
    with _SECRETS_LOCK:
        known = set(_SECRETS)
    if secrets:
        known |= {s for s in secrets if s and len(s) >= _MIN_SECRET}
    for s in sorted(known, key=len, reverse=True):
        text = text.replace(s, REDACTED)
    if known:

        def fragment(m: re.Match[str]) -> str:
            tok = m.group(0)
            for s in known:
                for i in range(len(tok) - _FRAGMENT + 1):
                    if tok[i : i + _FRAGMENT] in s:
                        return REDACTED
            return tok

        text = _TOKEN_RE.sub(fragment, text)
    for pat in _PATTERNS:
        text = pat.sub(lambda m: (m.group(1) if m.re.groups else "") + REDACTED, text)
    return text


class _RedactFilter(logging.Filter):
    """Rewrites every record it sees through :func:`redact` (message and arguments merged)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string: keep the record as it is
            return True
        clean = redact(msg)
        if clean != msg or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        return True


REDACT_FILTER = _RedactFilter()
"""The filter installed on third-party loggers and the root handlers."""

_QUIET = {"LiteLLM": logging.ERROR, "LiteLLM Router": logging.ERROR, "LiteLLM Proxy": logging.ERROR}
_QUIET.update({n: logging.WARNING for n in ("httpx", "httpcore", "openai", "openai._base_client")})


def install_log_redaction() -> None:
    """Quieten LiteLLM / OpenAI / httpx (their DEBUG lines carry headers) and redact what still passes."""
    loggers = [logging.getLogger(n) for n in _QUIET]
    for lg in loggers:
        lg.setLevel(_QUIET[lg.name])
    for lg in [*loggers, logging.getLogger()]:
        if REDACT_FILTER not in lg.filters:
            lg.addFilter(REDACT_FILTER)
        for h in lg.handlers:
            if REDACT_FILTER not in h.filters:
                h.addFilter(REDACT_FILTER)


def has_secrets() -> bool:
    """True once a key was registered in this process."""
    with _SECRETS_LOCK:
        return bool(_SECRETS)


def redact_value(value: object, keep: Iterable[str] = ()) -> Any:
    """``value`` with every string in it redacted (lists, tuples and mappings walked; mapping keys named in
    ``keep`` are left as they are, e.g. content hashes that must stay exact)."""
    keep = frozenset(keep)
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: v if k in keep else redact_value(v, keep) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, keep) for v in value]
    return value
