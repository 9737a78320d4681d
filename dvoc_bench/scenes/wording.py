"""Instruction wordings made by rules from the measured layout (docs/variation.md).

``wording`` picks how a task is asked: ``given`` (the scene file's own words), ``paraphrase``
(the given words rewritten by verb and phrase rules), ``relational`` (the target named by where it stands
among the other elements: "the button to the right of the “Cancel” button", "the “Edit” link in the
second row") or ``visual`` (named by its colour: "the green button"). The rules read only the scene's
truth (the elements the DOM or AT-SPI measured, their boxes, labels and roles) and its clean screenshot
(an element's colour is the colour it is drawn in), never a hand-written sentence per scene.

Every candidate wording is checked against the measured layout: it is kept only when exactly one element
fits it, the target; a candidate that fits several is discarded and counted (:attr:`Worded.discarded`).
A scene with no unambiguous wording of the kind asked has none (:attr:`Worded.text` is ``None``, with the
reason), and its trials are skipped, counted, not failed.

Everything here is a pure function of (elements, target, image); the registry applies it
(:meth:`dvoc_bench.scenes.SceneRegistry.snapshot`).
"""

from __future__ import annotations

import colorsys
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.records import ErrorClass
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes.sources import SceneError

Wording = Literal["given", "paraphrase", "relational", "visual"]
"""How a task's instruction is worded (the ``wording`` knob)."""

WORDINGS: tuple[str, ...] = ("given", "paraphrase", "relational", "visual")
"""Every wording, the default first."""


def wording_variation(wording: str) -> dict[str, str]:
    """``{"wording": ...}`` when not ``given`` (empty at the default): the trial's ``variation`` pairs."""
    return {} if wording == "given" else {"wording": wording}


@dataclass(frozen=True)
class Worded:
    """What a wording rule made of one scene."""

    text: str | None
    """The instruction, or ``None`` when no candidate fits the target alone."""
    discarded: int = 0
    """Candidates discarded because they fit more than one element (or none)."""
    reason: str = ""
    """Why there is no instruction (empty when there is one)."""


# ------------------------------------------------------------------------------------------ roles

_ROLE_WORDS = {
    "push button": "button", "toggle button": "button", "button": "button", "menu button": "button",
    "link": "link", "input": "field", "text": "field", "entry": "field", "password text": "field",
    "check box": "checkbox", "radio button": "radio button", "page tab": "tab", "menu item": "menu item",
    "combo box": "drop-down", "spin button": "spin box", "icon": "icon", "panel": "element",
}  # fmt: skip


def role_word(role: str) -> str:
    """What a sentence calls an element of ``role`` (``push button`` -> ``button``)."""
    return _ROLE_WORDS.get(role.strip().lower(), role.strip().lower() or "element")


def _norm(label: str) -> str:
    return " ".join(label.split()).casefold()


def _named(e: Element) -> str:
    """``the “Cancel” button``."""
    return f"the “{' '.join(e.label.split())}” {role_word(e.role)}"


def _candidates(elements: Sequence[Element]) -> list[Element]:
    """The elements a wording may name or fit: interactive ones with a box of some area."""
    return [e for e in elements if e.interactive and e.box.w > 0 and e.box.h > 0]


# ------------------------------------------------------------------------------------- paraphrase

_VERBS = {
    "click inside": "Place the cursor inside", "click on": "Press", "click": "Press", "press": "Click",
    "tap": "Press", "select": "Choose", "choose": "Select", "open": "Go to", "tick": "Check",
    "switch to": "Go to", "go to": "Open", "minimise": "Minimize",
}  # fmt: skip
_NOUN_TAIL = re.compile(
    r"^the (?P<name>.+?) (?P<noun>button|link|tab|entry|field|card|icon|checkbox)(?P<rest>.*)$"
)


_NOT_NAMES = frozenset(
    ("small", "big", "little", "large", "top", "bottom", "left", "right", "middle", "last", "next")
    + ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
    + ("red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "grey", "gray", "black")
    + ("white",)
)
"""Words that describe an element rather than name it: ``the second radio button`` keeps its shape."""


def paraphrase(instruction: str) -> str | None:
    """The given instruction rewritten by rules: its verb swapped for a synonym and ``the X button`` turned
    into ``the button “X”``; ``None`` when no rule applies (the sentence would come back unchanged)."""
    text = " ".join(instruction.strip().rstrip(".").split())
    low = text.casefold()
    for verb in sorted(_VERBS, key=len, reverse=True):
        if low.startswith(verb + " "):
            rest = text[len(verb) + 1 :]
            m = _NOUN_TAIL.match(rest)
            if m is not None and m["name"].casefold().split()[0] not in _NOT_NAMES:
                rest = f"the {m['noun']} “{m['name']}”{m['rest']}"
            out = f"{_VERBS[verb]} {rest}"
            return out if out.casefold() != text.casefold() else None
    return None


# ------------------------------------------------------------------------------------- relational

_SIDES = ("right", "left", "above", "below")


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0) + 1)


def _same_row(a: Box, b: Box) -> bool:
    """The two boxes share at least half of the shorter one's height."""
    return _overlap(a.y0, a.y1, b.y0, b.y1) >= 0.5 * min(a.h + 1, b.h + 1)


def _same_column(a: Box, b: Box) -> bool:
    return _overlap(a.x0, a.x1, b.x0, b.x1) >= 0.5 * min(a.w + 1, b.w + 1)


def _on_side(e: Box, anchor: Box, side: str) -> bool:
    """``e`` lies on ``side`` of ``anchor``: wholly past its edge, in its row (right, left) or column."""
    if side == "right":
        return e.x0 > anchor.x1 and _same_row(e, anchor)
    if side == "left":
        return e.x1 < anchor.x0 and _same_row(e, anchor)
    if side == "above":
        return e.y1 < anchor.y0 and _same_column(e, anchor)
    return e.y0 > anchor.y1 and _same_column(e, anchor)


def _gap(e: Box, anchor: Box, side: str) -> float:
    return {"right": e.x0 - anchor.x1, "left": anchor.x0 - e.x1,
            "above": anchor.y0 - e.y1, "below": e.y0 - anchor.y1}[side]  # fmt: skip


def beside(elements: Sequence[Element], anchor: Element, side: str, role: str) -> list[Element]:
    """Every element of role word ``role`` on ``side`` of ``anchor`` (what "the ``role`` to the right of
    ``anchor``" fits)."""
    return [
        e for e in _candidates(elements)
        if e is not anchor and role_word(e.role) == role and _on_side(e.box, anchor.box, side)
    ]  # fmt: skip


def rows(elements: Sequence[Element]) -> list[list[Element]]:
    """The elements grouped into rows, top to bottom (an element joins the row whose first member it
    shares half a height with)."""
    out: list[list[Element]] = []
    for e in sorted(elements, key=lambda e: (e.box.centre.y, e.box.x0)):
        for row in out:
            if _same_row(row[0].box, e.box):
                row.append(e)
                break
        else:
            out.append([e])
    return out


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_SIDE_WORDS = {"right": "to the right of", "left": "to the left of", "above": "above", "below": "below"}


NO_SIZE = Size(0, 0)
"""A screen size that is not known (no screen-part wording)."""


def relational(elements: Sequence[Element], target: Element, size: Size = NO_SIZE) -> Worded:
    """The target named by where it stands: among elements sharing its label, ``the “Edit” link in the
    second row``; otherwise by an anchor whose label no other element of its role has, ``the button to the
    right of the “Cancel” button`` (the nearest anchor first); last, by the part of the screen (``size``)
    it is in, ``the button in the top left of the screen``. Kept only when exactly one element fits."""
    cands = _candidates(elements)
    if target not in cands:
        cands = [*cands, target]
    role = role_word(target.role)
    discarded = 0
    label = _norm(target.label)
    same = [e for e in cands if label and _norm(e.label) == label and role_word(e.role) == role]
    if len(same) > 1:  # the label alone is ambiguous: the row (or column) tells them apart
        grid = rows(same)
        for i, row in enumerate(grid):
            if target in row and i < len(_ORDINALS):
                if len(row) == 1:
                    where = "the top row" if i == 0 else f"the {_ORDINALS[i]} row"
                    return Worded(f"Click {_named(target)} in {where}", discarded)
                discarded += 1
    counts: dict[tuple[str, str], int] = {}  # an anchor is named by its label and its role word
    for e in cands:
        counts[_norm(e.label), role_word(e.role)] = counts.get((_norm(e.label), role_word(e.role)), 0) + 1
    anchors = [e for e in cands if e is not target and _norm(e.label)
               and counts[_norm(e.label), role_word(e.role)] == 1 and _norm(e.label) != label]  # fmt: skip
    options = []
    for a in anchors:
        for side in _SIDES:
            if _on_side(target.box, a.box, side):
                options.append((_gap(target.box, a.box, side), _SIDES.index(side), a, side))
    ranked = sorted(options, key=lambda o: (o[0], o[1], o[2].id))
    for _, _, a, side in ranked:
        fits = beside(cands, a, side, role)
        if fits == [target]:
            return Worded(f"Click the {role} {_SIDE_WORDS[side]} {_named(a)}", discarded)
        discarded += 1
    for _, _, a, side in ranked:  # "immediately": the nearest on that side, if one is nearest
        fits = beside(cands, a, side, role)
        gap = min(_gap(e.box, a.box, side) for e in fits)
        if [e for e in fits if _gap(e.box, a.box, side) == gap] == [target]:
            return Worded(f"Click the {role} immediately {_SIDE_WORDS[side]} {_named(a)}", discarded)
        discarded += 1
    word = screen_region(target.box, size)
    if word is not None:
        fits = [e for e in cands if role_word(e.role) == role and screen_region(e.box, size) == word]
        if fits == [target]:
            return Worded(f"Click the {role} in the {word} of the screen", discarded)
        discarded += 1
    return Worded(None, discarded, f"no relational wording fits the target alone ({discarded} discarded)")


def screen_region(box: Box, size: Size) -> str | None:
    """Where a box's centre lies on the screen in thirds (``top left``, ``middle``, ``bottom right``...);
    ``None`` without a screen size."""
    if size.width <= 0 or size.height <= 0:
        return None
    c = box.centre
    col = ("left", "centre", "right")[min(int(3 * c.x / size.width), 2)]
    row = ("top", "middle", "bottom")[min(int(3 * c.y / size.height), 2)]
    if row == "middle" and col == "centre":
        return "middle"
    return f"{row} {col}" if row != "middle" else f"middle {col}"


# ------------------------------------------------------------------------------------------ visual

COLOUR_NAMES = (
    "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "grey", "black", "white",
)  # fmt: skip
"""The colour words of visual wordings."""


def colour_name(rgb: Sequence[float]) -> str:
    """The colour word of one RGB colour (0-255), by hue, saturation and value."""
    r, g, b = (float(c) / 255.0 for c in rgb[:3])
    h, s, v = colorsys.rgb_to_hsv(r, g, b)
    hue = h * 360.0
    if v < 0.3:
        return "black"
    if s < 0.25:
        return "white" if v > 0.85 else "grey"
    if 15 <= hue < 45 and v < 0.6:
        return "brown"
    if hue < 15 or hue >= 345:
        return "red"
    if hue < 45:
        return "orange"
    if hue < 70:
        return "yellow"
    if hue < 165:
        return "green"
    if hue < 255:
        return "blue"
    if hue < 290:
        return "purple"
    return "pink"


def _codes(pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct colours of an ``Nx3`` array quantised to 32 levels (as the RGB of each level's
    middle) and their pixel counts."""
    q = (pixels // 8).astype(np.int64)
    codes, counts = np.unique(q[:, 0] * 1024 + q[:, 1] * 32 + q[:, 2], return_counts=True)
    rgb = np.stack([(codes // 1024) * 8 + 4, (codes // 32 % 32) * 8 + 4, (codes % 32) * 8 + 4], axis=1)
    return rgb, counts


OWN_FILL = 12.0
"""RGB distance from the colour around a box above which the box's commonest colour is its own fill."""
TEXT_FROM_BACKGROUND = 60.0
"""RGB distance from the background above which a pixel inside a box is the element's text or drawing."""


def element_colour(image: np.ndarray, box: Box) -> str | None:
    """The colour word an element is drawn in: the commonest colour inside its box when it differs from
    the colour around the box (a filled button, a white card on a grey page); otherwise (a text link on the
    page's background) the commonest colour word among the pixels far from that background, when they
    cover at least 2 % of the box. ``None`` for an empty box."""
    h, w = image.shape[:2]
    x0, y0 = max(int(box.x0), 0), max(int(box.y0), 0)
    x1, y1 = min(int(box.x1), w - 1), min(int(box.y1), h - 1)
    if x1 < x0 or y1 < y0:
        return None
    rgb, counts = _codes(image[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3))
    fill = rgb[int(np.argmax(counts))]
    ring = [image[max(y0 - 3, 0), x0 : x1 + 1], image[min(y1 + 3, h - 1), x0 : x1 + 1],
            image[y0 : y1 + 1, max(x0 - 3, 0)], image[y0 : y1 + 1, min(x1 + 3, w - 1)]]  # fmt: skip
    ring_rgb, ring_counts = _codes(np.concatenate([r.reshape(-1, 3) for r in ring]))
    around = ring_rgb[int(np.argmax(ring_counts))]
    if float(np.linalg.norm(fill - around)) > OWN_FILL:
        return colour_name(fill.tolist())
    far = np.linalg.norm(rgb - fill, axis=1) > TEXT_FROM_BACKGROUND
    names: dict[str, int] = {}
    for c, n in zip(rgb[far].tolist(), counts[far].tolist(), strict=True):
        names[colour_name(c)] = names.get(colour_name(c), 0) + n
    best = max(names.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    if best is not None and best[1] >= 0.02 * int(counts.sum()):
        return best[0]
    return colour_name(fill.tolist())


_EXTREMES = (("top", lambda b: b.y0), ("bottom", lambda b: -b.y1), ("left", lambda b: b.x0),
             ("right", lambda b: -b.x1))  # fmt: skip


def visual(elements: Sequence[Element], target: Element, image: np.ndarray) -> Worded:
    """The target named by its colour: ``the green button``; when other elements of its role share the
    colour, ``the green button nearest the top`` (or bottom, left, right) if that singles it out, else
    ``the second green button from the top`` (its row among them) if it is alone in its row, else its place
    in its row, ``the second green button from the left in the top row``. Kept only when exactly one element
    fits."""
    cands = _candidates(elements)
    if target not in cands:
        cands = [*cands, target]
    role = role_word(target.role)
    colour = element_colour(image, target.box)
    if colour is None:
        return Worded(None, 0, "the target has no pixels to take a colour from")
    fits = [e for e in cands if role_word(e.role) == role and element_colour(image, e.box) == colour]
    if fits == [target]:
        return Worded(f"Click the {colour} {role}", 0)
    discarded = 1
    for side, key in _EXTREMES:
        best = min(key(e.box) for e in fits)
        first = [e for e in fits if key(e.box) == best]
        if first == [target]:
            return Worded(f"Click the {colour} {role} nearest the {side}", discarded)
        discarded += 1
    for i, row in enumerate(rows(fits)[: len(_ORDINALS)]):  # "the second blue button from the top"
        if target in row:
            if row == [target]:
                return Worded(f"Click the {_ORDINALS[i]} {colour} {role} from the top", discarded)
            discarded += 1
            line = sorted(row, key=lambda e: e.box.x0)
            j = line.index(target)
            alone = [e for e in line if e.box.x0 == target.box.x0] == [target]
            if alone and j < len(_ORDINALS):
                where = "the top row" if i == 0 else f"the {_ORDINALS[i]} row"
                return Worded(f"Click the {_ORDINALS[j]} {colour} {role} from the left in {where}", discarded)
            discarded += 1
    return Worded(None, discarded, f"no visual wording fits the target alone ({discarded} discarded)")


# ------------------------------------------------------------------------------------------ entry


def target_of(truth: SceneTruth) -> Element:
    """The target as an element (a truth whose target is not among its elements gets one from its box)."""
    for e in truth.elements:
        if e.id == truth.target_id:
            return e
    return Element(id=truth.target_id, label="", box=truth.target_box, role="element")


def reword(truth: SceneTruth, image: np.ndarray, wording: str) -> Worded:
    """The instruction of ``truth`` in ``wording`` (``given``: its own)."""
    if wording == "given":
        return Worded(truth.instruction)
    if truth.ends:
        return Worded(None, 0, "a two-point task: its instruction names both ends, no rule rewords it")
    target = target_of(truth)
    if wording == "paraphrase":
        text = paraphrase(truth.instruction)
        return Worded(text, 0, "" if text else f"no paraphrase rule applies to {truth.instruction!r}")
    if wording == "relational":
        return relational(truth.elements, target, truth.size)
    if wording == "visual":
        return visual(truth.elements, target, image)
    raise ValueError(f"wording: unknown value {wording!r}; allowed: {', '.join(WORDINGS)}")


class WordingUnavailable(SceneError):
    """A scene with no unambiguous instruction of the asked wording: its trials are written ``skipped``
    with this reason (``error_class`` ``wording``), counted, never an error of the sweep."""

    skip_class: ErrorClass = "wording"


def worded_snapshot(snap: Snapshot, wording: str) -> Snapshot:
    """``snap`` asked in ``wording`` (its truth's instruction replaced, its content hash made again);
    :class:`WordingUnavailable` when no unambiguous wording exists."""
    from dvoc_bench.scenes.synthetic import content_hash

    if wording == "given":
        return snap
    made = reword(snap.truth, snap.image, wording)
    if made.text is None:
        err = WordingUnavailable(f"{snap.scene_id}: wording={wording}: {made.reason}")
        err.size = snap.size
        raise err
    truth = dataclasses.replace(snap.truth, instruction=made.text)
    return Snapshot(truth=truth, image=snap.image, content_hash=content_hash(snap.image, truth))
