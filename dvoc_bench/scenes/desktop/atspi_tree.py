"""Reading what an application shows from its AT-SPI tree, in few D-Bus round trips.

Standalone (standard library; the accessibles are Debian's ``pyatspi`` objects), imported by
:mod:`dvoc_bench.scenes.desktop.atspi_runner` under the system Python.

What is read (:func:`walk`): from the showing windows down, an accessible whose ``SHOWING`` state is off is
skipped with its whole subtree; so is one whose extents lie outside the *visible region* — the screen,
narrowed by every scrolling ancestor (``scroll pane``, ``viewport``) and every container that manages its
descendants (a table or list whose cells are made on demand). Boxes are clipped to that region.

A big container (more than :data:`SCAN_ALL` children, or ``MANAGES_DESCENDANTS``: GTK's tree views mark
every cell of every row ``SHOWING``, 6,800 cells on zenity's file chooser over ``/usr/share/doc``) is not
read child by child: its first :data:`HEAD` children (column headers) are read, then a binary search over
the children's extents (they run top to bottom in reading order) finds the first one that reaches the
visible region, and children are read from there until one starts below it (:func:`visible_children`):
about ``log2(n)`` extents plus the visible rows instead of ``n``.

Names as users see them (:func:`display_name`): an accessible with an empty name is named by its
description (GTK copies a tooltip there), else by the accessible that labels it (``labelled-by``), else by
its image's description (an icon-only button), and the record says which field named it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

HIDDEN = -(2**31)
"""AT-SPI's extents of an accessible that is not laid out (a hidden table cell)."""
CLIPPING = {"scroll pane", "viewport"}
"""Roles whose box bounds what of their subtree is visible."""
SCAN_ALL = 200
"""Children read one by one up to this count; a bigger container is read by :func:`visible_children`."""
HEAD = 16
"""Leading children of a big container always read (a table's column headers come first)."""
MISSES = 64
"""Children of a big container past the visible ones (no extents, or outside the region) read before
the scan stops."""
MAX_CHILDREN = 100_000
"""Children read at most from one container."""


@dataclass
class Node:
    """One showing accessible with a box in the visible region."""

    obj: Any
    """The accessible (a ``pyatspi`` object)."""
    box: list[int]
    """``[x0, y0, x1, y1]`` screen pixels, inclusive, clipped to the visible region."""
    role: str
    """AT-SPI role name (``push button``)."""
    name: str
    """The name the target syntax matches: the accessible name, or the fallback of :func:`display_name`."""
    named_by: str
    """Which field gave :attr:`name`: ``name``, ``description``, ``labelled-by``, ``image`` or ``""``."""
    key: str
    """A stable key of the accessible within the application (its D-Bus object path)."""


def intersect(a: list[int] | None, b: list[int] | None) -> list[int] | None:
    """The intersection of two inclusive boxes (``None`` if empty or either is ``None``)."""
    if a is None or b is None:
        return None
    x0, y0, x1, y1 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    return [x0, y0, x1, y1] if x1 >= x0 and y1 >= y0 else None


def extents(a: Any, coords: int) -> list[int] | None:
    """The accessible's unclipped box ``[x0, y0, x1, y1]`` (``None``: no component, or not laid out)."""
    try:  # the Component method on the object itself (``queryComponent`` costs a lookup per call)
        e = a.get_extents(coords)
    except Exception:
        return None
    if e.x <= HIDDEN or e.y <= HIDDEN or e.width <= 0 or e.height <= 0:
        return None
    return [e.x, e.y, e.x + e.width - 1, e.y + e.height - 1]


def display_name(a: Any, pyatspi: Any) -> tuple[str, str]:
    """``(name, field)``: the accessible name, else the description, the ``labelled-by`` accessible's name,
    the image description — the first non-empty one, whitespace collapsed — and which field it came from."""
    name = " ".join((a.name or "").split())
    if name:
        return name, "name"
    with contextlib.suppress(Exception):
        desc = " ".join((a.description or "").split())
        if desc:
            return desc, "description"
    with contextlib.suppress(Exception):
        for rel in a.getRelationSet():
            if rel.getRelationType() != pyatspi.RELATION_LABELLED_BY:
                continue
            for i in range(rel.getNTargets()):
                label = " ".join((rel.getTarget(i).name or "").split())
                if label:
                    return label, "labelled-by"
    with contextlib.suppress(Exception):
        img = " ".join((a.queryImage().imageDescription or "").split())
        if img:
            return img, "image"
    return "", ""


def visible_children(a: Any, n: int, region: list[int], coords: int) -> list[tuple[Any, list[int] | None]]:
    """The children of a big container that can reach ``region``, with their extents: the first
    :data:`HEAD`, then (binary search on the children's extents, top to bottom) from the first that ends at
    or below the region's top until one starts below its bottom."""
    n = min(n, MAX_CHILDREN)
    out = []
    for i in range(min(n, HEAD)):
        with contextlib.suppress(Exception):
            kid = a.getChildAtIndex(i)
            if kid is not None:
                out.append((kid, extents(kid, coords)))
    lo, hi = min(n, HEAD), n
    while lo < hi:  # the first child whose bottom reaches the region (unknown extents: not above it)
        mid = (lo + hi) // 2
        try:
            box = extents(a.getChildAtIndex(mid), coords)
        except Exception:
            box = None
        if box is not None and box[3] < region[1]:
            lo = mid + 1
        else:
            hi = mid
    inside, misses = False, 0
    for i in range(lo, n):
        try:
            kid = a.getChildAtIndex(i)
        except Exception:
            continue
        if kid is None:
            continue
        box = extents(kid, coords)
        if box is not None and box[1] > region[3]:
            break
        if intersect(box, region) is None:
            misses += 1
            if inside and misses > MISSES:  # past the visible rows (GTK: not laid out, no extents)
                break
            continue
        inside, misses = True, 0
        out.append((kid, box))
    return out


def walk(
    windows: list[Any], screen: list[int], pyatspi: Any, named: set[str], on_screen: bool = True
) -> list[Node]:
    """Every showing accessible with a box in the visible region, in tree order (see the module
    docstring); an unnamed one of a role in ``named`` gets the fallback name of :func:`display_name`.
    ``on_screen=False``: the region is not bounded by the screen (to say where a target not on it lies)."""
    coords = pyatspi.DESKTOP_COORDS
    showing, manages = pyatspi.STATE_SHOWING, pyatspi.STATE_MANAGES_DESCENDANTS
    big = 2**30
    region = [0, 0, screen[0] - 1, screen[1] - 1] if on_screen else [-big, -big, big, big]
    out: list[Node] = []
    unknown: Any = object()
    stack: list[tuple[Any, list[int], Any]] = [(w, region, unknown) for w in reversed(windows)]
    while stack:
        a, clip, raw = stack.pop()
        try:
            state = a.getState()
            if not state.contains(showing):
                continue
            role = a.getRoleName()
            n = a.childCount
        except Exception:
            continue
        if raw is unknown:
            raw = extents(a, coords)
        box = intersect(raw, clip)
        if raw is not None and box is None:
            continue  # laid out outside the visible region: so is what is inside it
        if box is not None:
            if role in named:
                name, field = display_name(a, pyatspi)
            else:
                name = " ".join((a.name or "").split())
                field = "name" if name else ""
            key = ""
            with contextlib.suppress(Exception):
                key = str(a.path)
            out.append(Node(a, box, role, name, field, key))
        inner = clip
        many = n > SCAN_ALL or state.contains(manages)
        if box is not None and (role in CLIPPING or many):
            inner = box
        kids: list[tuple[Any, Any]] = []
        if many:
            kids = visible_children(a, n, inner, coords)
        else:
            for i in range(min(n, MAX_CHILDREN)):
                with contextlib.suppress(Exception):
                    kid = a.getChildAtIndex(i)
                    if kid is not None:
                        kids.append((kid, unknown))
        stack.extend((k, inner, r) for k, r in reversed(kids))
    return out


VALUED = {"slider", "spin button", "scroll bar", "progress bar", "level bar", "dial", "split pane"}
"""Roles whose ``Value`` interface :func:`inspect` reads."""
TEXTUAL = {"text", "entry", "password text", "spin button", "editbar", "paragraph", "terminal"}
"""Roles whose ``Text`` interface :func:`inspect` reads."""
MAX_TEXT = 2000
"""Characters of an accessible's text :func:`inspect` keeps."""


def inspect(
    nodes: list[tuple[Any, str, Node]], pyatspi: Any, states: tuple[str, ...]
) -> list[dict[str, Any]]:
    """Per ``(object, id, node)``: its id, role, name, box, the ``states`` it has, and for the roles of
    :data:`VALUED` its value (``[current, min, max]``), for :data:`TEXTUAL` its text (``None`` where the
    interface is missing)."""
    out = []
    for a, eid, n in nodes:
        row: dict[str, Any] = {"id": eid, "role": n.role, "name": n.name, "box": n.box, "states": []}
        with contextlib.suppress(Exception):
            st = a.getState()
            row["states"] = [s for s in states if st.contains(getattr(pyatspi, "STATE_" + s.upper()))]
        if n.role in VALUED:
            with contextlib.suppress(Exception):
                v = a.queryValue()
                row["value"] = [float(v.currentValue), float(v.minimumValue), float(v.maximumValue)]
        if n.role in TEXTUAL:
            with contextlib.suppress(Exception):
                t = a.queryText()
                row["text"] = t.getText(0, min(t.characterCount, MAX_TEXT))
        out.append(row)
    return out
