"""Prompt texts of the corrected protocol ``v1``; the faithful ``paper`` texts are in
:mod:`dvoc_bench.protocol.paper`. Methods reach both through the protocol objects
(:mod:`dvoc_bench.protocol.protocols`).

What ``v1`` tells the model, and why:

- the image size and the coordinate frame the model config declares (``pixel``, ``norm1000``, ``norm1``),
  so the answer's units are agreed instead of guessed;
- the task instruction, in every prompt including the first one-shot attempt;
- the crosshair position as text on a machine-readable line, for every overlay (the ``none`` overlay
  otherwise leaves the model blind at step 0);
- a history that shows where the crosshair actually went after damping and clamping.

All wording is ours. Every number shown to the model is in its own frame; the caller passes pixels.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from dvoc_bench.core.geometry import (
    Frame,
    NormMapping,
    Offset,
    Point,
    Size,
    offset_from_pixels,
    point_from_pixels,
    round_half_up,
)

Overlay = Literal["full", "crosshair", "none"]
"""What is drawn on the DVOC frame."""

Predict = Literal["relative", "absolute"]
"""Whether a DVOC step asks for an offset (``report_offset``) or an absolute point (``click_at``)."""

OVERLAYS: tuple[str, ...] = ("full", "crosshair", "none")
PREDICTS: tuple[str, ...] = ("relative", "absolute")


@dataclass(frozen=True)
class HistoryEntry:
    """One earlier DVOC step, as the next prompt reports it. Everything in pixels."""

    draft: Point
    """Crosshair position (pixels) shown at that iteration."""
    reported: Offset | None
    """Reported offset converted to pixels (``None`` = empty or unparseable reply). In absolute mode the
    caller stores ``answer - draft``."""
    confidence: float | None
    """Reported confidence (``None`` when absent)."""
    next_draft: Point
    """Where the crosshair actually moved (after damping and clamping), pixels."""


@dataclass(frozen=True)
class _Units:
    """How numbers of one frame are written."""

    line: str
    """Unit text of the ``Crosshair position:`` line."""
    label: str
    """Unit text of the drawn bottom-right label."""
    decimals: int
    """Digits after the point (0 = integers, rounded half away from zero)."""
    words: str
    """Units in running text."""


_UNITS: dict[Frame, _Units] = {
    Frame.PIXEL: _Units("px", "px", 0, "pixels"),
    Frame.NORM1000: _Units("in 0-1000 units", "/1000", 0, "0-1000 units"),
    Frame.NORM999: _Units("in 0-999 units", "/999", 0, "0-999 units"),
    Frame.NORM1: _Units("in 0-1 units", "/1", 3, "0-1 units"),
    Frame.TOUCH1000: _Units("in touch units", "touch", 1, "touch units"),
}

CROSSHAIR_LINE_RE = re.compile(
    r"^Crosshair position: \((-?\d+(?:\.\d+)?), (-?\d+(?:\.\d+)?)\) "
    r"(px|in 0-1000 units|in 0-999 units|in 0-1 units|in touch units)$",
    re.MULTILINE,
)
"""Matches the machine-readable crosshair line: groups x, y, unit text."""

_FRAME_OF_UNIT: dict[str, Frame] = {u.line: f for f, u in _UNITS.items()}


def _round_half_away(v: float) -> int:
    """Round to the nearest integer, halves away from zero (``round`` would round halves to even)."""
    return int(math.copysign(math.floor(abs(v) + 0.5), v))


def format_number(v: float, frame: Frame) -> str:
    """One coordinate or offset component as shown to a model answering in ``frame``."""
    decimals = _UNITS[Frame(frame)].decimals
    if decimals == 0:
        return str(_round_half_away(v))
    if Frame(frame) is Frame.TOUCH1000:  # the seed's rule: one decimal, halves up on the decimal value
        return f"{round_half_up(v, decimals):.{decimals}f}"
    return f"{round(v, decimals) + 0.0:.{decimals}f}"  # + 0.0 turns -0.0 into 0.0


def _pair(p: Point, frame: Frame) -> str:
    return f"({format_number(p.x, frame)}, {format_number(p.y, frame)})"


def position_text(p: Point, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> str:
    """A pixel point written in ``frame``, e.g. ``(501, 501) in 0-1000 units`` or ``(400, 300) px``
    (``mapping``: the model config's ``coord_frame.mapping``, the rule its answers are read with)."""
    frame = Frame(frame)
    return f"{_pair(point_from_pixels(p, frame, size, mapping), frame)} {_UNITS[frame].line}"


def crosshair_line(p: Point, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> str:
    """The machine-readable line ``Crosshair position: (X, Y) UNIT`` for a pixel point ``p``."""
    return f"Crosshair position: {position_text(p, frame, size, mapping)}"


def parse_crosshair_line(text: str) -> tuple[Point, Frame] | None:
    """Read the first ``Crosshair position:`` line of a prompt: the position in its frame, and the frame."""
    m = CROSSHAIR_LINE_RE.search(text)
    if m is None:
        return None
    return Point(float(m.group(1)), float(m.group(2))), _FRAME_OF_UNIT[m.group(3)]


def position_label(p: Point, frame: Frame, size: Size, mapping: NormMapping = "last_pixel") -> str:
    """Text of the image's bottom-right label. For the pixel point (454, 352) on 800×600:
    ``(454, 352) px``, ``(568, 588) /1000``, ``(0.568, 0.588) /1``; with ``mapping=edge``
    ``(568, 587) /1000``."""
    frame = Frame(frame)
    return f"{_pair(point_from_pixels(p, frame, size, mapping), frame)} {_UNITS[frame].label}"


def frame_statement(frame: Frame, size: Size) -> str:
    """The sentence that fixes the units every answer must use."""
    frame = Frame(frame)
    w, h = size.width, size.height
    if frame is Frame.PIXEL:
        return (
            f"Use pixel coordinates of this screenshot: x goes from 0 at the left edge to {w - 1} at the "
            f"right edge, y goes from 0 at the top edge to {h - 1} at the bottom edge."
        )
    if frame is Frame.TOUCH1000:
        return (
            "Use touch coordinates: on each axis a pixel is written as pixel / (size - 1) × 1000 with one "
            "decimal, so (0.0, 0.0) is the top-left pixel and (1000.0, 1000.0) the bottom-right pixel "
            "whatever the aspect ratio; x grows to the right and y grows downward. Do not answer in pixels."
        )
    top = f"{frame.scale:g}"
    extra = " Write coordinates with three decimals." if frame is Frame.NORM1 else ""
    return (
        f"Use coordinates normalised to 0-{top} on both axes, whatever the aspect ratio: (0, 0) is the "
        f"top-left corner and ({top}, {top}) the bottom-right corner; x grows to the right and y grows "
        f"downward. Do not answer in pixels.{extra}"
    )


def _size_sentence(size: Size) -> str:
    return f"The screenshot is {size.width}×{size.height} pixels (width × height)."


def _circle_words(radius: int, frame: Frame, size: Size, mapping: NormMapping) -> str:
    """Circle radius in pixels, plus its extent in the model's frame when that is not pixels."""
    if frame is Frame.PIXEL:
        return f"{radius} pixels"
    r = offset_from_pixels(Offset(radius, radius), frame, size, mapping)
    return (
        f"{radius} pixels (about {format_number(r.dx, frame)} across and {format_number(r.dy, frame)} "
        f"down in {_UNITS[frame].words})"
    )


def _overlay_sentence(
    overlay: str, frame: Frame, size: Size, circle_radius: int, placement: str, mapping: NormMapping
) -> str:
    if placement == "away":
        labels = (
            "and, each in a corner of the screenshot away from the crosshair, a label with the step number "
            "and a label with the crosshair position in the same units as above"
        )
    else:
        labels = (
            "a label in the top-left corner with the step number, and a label in the bottom-right corner "
            "with the crosshair position in the same units as above"
        )
    if overlay == "full":
        return (
            "Drawn on the screenshot: a red crosshair at that position, a blue circle of radius "
            f"{_circle_words(circle_radius, frame, size, mapping)} centred on it to help you judge "
            f"distances, {labels}."
        )
    if overlay == "crosshair":
        return f"Drawn on the screenshot: a red crosshair at that position, {labels}."
    return (
        "Nothing is drawn on the screenshot: the crosshair is not visible, so rely on the position "
        "given in the line above."
    )


def _confidence_words(c: float | None) -> str:
    return "confidence not given" if c is None else f"confidence {c:.2f}"


def _history_line(
    n: int, e: HistoryEntry, frame: Frame, size: Size, predict: str, mapping: NormMapping
) -> str:
    at = _pair(point_from_pixels(e.draft, frame, size, mapping), frame)
    went = _pair(point_from_pixels(e.next_draft, frame, size, mapping), frame)
    if e.reported is None:
        said = "no usable answer"
    else:
        off = offset_from_pixels(e.reported, frame, size, mapping)
        d = f"dx={format_number(off.dx, frame)}, dy={format_number(off.dy, frame)}"
        if predict == "absolute":
            target = point_from_pixels(e.draft + e.reported, frame, size, mapping)
            said = (
                f"you answered x={format_number(target.x, frame)}, y={format_number(target.y, frame)} "
                f"({d} from the crosshair), {_confidence_words(e.confidence)}"
            )
        else:
            said = f"you reported {d}, {_confidence_words(e.confidence)}"
    return f"- step {n}: crosshair at {at}; {said}; the crosshair then went to {went}."


def _history_block(
    history: Sequence[HistoryEntry],
    iteration: int,
    frame: Frame,
    size: Size,
    predict: str,
    mapping: NormMapping,
) -> str:
    first = iteration - len(history)
    lines = [
        "Earlier steps, in the same units (each move covers only part of the reported distance and stays "
        "inside the image, so the new position can differ from position + offset):"
    ]
    lines += [_history_line(first + i, e, frame, size, predict, mapping) for i, e in enumerate(history)]
    return "\n".join(lines)


def _ask_sentence(predict: str) -> str:
    if predict == "relative":
        return (
            "Answer by calling report_offset. dx is the x of the target's centre minus the x of the "
            "crosshair, dy is the y of the target's centre minus the y of the crosshair (positive dx: the "
            "target is further right; positive dy: it is lower). Give dx=0, dy=0 only when the crosshair "
            "already lies on the target. confidence is a number from 0 to 1 saying how sure you are."
        )
    return (
        "Answer by calling click_at with x and y of the target's centre as absolute coordinates in the "
        "units above (not relative to the crosshair). confidence is a number from 0 to 1 saying how sure "
        "you are."
    )


def check_dvoc_args(overlay: str, predict: str, iteration: int, history: Sequence[HistoryEntry]) -> None:
    """Raise ``ValueError`` for an overlay, answer kind or iteration no DVOC step can have."""
    if overlay not in OVERLAYS:
        raise ValueError(f"overlay {overlay!r} is not available; allowed: {', '.join(OVERLAYS)}")
    if predict not in PREDICTS:
        raise ValueError(f"predict {predict!r} is not available; allowed: {', '.join(PREDICTS)}")
    if iteration < 0 or len(history) > iteration:
        raise ValueError(f"iteration {iteration} cannot follow {len(history)} earlier steps")


def dvoc_prompt(
    *,
    instruction: str,
    size: Size,
    frame: Frame,
    overlay: str,
    predict: str,
    draft: Point,
    iteration: int,
    history: Sequence[HistoryEntry],
    circle_radius: int = 30,
    labels: str = "corner",
    mapping: NormMapping = "last_pixel",
) -> str:
    """Text of one DVOC step. ``draft`` and the history are in pixels; the text shows them in ``frame``,
    by ``mapping`` (the model config's ``coord_frame.mapping``, which its answers are read with);
    ``labels``: where the frame's labels are (``overlay.label_placement``), as the overlay sentence says.

    ``iteration`` counts steps from 0. ``history`` holds the earlier steps in order, the last one being
    step ``iteration - 1`` (a caller may pass only the most recent ones).
    """
    frame = Frame(frame)
    check_dvoc_args(overlay, predict, iteration, history)
    goal = "how far its centre is from the crosshair" if predict == "relative" else "where its centre is"
    parts = [
        "You are moving a pointer, called the crosshair, step by step onto the user-interface element "
        f"described by the instruction below. At each step you look at the screenshot, find that element, "
        f"and say {goal}.",
        f"Instruction: {instruction}",
        "\n".join(
            [
                _size_sentence(size),
                f"{frame_statement(frame, size)} Offsets (dx, dy) use the same units.",
                crosshair_line(draft, frame, size, mapping),
                _overlay_sentence(overlay, frame, size, circle_radius, labels, mapping),
                f"This is step {iteration} (steps are counted from 0).",
            ]
        ),
    ]
    if history:
        parts.append(_history_block(history, iteration, frame, size, predict, mapping))
    parts.append(_ask_sentence(predict))
    return "\n\n".join(parts)


def oneshot_prompt(
    *,
    instruction: str,
    size: Size,
    frame: Frame,
    attempt: int,
    previous: Point | None,
    mapping: NormMapping = "last_pixel",
) -> str:
    """Text of one one-shot attempt (``attempt`` counts from 0; ``previous`` = last answer in pixels,
    ``None`` when there was none or it could not be parsed, written by ``mapping``). The image is the raw
    screenshot."""
    frame = Frame(frame)
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    parts = [
        "Find the user-interface element described by the instruction below on the screenshot, and give "
        "the position of its centre.",
        f"Instruction: {instruction}",
    ]
    if attempt >= 1:
        if previous is None:
            missed = "your previous reply contained no usable click_at call"
        else:
            missed = (
                f"your previous answer, {position_text(previous, frame, size, mapping)}, missed the target "
                "element"
            )
        parts.append(
            f"This is attempt {attempt + 1}: {missed}. Study the screenshot once more before you answer."
        )
    parts.append(f"{_size_sentence(size)}\n{frame_statement(frame, size)}")
    parts.append(
        "Answer by calling click_at with x and y of the element's centre in these units, and a confidence "
        "from 0 to 1 saying how sure you are."
    )
    return "\n\n".join(parts)
