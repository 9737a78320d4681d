"""``parse_reply`` against every reply the DVOC authors recorded (their per-trial tree's ``iter_*.json``).

Each file holds the provider's raw message (``model_output.raw_message``: ``content`` and
``tool_calls[].function.{name, arguments}``) and the values the authors' harness took from it
(``model_output.dx/dy/confidence`` for DVOC steps, ``x/y`` for one-shot attempts). We rebuild a
:class:`Reply` from the raw message, parse it (kind ``offset`` when the record has ``dx``, else ``point``)
and compare with the authors' values.

Rules that explain every disagreement (upstream-facts §1.6):

- ``missing_call_zeroed``: the reply has no tool call, the authors recorded zeros (``dx = dy = confidence
  = 0`` or ``x = y = 0``) as if the model had answered, and our parser gives ``parse_error``: an empty
  reply is not an answer (the loop counts it as "no usable answer").
- ``missing_call_zeroed_text_read``: the reply has no tool call, the authors recorded zeros, and our text
  fallback read the numbers the text binds to the field names (``x: 494, y: 433``); the status is
  ``text_fallback`` so analysis can still separate these.

Agreement means status ``ok`` or ``text_fallback`` with the same numbers (and, for DVOC, the same
confidence; the authors clamp to [0, 1] as we do; one-shot records hold no confidence). Records whose
``model_output`` is an ``error`` (an API failure, no reply) are counted and skipped.

A second check reads only the text of replies that *do* carry a call (the ``content`` a provider returns
next to the call, and Gemma's ``reasoning_content``) and compares the text fallback with the call: it
measures how often rule 5 of ``dvoc_bench.protocol.parse`` would be wrong on real prose. It is pinned as
measured; the few disagreements are stale values the model wrote before changing its mind or copied from
the history.

The data lives outside the repository (``../shared/upstream``, or ``$DVOC_UPSTREAM``); without it the tests
skip.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from dvoc_bench.analysis.upstream import tree_extras
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol import Parsed, parse_reply
from tests.support import UPSTREAM, need_upstream

RESPONSES = UPSTREAM / "artifacts" / "previous_runs" / "artifacts"
"""The per-trial tree of the authors' repository; its main benchmark's replies are audited (the trials of an
ablation condition that no aggregate lists are left out, as everywhere: :func:`tree_extras`)."""

# Measured on the authors' data (commit b115557 of their repository).
TOTAL_FILES = 2137
API_ERRORS = 84
STATUS_DETAIL = {
    ("ok", None): 2047,
    ("parse_error", "no_tool_call"): 4,
    ("text_fallback", "numbers_in_text;confidence_missing"): 2,
}
VERDICTS = {"agree": 2047, "missing_call_zeroed": 4, "missing_call_zeroed_text_read": 2}
# Text-only audit: (channel, verdict) -> count, over replies that carry a tool call.
TEXT_AUDIT = {
    ("content", "agree"): 4,
    ("content", "disagree"): 1,
    ("content", "parse_error"): 19,
    ("reasoning_content", "agree"): 55,
    ("reasoning_content", "disagree"): 5,
    ("reasoning_content", "parse_error"): 817,
}


@dataclass(frozen=True)
class Record:
    """One recorded model call."""

    path: str
    """File path relative to the per-trial tree."""
    kind: str
    """``offset`` (DVOC step) or ``point`` (one-shot attempt)."""
    raw: dict[str, Any]
    """``model_output.raw_message``."""
    authors: dict[str, float]
    """The authors' parsed values."""

    @property
    def reply(self) -> Reply:
        calls = [
            ToolCall((tc.get("function") or {}).get("name"), (tc.get("function") or {}).get("arguments"))
            for tc in self.raw.get("tool_calls") or []
        ]
        return Reply(text=self.raw.get("content"), tool_calls=calls)


@dataclass(frozen=True)
class Corpus:
    """Every ``iter_*.json`` file, read once per module."""

    files: int
    """Number of files found."""
    api_errors: int
    """Files whose ``model_output`` is an API error."""
    records: list[Record]
    """The others."""


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    need_upstream()
    extras = {f for v in tree_extras(RESPONSES).values() for f in v}
    every = RESPONSES.rglob("iter_*.json")
    paths = sorted(f for f in every if f.parent.relative_to(RESPONSES).as_posix() not in extras)
    records: list[Record] = []
    errors = 0
    for path in paths:
        output = json.loads(path.read_text())["model_output"]
        if "error" in output:
            errors += 1
            continue
        authors = {k: float(v) for k, v in output.items() if k != "raw_message"}
        kind = "offset" if "dx" in output else "point"
        records.append(Record(str(path.relative_to(RESPONSES)), kind, output["raw_message"], authors))
    return Corpus(len(paths), errors, records)


def _same(a: float, b: float) -> bool:
    return abs(a - b) < 1e-9


def verdict(rec: Record, parsed: Parsed) -> str | None:
    """``agree``, the name of the rule explaining a disagreement, or ``None`` when unexplained."""
    if parsed.values is not None and all(_same(parsed.values[k], rec.authors[k]) for k in parsed.values):
        conf = rec.authors.get("confidence")
        if conf is None or (parsed.confidence is not None and _same(parsed.confidence, conf)):
            return "agree"
    zeroed = all(v == 0 for v in rec.authors.values())
    if not rec.raw.get("tool_calls") and zeroed:
        if parsed.status == "parse_error":
            return "missing_call_zeroed"
        if parsed.status == "text_fallback" and parsed.detail and parsed.detail.startswith("numbers_in_text"):
            return "missing_call_zeroed_text_read"
    return None


def test_counts(corpus: Corpus) -> None:
    assert corpus.files == TOTAL_FILES
    assert corpus.api_errors == API_ERRORS
    assert len(corpus.records) == TOTAL_FILES - API_ERRORS


def test_every_disagreement_is_explained(corpus: Corpus) -> None:
    statuses: Counter[tuple[str, str | None]] = Counter()
    verdicts: Counter[str] = Counter()
    unexplained: list[str] = []
    for rec in corpus.records:
        parsed = parse_reply(rec.reply, rec.kind)  # type: ignore[arg-type]
        statuses[parsed.status, parsed.detail] += 1
        v = verdict(rec, parsed)
        if v is None:
            unexplained.append(f"{rec.path}: ours {parsed} vs authors {rec.authors}")
        else:
            verdicts[v] += 1
    assert unexplained == []
    assert dict(verdicts) == VERDICTS
    assert dict(statuses) == STATUS_DETAIL


def test_text_fallback_audit(corpus: Corpus) -> None:
    """Read only the text of replies that carry a call, and compare with the call."""
    audit: Counter[tuple[str, str]] = Counter()
    for rec in corpus.records:
        calls = rec.raw.get("tool_calls") or []
        if not calls:
            continue
        truth = json.loads(calls[0]["function"]["arguments"])
        for channel in ("content", "reasoning_content"):
            text = rec.raw.get(channel)
            if not text:
                continue
            parsed = parse_reply(Reply(text=text), rec.kind)  # type: ignore[arg-type]
            if parsed.values is None:
                audit[channel, "parse_error"] += 1
            else:
                assert parsed.status == "text_fallback"
                same = all(_same(v, float(truth[k])) for k, v in parsed.values.items())
                audit[channel, "agree" if same else "disagree"] += 1
    assert dict(audit) == TEXT_AUDIT
