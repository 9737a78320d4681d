"""Issue 51, item 5: redaction by the key, not by its encodings. A key whose characters appear in order with
non-letters between them (pieces, spacing, zero-width characters, UTF-16's NULs) or in a further transform
(base32, UTF-16 hex / bytes / repr, URL-encoded twice, base64 of the reversed key) is removed wherever it is
embedded; ordinary text without the key comes back unchanged.

The transforms and what each leaves of the key are computed here, independently of the redactor; what must
not survive is checked on the output's letters and digits (lower case), so a key left spread out is found.
"""

from __future__ import annotations

import base64
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dvoc_bench.benchmarks.limits import bench_prompt
from dvoc_bench.core.redaction import redact

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
SEPARATORS = [" ", "   ", "\n", "\t", "\u200b", "\u200c\u200d", "\u2060", "\ufeff", "-", ".", '" + "', "', '",
              " | ", "\x00", "_", "/", "*"]  # fmt: skip


def letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


keys = st.builds(
    lambda head, body: head + body,
    st.sampled_from(["sk-", "sk-proj-", "", "tok_", "AIza"]),
    st.text(ALNUM + "-_", min_size=20, max_size=60),
).filter(lambda k: len(letters(k)) >= 16 and len(set(k)) >= 12)
"""Keys as providers issue them: random letters and digits (a key of one repeated character is not one)."""
ordinary = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200)


def _b32_core(before: bytes, raw: bytes, after: bytes) -> tuple[str, str]:
    enc = base64.b32encode(before + raw + after).decode()
    return enc, enc[-(-8 * len(before) // 5) : 8 * (len(before) + len(raw)) // 5]


def _b64_core(before: bytes, raw: bytes, after: bytes) -> tuple[str, str]:
    enc = base64.b64encode(before + raw + after).decode()
    return enc, enc[-(-8 * len(before) // 6) : 8 * (len(before) + len(raw)) // 6]


@st.composite
def echoed(draw: st.DrawFn) -> tuple[str, str, str]:
    """(key, the key transformed as a provider may echo it, what of it must not survive)."""
    key = draw(keys)
    raw = key.encode()
    form = draw(st.sampled_from(["pieces", "spaced", "reversed-spaced", "base32", "utf16-raw", "utf16-hex",
                                 "utf16-repr", "url-twice", "base64-reversed"]))  # fmt: skip
    sep = draw(st.sampled_from(SEPARATORS))
    before = draw(st.binary(max_size=6))
    after = draw(st.binary(max_size=6))
    if form == "pieces":
        cuts = sorted(draw(st.lists(st.integers(1, len(key) - 1), min_size=1, max_size=8, unique=True)))
        parts = [key[a:b] for a, b in zip([0, *cuts], [*cuts, len(key)], strict=True)]
        return key, sep.join(parts), key
    if form == "spaced":
        return key, sep.join(key), key
    if form == "reversed-spaced":
        return key, sep.join(key[::-1]), key[::-1]
    if form == "base32":
        enc, core = _b32_core(before, raw, after)
        return key, draw(st.sampled_from([enc, enc.lower(), enc.rstrip("=")])), core
    order = draw(st.sampled_from(["le", "be"]))
    wide = key.encode(f"utf-16-{order}")
    if form == "utf16-raw":
        return key, wide.decode("latin-1"), key
    if form == "utf16-hex":
        return key, draw(st.sampled_from([wide.hex(), wide.hex().upper(), wide.hex(" ")])), wide.hex()
    if form == "utf16-repr":
        return key, repr(wide), repr(wide)[2:-1]
    if form == "url-twice":
        enc = "".join(f"%25{b:02X}" for b in raw)
        return key, enc, enc
    enc, core = _b64_core(before, raw[::-1], after)
    return key, enc, core


@settings(max_examples=80, deadline=None)
@given(echoed(), ordinary, ordinary)
def test_a_key_spread_out_or_transformed_is_removed_wherever_it_sits(case, head: str, tail: str) -> None:
    key, form, core = case
    assume(letters(core) not in letters(head + tail))  # the surroundings alone do not spell it
    out = redact(head + form + tail, {key})
    assert letters(core) not in letters(out), (form, out)


@settings(max_examples=80, deadline=None)
@given(keys, ordinary)
def test_ordinary_text_without_the_key_is_left_unchanged(key: str, text: str) -> None:
    assume(redact(text) == text)  # no key shape (``Bearer x``, ``sk-...``) the redactor removes for any key
    pieces = {t[i : i + 8].lower() for t in (key, key[::-1]) for i in range(len(t) - 7)}
    assume(not any(p in text.lower() for p in pieces))  # nor an 8-character piece of it (the fragment rule)
    assert redact(text, {key}) == text


@settings(max_examples=80, deadline=None)
@given(keys, st.lists(st.sampled_from(bench_prompt().split(" ")), min_size=1, max_size=300))
def test_prompts_and_replies_without_the_key_are_left_unchanged(key: str, words: list[str]) -> None:
    prompt = " ".join(words)
    reply = '{"dx": -40, "dy": 12, "confidence": 0.6, "note": "the Submit button is left of the crosshair"}'
    texts = (prompt, reply, bench_prompt())
    pieces = {t[i : i + 8].lower() for t in (key, key[::-1]) for i in range(len(t) - 7)}
    assume(not any(p in text.lower() for p in pieces for text in texts))  # the fragment rule's business
    for text in texts:
        assert redact(text, {key}) == text
