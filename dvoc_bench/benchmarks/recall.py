"""Detector recall on real pages: can Set-of-Mark work on a page before any model is asked?

    python -m dvoc_bench.bench recall [--detectors oracle,cv,omniparser] [--tasks W1,...,W5,D1,...,D4]
        [--docs] [--screenspot N] [--task-file T.yaml ...] [--page P.html ...] [--root DIR]
        [--onnx-model M.onnx --onnx-anchors A] [--omniparser-model model.pt] [--imgsz 640,1280]
        [--selector CSS] [--csv outputs/detector_recall.csv] [--frames DIR]

Each page is rendered by the web scene machinery (:mod:`dvoc_bench.scenes.web.source`: the repository's W1-W5,
any task YAML, or any local page; a ``--page`` needs no task: its target is ``--selector``, by default
its first visible interactive element); ``--docs`` adds six documentation pages installed here, ``D1``-``D4``
in ``--tasks`` the desktop applications (truth: the toolkit's widgets), ``--screenspot N`` N screens of a
ScreenSpot-format fixture (truth: its annotations, every sample a target; see
:mod:`dvoc_bench.benchmarks.recall_sets`). ``omniparser`` runs at each ``--imgsz`` given (``omniparser@640``,
``omniparser@1280``). The truth of a page is the DOM's: every visible interactive element the scene measured
(links, buttons, inputs, selects, text areas, ARIA widget roles, ``onclick`` and focusable elements; clipped
to the viewport), the target included. Each detector's boxes go through the SoM marking rule (boxes over
half the screen dropped, at most 50: :func:`dvoc_bench.draw.som_render.marks_from_detections`); then per
page:

- **recall**: share of truth elements matched one-to-one (greedy, highest IoU first) by a mark with
  IoU >= 0.5;
- **precision**: share of marks matched to a truth element;
- **target marked**: a mark's box contains the target's centre (the rule of ``som.target_detected``;
  lenient: a panel's box around the target counts);
- **target boxed**: a mark fits the target itself, IoU >= 0.5.

Boxes are compared as continuous pixel boxes (a DOM element on pixels ``x0..x1`` is ``[x0, x1 + 1)``).
The ``all`` row pools the elements and marks of every page, an ``all <set>`` row those of one set (web,
docs, desktop, screenspot, pages); ``ms`` is the detector's wall time per screen (pooled rows: the
median), and a second table puts the detectors side by side per set. A real dataset has no full truth: for
it only the share of targets that received a mark is defined, :func:`target_marked_share` (a list of
``(image, target box)`` pairs). ``--cuactspot DIR`` / ``--precision-cua DIR`` measure instead the real
screens with truth of those sets, per set and category (:mod:`dvoc_bench.benchmarks.recall_real`: their
boxes as truth, recall, centre-in-mark and precision with intervals). ``--frames`` writes each page's
SoM frame (``avoid`` tags) and the table
counts its tag overlaps.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dvoc_bench.benchmarks.recall_sets import D_TASKS
from dvoc_bench.core.geometry import Box, Point, box_iou
from dvoc_bench.core.scene import Snapshot
from dvoc_bench.detect.types import Detector
from dvoc_bench.draw.som_render import MAX_AREA_FRAC, Mark, marks_from_detections

if TYPE_CHECKING:
    from dvoc_bench.detect.config import DetectorConfig

IOU_MIN = 0.5
"""A mark matches a DOM element at this IoU or more."""

W_TASKS = ("W1", "W2", "W3", "W4", "W5")
"""The repository's web tasks (``scenes/web``)."""

PAGE_SELECTOR = (
    ":is(a[href], button, input:not([type=hidden]), select, textarea, [role=button], [role=link]) "
    ">> visible=true >> nth=0"
)
"""The target of a ``--page`` (recall needs none; the scene machinery wants one): its first visible
interactive element."""


@dataclass(frozen=True)
class PageScore:
    """One detector on one page (or ``all`` pages pooled)."""

    page: str
    """Scene id (``all`` for the pooled row)."""
    detector: str
    """Backend."""
    elements: int
    """Visible interactive DOM elements (the truth)."""
    boxes: int
    """Boxes the detector returned."""
    marks: int
    """Boxes marked (SoM's rule)."""
    matched: int
    """DOM elements matched one-to-one by a mark at IoU >= 0.5."""
    recall: float | None
    """``matched / elements``."""
    precision: float | None
    """``matched / marks``."""
    targets: int
    """Targets counted (1 per page)."""
    targets_marked: int
    """Targets whose centre lies in a mark's box."""
    targets_boxed: int
    """Targets fitted by a mark at IoU >= 0.5."""
    tag_overlaps: int | None
    """Tags drawn over another tag in the page's SoM frame (``--frames``), else ``None``."""
    detector_ms: float
    """Detector wall time (summed in the pooled row)."""
    median_ms: float | None = None
    """Median detector wall time per screen (pooled rows only)."""


def truth_boxes(snapshot: Snapshot) -> list[Box]:
    """The page's visible interactive DOM elements as continuous boxes (a ``panel`` target is left out:
    it is no interactive element)."""
    return [_continuous(e.box) for e in snapshot.truth.elements if e.interactive and e.role != "panel"]


def _continuous(b: Box) -> Box:
    """An inclusive pixel box (``x0..x1``) as the continuous box ``[x0, x1 + 1)``."""
    return Box(b.x0, b.y0, b.x1 + 1.0, b.y1 + 1.0)


def match_count(truth: Sequence[Box], found: Sequence[Box], iou_min: float = IOU_MIN) -> int:
    """Pairs matched one-to-one, greedily by descending IoU, each at ``iou_min`` or more."""
    return len(match_pairs(truth, found, iou_min))


def match_pairs(
    truth: Sequence[Box], found: Sequence[Box], iou_min: float = IOU_MIN
) -> list[tuple[int, int]]:
    """The ``(truth index, found index)`` pairs matched one-to-one, greedily by descending IoU, each at
    ``iou_min`` or more."""
    pairs = sorted(
        ((box_iou(t, f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found)),
        key=lambda p: -p[0],
    )
    used_t: set[int] = set()
    used_f: set[int] = set()
    out = []
    for v, i, j in pairs:
        if v < iou_min:
            break
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
            out.append((i, j))
    return out


def target_marked(marks: Sequence[Mark], target: Box) -> bool:
    """A mark's box contains the target's centre (``som.target_detected``)."""
    c = target.centre
    return any(m.box.contains(Point(c.x, c.y)) for m in marks)


def target_marked_share(
    detector: Detector, items: Iterable[tuple[np.ndarray, Box]], *, max_area_frac: float = MAX_AREA_FRAC
) -> tuple[int, int]:
    """Datasets (no DOM): ``(targets marked, targets)`` over ``(image, target box)`` pairs, the target box
    in the image's pixels; a target is marked when a SoM mark's box contains its centre."""
    from dvoc_bench.core.geometry import Size

    k = n = 0
    for image, target in items:
        dets = detector.detect(image)
        marks = marks_from_detections(dets, Size(image.shape[1], image.shape[0]), max_area_frac=max_area_frac)
        k += target_marked(marks, target)
        n += 1
    return k, n


def score_page(
    snapshot: Snapshot,
    detector: Detector,
    name: str,
    *,
    frames: Path | None = None,
    targets: Sequence[Box] | None = None,
) -> PageScore:
    """One detector on one rendered page (see the module docstring); ``targets`` (inclusive pixel boxes):
    the screen's targets when it has several (a dataset screen), else the snapshot's."""
    targets = [snapshot.target_box] if targets is None else list(targets)
    run = detector.run(snapshot.image)
    marks = marks_from_detections(run.detections, snapshot.size)
    truth = truth_boxes(snapshot)
    matched = match_count(truth, [m.box for m in marks])
    overlaps = None
    if frames is not None:
        from dvoc_bench.draw.render import encode_png
        from dvoc_bench.draw.som_render import draw_marks, plan_marks

        layout = plan_marks(snapshot.image, marks)
        overlaps = layout.tag_overlaps
        frames.mkdir(parents=True, exist_ok=True)
        png = encode_png(draw_marks(snapshot.image, marks, layout=layout))
        (frames / f"{snapshot.scene_id}-{name}.png").write_bytes(png)
    return PageScore(
        page=snapshot.scene_id,
        detector=name,
        elements=len(truth),
        boxes=len(run.detections),
        marks=len(marks),
        matched=matched,
        recall=matched / len(truth) if truth else None,
        precision=matched / len(marks) if marks else None,
        targets=len(targets),
        targets_marked=sum(target_marked(marks, t) for t in targets),
        targets_boxed=sum(any(box_iou(_continuous(t), m.box) >= IOU_MIN for m in marks) for t in targets),
        tag_overlaps=overlaps,
        detector_ms=round(run.wall_ms, 1),
    )


def page_set(page: str) -> str:
    """The set a page belongs to: ``web`` (W1-W5), ``docs`` (DOC*), ``desktop`` (D1-D4), ``screenspot``
    (SS*), else ``pages`` (``--page`` and ``--task-file``)."""
    if page in W_TASKS:
        return "web"
    if page.startswith("DOC"):
        return "docs"
    if page in D_TASKS:
        return "desktop"
    if page.startswith("SS") and page[2:].isdigit():
        return "screenspot"
    return "pages"


def pooled(rows: Sequence[PageScore], detector: str, only: str | None = None) -> PageScore:
    """The ``all`` row of one detector (``only``: of one set, ``all <set>``): elements, marks and matches
    summed over pages, the median of the detector's time per page."""
    mine = [r for r in rows if r.detector == detector and (only is None or page_set(r.page) == only)]
    el, mk, mt = (sum(getattr(r, k) for r in mine) for k in ("elements", "marks", "matched"))
    ov = [r.tag_overlaps for r in mine if r.tag_overlaps is not None]
    return PageScore(
        page="all" if only is None else f"all {only}",
        detector=detector,
        elements=el,
        boxes=sum(r.boxes for r in mine),
        marks=mk,
        matched=mt,
        recall=mt / el if el else None,
        precision=mt / mk if mk else None,
        targets=sum(r.targets for r in mine),
        targets_marked=sum(r.targets_marked for r in mine),
        targets_boxed=sum(r.targets_boxed for r in mine),
        tag_overlaps=sum(ov) if ov else None,
        detector_ms=round(sum(r.detector_ms for r in mine), 1),
        median_ms=round(float(np.median([r.detector_ms for r in mine])), 1) if mine else None,
    )


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def format_table(rows: Sequence[PageScore]) -> str:
    """A markdown table of the scores (one line per page and detector, pooled rows last)."""
    heads = ["page", "detector", "truth elements", "marks", "matched", "recall", "precision", "target marked"]
    heads += ["target boxed", "ms"]
    with_frames = any(r.tag_overlaps is not None for r in rows)
    if with_frames:
        heads.append("tag overlaps")
    body = []
    for r in rows:
        cells = [r.page, r.detector, str(r.elements), str(r.marks), str(r.matched), _pct(r.recall)]
        cells += [_pct(r.precision), f"{r.targets_marked}/{r.targets}", f"{r.targets_boxed}/{r.targets}"]
        cells.append(f"{r.detector_ms:.0f}" if r.median_ms is None else f"{r.median_ms:.0f} (median)")
        if with_frames:
            cells.append("-" if r.tag_overlaps is None else str(r.tag_overlaps))
        body.append(cells)
    return _markdown(heads, body)


def _markdown(heads: list[str], body: list[list[str]]) -> str:
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(heads)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [line(heads), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(b) for b in body)]
    return "\n".join(out)


def format_side_by_side(rows: Sequence[PageScore]) -> str:
    """The pooled rows per set, one column group per detector: ``recall / precision``, targets marked,
    targets boxed, median ms per screen."""
    pools = [r for r in rows if r.page.startswith("all")]
    detectors = list(dict.fromkeys(r.detector for r in pools))
    sets = list(dict.fromkeys(r.page for r in pools))
    by = {(r.page, r.detector): r for r in pools}
    heads = ["set", "elements"]
    for d in detectors:
        heads += [f"{d} recall / precision", "marked", "boxed", "ms"]
    body = []
    for s in sets:
        first = next(by[(s, d)] for d in detectors if (s, d) in by)
        cells = [s.removeprefix("all ") if s != "all" else "all", str(first.elements)]
        for d in detectors:
            r = by.get((s, d))
            if r is None:
                cells += ["-"] * 4
                continue
            cells += [f"{_pct(r.recall)} / {_pct(r.precision)}", f"{r.targets_marked}/{r.targets}"]
            cells += [f"{r.targets_boxed}/{r.targets}", "-" if r.median_ms is None else f"{r.median_ms:.0f}"]
        body.append(cells)
    return _markdown(heads, body)


def write_csv(rows: Sequence[PageScore], path: Path) -> None:
    """The rows as CSV (one column per :class:`PageScore` field)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(PageScore.__dataclass_fields__))
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})


# ----------------------------------------------------------------------------------------------- CLI


DETECTORS = ("oracle", "cv", "onnx", "omniparser")
"""The detectors this benchmark runs."""


def _web_tasks(args: argparse.Namespace, docs_dir: Path | None) -> list:
    from dvoc_bench.scenes import default_scenes_dir
    from dvoc_bench.scenes.web.source import load_task, task_from_mapping

    tasks = [load_task(default_scenes_dir() / "web" / f"{t}.yaml") for t in args.tasks if t in W_TASKS]
    if docs_dir is not None:
        from dvoc_bench.benchmarks.recall_sets import docs_task_files

        files, absent = docs_task_files(docs_dir)
        for a in absent:
            print(f"--docs: left out: {a}", file=sys.stderr)
        tasks += [load_task(f) for f in files]
    tasks += [load_task(Path(f)) for f in args.task_file]
    for p in args.page:
        page = Path(p).resolve()
        raw = {
            "id": page.stem,
            "page": str(page),
            "instruction": "(recall: no task)",
            "selector": args.selector,
        }
        if args.selector != PAGE_SELECTOR:
            raw["wait_for"] = args.selector
        if args.root:
            raw["root"] = str(Path(args.root).resolve())
        tasks.append(task_from_mapping(raw, base=Path.cwd(), where=f"--page {p}"))
    return tasks


def _snapshots(args: argparse.Namespace) -> list[tuple[Snapshot, list[Box] | None]]:
    """Every screen measured, with its targets when it has several (``None``: the snapshot's one)."""
    import tempfile

    from dvoc_bench.benchmarks.recall_sets import desktop_screens, screenspot_screens
    from dvoc_bench.scenes.web.source import WebOptions, WebScenes

    out: list[tuple[Snapshot, list[Box] | None]] = []
    with tempfile.TemporaryDirectory(prefix="dvoc-recall-docs-") as d:
        tasks = _web_tasks(args, Path(d) if args.docs else None)
        if tasks:
            web = WebScenes(WebOptions(timeout_s=args.timeout))
            try:
                out += [(web.render(t).snapshot, None) for t in tasks]
            finally:
                web.close()
    desk = [t for t in args.tasks if t in D_TASKS]
    if desk:
        out += [(s, None) for s, _ in desktop_screens(desk)]
    if args.screenspot:
        out += [(s, list(t)) for s, t in screenspot_screens(args.screenspot)]
    return out


def _same(det: Detector) -> Callable[[Snapshot], Detector]:
    """One detector for every page."""
    return lambda _s: det


def _oracle(cfg: DetectorConfig) -> Callable[[Snapshot], Detector]:
    """The oracle of each page's own truth."""
    from dvoc_bench.detect.service import build_detector

    return lambda s: build_detector(cfg, s.truth)


def _detectors(args: argparse.Namespace) -> dict[str, Callable[[Snapshot], Detector]]:
    from dvoc_bench.detect.config import detector_config
    from dvoc_bench.detect.service import build_detector

    out: dict[str, Callable[[Snapshot], Detector]] = {}
    for name in args.detectors:
        if name == "oracle":
            out[name] = _oracle(detector_config("oracle"))
        elif name == "cv":
            out[name] = _same(build_detector(detector_config("cv")))
        elif name == "onnx":
            node = {"backend": "onnx", "model": args.onnx_model, "anchors": args.onnx_anchors}
            out[name] = _same(build_detector(detector_config(node)))
        elif name == "omniparser":
            for size in args.imgsz:
                node = {"backend": "omniparser", "model": args.omniparser_model, "imgsz": size}
                label = name if len(args.imgsz) == 1 else f"{name}@{size}"
                out[label] = _same(build_detector(detector_config(node)))
    return out


def run(args: argparse.Namespace) -> list[PageScore]:
    """Render the pages, run every detector on each, and return the per-page rows, then the pooled rows
    of each set (when there are several) and of all pages."""
    detectors = _detectors(args)  # first: a bad model or anchors fails before any page is rendered
    shots = _snapshots(args)
    frames = Path(args.frames) if args.frames else None
    rows = [
        score_page(s, make(s), name, frames=frames, targets=t)
        for name, make in detectors.items()
        for s, t in shots
    ]
    sets = list(dict.fromkeys(page_set(r.page) for r in rows))
    pools = [pooled(rows, name, only) for only in sets for name in detectors] if len(sets) > 1 else []
    return rows + pools + [pooled(rows, name) for name in detectors]


def _real(args: argparse.Namespace) -> int:
    """``--cuactspot`` / ``--precision-cua``: the real-screen table (no web page is rendered)."""
    from dvoc_bench.benchmarks.recall_real import format_real, run_real
    from dvoc_bench.core.declare import ConfigError

    made = _detectors(args)
    if "oracle" in made:
        raise ConfigError("--detectors: the oracle marks the truth itself; measure cv, onnx or omniparser")
    dets = {name: make(None) for name, make in made.items()}  # type: ignore[arg-type]
    for flag, value in (("--cuactspot", args.cuactspot), ("--precision-cua", args.precision_cua)):
        if value and not Path(value).is_dir():
            raise ConfigError(f"{flag}: not a directory: {value}")
    rows = run_real(dets, Path(args.cuactspot) if args.cuactspot else None,
                    Path(args.precision_cua) if args.precision_cua else None)  # fmt: skip
    print(format_real(rows))
    return 0


def main(argv: list[str] | None = None) -> int:
    from dvoc_bench.core.declare import ConfigError
    from dvoc_bench.detect.types import DetectorError

    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench recall",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--detectors", default=None, help="comma list of oracle, cv, onnx, omniparser (default: "
                    "oracle,cv; onnx is added when --onnx-model is given)")  # fmt: skip
    ap.add_argument(
        "--tasks", default=",".join(W_TASKS), help="repository web (W1-W5) and desktop (D1-D4) tasks "
        "(default W1-W5; '' none)"
    )  # fmt: skip
    ap.add_argument("--docs", action="store_true", help="add the six documentation pages installed here")
    ap.add_argument("--screenspot", type=int, default=0, metavar="N",
                    help="add N screens of a ScreenSpot-format fixture (12 elements each)")  # fmt: skip
    ap.add_argument("--task-file", action="append", default=[], help="a web task YAML (repeatable)")
    ap.add_argument("--page", action="append", default=[], help="a local HTML page (repeatable)")
    ap.add_argument("--selector", default=PAGE_SELECTOR, help="target of each --page (default: its first "
                    "visible link, button or input; it must lie in the viewport)")  # fmt: skip
    ap.add_argument(
        "--root", help="asset root for --page (files inside it may load; default: the page's folder)"
    )
    ap.add_argument("--onnx-model", help="YOLOv5 .onnx model for the onnx detector")
    ap.add_argument("--onnx-anchors", help="its RK_anchors.txt, or yolov5-default")
    ap.add_argument("--omniparser-model", help="OmniParser-v2's icon_detect/model.pt (default: the weights "
                    "the tests use, $DVOC_OMNIPARSER_WEIGHTS or the cache .ci/run fills)")  # fmt: skip
    ap.add_argument("--imgsz", default="640", help="omniparser letterbox sizes, comma list (default 640)")
    ap.add_argument(
        "--csv",
        default="outputs/detector_recall.csv",
        help="where the CSV goes (default: outputs/detector_recall.csv)",
    )
    ap.add_argument("--frames", help="folder for each page's SoM frame per detector (PNG)")
    ap.add_argument("--cuactspot", help="CUActSpot's folder (its <id>.json + <id>.png): recall per category")
    ap.add_argument("--precision-cua", help="precision-cua-bench's dataset/ folder: recall per label type")
    ap.add_argument("--timeout", type=float, default=30.0, help="page load timeout, seconds")
    args = ap.parse_args(argv)
    args.tasks = [t for t in args.tasks.split(",") if t.strip()]
    default = ["oracle", "cv"] + (["onnx"] if args.onnx_model else [])
    args.detectors = [d.strip() for d in args.detectors.split(",")] if args.detectors else default
    bad = [d for d in args.detectors if d not in DETECTORS]
    try:
        if bad:
            raise ConfigError(f"--detectors: unknown {', '.join(bad)}; allowed: {', '.join(DETECTORS)}")
        if "onnx" in args.detectors and not args.onnx_model:
            raise ConfigError("--onnx-model: the onnx detector needs a model")
        try:
            args.imgsz = [int(v) for v in args.imgsz.split(",") if v.strip()]
        except ValueError:
            raise ConfigError(f"--imgsz: expected a comma list of integers, got {args.imgsz!r}") from None
        if "omniparser" in args.detectors:
            from dvoc_bench.detect.omniparser import default_weights

            args.omniparser_model = args.omniparser_model or str(default_weights())
            if not Path(args.omniparser_model).is_file():
                raise ConfigError(f"--omniparser-model: no weights at {args.omniparser_model}")
        unknown = [t for t in args.tasks if t not in W_TASKS + D_TASKS]
        if unknown:
            allowed = ", ".join(W_TASKS + D_TASKS)
            raise ConfigError(f"--tasks: unknown {', '.join(unknown)}; allowed: {allowed}")
        if args.screenspot < 0:
            raise ConfigError(f"--screenspot: must be >= 0, got {args.screenspot}")
        if args.cuactspot or args.precision_cua:
            return _real(args)
        if not (args.tasks or args.task_file or args.page or args.docs or args.screenspot):
            raise ConfigError(
                "--tasks: no page to measure (give --tasks, --docs, --screenspot, --task-file or --page)"
            )
        rows = run(args)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    except DetectorError as e:
        print(f"config error: --detectors: {e}", file=sys.stderr)
        return 2
    print(
        f"detector recall against the truth (IoU >= {IOU_MIN}; marks = boxes SoM would draw: over half the "
        "screen dropped, at most 50)"
    )
    print(format_table(rows))
    print(
        "recall = truth elements (DOM, toolkit widgets, annotations) matched one-to-one by a mark; "
        "precision = marks matched to a truth element; target marked = a mark's box contains the target's "
        "centre; target boxed = a mark fits the target at IoU >= 0.5; ms = detector wall time per screen."
    )
    print()
    print(format_side_by_side(rows))
    write_csv(rows, Path(args.csv))
    print(f"csv: {args.csv}")
    return 0
