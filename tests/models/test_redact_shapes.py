"""The key-shape patterns are run only on text that holds one of their needles: the result equals running
every pattern on every text (the needles are a necessary condition, Unicode case folding included)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dvoc_bench.core import redaction as r

PIECES = [
    "Bearer ", "bEaReR\t", "authorization", "AUTHORIZATION: ", "x-api-key", "X-Goog-Api-Key", "api_key=",
    "api-key: '", "apikey", "openai_api_key=", "?key=", "&KEY=", "&access_token=", "ACCESS_TOKEN=", "sk-",
    "AIza", "aiza", "\u212aey=", "acce\u017f\u017f_token=", "x-api-\u212aey: ", "abcdefgh", "0123456789",
    "SyA12345678901234567890", " ", "\n", '"', "'", ",", ";", "}", ":", "=", "-", "_", "é", "ß",
]  # fmt: skip


def reference(text: str) -> str:
    for pat in r._PATTERNS:
        text = pat.sub(lambda x: (x.group(1) if x.re.groups else "") + r.REDACTED, text)
    return text


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join))
def test_the_needles_never_skip_a_match(text: str) -> None:
    assert r.redact(text) == reference(text)


def test_unicode_case_folding_is_covered() -> None:
    for text in ("x-api-\u212aey: secret123456", "?acce\u017f\u017f_token=abcdef", "BEARER abcdefgh"):
        assert r.REDACTED in reference(text)  # the regex equates them
        assert r.redact(text) == reference(text)
