"""Polygon targets (CUActSpot's ``Target`` and ``Banned`` regions): pure geometry, no state.

A polygon is a sequence of ``(x, y)`` vertices in image pixels, closed implicitly (the last vertex joins
the first). A point on an edge or a vertex counts as inside, as in CUActSpot's own rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from dvoc_bench.core.geometry import Box, Point

Vertex = tuple[float, float]
"""One vertex, pixels."""

EDGE_TOL = 1e-9
"""Cross-product tolerance of "on the edge" (pixels squared)."""


def _cross(o: Vertex, a: Vertex, b: Vertex) -> float:
    """z of ``(a - o) x (b - o)``: > 0 when ``b`` is left of the ray ``o -> a``."""
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _on_segment(p: Vertex, a: Vertex, b: Vertex) -> bool:
    """Whether ``p`` lies on the closed segment ``a-b``."""
    if abs(_cross(a, b, p)) > EDGE_TOL:
        return False
    return (
        min(a[0], b[0]) - EDGE_TOL <= p[0] <= max(a[0], b[0]) + EDGE_TOL
        and min(a[1], b[1]) - EDGE_TOL <= p[1] <= max(a[1], b[1]) + EDGE_TOL
    )


def contains(polygon: Sequence[Vertex], point: Point | Vertex) -> bool:
    """Whether ``point`` lies inside ``polygon`` or on its boundary. Inside is the even-odd rule (a
    horizontal ray from the point crosses the boundary an odd number of times), as CUActSpot's rule has
    it, so a polygon that crosses itself is read the way the set's authors score it. Fewer than 3
    vertices: never."""
    if len(polygon) < 3:
        return False
    p = (point.x, point.y) if isinstance(point, Point) else (float(point[0]), float(point[1]))
    odd = False
    n = len(polygon)
    for i in range(n):
        a, b = polygon[i - 1], polygon[i]
        if _on_segment(p, a, b):
            return True
        if (a[1] > p[1]) != (b[1] > p[1]):  # the edge spans the ray's height (half-open at its ends)
            x = a[0] + (p[1] - a[1]) * (b[0] - a[0]) / (b[1] - a[1])
            if x > p[0]:
                odd = not odd
    return odd


def bounds(polygon: Sequence[Vertex]) -> Box:
    """The polygon's bounding box."""
    xs = [v[0] for v in polygon]
    ys = [v[1] for v in polygon]
    return Box(min(xs), min(ys), max(xs), max(ys))


def area(polygon: Sequence[Vertex]) -> float:
    """Unsigned area (shoelace formula), pixels squared."""
    n = len(polygon)
    twice = sum(
        polygon[i][0] * polygon[(i + 1) % n][1] - polygon[(i + 1) % n][0] * polygon[i][1] for i in range(n)
    )
    return abs(twice) / 2.0


def _meet(a: Vertex, b: Vertex, c: Vertex, d: Vertex) -> bool:
    """Whether the closed segments ``a-b`` and ``c-d`` meet (touching counts)."""
    d1, d2 = _cross(c, d, a), _cross(c, d, b)
    d3, d4 = _cross(a, b, c), _cross(a, b, d)
    if ((d1 > EDGE_TOL and d2 < -EDGE_TOL) or (d1 < -EDGE_TOL and d2 > EDGE_TOL)) and (
        (d3 > EDGE_TOL and d4 < -EDGE_TOL) or (d3 < -EDGE_TOL and d4 > EDGE_TOL)
    ):
        return True
    return _on_segment(a, c, d) or _on_segment(b, c, d) or _on_segment(c, a, b) or _on_segment(d, a, b)


def _meeting_point(a: Vertex, b: Vertex, c: Vertex, d: Vertex) -> Vertex | None:
    """Where the lines through ``a-b`` and ``c-d`` meet; ``None`` when they are parallel (an overlap)."""
    den = (a[0] - b[0]) * (c[1] - d[1]) - (a[1] - b[1]) * (c[0] - d[0])
    if abs(den) <= EDGE_TOL:
        return None
    t = ((a[0] - c[0]) * (c[1] - d[1]) - (a[1] - c[1]) * (c[0] - d[0])) / den
    return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))


def self_intersection(polygon: Sequence[Vertex], slack: float | None = None) -> tuple[int, int] | None:
    """The first pair of non-adjacent edges ``(i, j)`` (edge ``i`` joins vertex ``i`` to ``i + 1``) that
    meet, or ``None`` for a simple polygon. With ``slack``, a meeting within ``slack`` pixels of one of the
    two edges' ends (an annotator's stroke overshooting a corner; a collinear overlap, whose ends are
    vertices) is let pass: only a crossing away from the corners counts. A repeated consecutive vertex is
    not an edge and is skipped."""
    pts = [v for i, v in enumerate(polygon) if i == 0 or v != polygon[i - 1]]
    if len(pts) > 1 and pts[0] == pts[-1]:
        pts.pop()
    n = len(pts)
    for i in range(n):
        a, b = pts[i], pts[(i + 1) % n]
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:  # the closing edge shares vertex 0 with edge 0
                continue
            c, d = pts[j], pts[(j + 1) % n]
            if not _meet(a, b, c, d):
                continue
            if slack is not None:
                x = _meeting_point(a, b, c, d)
                near = x is None or min(math.dist(x, v) for v in (a, b, c, d)) <= slack
                if near:
                    continue
            return i, j
    return None


def inside_point(polygon: Sequence[Vertex], avoid: Sequence[Sequence[Vertex]] = ()) -> Point | None:
    """A point inside ``polygon`` and in none of the ``avoid`` polygons: its bounding box's centre when that
    will do, else the middle of the widest inside stretch of a horizontal line through it, trying lines
    at the box's middle first and then further out (9 heights); ``None`` when none of those will do."""
    box = bounds(polygon)

    def fits(p: Point) -> bool:
        return contains(polygon, p) and not any(contains(a, p) for a in avoid)

    if fits(box.centre):
        return box.centre
    n = len(polygon)
    for f in (0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9):
        y = box.y0 + f * (box.y1 - box.y0)
        xs = sorted(
            a[0] + (y - a[1]) * (b[0] - a[0]) / (b[1] - a[1])
            for a, b in ((polygon[i - 1], polygon[i]) for i in range(n))
            if (a[1] > y) != (b[1] > y)
        )
        stretches = sorted(zip(xs[::2], xs[1::2], strict=False), key=lambda s: s[0] - s[1])
        for lo, hi in stretches:  # widest first
            for t in (0.5, 0.25, 0.75):
                p = Point(lo + t * (hi - lo), y)
                if fits(p):
                    return p
    return None
