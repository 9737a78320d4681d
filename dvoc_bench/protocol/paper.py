"""Protocol ``paper``: the authors' benchmark semantics, faithfully, in our own words.

What it keeps from the authors' harness, on purpose (these are the artefacts the paper's numbers rest on):

- The prompts are terse and say "pixels"; the image size is never stated and nothing is converted: the
  harness reads every number as a pixel (a norm1000 model is misread, as in the paper).
- The crosshair position never appears in the text except inside the history; with the text-only overlay
  the model therefore does not know where the crosshair is at iteration 0.
- History lines show the crosshair position, the reported dx, dy and confidence, and an arrow to
  ``position + offset``: the *undamped* point, not where the crosshair went.
- Absolute mode asks for ``click_at`` and is still damped and gated by ``|answer - draft| < epsilon``.
- The first one-shot call does not contain the task; retries say the last click (pixels) was outside the
  target and repeat the task. A missing tool call counts as the point (0, 0).
- The drawn label reads ``(cx, cy) +/- 30px`` with the truncated crosshair position.

What differs and cannot matter for a model: the label font (DejaVu Sans instead of Pillow's default) and
the drawing order (our crosshair is drawn last; theirs was under the circle, which never overlaps it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from dvoc_bench.core.geometry import Point

if TYPE_CHECKING:
    from dvoc_bench.protocol.prompts import HistoryEntry


def _i(v: float) -> int:
    """The authors printed positions and offsets as whole numbers."""
    return int(round(v))


def truncated(p: Point) -> Point:
    """The crosshair centre the authors drew: ``int()`` of each coordinate (drafts are never negative)."""
    return Point(float(math.floor(p.x)), float(math.floor(p.y)))


def overlay_label(p: Point, radius: int = 30) -> str:
    """The bottom-right label of the authors' overlay (always the fixed radius, even without a circle)."""
    t = truncated(p)
    return f"({int(t.x)}, {int(t.y)}) +/- {radius}px"


_OVERLAY_WORDS = {
    "full": "The red crosshair marks where the click would land now; the blue ring around it is a fixed "
    "size reference.",
    "crosshair": "The red crosshair marks where the click would land now.",
    "none": "Nothing is drawn on the screen. Work out the current click estimate from the history below "
    "and measure from there.",
}


def dvoc_prompt(*, instruction: str, overlay: str, predict: str, history: Sequence[HistoryEntry]) -> str:
    """One verifier step under the paper's protocol. ``history`` entries are in pixels."""
    lines = [f"You check a click position for a UI automation loop. {_OVERLAY_WORDS[overlay]}", ""]
    if predict == "relative":
        lines += [
            "Respond with report_offset(dx, dy, confidence): the offset in pixels from the current click "
            "position to the centre of the target element. dx > 0 means right, dy > 0 means down; "
            "confidence runs from 0 (guessing) to 1 (sure).",
            "",
            "Answer 0, 0 only if the position is already within a few pixels of the target; when unsure, "
            "give a lower confidence and the loop will keep refining.",
        ]
    else:
        lines += [
            "Respond with click_at(x, y, confidence): the absolute pixel coordinates of the centre of the "
            "target element; confidence runs from 0 (guessing) to 1 (sure).",
            "",
            "Repeat the previous coordinates only if they are already within a few pixels of the target.",
        ]
    lines += ["", f"Task: {instruction}"]
    if history:
        lines.append("Earlier attempts:")
        for i, e in enumerate(history):
            d = e.draft
            r = e.reported if e.reported is not None else None
            dx, dy = (r.dx, r.dy) if r is not None else (0.0, 0.0)
            conf = e.confidence if e.confidence is not None else 0.0
            lines.append(
                f"  #{i}: position ({_i(d.x)},{_i(d.y)}), reported dx={_i(dx)} dy={_i(dy)} "
                f"confidence={conf:.2f} => ({_i(d.x + dx)},{_i(d.y + dy)})"
            )
    lines.append("Use report_offset() now." if predict == "relative" else "Use click_at() now.")
    return "\n".join(lines)


def oneshot_prompt(*, instruction: str, attempt: int, previous: Point | None) -> str:
    """One one-shot call under the paper's protocol.

    Attempt 0 carries no task; a missing earlier answer is reported back as (0, 0).
    """
    if attempt == 0:
        return (
            "You operate a user interface by clicking. Look at the screenshot and find the pixel "
            "coordinates of the target element.\n\n"
            "Respond with click_at(x, y, confidence) giving the pixel coordinates of the target element's "
            "centre.\n\nUse click_at() now."
        )
    p = previous if previous is not None else Point(0, 0)
    return (
        f"Your click at ({_i(p.x)}, {_i(p.y)}) landed outside the target element. The task is still: "
        f"{instruction}\n\nCheck the screenshot again and respond with click_at(x, y, confidence) using "
        "corrected coordinates.\n\nUse click_at() now."
    )
