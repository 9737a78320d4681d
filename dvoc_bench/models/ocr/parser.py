"""The parser model (``conf/model/omniparser-parse.yaml``, ``kind: parse``): detect, read, answer.

A truth-blind grounding model like the OCR model (:mod:`.model`), and it reads what a real model is sent
only: the PNG, the prompt text and the tool schemas. Per call it parses the image (:mod:`.screen`:
OmniParser's icon detector, the OCR engine's words inside each box; cached by image hash), reads the label
from the instruction with the OCR model's rules (:mod:`.labels`), finds the label among the words with the
OCR model's matcher (:mod:`.match`: anchors, case, confidence) and takes **the element whose box holds the
match** (the smallest detected box containing the match's centre; else the text line it is on). Then:

- ``click_at``: that element's centre;
- ``report_offset``: from the crosshair the prompt states (read as the OCR model reads it: ``Crosshair
  position:``, the paper's last history line, the red crosshair in the pixels, the image centre) to it;
- ``select_element``: the listed mark that is that element: the highest IoU with its box when at least
  :data:`SAME_IOU`; else the smallest mark containing its centre; else the mark nearest it (confidence
  halved for either of the last two).

**Fallback** (no label, no match, or a match in no element): the detected element with the highest
detector score (element 1; the image centre when nothing was detected), confidence
:data:`~.model.NO_MATCH_CONFIDENCE`, and the reply says ``no match for '<label>'``. Confidence of a match =
fuzzy score / 100. The reply carries the evidence: the words, the element and its text, its box.
Deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Box, Point, Size, box_distance, box_iou
from dvoc_bench.models.base import ModelRequest, Reply, ToolCall
from dvoc_bench.models.ocr.labels import target_of
from dvoc_bench.models.ocr.match import MIN_SCORE, best_match
from dvoc_bench.models.ocr.model import NO_MATCH_CONFIDENCE, OcrModel, ocr_engine_from_block
from dvoc_bench.models.ocr.screen import Element, ScreenParser
from dvoc_bench.models.simulator.reading import parse_marks

__all__ = ["PARSE_KEYS", "SAME_IOU", "ParseModel", "chosen_element", "parse_model_from_config"]

SAME_IOU = 0.5
"""A listed mark whose IoU with the chosen element is at least this is taken to be that element."""

PARSE_KEYS = ("detector", "ocr", "min_score", "disk_cache")
"""Keys of a model config's ``parse:`` block."""


def chosen_element(elements: list[Element], point: Point) -> Element | None:
    """The element holding ``point``: the smallest detected box containing it, else a text line's box."""
    for source in ("detector", "ocr"):
        inside = [(e.box.area, e.id) for e in elements if e.source == source and e.box.contains(point)]
        if inside:
            ident = min(inside)[1]
            return next(e for e in elements if e.id == ident)
    return None


def _box(b: Box) -> str:
    return f"[{b.x0:.0f}, {b.y0:.0f}, {b.x1:.0f}, {b.y1:.0f}]"


class ParseModel(OcrModel):
    """Screen parse (detector + OCR) + label match, behind the model protocol (``simulated`` is False)."""

    simulated = False

    def __init__(self, name: str, parser: ScreenParser, min_score: float = MIN_SCORE) -> None:
        super().__init__(name, parser.reader, min_score)
        self.parser = parser
        """The screen parser (its caches live as long as this model; its disk cache longer)."""

    def find(
        self, prompt: str, image: np.ndarray | None, size: Size
    ) -> tuple[Element | None, float, bool, str]:
        """``(element, confidence, matched, evidence)`` for a prompt and image; the element is the fallback's
        (or ``None``: nothing detected) when ``matched`` is False."""
        target = target_of(prompt)
        if image is None:
            return None, NO_MATCH_CONFIDENCE, False, f"no match for '{target.label or ''}' (no image)."
        elements = self.parser.parse(image)
        n_det = sum(e.source == "detector" for e in elements)
        seen = f"parsed {n_det} detected element(s) and {len(elements) - n_det} text line(s)"
        words = [w for e in elements for w in e.words]
        match = None
        if target.label is not None:
            match = best_match(words, target.label, target.anchor, self.min_score)
        el = chosen_element(elements, match.box.centre) if match is not None else None
        if match is not None and el is not None:
            evidence = (
                f"{seen}; OCR found '{match.text}' for '{target.label}' (label rule: {target.rule}; score "
                f"{match.score:.0f}/100) in element {el.id} ({el.source}, text '{el.text[:80]}', box "
                f"{_box(el.box)} px)."
            )
            return el, round(match.score / 100.0, 2), True, evidence
        detected = [e for e in elements if e.source == "detector"]
        fb = max(detected, key=lambda e: (e.score, -e.id)) if detected else None
        why = f"label rule: {target.rule}" if match is None else "the match is in no element"
        then = (
            f"falling back to the highest-scoring element {fb.id} (score {fb.score:.2f}, box "
            f"{_box(fb.box)} px)"
            if fb is not None
            else "nothing detected: guessing the screen centre"
        )
        return fb, NO_MATCH_CONFIDENCE, False, f"{seen}; no match for '{target.label or ''}' ({why}); {then}."

    def _aim(
        self, req: ModelRequest, image: np.ndarray | None, size: Size
    ) -> tuple[Point, float, bool, str, Callable[[], Reply]]:
        """The element the label is in (its centre; the screen centre when nothing was detected), and its
        mark by overlap (:meth:`_select_mark`)."""
        el, conf, matched, evidence = self.find(req.text, image, size)
        point = el.centre if el is not None else size.centre
        return point, conf, matched, evidence, lambda: self._select_mark(req, size, el, point, conf, evidence)

    def _select_mark(
        self, req: ModelRequest, size: Size, el: Element | None, point: Point, conf: float, evidence: str
    ) -> Reply:
        marks = parse_marks(req.text, size)
        if not marks:
            return self._reply(evidence + " The prompt lists no marks.", None)
        best = (0.0, -1)
        if el is not None:
            best = max(((box_iou(b, el.box), -i) for i, (_, b) in enumerate(marks)), default=(0.0, -1))
        if best[0] >= SAME_IOU:
            pick, how = -best[1], f"is the element (IoU {best[0]:.2f})"
        else:
            inside = [(b.area, i) for i, (_, b) in enumerate(marks) if b.contains(point)]
            if inside:
                pick, how = min(inside)[1], f"contains ({point.x:.0f}, {point.y:.0f}) px"
            else:
                pick = min(range(len(marks)), key=lambda i: (box_distance(marks[i][1], point), i))
                how = f"is nearest to ({point.x:.0f}, {point.y:.0f}) px"
            if conf > NO_MATCH_CONFIDENCE:  # a match, but no mark is its element
                conf = max(NO_MATCH_CONFIDENCE, round(conf / 2, 2))
        text = f"{evidence} Mark {marks[pick][0]} {how}."
        args = {"id": marks[pick][0], "confidence": conf}
        return self._reply(text, ToolCall("select_element", json.dumps(args)))

    def close(self) -> None:
        """Release the detector."""
        self.parser.close()


def parse_model_from_config(name: str, block: dict[str, Any] | None) -> ParseModel:
    """The model of a ``kind: parse`` config from its ``parse:`` block: ``detector`` (a detector node as
    ``detector=...`` takes, default ``omniparser`` on :func:`~dvoc_bench.detect.omniparser.default_weights`),
    ``ocr`` (the OCR model's ``ocr:`` block, default ``engine: rapidocr``), ``min_score``, ``disk_cache``.
    Raises :class:`ConfigError` of one line ``model <name>: parse.<key>: ...``."""
    from dvoc_bench.core.declare import ConfigError
    from dvoc_bench.detect.config import DETECTOR_SETTINGS, detector_config
    from dvoc_bench.detect.omniparser import default_weights
    from dvoc_bench.detect.service import build_detector
    from dvoc_bench.detect.types import DetectorError

    block = block or {}
    if not isinstance(block, dict):
        raise ConfigError(f"model {name}: parse: expected a mapping")
    for k in block:
        if k not in PARSE_KEYS:
            raise ConfigError(f"model {name}: parse.{k}: unknown key; allowed: {', '.join(PARSE_KEYS)}")
    det = dict(block.get("detector") or {"backend": "omniparser"})
    backend = det.setdefault("backend", "omniparser")
    if backend == "oracle" or backend not in DETECTOR_SETTINGS:
        allowed = ", ".join(b for b in DETECTOR_SETTINGS if b != "oracle")
        raise ConfigError(
            f"model {name}: parse.detector.backend: {backend!r} is not a detector that reads pixels; "
            f"allowed: {allowed}"
        )
    if backend == "omniparser" and not det.get("model"):
        det["model"] = str(default_weights())
    try:
        cfg = detector_config(det)
    except ConfigError as e:  # "detector.<key>: ..." -> "model <name>: parse.detector.<key>: ..."
        raise ConfigError(f"model {name}: parse.{e}") from None
    reader = ocr_engine_from_block(name, dict(block.get("ocr") or {"engine": "rapidocr"}), "parse.ocr")
    try:
        detector = build_detector(cfg)
    except (DetectorError, ValueError) as e:
        raise ConfigError(f"model {name}: parse.detector: {e}".splitlines()[0]) from None
    opts = getattr(cfg, backend)
    sha = getattr(getattr(detector, "converted", None), "sha256", None)
    ocr = dict(block.get("ocr") or {"engine": "rapidocr"})
    key = f"{backend}|{opts!r}|{sha}|{sorted(ocr.items())!r}"
    parser = ScreenParser(detector, reader, key, disk=bool(block.get("disk_cache", True)))
    return ParseModel(name, parser, float(block.get("min_score", MIN_SCORE)))
