"""Fuzzy matching of a label against the words Tesseract read (multi-word, case- and punctuation-tolerant).

Candidates are runs of consecutive words on one text line, of the label's word count and one word fewer or
more (OCR splits and merges words); the count is taken both between spaces and after punctuation splits
(``report-2024-02-16.csv`` is one OCR word and five normalised ones), from the smaller less one to the
larger plus one. A run taller than twice its shortest word is not one line of text and is skipped (Tesseract
puts tall misreads of a table's grid on the line of real words). Both sides are normalised (lower case,
punctuation dropped, spaces collapsed) and scored with rapidfuzz's ``fuzz.ratio`` (0-100), with and without
spaces ("SignIn" read for "Sign In"); the better of the two counts. A candidate scoring at least
``min_score`` is a match. Among matches: the highest score; then, with an anchor, the line nearest the
anchor's best match; then the one whose case equals the label's ("Sign In" the button over "Sign in" the
heading); then the highest mean OCR confidence; then reading order. Deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from dvoc_bench.core.geometry import Box
from dvoc_bench.models.ocr.tesseract import Word

__all__ = ["MIN_SCORE", "Match", "best_match", "normalise"]

MIN_SCORE = 75.0
"""Lowest fuzzy score (0-100) taken as a match: one wrong letter in a four-letter word still matches."""

_PUNCT = re.compile(r"[^\w\s]|_", re.UNICODE)


def normalise(s: str) -> str:
    """Lower case, punctuation dropped, whitespace collapsed."""
    return " ".join(_PUNCT.sub(" ", s.lower()).split())


@dataclass(frozen=True)
class Match:
    """The words taken for the label."""

    text: str
    """The matched words as read, space-joined."""
    score: float
    """Fuzzy score, 0-100."""
    conf: float
    """Mean Tesseract confidence of the words, 0-100."""
    box: Box
    """Union of the words' boxes (pixels of the image sent)."""
    first: int
    """Reading-order index of the first word."""


def _cased(s: str) -> str:
    return " ".join(_PUNCT.sub(" ", s).split())


def _score(a: str, b: str) -> float:
    if not a or not b:
        return 0.0
    return max(fuzz.ratio(a, b), fuzz.ratio(a.replace(" ", ""), b.replace(" ", "")))


def _union(words: Sequence[Word]) -> Box:
    return Box(
        min(w.box.x0 for w in words), min(w.box.y0 for w in words),
        max(w.box.x1 for w in words), max(w.box.y1 for w in words),
    )  # fmt: skip


def candidates(words: Sequence[Word], label: str) -> list[Match]:
    """Every run of consecutive words on a line, of about the label's length, with its score."""
    want = normalise(label)
    # the label's length in OCR words: Tesseract keeps ``report-2024-02-16.csv`` one word, which normalises
    # to five; counting either way, one fewer or more
    spaced, tokens = max(1, len(label.split())), max(1, len(want.split()))
    lo, hi = max(1, min(spaced, tokens) - 1), max(spaced, tokens) + 1
    lines: dict[tuple[int, int, int, int], list[Word]] = {}
    for w in words:
        lines.setdefault(w.line, []).append(w)
    out = []
    for line in lines.values():
        line.sort(key=lambda w: w.index)
        for k in range(lo, hi + 1):
            for i in range(0, len(line) - k + 1):
                run = line[i : i + k]
                box = _union(run)
                if box.h > 2 * max(min(w.box.h for w in run), 1.0):  # not one line of text: a tall misread
                    continue  # joined to real words (D4: "report-2024-02-16 Coe", 178 px high)
                text = " ".join(w.text for w in run)
                s = _score(normalise(text), want)
                if s > 0:
                    conf = sum(w.conf for w in run) / len(run)
                    out.append(Match(text, float(s), conf, box, run[0].index))
    return out


def best_match(
    words: Sequence[Word], label: str, anchor: str | None = None, min_score: float = MIN_SCORE
) -> Match | None:
    """The best match of ``label`` among ``words`` (``None`` when nothing scores ``min_score``)."""
    found = [m for m in candidates(words, label) if m.score >= min_score]
    if not found:
        return None
    anchor_y = None
    if anchor:
        a = best_match(words, anchor, None, min_score)
        anchor_y = None if a is None else a.box.centre.y
    top = max(m.score for m in found)
    found = [m for m in found if m.score == top]

    cased = _cased(label)

    def key(m: Match) -> tuple[float, bool, float, int]:
        dist = abs(m.box.centre.y - anchor_y) if anchor_y is not None else 0.0
        return (round(dist, 3), _cased(m.text) != cased, -round(m.conf, 3), m.first)

    return min(found, key=key)
