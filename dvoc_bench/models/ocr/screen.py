"""A screen parse: the detector's boxes, each with the text read inside it (OmniParser's parse without its
caption model).

:func:`parse_screen` runs a detector (``detector=omniparser`` by default) and an OCR engine
(:mod:`.tesseract` or :mod:`.rapid`) on one image. The boxes go through the Set-of-Mark pipeline
(:func:`~dvoc_bench.draw.som_render.marks_from_detections`: boxes over half the screen dropped, at most 50 by
score), and every word read is given to the smallest box that contains its centre, so a word is in one
element only. Words inside no box are elements too (as OmniParser keeps its OCR boxes): one per text line
(``source: ocr``, score = the line's mean OCR confidence / 100), after the detector's. Each element is
``{id, box, centre, text, score, source}``; ids are 1-based in that order (the detector's by score).

:class:`ScreenParser` caches the parse by image hash and settings: in memory for its life and on disk as
JSON under ``<cache>/parse/`` (``$DVOC_CACHE_DIR``, else ``$XDG_CACHE_HOME/dvoc_bench``, else
``~/.cache/dvoc_bench``: outside the repository), so a rerun reads no pixel twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.memo import Memo
from dvoc_bench.detect.types import Detection, Detector
from dvoc_bench.draw.som_render import MAX_AREA_FRAC, MAX_MARKS, marks_from_detections
from dvoc_bench.models.ocr.tesseract import Word

__all__ = ["Element", "ScreenParser", "elements_from", "parse_cache_dir", "parse_screen"]

PARSE_VERSION = 2
"""Part of the disk cache key: bumped when :func:`elements_from` gives different elements."""


@dataclass(frozen=True)
class Element:
    """One element of a screen parse."""

    id: int
    """1-based: the detector's boxes first (by score), then the text lines inside no box."""
    box: Box
    """Its box, pixels of the image parsed."""
    text: str
    """The words read inside it, in reading order, space-joined (empty: nothing read, an icon)."""
    score: float
    """The detector's score (``source: detector``) or the line's mean OCR confidence / 100 (``ocr``)."""
    source: str
    """``detector`` (a detected box) or ``ocr`` (a text line inside no detected box)."""
    words: tuple[Word, ...] = ()
    """The words read inside it."""

    @property
    def centre(self) -> Point:
        """Centre of the box."""
        return self.box.centre

    def as_dict(self) -> dict[str, Any]:
        """``{id, box, centre, text, score, source}`` (pixels, 1 decimal)."""
        c = self.centre
        return {
            "id": self.id,
            "box": [round(v, 1) for v in self.box.as_list()],
            "centre": [round(c.x, 1), round(c.y, 1)],
            "text": self.text,
            "score": round(self.score, 4),
            "source": self.source,
        }


def _reading(words: Sequence[Word]) -> str:
    return " ".join(w.text for w in sorted(words, key=lambda w: (w.box.centre.y // 8, w.box.x0, w.index)))


def elements_from(detections: Sequence[Detection], words: Sequence[Word], size: Size) -> list[Element]:
    """The parse of one image from its detections and its words (pure; see the module docstring)."""
    marks = marks_from_detections(detections, size, max_area_frac=MAX_AREA_FRAC, max_marks=MAX_MARKS)
    owned: list[list[Word]] = [[] for _ in marks]
    loose: dict[tuple[int, int, int, int], list[Word]] = {}
    for w in words:
        c = w.box.centre
        inside = [(m.box.area, i) for i, m in enumerate(marks) if m.box.contains(c)]
        if inside:
            owned[min(inside)[1]].append(w)
        else:
            loose.setdefault(w.line, []).append(w)
    out = [
        Element(m.id, m.box, _reading(ws), m.score, "detector", tuple(ws))
        for m, ws in zip(marks, owned, strict=True)
    ]
    for ws in sorted(loose.values(), key=lambda ws: min(w.index for w in ws)):
        box = Box(
            min(w.box.x0 for w in ws), min(w.box.y0 for w in ws),
            max(w.box.x1 for w in ws), max(w.box.y1 for w in ws),
        )  # fmt: skip
        conf = sum(w.conf for w in ws) / len(ws) / 100.0
        out.append(Element(len(out) + 1, box, _reading(ws), conf, "ocr", tuple(ws)))
    return out


def parse_screen(image: np.ndarray, detector: Detector, reader: Any) -> list[Element]:
    """Detect and read one ``HxWx3`` uint8 RGB image (no cache): :func:`elements_from` of its boxes and of
    ``reader.words(image)``."""
    size = Size(int(image.shape[1]), int(image.shape[0]))
    return elements_from(detector.detect(image), reader.words(image), size)


def parse_cache_dir() -> Path:
    """Where screen parses are cached on disk (outside the repository)."""
    root = os.environ.get("DVOC_CACHE_DIR")
    if root:
        return Path(root) / "parse"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "dvoc_bench" / "parse"


def _word_dict(w: Word) -> list[Any]:
    return [w.text, w.conf, w.box.as_list(), list(w.line), w.index]


def _word_of(v: list[Any]) -> Word:
    page, block, paragraph, line = (int(x) for x in v[3])  # not four numbers: a ValueError, a bad entry
    return Word(str(v[0]), float(v[1]), Box.from_list(v[2]), (page, block, paragraph, line), int(v[4]))


class ScreenParser:
    """:func:`parse_screen` with a cache by image hash and ``settings`` (memory, and disk unless
    ``disk=False``). ``settings`` names the detector and the engine (their weights and knobs): two parsers
    with different settings never share an entry."""

    def __init__(
        self, detector: Detector, reader: Any, settings: str, *, disk: bool = True, cache_size: int = 256
    ) -> None:
        self.detector = detector
        """The detector (its boxes are the elements)."""
        self.reader = reader
        """The OCR engine (``words(image)``)."""
        self.settings = settings
        """What the cache key says besides the image: detector and engine settings."""
        self.disk = disk
        """Whether parses are also cached on disk (:func:`parse_cache_dir`)."""
        self.parses = 0
        """Images actually parsed (misses of both caches)."""
        self._cache: Memo[list[Element]] = Memo(cache_size)

    def key(self, image: np.ndarray) -> str:
        """Cache key of ``image`` under these settings."""
        h = hashlib.sha256(f"{image.shape}|v{PARSE_VERSION}|{self.settings}".encode())
        h.update(np.ascontiguousarray(image).tobytes())
        return h.hexdigest()

    def parse(self, image: np.ndarray) -> list[Element]:
        """The parse of ``image`` (cached)."""
        k = self.key(image)
        return self._cache.get(k, lambda: self._from_disk_or_parse(k, image))

    def _from_disk_or_parse(self, k: str, image: np.ndarray) -> list[Element]:
        els = self._load(k)
        if els is None:
            els = parse_screen(image, self.detector, self.reader)
            self.parses += 1
            self._store(k, els)
        return els

    def _path(self, k: str) -> Path:
        return parse_cache_dir() / k[:2] / f"{k}.json"

    def _load(self, k: str) -> list[Element] | None:
        if not self.disk:
            return None
        try:
            data = load_file(self._path(k))
            return [
                Element(int(e["id"]), Box.from_list(e["box"]), str(e["text"]), float(e["score"]),
                        str(e["source"]), tuple(_word_of(w) for w in e["words"]))
                for e in data["elements"]
            ]  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            return None  # absent or torn: parse again

    def _store(self, k: str, els: list[Element]) -> None:
        if not self.disk:
            return
        p = self._path(k)
        data = {
            "settings": self.settings,
            "elements": [
                {**e.as_dict(), "box": e.box.as_list(), "words": [_word_dict(w) for w in e.words]}
                for e in els
            ],
        }
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            tmp = p.with_suffix(f".tmp{os.getpid()}.{threading.get_ident()}")
            tmp.write_text(json.dumps(data), encoding="utf-8")
            os.replace(tmp, p)
        except OSError:
            pass  # a read-only cache: the parse is still kept in memory

    def close(self) -> None:
        """Release the detector's runtime."""
        self.detector.close()
