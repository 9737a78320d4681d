"""Synthetic scenes: declarative YAML specs rendered with Pillow and the pinned DejaVu Sans.

Spec schema (one scene per file, ``scenes/synthetic/<id>.yaml``)::

    id: S1                       # scene id, equal to the file stem
    name: single-button          # short name
    difficulty: easy             # easy | medium | hard
    size: [800, 600]             # canvas width, height in pixels
    background: [40, 42, 48]     # canvas RGB
    instruction: Click the CLICK ME button
    target: click_me             # id of the target element (must be interactive)
    elements:                    # drawn in this order; later elements paint over earlier ones
      - id: click_me             # unique within the scene
        kind: rect               # rect | input | text
        box: [360, 275, 440, 325]  # rect/input only: x0, y0, x1, y1, edges inclusive (as Pillow draws)
        fill: [100, 200, 100]    # optional RGB (none = not filled)
        outline: [255, 255, 255] # optional RGB (none = no outline)
        outline_width: 2         # outline thickness, drawn inward (default 1 with an outline, else 0)
        text: CLICK ME           # optional for rect/input, required for text
        text_at: [366, 290]      # top-left anchor of the text (Pillow's default "la" anchor)
        text_color: [255, 255, 255]
        font_size: 14            # DejaVu Sans size in pixels
        role: button             # button | input | link | text | panel (default by kind: button/input/text)
        label: CLICK ME          # defaults to the text; required when there is no text
        interactive: true        # default: true for rect/input, false for text

``text_at``, ``text_color`` and ``font_size`` are required whenever ``text`` is given: nothing visual has a
hidden default. A ``text`` element's box is the bounding box of its drawn text, measured with the font.
:func:`load_spec` returns the validated spec with every default filled in (colours and boxes as tuples);
:func:`render_synthetic` turns it into a :class:`Snapshot`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from PIL import Image, ImageDraw

from dvoc_bench.core import yamlio
from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.draw.render import dejavu

KINDS = ("rect", "input", "text")
"""Element kinds: ``rect`` and ``input`` are boxes (optionally with text), ``text`` is text alone."""
ROLES = ("button", "input", "link", "text", "panel")
"""Roles a detector would assign (see :class:`Element`)."""
DIFFICULTIES = ("easy", "medium", "hard")
"""Difficulty levels, as the authors graded the scenes."""
DEFAULT_MAX_SIDE = 8192
"""Largest canvas side accepted by default (``scenes.max_side``), checked before anything is allocated."""

_SCENE_KEYS = ("id", "name", "difficulty", "size", "background", "instruction", "target", "elements")
_ELEMENT_REQUIRED = ("id", "kind")
_ELEMENT_OPTIONAL = (
    "box",
    "fill",
    "outline",
    "outline_width",
    "text",
    "text_at",
    "text_color",
    "font_size",
    "role",
    "label",
    "interactive",
)
_DEFAULT_ROLE = {"rect": "button", "input": "input", "text": "text"}


# ------------------------------------------------------------------------------------------ loading


def read_task_yaml(path: Path, what: str) -> Any:
    """The parsed YAML of a task file; a missing or unreadable file or bad YAML is a one-line
    :class:`ConfigError` naming the file (``what``: e.g. ``web task``)."""
    try:
        return yamlio.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read {what}: {e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {yaml_error_line(e)}") from None


def yaml_error_line(exc: yaml.YAMLError) -> str:
    """A YAML error in one line: the problem and where (PyYAML's own text spans several lines)."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or str(exc)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    return " ".join(f"{problem}{where}".split())


def load_spec(path: str | Path, max_side: int = DEFAULT_MAX_SIDE) -> dict[str, Any]:
    """Read and validate a scene spec; errors are :class:`ConfigError` (a ``ValueError``) in one line
    naming the file and the bad key. A canvas side above ``max_side`` is refused before any drawing."""
    path = Path(path)
    try:
        raw = yamlio.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {yaml_error_line(exc)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the scene file: {exc}") from None
    return validate_spec(raw, source=str(path), max_side=max_side)


def validate_spec(raw: Any, *, source: str = "<spec>", max_side: int = DEFAULT_MAX_SIDE) -> dict[str, Any]:
    """Validate a spec mapping and return it normalised (defaults filled, tuples); idempotent."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: a scene spec must be a mapping, got {type(raw).__name__}")
    _check_keys(raw, _SCENE_KEYS, _SCENE_KEYS, source)
    size = _int_seq(raw["size"], 2, source, "size", minimum=1)
    if max(size) > max_side:
        raise ConfigError(
            f"{source}: key 'size' {list(size)} exceeds scenes.max_side = {max_side} px "
            "(raise scenes.max_side to render it)"
        )
    spec: dict[str, Any] = {
        "id": _text(raw["id"], source, "id"),
        "name": _text(raw["name"], source, "name"),
        "difficulty": _choice(raw["difficulty"], DIFFICULTIES, source, "difficulty"),
        "size": size,
        "background": _color(raw["background"], source, "background"),
        "instruction": _text(raw["instruction"], source, "instruction"),
        "target": _text(raw["target"], source, "target"),
    }
    items = raw["elements"]
    if not isinstance(items, Sequence) or isinstance(items, str) or not items:
        raise ConfigError(f"{source}: key 'elements' must be a non-empty list")
    elements = [_element(item, size, f"{source}: elements[{i}]") for i, item in enumerate(items)]
    ids = [e["id"] for e in elements]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise ConfigError(f"{source}: key 'elements' has duplicate ids {dup}")
    by_id = {e["id"]: e for e in elements}
    if spec["target"] not in by_id:
        raise ConfigError(f"{source}: key 'target' names unknown element {spec['target']!r} (ids: {ids})")
    if not by_id[spec["target"]]["interactive"]:
        raise ConfigError(f"{source}: key 'target' names a non-interactive element {spec['target']!r}")
    spec["elements"] = elements
    return spec


def _element(raw: Any, size: tuple[int, ...], where: str) -> dict[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: an element must be a mapping, got {type(raw).__name__}")
    _check_keys(raw, _ELEMENT_REQUIRED, _ELEMENT_REQUIRED + _ELEMENT_OPTIONAL, where)
    kind = _choice(raw["kind"], KINDS, where, "kind")
    eid = _text(raw["id"], where, "id")
    where = f"{where} ({eid!r})"
    get = raw.get
    box = None
    if kind == "text":
        for key in ("box", "fill", "outline", "outline_width"):
            if get(key) is not None:
                raise ConfigError(f"{where}: key {key!r} is not allowed on a text element")
    else:
        if get("box") is None:
            raise ConfigError(f"{where}: key 'box' is required for a {kind} element")
        box = _box(raw["box"], size, where)
    text = None if get("text") is None else _text(get("text"), where, "text")
    if kind == "text" and text is None:
        raise ConfigError(f"{where}: key 'text' is required for a text element")
    text_keys = ("text_at", "text_color", "font_size")
    if text is not None:
        for key in text_keys:
            if get(key) is None:
                raise ConfigError(f"{where}: key {key!r} is required when 'text' is given")
    else:
        for key in text_keys:
            if get(key) is not None:
                raise ConfigError(f"{where}: key {key!r} is given without 'text'")
    outline = None if get("outline") is None else _color(get("outline"), where, "outline")
    outline_width = None
    if kind != "text":
        width = get("outline_width")
        width = (1 if outline is not None else 0) if width is None else width
        outline_width = _int(width, where, "outline_width", minimum=0)
    label = get("label", text)
    if label is None:
        raise ConfigError(f"{where}: key 'label' is required for an element without text")
    interactive = get("interactive", kind != "text")
    if not isinstance(interactive, bool):
        raise ConfigError(f"{where}: key 'interactive' must be true or false, got {interactive!r}")
    return {
        "id": eid,
        "kind": kind,
        "box": box,
        "fill": None if get("fill") is None else _color(get("fill"), where, "fill"),
        "outline": outline,
        "outline_width": outline_width,
        "text": text,
        "text_at": None if text is None else _int_seq(raw["text_at"], 2, where, "text_at"),
        "text_color": None if text is None else _color(raw["text_color"], where, "text_color"),
        "font_size": None if text is None else _int(raw["font_size"], where, "font_size", minimum=1),
        "role": _choice(get("role", _DEFAULT_ROLE[kind]), ROLES, where, "role"),
        "label": _text(label, where, "label"),
        "interactive": interactive,
    }


def _check_keys(raw: Mapping[str, Any], required: Sequence[str], allowed: Sequence[str], where: str) -> None:
    for key in raw:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r} (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in raw:
            raise ConfigError(f"{where}: missing key {key!r}")


def _text(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: key {key!r} must be a non-empty string, got {value!r}")
    return value


def _choice(value: Any, choices: Sequence[str], where: str, key: str) -> str:
    if value not in choices:
        raise ConfigError(f"{where}: key {key!r} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


def _int(value: Any, where: str, key: str, minimum: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ConfigError(f"{where}: key {key!r} must be an integer{bound}, got {value!r}")
    return int(value)


def _int_seq(value: Any, n: int, where: str, key: str, minimum: int | None = None) -> tuple[int, ...]:
    if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != n:
        raise ConfigError(f"{where}: key {key!r} must be a list of {n} integers, got {value!r}")
    return tuple(_int(v, where, key, minimum) for v in value)


def _color(value: Any, where: str, key: str) -> tuple[int, ...]:
    rgb = _int_seq(value, 3, where, key, minimum=0)
    if max(rgb) > 255:
        raise ConfigError(f"{where}: key {key!r} must be an RGB triple 0..255, got {value!r}")
    return rgb


def _box(value: Any, size: tuple[int, ...], where: str) -> tuple[int, ...]:
    x0, y0, x1, y1 = _int_seq(value, 4, where, "box", minimum=0)
    if not (x0 <= x1 < size[0] and y0 <= y1 < size[1]):
        raise ConfigError(
            f"{where}: key 'box' must satisfy 0 <= x0 <= x1 < {size[0]} and 0 <= y0 <= y1 < {size[1]}, "
            f"got {list(value)}"
        )
    return (x0, y0, x1, y1)


# ---------------------------------------------------------------------------------------- rendering


def render_synthetic(spec: Mapping[str, Any], max_side: int = DEFAULT_MAX_SIDE) -> Snapshot:
    """Draw a spec (as returned by :func:`load_spec`, validated again here) into a read-only Snapshot."""
    spec = validate_spec(spec, source=f"<spec {spec.get('id', '?')}>", max_side=max_side)
    width, height = spec["size"]
    img = Image.new("RGB", (width, height), spec["background"])
    draw = ImageDraw.Draw(img)
    elements = tuple(_draw_element(draw, e) for e in spec["elements"])
    image = np.array(img, dtype=np.uint8)
    image.flags.writeable = False
    target = next(e for e in elements if e.id == spec["target"])
    truth = SceneTruth(
        scene_id=spec["id"],
        size=Size(width, height),
        instruction=spec["instruction"],
        target_id=target.id,
        target_box=target.box,
        elements=elements,
    )
    return Snapshot(truth=truth, image=image, content_hash=content_hash(image, truth))


def render_synthetic_file(path: str | Path, max_side: int = DEFAULT_MAX_SIDE) -> Snapshot:
    """Load, validate and render one spec file (a side above ``max_side`` is a :class:`ConfigError`)."""
    return render_synthetic(load_spec(path, max_side), max_side)


def render_without_target(spec: Mapping[str, Any], max_side: int = DEFAULT_MAX_SIDE) -> Snapshot:
    """The scene drawn without its target (``absent.variant=remove``, docs/absent.md): the target element
    and every element drawn inside its box (a label written on it) are left out; the other pixels are
    the scene's. The truth keeps the target's box as where it was, lists only what was drawn, and says
    ``absent="remove"``."""
    spec = validate_spec(spec, source=f"<spec {spec.get('id', '?')}>", max_side=max_side)
    full = render_synthetic(spec, max_side)
    gone = full.truth.target_box
    kept = [
        e for e in spec["elements"]
        if e["id"] != spec["target"] and not _inside(Box.from_list(_drawn_box(e, full)), gone)
    ]  # fmt: skip
    width, height = spec["size"]
    img = Image.new("RGB", (width, height), spec["background"])
    draw = ImageDraw.Draw(img)
    elements = tuple(_draw_element(draw, e) for e in kept)
    image = np.array(img, dtype=np.uint8)
    image.flags.writeable = False
    truth = dataclasses.replace(full.truth, elements=elements, absent="remove")
    return Snapshot(truth=truth, image=image, content_hash=content_hash(image, truth, absent="remove"))


def render_without_target_file(path: str | Path, max_side: int = DEFAULT_MAX_SIDE) -> Snapshot:
    """:func:`render_without_target` of one spec file."""
    return render_without_target(load_spec(path, max_side), max_side)


def _drawn_box(e: Mapping[str, Any], full: Snapshot) -> list[float]:
    """The box an element was drawn in (a text element's measured one, from the full scene's truth)."""
    return next(x.box.as_list() for x in full.truth.elements if x.id == e["id"])


def _inside(inner: Box, outer: Box) -> bool:
    return outer.x0 <= inner.x0 and outer.y0 <= inner.y0 and inner.x1 <= outer.x1 and inner.y1 <= outer.y1


def _draw_element(draw: ImageDraw.ImageDraw, e: Mapping[str, Any]) -> Element:
    """Draw one element (box, then its text) and return its ground truth."""
    box = e["box"]
    if box is not None:
        draw.rectangle(box, fill=e["fill"], outline=e["outline"], width=e["outline_width"])
    if e["text"] is not None:
        font = dejavu(e["font_size"])
        draw.text(e["text_at"], e["text"], fill=e["text_color"], font=font)
        if box is None:
            # textbbox's right/bottom edges are exclusive; Box edges are inclusive.
            x0, y0, x1, y1 = draw.textbbox(e["text_at"], e["text"], font=font)
            box = (x0, y0, x1 - 1, y1 - 1)
    return Element(
        id=e["id"], label=e["label"], box=Box.from_list(box), role=e["role"], interactive=e["interactive"]
    )


def content_hash(image: np.ndarray, truth: SceneTruth, absent: str | None = None) -> str:
    """sha256 (first 16 hex digits) over the pixels, size, instruction, target id and every element (and
    the absent-target variant, when there is one: a scene's hash is unchanged without it)."""
    meta: dict[str, Any] = {
        "shape": list(image.shape),
        "size": truth.size.as_list(),
        "instruction": truth.instruction,
        "target_id": truth.target_id,
        "elements": [
            {
                "id": e.id,
                "label": e.label,
                "box": e.box.as_list(),
                "role": e.role,
                "interactive": e.interactive,
            }
            for e in truth.elements
        ],
    }
    if absent is not None:
        meta["absent"] = absent
    h = hashlib.sha256(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    h.update(np.ascontiguousarray(image, dtype=np.uint8).tobytes())
    return h.hexdigest()[:16]
