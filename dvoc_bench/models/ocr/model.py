"""The OCR model: a truth-blind grounding baseline that answers like a VLM from the pixels and the prompt.

It sees exactly what a real model is sent: the PNG, the prompt text and the tool schemas (never the scene
id or its truth). Per call: read the target's label from the instruction (:mod:`.labels`), OCR the image
(:mod:`.tesseract`, cached by image hash), fuzzy-match the label (:mod:`.match`) and answer the tool offered:

- ``click_at``: the centre of the match;
- ``report_offset``: from the crosshair position the prompt states (``Crosshair position:`` line, else the
  paper's last history line; else the red crosshair found in the pixels; else the image centre) to the
  centre of the match;
- ``select_element``: the mark (listed in the Set-of-Mark prompt) whose box contains the match's centre
  (the smallest such; none contains it: the nearest mark).

When the request offers a "not present" answer (the ``not_present`` tool, or Set-of-Mark's ``none`` mark,
docs/absent.md) and no word read matches the label at ``min_score`` (or the prompt names no label), it
gives that answer instead of the centre guess: its own matcher's verdict, never the scene's truth.

Answers are in the frame the prompt asks for (``use pixel coordinates`` / ``normalised to 0-1000`` /
``0-1``), else pixels. The confidence is the fuzzy score / 100. With no label or no match it answers the
image centre (or the mark nearest it) with confidence 0.05 and says ``no match for '<label>'``. The reply
text always carries the evidence: the label and its rule, the words matched, score, OCR confidence and box.
Deterministic: the same request gives the same reply.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from dvoc_bench.core.geometry import Frame, Point, Size, box_distance, offset_from_pixels, point_from_pixels
from dvoc_bench.draw.render import find_crosshair
from dvoc_bench.models.base import MAX_REPLY_CHARS, ModelRequest, Reply, ToolCall, bound_reply
from dvoc_bench.models.ocr.labels import drag_parts, instruction_of, target_of
from dvoc_bench.models.ocr.match import MIN_SCORE, Match, best_match
from dvoc_bench.models.ocr.tesseract import OcrEngine, Word
from dvoc_bench.models.simulator.reading import (
    decode_image,
    history_position,
    parse_crosshair_line,
    parse_marks,
    requested_frame,
    tool_names,
)

NOT_PRESENT_TOOL = "not_present"
"""The harness's "not present" tool (:data:`dvoc_bench.protocol.absent.NOT_PRESENT_TOOL`)."""

NONE_MARK_PHRASE = "with id 0 (none)"
"""How a Set-of-Mark prompt offers the ``none`` mark (:data:`dvoc_bench.protocol.absent.SOM_SENTENCE`)."""

__all__ = ["NO_MATCH_CONFIDENCE", "OcrModel", "ocr_model_from_config"]

NO_MATCH_CONFIDENCE = 0.05
"""Confidence of the centre guess made when the label is not found."""

ENGINES = ("tesseract", "rapidocr")
"""OCR engines of ``ocr.engine``: Tesseract (:mod:`.tesseract`, the default) and PP-OCR (:mod:`.rapid`)."""

ENGINE_KEYS = {
    "tesseract": ("psm", "upscale", "passes", "lang", "binary", "timeout_s"),
    "rapidocr": ("threads", "text_score", "use_cls"),
}
"""The keys of an ``ocr:`` block that only one engine reads."""

OCR_KEYS = ("engine", *ENGINE_KEYS["tesseract"], *ENGINE_KEYS["rapidocr"], "min_score", "cache_size")
"""Keys of a model config's ``ocr:`` block."""


DRAG_TOOL = "drag_points"
"""The harness's two-point tool (:data:`dvoc_bench.protocol.drag.DRAG_TOOL`; this floor cannot import it)."""


class WordReader(Protocol):
    """An OCR engine: the words of an RGB image (cached by image hash)."""

    def words(self, image: np.ndarray) -> list[Word]:
        """Every word read on ``image`` (``HxWx3`` uint8), in its pixels."""
        ...


def _round(v: float, frame: str) -> float:
    """An answer's coordinate as its frame writes it: 4 decimals in 0-1, one in the touch frame (the phone
    agent's ``touch1000``), whole units otherwise."""
    if frame == "norm1":
        return round(v, 4)
    return round(v, 1) if frame == "touch1000" else float(round(v))


class OcrModel:
    """Tesseract OCR + fuzzy label matching, behind the model protocol (``simulated`` is False)."""

    simulated = False

    def __init__(self, name: str, engine: WordReader, min_score: float = MIN_SCORE):
        self.name = name
        """Config name of the model."""
        self.engine = engine
        """The OCR engine (its cache lives as long as this model: one run)."""
        self.min_score = min_score
        """Lowest fuzzy score taken as a match."""
        self.max_reply_chars = MAX_REPLY_CHARS
        """Characters kept of a reply's text and tool arguments (``run.max_reply_chars``)."""

    async def complete(self, request: ModelRequest) -> Reply:
        t0 = time.perf_counter()
        reply = await asyncio.to_thread(self.respond, request)
        reply = dataclasses.replace(reply, latency_s=time.perf_counter() - t0)
        return bound_reply(reply, self.max_reply_chars)

    def respond(self, req: ModelRequest) -> Reply:
        """Answer one request synchronously (deterministic in the request)."""
        image = decode_image(req)
        size = Size(image.shape[1], image.shape[0]) if image is not None else req.image_size
        names = tool_names(req.tools)
        frame = requested_frame(req.text) or "pixel"
        if DRAG_TOOL in names:
            return self._drag(req, image, size, frame)
        point, conf, matched, evidence, select = self._aim(req, image, size)
        if NOT_PRESENT_TOOL in names and not matched:  # offered, and nothing read matches: say so
            call = ToolCall(NOT_PRESENT_TOOL, json.dumps({"reason": evidence}))
            return self._reply(evidence + " Not present.", call)
        if NONE_MARK_PHRASE in req.text and not matched and "select_element" in names:
            args = {"id": 0, "confidence": 1.0}
            return self._reply(
                evidence + " Not present: mark 0.", ToolCall("select_element", json.dumps(args))
            )
        if "report_offset" in names:
            return self._offset(req, image, size, point, conf, frame, evidence)
        if "click_at" in names:
            p = point_from_pixels(point, Frame(frame), size)
            args = {"x": _round(p.x, frame), "y": _round(p.y, frame), "confidence": conf}
            return self._reply(evidence, ToolCall("click_at", json.dumps(args)))
        if "select_element" in names:
            return select()
        return self._reply(evidence + " No tool I can answer with was offered.", None)

    def _aim(
        self, req: ModelRequest, image: np.ndarray | None, size: Size
    ) -> tuple[Point, float, bool, str, Callable[[], Reply]]:
        """``(target point in pixels of the image sent, confidence, matched, evidence, select)``:
        ``matched`` when the label was found (else the point is a guess), ``select()`` the
        ``select_element`` reply (how this model picks a mark). The parse model overrides this alone."""
        point, conf, matched, evidence = self.locate(req.text, image, size)
        return point, conf, matched, evidence, lambda: self._select(req, size, point, conf, matched, evidence)

    def locate(self, prompt: str, image: np.ndarray | None, size: Size) -> tuple[Point, float, bool, str]:
        """Where the target is, from the prompt's label and the words read: ``(point in pixels of the image
        sent, confidence, matched, evidence)``; no label or no match: the image centre, matched False."""
        target = target_of(prompt)
        match: Match | None = None
        if target.label is not None and image is not None:
            match = best_match(self.engine.words(image), target.label, target.anchor, self.min_score)
        if match is not None:
            b = match.box
            evidence = (
                f"OCR found '{match.text}' for '{target.label}' (label rule: {target.rule}; score "
                f"{match.score:.0f}/100, OCR confidence {match.conf:.0f}/100, box [{b.x0:.0f}, {b.y0:.0f}, "
                f"{b.x1:.0f}, {b.y1:.0f}] px)."
            )
            return match.box.centre, round(match.score / 100.0, 2), True, evidence
        why = "no image" if image is None else f"label rule: {target.rule}"
        evidence = f"no match for '{target.label or ''}' ({why}); guessing the screen centre."
        return size.centre, NO_MATCH_CONFIDENCE, False, evidence

    def _drag(self, req: ModelRequest, image: np.ndarray | None, size: Size, frame: str) -> Reply:
        """A two-point answer (``drag_points``): the instruction split into what to drag and where to drop
        it (:func:`.labels.drag_parts`), each located as a one-point instruction; no split: no answer."""
        parts = drag_parts(instruction_of(req.text) or "")
        if parts is None:
            return self._reply("The instruction names no start and end I can tell apart.", None)
        pairs, confs, notes = [], [], []
        for part in parts:
            one = dataclasses.replace(req, text=f"Instruction: {part}")
            point, conf, _, evidence, _ = self._aim(one, image, size)
            p = point_from_pixels(point, Frame(frame), size)
            pairs.append([_round(p.x, frame), _round(p.y, frame)])
            confs.append(conf)
            notes.append(evidence)
        args = {"from": pairs[0], "to": pairs[1], "confidence": min(confs)}
        text = f"Start: {notes[0]} End: {notes[1]}"
        return self._reply(text, ToolCall(DRAG_TOOL, json.dumps(args)))

    def _offset(
        self, req: ModelRequest, image: Any, size: Size, point: Point, conf: float, frame: str, evidence: str
    ) -> Reply:
        cross, source = parse_crosshair_line(req.text, size), "the prompt's crosshair position"
        if cross is None:
            cross, source = history_position(req.text), "the last history line"
        if cross is None and image is not None:
            cross, source = find_crosshair(image, width=3), "the crosshair drawn on the screenshot"
        if cross is None:
            cross, source = size.centre, "the screen centre (no crosshair position given)"
        d = offset_from_pixels(point - cross, Frame(frame), size)
        args = {"dx": _round(d.dx, frame), "dy": _round(d.dy, frame), "confidence": conf}
        text = f"{evidence} Offset measured from {source} ({cross.x:.0f}, {cross.y:.0f}) px."
        return self._reply(text, ToolCall("report_offset", json.dumps(args)))

    def _select(
        self, req: ModelRequest, size: Size, point: Point, conf: float, matched: bool, evidence: str
    ) -> Reply:
        marks = parse_marks(req.text, size)
        if not marks:
            return self._reply(evidence + " The prompt lists no marks.", None)
        inside = [(b.area, i) for i, (_, b) in enumerate(marks) if b.contains(point)]
        if inside:
            pick, how = min(inside)[1], "contains"
        else:
            pick = min(range(len(marks)), key=lambda i: (box_distance(marks[i][1], point), i))
            how = "is nearest to"
            conf = NO_MATCH_CONFIDENCE if not matched else round(conf / 2, 2)
        text = f"{evidence} Mark {marks[pick][0]} {how} ({point.x:.0f}, {point.y:.0f}) px."
        args = {"id": marks[pick][0], "confidence": conf}
        return self._reply(text, ToolCall("select_element", json.dumps(args)))

    @staticmethod
    def _reply(text: str, call: ToolCall | None) -> Reply:
        return Reply(
            text=text,
            tool_calls=[call] if call is not None else [],
            tokens_in=None,
            tokens_out=None,
            cost_usd=0.0,
            cost_source="local",
        )


def ocr_engine_from_block(name: str, block: dict[str, Any] | None, prefix: str = "ocr") -> WordReader:
    """The OCR engine of an ``ocr:`` block (every key optional; ``engine`` picks Tesseract or RapidOCR).
    Raises :class:`ConfigError` of one line ``model <name>: <prefix>.<key>: ...``."""
    from dvoc_bench.core.declare import ConfigError

    block = block or {}
    if not isinstance(block, dict):
        raise ConfigError(f"model {name}: {prefix}: expected a mapping")
    for k in block:
        if k not in OCR_KEYS:
            raise ConfigError(f"model {name}: {prefix}.{k}: unknown key; allowed: {', '.join(OCR_KEYS)}")
    engine = block.get("engine", "tesseract")
    if engine not in ENGINES:
        raise ConfigError(
            f"model {name}: {prefix}.engine: unknown value {engine!r}; allowed: {', '.join(ENGINES)}"
        )
    for other, keys in ENGINE_KEYS.items():
        for k in keys:
            if other != engine and k in block:
                raise ConfigError(
                    f"model {name}: {prefix}.{k}: applies to engine {other} only (engine is {engine}; "
                    f"drop it with ~model.{prefix}.{k}, or use a model file of engine {engine})"
                )
    kw = {k: block[k] for k in (*ENGINE_KEYS[engine], "cache_size") if k in block}
    if "passes" in kw:
        kw["passes"] = tuple(kw["passes"])
    try:
        if engine == "rapidocr":
            from dvoc_bench.models.ocr.rapid import RapidOcrEngine

            return RapidOcrEngine(**kw)
        return OcrEngine(**kw)
    except ConfigError as e:  # the binary, its data or the wheel is missing
        where = f"{prefix}.engine: " if engine != "tesseract" else ""
        raise ConfigError(f"model {name}: {where}{e}") from None
    except (TypeError, ValueError) as e:
        raise ConfigError(f"model {name}: {prefix}: {e}".splitlines()[0]) from None


def ocr_model_from_config(name: str, block: dict[str, Any] | None) -> OcrModel:
    """The model of a ``kind: ocr`` config from its ``ocr:`` block (every key optional)."""
    engine = ocr_engine_from_block(name, block)
    return OcrModel(name, engine, float((block or {}).get("min_score", MIN_SCORE)))
