"""Redaction of API keys (keys never reach a record, a log line, the console or an error).

:func:`redact` removes from a text every registered key in the forms a provider could plausibly echo it,
any echoed fragment of one (at least eight characters), and key-shaped tokens (``Bearer ...``,
``?key=...``, ``sk-...``, ``AIza...``, ``api_key: ...``); :func:`redact_head` does the same on the first
characters of a text that may be huge (an error body, a reply), so nothing scans more than it keeps;
:func:`redact_value` walks lists and mappings. Keys are registered by the clients that read them
(:func:`register_secret`); :func:`install_log_redaction` puts a filter on the root handlers and the
third-party loggers that print headers. Where it is applied: the LiteLLM client on every reply (text,
tool calls) and error, the response cache on write and read, the run store on every record, the
console lines of the app, and the log handlers.

**The forms of a key that are removed** (one compiled pattern per set of keys, built once):

- the key and the key reversed, in any letter case, each character written as itself, URL-encoded
  (``%73``, either hex case, the UTF-8 bytes of a non-ASCII character), as a JSON / JavaScript escape
  (``\\u0073``, ``\\x73``, the backslash itself escaped up to eight times, as a ``repr`` or a JSON
  string of an error holds it), as an HTML character reference (``&#115;``, ``&#x73;``) or backslash-escaped,
  mixed freely, with up to two whitespace characters between characters (``s k - d v o c ...``, a key
  wrapped at a line end);
- the key's bytes in hexadecimal, either case, optionally ``0x``-prefixed per byte and separated by up to
  two of space, ``:``, ``,``, ``.``, ``-``;
- the key's bytes in base64 inside a longer base64 string at any of its three alignments (offset 0, 1 or 2
  mod 3), standard and URL-safe alphabets, padded or not, line-wrapped (up to two whitespace characters
  between characters) and with ``+``, ``/``, ``=`` URL-encoded or backslash-escaped: every base64
  character that carries bits of the key is removed, and the padding, except the one character before the
  key's first whole character at offsets 1 and 2 (it carries two or four bits of the key's first byte);
- any piece of at least eight characters of the key or of the key reversed inside a longer token (the
  whole token is removed), which covers a key split into pieces of eight characters or more;
- **by the key itself** (:func:`spread_needles`): the stretch of text whose letters and digits, read on
  their own in lower case, spell the key's letters and digits, whatever non-letters lie between them (a
  key split into pieces of any size joined by quotes, ``+``, ``|`` or newlines; spaced by any number of
  spaces, dots or dashes; zero-width characters; UTF-16 bytes, whose NULs sit between the characters),
  and the same for the key reversed and for these transforms: base32 of the key or the reversed key (five
  alignments, the characters carrying only the key's bits), base64 of the reversed key and of the key's
  UTF-16 bytes, UTF-16 bytes in hexadecimal (either byte order, any separators) and as a ``repr``
  (``s\\x00k\\x00``), and the key's bytes URL-encoded twice or three times (``%2573``). Only
  needles of at least twelve letters and digits are looked for (a chance spelling of twelve given
  characters in ordinary text is never seen; ``tests/models/test_redact_spread.py`` checks both ways).

**Not covered**: pieces shorter than eight characters with letters or digits between them (``sk-dv and
then oc12``); encodings other than the above (base85, rot13, double encodings other than URL twice such
as URL-encoded hex of base64, base64 of base64, hashes, compressed or encrypted forms); a key spread
across the cut of :func:`redact_head`. Keys shorter than six characters are not registered.
"""

from __future__ import annotations

import base64
import functools
import logging
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

NO_KEY = "no-key"
"""Key sent to servers that need none (keeps the OpenAI SDK from reading ``OPENAI_API_KEY``)."""

REDACTED = "[REDACTED]"

_SECRETS: set[str] = set()
_SECRETS_LOCK = threading.Lock()
_KNOWN: list[frozenset[str]] = [frozenset()]
"""The registered keys as one frozen set, replaced (under the lock) whenever one is added."""
_MIN_SECRET = 6
_FRAGMENT = 8
"""An echoed fragment of at least this many characters of a registered key is redacted too."""
_CHAR_REACH = 16
"""Upper bound on the characters one key character can take in an echoed form (``%F0%9F%98%80`` plus
two separators, ``&#x0001F600;``...)."""
LOG_MAX_CHARS = 20_000
"""A log message is cut to this many characters (redacted first) before it reaches a handler."""

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
_NEEDLES: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("bearer",), True),
    (("key=", "access_token="), True),
    (("key", "authorization"), True),
    (("sk-",), False),
    (("aiza",), True),
)
"""Per pattern of :data:`_PATTERNS`: text one of which any match contains, and whether it is looked for in
the case-folded text (a superset of what ``re.IGNORECASE`` equates: ``\u212a`` is ``k``, ``\u017f`` is
``s``). Text holding none of them cannot match, so the pattern is not run (most strings of a record)."""

_MIN_SPREAD = 12
"""A key (or transform of one) is looked for among a text's letters and digits when it has at least this
many: a chance spelling of twelve given characters in ordinary text is never seen."""
_ALNUM = re.compile(r"[A-Za-z0-9]")
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
_TOKEN_RE = re.compile(r"[A-Za-z0-9_\-+/=.:]{" + str(_FRAGMENT) + ",}")
_SEP = r"\s{0,2}"
"""Between two characters of an echoed form: nothing, or up to two whitespace characters."""
_HEX_SEP = r"[\s:,.\-]{0,2}"
"""Between two bytes of a hex form."""
_B64_TAIL = r"(?:" + _SEP + r"[A-Za-z0-9+/_\-])?(?:" + _SEP + r"(?:=|%3[dD]|\\{1,8}=)){0,2}"
"""After a base64 core: the character mixing the key's last bits with what follows, and the padding."""


def _hex(digits: str) -> str:
    """A pattern for hex ``digits`` in either case."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in digits)


def _char(ch: str, nocase: bool = False) -> str:
    """A pattern for one character of a key in every way a text may write it."""
    alts: list[str] = []
    for c in sorted({ch, *(v for v in (ch.lower(), ch.upper()) if len(v) == 1)} if nocase else {ch}):
        o = ord(c)
        alts.append(re.escape(c))
        alts.append("".join("%" + _hex(f"{b:02x}") for b in c.encode("utf-8", "surrogatepass")))
        if o <= 0xFFFF:
            alts.append(r"\\{1,8}u" + _hex(f"{o:04x}"))
        else:  # a JSON escape of a character beyond the BMP is a surrogate pair
            hi, lo = 0xD800 + ((o - 0x10000) >> 10), 0xDC00 + ((o - 0x10000) & 0x3FF)
            alts.append(r"\\{1,8}u" + _hex(f"{hi:04x}") + r"\\{1,8}u" + _hex(f"{lo:04x}"))
        if o < 0x100:
            alts.append(r"\\{1,8}x" + _hex(f"{o:02x}"))
        alts.append(f"&#0{{0,3}}{o};")
        alts.append("&#[xX]0{0,3}" + _hex(f"{o:x}") + ";")
        if not c.isalnum():
            alts.append(r"\\{1,8}" + re.escape(c))
    return "(?:" + "|".join(alts) + ")"


def _spelled(s: str, nocase: bool = False) -> str:
    return _SEP.join(_char(c, nocase) for c in s)


def base64_cores(data: bytes) -> list[str]:
    """The base64 characters that depend on ``data`` alone, when ``data`` sits at offset 0, 1 or 2 (mod 3)
    of a longer base64-encoded string, in the standard and the URL-safe alphabet (duplicates removed)."""
    out: list[str] = []
    for a in range(3):
        enc = base64.b64encode(b"\0" * a + data).decode("ascii")
        core = enc[-(-8 * a // 6) : 8 * (a + len(data)) // 6]
        for form in (core, core.translate(str.maketrans("+/", "-_"))):
            if len(form) >= _MIN_SECRET and form not in out:
                out.append(form)
    return out


def base32_cores(data: bytes) -> list[str]:
    """The base32 characters that depend on ``data`` alone, when ``data`` sits at offset 0 to 4 (mod 5)
    of a longer base32-encoded string (each character carries five bits)."""
    out: list[str] = []
    for a in range(5):
        enc = base64.b32encode(b"\0" * a + data).decode("ascii")
        core = enc[-(-8 * a // 5) : 8 * (a + len(data)) // 5]
        if core not in out:
            out.append(core)
    return out


def _alnum(text: str) -> str:
    return _NOT_ALNUM.sub("", text).lower()


def spread_needles(key: str) -> list[str]:
    """What a key leaves among a text's letters and digits once everything else is dropped (lower case),
    for the key and each transform a provider may echo it in: the key and the key reversed; their bytes
    in base32 (five alignments) and base64 (three; both alphabets, which differ only in two non-letters);
    the key's UTF-16 bytes (little and big endian) in base64, in hexadecimal and as ``\\x00``-escaped
    bytes (a ``repr``), raw UTF-16 bytes being the key's characters with NULs between; the key's bytes in
    hexadecimal (also what URL-encoding every byte leaves) and URL-encoded twice or three times (``%2573``).
    Needles with fewer than :data:`_MIN_SPREAD` letters and digits are dropped (too likely by chance)."""
    data = key.encode("utf-8", "surrogatepass")
    out: list[str] = []
    for text in (key, key[::-1]):
        raw = text.encode("utf-8", "surrogatepass")
        out += [text, *base32_cores(raw), *base64_cores(raw)]
    for raw in (key.encode("utf-16-le", "surrogatepass"), key.encode("utf-16-be", "surrogatepass")):
        out += [raw.hex(), *base64_cores(raw), repr(raw)[2:-1]]
    out += [data.hex(), "".join("25" + f"{b:02x}" for b in data), "".join("2525" + f"{b:02x}" for b in data)]
    needles = [_alnum(n) for n in out]
    return [n for n in dict.fromkeys(needles) if len(n) >= _MIN_SPREAD]


def _spread_sub(text: str, needles: tuple[str, ...]) -> str:
    """``text`` with every stretch whose letters and digits spell one of ``needles`` replaced (whatever
    non-letters lie between them: spaces, zero-width characters, NULs, quotes and ``+`` between pieces)."""
    if len(text) < _MIN_SPREAD:  # fewer letters than any needle (most strings of a record)
        return text
    letters = _alnum(text)
    if not any(n in letters for n in needles):
        return text
    at = [m.start() for m in _ALNUM.finditer(text)]  # position in text of each letter or digit
    spans: list[tuple[int, int]] = []
    for n in needles:
        k = letters.find(n)
        while k >= 0:
            spans.append((at[k], at[k + len(n) - 1] + 1))
            k = letters.find(n, k + 1)
    out: list[str] = []
    end = 0
    for a, b in sorted(spans):
        if a >= end:
            out += [text[end:a], REDACTED]
        end = max(end, b)
    out.append(text[end:])
    return "".join(out)


def _hex_form(data: bytes) -> str:
    return _HEX_SEP.join("(?:0[xX])?" + _hex(f"{b:02x}") for b in data)


@dataclass(frozen=True)
class _Matcher:
    """What :func:`redact` looks for, for one set of keys."""

    forms: re.Pattern[str]
    """Every echoed form of every key (one alternation, longest keys first)."""
    grams: frozenset[str]
    """Every ``_FRAGMENT``-character piece of every key and reversed key."""
    spread: tuple[str, ...]
    """The letters and digits (lower case) of every key and of its transforms (:func:`spread_needles`):
    found in a text's letters and digits read on their own, whatever lies between them is removed too."""
    reach: int
    """Upper bound on the characters one match of ``forms`` (or a fragment's token) can span."""


@functools.lru_cache(maxsize=32)
def _matcher(known: frozenset[str]) -> _Matcher | None:
    if not known:
        return None
    parts: list[str] = []
    grams: set[str] = set()
    first = {"%", "\\", "&", "0"}  # how an escaped character or a 0x-prefixed byte begins
    longest = 0
    for s in sorted(known, key=lambda k: (-len(k), k)):
        data = s.encode("utf-8", "surrogatepass")
        longest = max(longest, len(data))
        cores = base64_cores(data)
        parts += [_spelled(s, nocase=True), _spelled(s[::-1], nocase=True), _hex_form(data)]
        parts += [_spelled(core) + _B64_TAIL for core in cores]
        first |= {c for t in (s[0], s[-1], data[:1].hex()) for c in (t[0].lower(), t[0].upper())}
        first |= {core[0] for core in cores}
        for text in (s, s[::-1]):
            grams |= {text[i : i + _FRAGMENT] for i in range(len(text) - _FRAGMENT + 1)}
    lead = "(?=[" + "".join(re.escape(c) for c in sorted(first)) + "])"  # one test per position first
    forms = re.compile(lead + "(?:" + "|".join(parts) + ")")
    spread = tuple(dict.fromkeys(n for s in known for n in spread_needles(s)))
    return _Matcher(forms, frozenset(grams), spread, 2 * longest * _CHAR_REACH + 64)


def register_secret(value: str | None) -> None:
    """Remember a key so :func:`redact` removes it (and fragments of it) from any text."""
    if value and len(value) >= _MIN_SECRET and value != NO_KEY:
        with _SECRETS_LOCK:
            _SECRETS.add(value)
            _KNOWN[0] = frozenset(_SECRETS)


def _known(secrets: set[str] | frozenset[str] | None) -> frozenset[str]:
    known = _KNOWN[0]  # read once: a whole set, never one being changed
    if secrets:
        known = known | {s for s in secrets if s and len(s) >= _MIN_SECRET and s != NO_KEY}
    return known


def redact(text: str, secrets: set[str] | frozenset[str] | None = None) -> str:
    """``text`` without any registered (or given) key in any of the forms listed in the module's docstring,
    fragment of one, or key-shaped token. Linear in the length of ``text`` (one compiled pattern)."""
    if len(text) < _MIN_SECRET:  # shorter than any key and than any key shape (``?key=x``: 6)
        return text
    m = _matcher(_known(secrets))
    if m is not None:
        text = m.forms.sub(REDACTED, text)
        if any(g in text for g in m.grams):  # a piece of a key is left: remove the tokens holding one
            text = _TOKEN_RE.sub(lambda t: REDACTED if any(g in t[0] for g in m.grams) else t[0], text)
        text = _spread_sub(text, m.spread)
    folded = text.casefold()
    for pat, (needles, fold) in zip(_PATTERNS, _NEEDLES, strict=True):
        where = folded if fold else text
        if any(n in where for n in needles):
            text = pat.sub(lambda x: (x.group(1) if x.re.groups else "") + REDACTED, text)
    return text


def redact_head(text: str, limit: int, secrets: set[str] | frozenset[str] | None = None) -> str:
    """At most ``limit`` characters of ``redact(text)``, scanning only the head of ``text`` (a 30 MB error
    body costs what its first kilobytes cost). A key cut in two where the head ends leaves no piece: the
    head is redacted with a margin longer than any echoed form, and that margin is dropped."""
    m = _matcher(_known(secrets))
    margin = max(256, m.reach if m is not None else 0)
    if len(text) <= limit + margin:
        return redact(text, secrets)[:limit]
    out = redact(text[: limit + margin], secrets)
    return out[: max(0, min(limit, len(out) - margin))]


def _bounded(text: str, limit: int = LOG_MAX_CHARS) -> str:
    if len(text) <= limit:
        return redact(text)
    return f"{redact_head(text, limit)} [... {len(text) - limit} characters cut]"


class _RedactFilter(logging.Filter):
    """Rewrites every record it sees through :func:`redact` (message and arguments merged; a message
    longer than :data:`LOG_MAX_CHARS` is cut to its redacted head, so a huge one is never scanned whole)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string: keep the record as it is
            return True
        clean = _bounded(msg)
        if clean != msg or record.args:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[1] is not None:
            record.exc_text = _bounded(logging.Formatter().formatException(record.exc_info))
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
