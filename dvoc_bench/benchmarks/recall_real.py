"""Detector recall and precision on the real screens with truth: CUActSpot (truth: the bounding boxes of
its Target polygons) and precision-cua-bench (truth: its target boxes), per set and category.

    python -m dvoc_bench.bench recall --cuactspot DIR --precision-cua DIR [--detectors omniparser,cv]

Each screenshot goes once through the detector and the SoM marking rule (as ``recall``'s pages:
:func:`dvoc_bench.draw.som_render.marks_from_detections`); its truth boxes are matched one-to-one to the
marks by :func:`dvoc_bench.benchmarks.recall.match_pairs` (greedy, IoU >= 0.5). Per set and category:

- **recall** (IoU rule): truth boxes matched by a mark at IoU >= 0.5;
- **marked** (containment rule, ``som.target_detected``'s): truth boxes whose centre lies in a mark's box;
- **precision**: marks matched to a truth box. These sets annotate the targets of their tasks only, not
  every element of a screen, so a mark on an unannotated button counts as unmatched: precision is a lower
  bound. On precision-cua-bench a screenshot mixes categories: precision is given per set only.

Every rate has the project's one interval (:func:`dvoc_bench.analysis.clustered.clustered_rate_interval`,
Wilson 95 %), clustered by screenshot (the unit: the boxes of one screen share its detection). Boxes are
continuous pixel boxes as the sets write them; duplicate boxes of one screenshot (precision-cua-bench asks
for most targets twice) count once; a precision-cua-bench row without a box (its release has 1,026) is
left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from dvoc_bench.analysis.clustered import clustered_rate_interval
from dvoc_bench.analysis.intervals import interval_name
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.detect.types import Detector
from dvoc_bench.draw.som_render import marks_from_detections

IOU_MIN = 0.5
"""A mark matches a truth box at this IoU or more (as ``recall``'s pages)."""
INTERVAL = interval_name(clustered=True, by="screenshot")


@dataclass(frozen=True)
class TruthScreen:
    """One screenshot of a set and its truth boxes."""

    set: str
    """``cuactspot`` or ``precision_cua``."""
    id: str
    """The sample id (CUActSpot) or the image's file name (precision-cua-bench)."""
    image: Path
    """The screenshot."""
    boxes: tuple[Box, ...]
    """Truth boxes, continuous image pixels."""
    categories: tuple[str, ...]
    """Each box's category (CUActSpot's, precision-cua-bench's ``label_type``)."""


@dataclass(frozen=True)
class Outcome:
    """One detector on one screenshot."""

    screen: TruthScreen
    """The screenshot."""
    matched: tuple[bool, ...]
    """Per truth box: matched one-to-one by a mark at IoU >= :data:`IOU_MIN`."""
    marked: tuple[bool, ...]
    """Per truth box: its centre lies in a mark's box."""
    marks_matched: tuple[bool, ...]
    """Per mark: matched to a truth box."""
    ms: float
    """Detector wall time."""


def cuactspot_screens(root: Path) -> list[TruthScreen]:
    """Every CUActSpot sample with its screenshot: the bounding boxes of its Target polygons, clipped to the
    image (a Banned polygon is no element to find)."""
    from dvoc_bench.core.polygons import bounds
    from dvoc_bench.scenes import cuactspot
    from dvoc_bench.scenes.datasets import DatasetSpec

    out = []
    for s in cuactspot.load(DatasetSpec(cuactspot.FORMAT, root), "en"):
        if not s.image.is_file() or not s.targets:
            continue
        with Image.open(s.image) as im:
            w, h = im.size
        boxes = []
        for r in s.targets:
            b = bounds(r.points)
            boxes.append(Box(max(b.x0, 0.0), max(b.y0, 0.0), min(b.x1, float(w)), min(b.y1, float(h))))
        cat = str(s.meta.get("category") or "-")
        out.append(TruthScreen("cuactspot", s.id, s.image, tuple(boxes), (cat,) * len(boxes)))
    return out


def precision_cua_screens(root: Path) -> list[TruthScreen]:
    """precision-cua-bench's screenshots, each with the distinct target boxes of its rows (rows without a
    box left out)."""
    from dvoc_bench.scenes import precision_cua
    from dvoc_bench.scenes.datasets import DatasetSpec

    samples, problems = precision_cua.load(DatasetSpec(precision_cua.FORMAT, root))
    by_image: dict[Path, dict[tuple[float, ...], str]] = {}
    for s in samples:
        if s.id in problems:
            continue
        cat = str(s.meta.get("category") or "-")
        by_image.setdefault(s.image, {}).setdefault(tuple(s.box.as_list()), cat)
    return [
        TruthScreen("precision_cua", img.name, img, tuple(Box(*k) for k in boxes), tuple(boxes.values()))
        for img, boxes in sorted(by_image.items())
    ]


def score_screen(screen: TruthScreen, detector: Detector) -> Outcome:
    """The detector's marks on one screenshot against its truth boxes."""
    from dvoc_bench.benchmarks.recall import match_pairs

    with Image.open(screen.image) as im:
        image = np.asarray(im.convert("RGB"))
    run = detector.run(image)
    marks = marks_from_detections(run.detections, Size(image.shape[1], image.shape[0]))
    pairs = match_pairs(screen.boxes, [m.box for m in marks], IOU_MIN)
    truth_hit = {i for i, _ in pairs}
    mark_hit = {j for _, j in pairs}
    marked = tuple(any(m.box.contains(Point(b.centre.x, b.centre.y)) for m in marks) for b in screen.boxes)
    return Outcome(
        screen,
        tuple(i in truth_hit for i in range(len(screen.boxes))),
        marked,
        tuple(j in mark_hit for j in range(len(marks))),
        run.wall_ms,
    )


def _rate(values: Sequence[bool], clusters: Sequence[str]) -> str:
    if not values:
        return "-"
    lo, hi = clustered_rate_interval(np.asarray(values, dtype=float), np.asarray(clusters))
    return f"{100 * float(np.mean(values)):.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"


def table_rows(outcomes: Sequence[Outcome], detector: str) -> list[list[str]]:
    """Rows ``set, category, detector, screenshots, boxes, recall, marked, marks, precision, ms``: per set
    and category, then per set (``all``)."""
    rows = []
    for set_name in dict.fromkeys(o.screen.set for o in outcomes):
        mine = [o for o in outcomes if o.screen.set == set_name]
        cats = sorted({c for o in mine for c in o.screen.categories})
        one_per_screen = all(len(set(o.screen.categories)) <= 1 for o in mine)
        for cat in [*cats, "all"]:
            rec: list[bool] = []
            mk: list[bool] = []
            rc: list[str] = []
            prec: list[bool] = []
            pc: list[str] = []
            screens = set()
            for o in mine:
                idx = [i for i, c in enumerate(o.screen.categories) if cat in ("all", c)]
                if not idx:
                    continue
                screens.add(o.screen.id)
                rec += [o.matched[i] for i in idx]
                mk += [o.marked[i] for i in idx]
                rc += [o.screen.id] * len(idx)
                if cat == "all" or one_per_screen:
                    prec += list(o.marks_matched)
                    pc += [o.screen.id] * len(o.marks_matched)
            ms = float(np.median([o.ms for o in mine if o.screen.id in screens]))
            n_marks = str(len(prec)) if prec else "-"
            rows.append([set_name, cat, detector, str(len(screens)), str(len(rec)), _rate(rec, rc),
                         _rate(mk, rc), n_marks, _rate(prec, pc), f"{ms:.0f}"])  # fmt: skip
    return rows


HEADS = ["set", "category", "detector", "screenshots", "truth boxes", "recall (IoU >= 0.5)",
         "marked (centre in a mark)", "marks", "precision", "median ms"]  # fmt: skip


def format_real(rows: Sequence[list[str]]) -> str:
    """The markdown table and its legend (rules, interval, unit)."""
    from dvoc_bench.benchmarks.recall import _markdown

    legend = (
        f"Rates in % of truth boxes (recall, marked) or of marks (precision), interval {INTERVAL}. recall: a "
        f"truth box matched one-to-one by a SoM mark at IoU >= {IOU_MIN}; marked: a mark's box contains the "
        "box's centre; precision: marks matched to a truth box, a lower bound (the sets annotate their "
        "tasks' targets only). Truth: CUActSpot's Target polygons' bounding boxes, precision-cua-bench's "
        "target boxes (distinct per screenshot)."
    )
    return _markdown(HEADS, [list(r) for r in rows]) + "\n" + legend


def run_real(
    detectors: dict[str, Detector], cuactspot: Path | None, precision: Path | None
) -> list[list[str]]:
    """Every screenshot of the sets given, through each detector; the table's rows."""
    screens = (cuactspot_screens(cuactspot) if cuactspot else []) + (
        precision_cua_screens(precision) if precision else []
    )
    rows: list[list[str]] = []
    for name, det in detectors.items():
        rows += table_rows([score_screen(s, det) for s in screens], name)
    return rows
