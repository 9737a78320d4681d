"""CUActSpot (microsoft/Phi-Ground, ``benchmark/CUActSpot``, MIT) as a task source:
``dataset=cuactspot dataset.root=DIR``.

``DIR`` holds ``<id>.json`` + ``<id>.png`` pairs as in the release's ``data/ActSpot/`` (or is the
benchmark's folder holding ``data/ActSpot/``). An annotation: ``image_id``, ``task`` (Chinese, or English
when the sample has no ``task_en``), ``task_en``, ``modality`` (the category; else the id's prefix:
Canvas, GUI, Image, Table, Text), ``polygons`` (``id``, ``type`` = ``Target | Banned``, ``rank``,
``points`` = ``[[x, y], ...]`` image pixels), ``masks`` (not used by the set's rule, not read).

The set's rule (its ``eval_utils.py``), reproduced by :func:`verdict`: no point in a Banned polygon; with
numeric ranks ``1..K`` the i-th point lies in a rank-i polygon; with empty ranks every Target polygon holds
some point. A point on an edge counts as inside. The task kind follows from how many points the rule
needs: ``click`` (one), ``drag`` (ranks 1 and 2), ``multi`` (more, or several unranked targets).

A click trial gives one point: ``hit`` (rule ``polygon``) is that point inside its polygon (rank 1, or
the first Target polygon of an unranked sample) and in no Banned polygon; the ``box`` rule uses that
polygon's bounding box (clipped to the image), the paper's radius and ``eps`` rules its centre. A drag is
one task with two points (``SceneTruth.ends``: ``<id>:from``, rank 1, and ``<id>:to``, rank 2, each with
the task text and a line saying which end to point at): its trial gives both, each scored on its own
polygons (the record's ``drag`` block), and it succeeds when both hit. A multi-point sample of ``K`` points
is ``K`` tasks ``<id>:1`` .. ``<id>:K``; point ``i`` may land where the set's rule allows (its rank;
unranked, any Target) and the sample succeeds when every point hits and together they cover ``K`` Targets
(:func:`dvoc_bench.analysis.datasets.points_success`).

A sample that cannot be used fails its own trials with one line naming it: unreadable JSON, no task
text, no Target polygon, a polygon with fewer than 3 points, a self-intersecting one (edges crossing
away from its corners, :data:`CORNER_SLACK_PX`), one reaching more
than :data:`EDGE_SLACK_PX` outside the image, ranks that are not ``1..K`` (a drag without rank 2), mixed
ranked and unranked targets, a missing or unreadable image.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.polygons import Vertex, area, bounds, contains, inside_point, self_intersection
from dvoc_bench.core.records import Probe, SceneKind
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes import sources as registry
from dvoc_bench.scenes.dataset_source import (
    DatasetChoice,
    ImageCache,
    LazySnapshot,
    SampleError,
    spec_from_options,
)
from dvoc_bench.scenes.datasets import DatasetSpec
from dvoc_bench.scenes.screen_sets import pick, size_class

FORMAT = "cuactspot"
WHERE_KEYS = ("category", "lang", "task_kind", "size_class")
"""``dataset.where`` keys."""
EDGE_SLACK_PX = 4.0
"""How far a polygon's vertex may lie outside the image (annotators' clicks on the last pixel column land
at ``width + 1``); further out, the sample fails. The rule scores the polygon as written."""
CORNER_SLACK_PX = 8.0
"""A polygon's edges may cross within this distance of a corner (the annotator's closing stroke
overshooting the first vertex: 17 polygons of the shared 158 samples, all within 7.2 px); a crossing
further from every corner makes the polygon self-intersecting and fails the sample. The polygon is scored
as written, by the even-odd rule, as the set's own rule does."""
CJK = re.compile(r"[\u3400-\u9fff]")

TaskKind = Literal["click", "drag", "multi"]
Endpoint = str
"""Which point of a sample a task asks for: a drag's ``from`` (rank 1, what to drag) or ``to`` (rank 2,
where to drop it); a multi-point sample's ``1`` .. ``K``."""

ENDPOINT_TEXT = {
    ("en", "from"): "This is a drag. Point at where the drag starts: the thing to drag.",
    ("en", "to"): "This is a drag. Point at where the drag ends: where to drop it.",
    ("zh", "from"): "这是一次拖动。请指出拖动的起点：要拖动的对象。",
    ("zh", "to"): "这是一次拖动。请指出拖动的终点：放下的位置。",
    ("en", "ranked"): "This task takes {k} points, in order. Point at point {i} of {k}.",
    ("en", "unranked"): "This task takes {k} points, one on each place it names. Point at place {i} of {k}.",
    ("zh", "ranked"): "此任务需要按顺序给出{k}个点。请指出第{i}个点（共{k}个）。",
    ("zh", "unranked"): "此任务需要{k}个点，每个所述位置一个。请指出第{i}个位置（共{k}个）。",
}
"""The line added to a drag's task for each of its ends, and to a multi-point sample's task for each point
(``{i}`` of ``{k}``), in the task's language."""


@dataclass(frozen=True)
class Region:
    """One annotated polygon."""

    id: str
    """The annotation's ``id`` (``R1`` ...)."""
    type: str
    """``Target`` or ``Banned`` (another type is kept and ignored, as the set's rule does)."""
    rank: str
    """``""`` (unranked) or the point's number as text (``"1"``, ``"2"``, ...)."""
    points: tuple[Vertex, ...]
    """Vertices, image pixels."""


@dataclass(frozen=True)
class ActSample:
    """One CUActSpot sample, read without opening its image."""

    id: str
    """``image_id`` (the file stem): the task id."""
    image: Path
    """The screenshot (``<id>.png``)."""
    instruction: str
    """The task text in the chosen language (``dataset.lang``), else the one the sample has."""
    regions: tuple[Region, ...]
    """Every polygon, in file order."""
    meta: dict[str, str | None] = field(default_factory=dict)
    """``category``, ``lang``, ``task_kind`` (and ``size_class`` once the first polygons are known)."""
    problem: str | None = None
    """Why the sample cannot be used (raised when its snapshot is built), ``None`` when it can."""

    @property
    def targets(self) -> list[Region]:
        return [r for r in self.regions if r.type == "Target"]

    @property
    def banned(self) -> list[Region]:
        return [r for r in self.regions if r.type == "Banned"]


def required_points(regions: Sequence[Region]) -> int:
    """How many points the set's rule needs: the largest rank, or the number of unranked targets."""
    targets = [r for r in regions if r.type == "Target"]
    ranks = [int(r.rank) for r in targets if r.rank.isdigit()]
    return max(ranks) if ranks else len(targets)


def task_kind(regions: Sequence[Region]) -> TaskKind:
    """``click`` (one point), ``drag`` (ranks 1 and 2: what to drag, where to drop it), else ``multi``."""
    targets = [r for r in regions if r.type == "Target"]
    n = required_points(regions)
    if n == 1:
        return "click"
    if n == 2 and all(r.rank for r in targets):
        return "drag"
    return "multi"


def point_number(endpoint: Endpoint | None) -> int:
    """The 1-based number of the point a task asks for (``from``: 1, ``to``: 2, ``"3"``: 3, ``None``: 1)."""
    if endpoint is None or endpoint == "from":
        return 1
    return 2 if endpoint == "to" else int(endpoint)


def first_targets(regions: Sequence[Region], point_no: int = 1) -> list[Region]:
    """The polygons point ``point_no`` aims at: those of that rank, or (an unranked sample) its
    ``point_no``-th Target."""
    targets = [r for r in regions if r.type == "Target"]
    if any(r.rank for r in targets):
        return [r for r in targets if r.rank == str(point_no)]
    return targets[point_no - 1 : point_no]


def allowed_targets(regions: Sequence[Region], point_no: int = 1) -> list[Region]:
    """The polygons point ``point_no`` may land in under the set's rule: those of its rank, or (an unranked
    sample, whose rule only asks that every Target hold some point) every Target."""
    targets = [r for r in regions if r.type == "Target"]
    return first_targets(regions, point_no) if any(r.rank for r in targets) else targets


def verdict(points: Sequence[Point | Vertex], regions: Sequence[Region]) -> bool:
    """The set's own rule on a list of points (its ``eval_utils.evaluate_coordinates``)."""
    targets = [r for r in regions if r.type == "Target"]
    if not regions:
        return False
    for r in regions:
        if r.type == "Banned" and any(contains(r.points, p) for p in points):
            return False
    if not targets:
        return True
    ranked = [r.rank != "" for r in targets]
    if any(ranked) and not all(ranked):
        return False
    if not any(ranked):
        return all(any(contains(r.points, p) for p in points) for r in targets)
    k = max((int(r.rank) for r in targets if r.rank.isdigit()), default=0)
    if len(points) < k:
        return False
    for i in range(1, k + 1):
        polys = [r for r in targets if r.rank == str(i)]
        if not polys or not any(contains(r.points, points[i - 1]) for r in polys):
            return False
    return True


def point_verdict(point: Point, regions: Sequence[Region], point_no: int = 1) -> tuple[bool, str | None]:
    """The ``polygon`` rule for point ``point_no`` (inside one of the polygons it may land in,
    :func:`allowed_targets`, and in no Banned one) and the id of what lies under it (``banned:R3`` for a
    Banned polygon; a hit: its polygon's id, in an unranked sample the ids of every Target under the point
    joined by ``+``, so that the analysis can tell which Targets the points cover; a Target of another rank;
    ``None``: none)."""
    for r in regions:
        if r.type == "Banned" and contains(r.points, point):
            return False, f"banned:{r.id}"
    allowed = allowed_targets(regions, point_no)
    under = [r.id for r in allowed if contains(r.points, point)]
    if under:
        ranked = any(r.rank for r in regions if r.type == "Target")
        return True, under[0] if ranked else "+".join(under)
    for r in regions:
        if r.type == "Target" and contains(r.points, point):
            return False, r.id
    return False, None


def endpoint_instruction(sample: ActSample, endpoint: Endpoint) -> str:
    """A drag's (or multi-point sample's) task text and the line saying which end (point) to point at, in
    the task's language."""
    lang = "zh" if sample.meta.get("lang") == "zh" else "en"
    if endpoint in ("from", "to"):
        return f"{sample.instruction}\n{ENDPOINT_TEXT[(lang, endpoint)]}"
    ranked = any(r.rank for r in sample.targets)
    line = ENDPOINT_TEXT[(lang, "ranked" if ranked else "unranked")]
    return f"{sample.instruction}\n{line.format(i=endpoint, k=required_points(sample.regions))}"


def _vertices(raw: Any) -> tuple[Vertex, ...] | None:
    if not isinstance(raw, list):
        return None
    out: list[Vertex] = []
    for v in raw:
        if not isinstance(v, list | tuple) or len(v) != 2:
            return None
        try:
            x, y = float(v[0]), float(v[1])
        except (TypeError, ValueError):
            return None
        if not (math.isfinite(x) and math.isfinite(y)):
            return None
        out.append((x, y))
    return tuple(out)


def _shape_problem(regions: Sequence[Region]) -> str | None:
    """What is wrong with the polygons regardless of the image (``None``: nothing)."""
    targets = [r for r in regions if r.type == "Target"]
    if not targets:
        return "no Target polygon"
    for r in regions:
        if len(r.points) < 3:
            return f"polygon {r.id} has {len(r.points)} point(s), fewer than 3"
        crossing = self_intersection(r.points, CORNER_SLACK_PX)
        if crossing is not None:
            return f"polygon {r.id} is self-intersecting (edges {crossing[0]} and {crossing[1]} cross)"
    ranked = [r.rank != "" for r in targets]
    if any(ranked) and not all(ranked):
        return "Target polygons mix ranked and unranked"
    if all(ranked):
        bad = [r for r in targets if not r.rank.isdigit() or int(r.rank) < 1]
        if bad:
            return f"polygon {bad[0].id} has rank {bad[0].rank!r}, not a positive number"
        have = {int(r.rank) for r in targets}
        missing = [i for i in range(1, max(have) + 1) if i not in have]
        if missing:
            what = " (a drag without its drop target)" if missing[0] == 2 else ""
            return f"no Target polygon of rank {missing[0]}{what}"
    return None


def read_sample(path: Path, lang: str) -> ActSample:
    """One annotation file as a sample (its problems recorded, not raised)."""
    sid = path.stem
    image = path.with_suffix(".png")
    category = sid.split("-")[0] or None

    def broken(why: str) -> ActSample:
        meta = {"category": category, "lang": None, "task_kind": None}
        return ActSample(sid, image, "", (), meta, f"sample {sid}: {why}")

    try:
        rec = load_file(path)
    except OSError as e:
        return broken(f"cannot read {path.name}: {e}")
    except ValueError as e:  # not UTF-8, not JSON, nested too deeply, too large (one line)
        return broken(f"{path.name} is not valid JSON: {e}")
    if not isinstance(rec, Mapping):
        return broken(f"{path.name} must hold a JSON object")
    if isinstance(rec.get("modality"), str) and rec["modality"]:
        category = str(rec["modality"])
    regions: list[Region] = []
    for i, poly in enumerate(rec.get("polygons") or []):
        pts = _vertices(poly.get("points")) if isinstance(poly, Mapping) else None
        if pts is None:
            return broken(f"polygons[{i}]: points must be [x, y] pairs of finite numbers")
        pid = str(poly.get("id") or f"#{i}")
        regions.append(Region(pid, str(poly.get("type") or ""), str(poly.get("rank") or "").strip(), pts))
    zh = rec.get("task") if isinstance(rec.get("task"), str) else None
    en = rec.get("task_en") if isinstance(rec.get("task_en"), str) else None
    text = (zh if lang == "zh" else en) or en or zh
    if not text or not text.strip():
        return broken("no task text (task, task_en)")
    text = text.strip()
    meta: dict[str, str | None] = {
        "category": category,
        "lang": "zh" if CJK.search(text) else "en",
        "task_kind": task_kind(regions) if any(r.type == "Target" for r in regions) else None,
    }
    problem = _shape_problem(regions)
    first = first_targets(regions)
    if problem is None and first:
        meta["size_class"] = size_class(_union(first))
    return ActSample(
        sid, image, text, tuple(regions), meta, None if problem is None else f"sample {sid}: {problem}"
    )


def _union(regions: Sequence[Region]) -> Box:
    boxes = [bounds(r.points) for r in regions]
    return Box(
        min(b.x0 for b in boxes), min(b.y0 for b in boxes), max(b.x1 for b in boxes), max(b.y1 for b in boxes)
    )


def data_dir(root: Path) -> Path:
    """The folder of the ``<id>.json`` files: ``root`` itself, or its ``data/ActSpot/``."""
    if not root.is_dir():
        raise ConfigError(f"dataset.root: not a directory: {root}")
    for cand in (root, root / "data" / "ActSpot"):
        if any(cand.glob("*.json")):
            return cand
    raise ConfigError(
        f"dataset.root: no <id>.json annotations under {root} (dataset={FORMAT}; docs/datasets.md)"
    )


def load(spec: DatasetSpec, lang: str) -> list[ActSample]:
    """Every sample under the root, by id (images not opened)."""
    base = data_dir(spec.root)
    files = sorted(base.glob("*.json"))
    if spec.files:
        names = {Path(f).stem for f in spec.files}
        unknown = sorted(names - {p.stem for p in files})
        if unknown:
            raise ConfigError(f"dataset.files: {unknown[0]!r} is not a sample under {base}")
        files = [p for p in files if p.stem in names]
    out = [read_sample(p, lang) for p in files]
    if spec.images is not None:
        out = [
            ActSample(s.id, spec.images / s.image.name, s.instruction, s.regions, s.meta, s.problem)
            for s in out
        ]
    return out


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot_of(
    sample: ActSample,
    cache: ImageCache,
    spec: DatasetSpec,
    max_side: int | None,
    endpoint: Endpoint | None = None,
) -> LazySnapshot:
    """The sample's lazy snapshot, checked (see the module's list): its first point's target (a drag's
    truth also holds each end's, :attr:`SceneTruth.ends`), or a drag's ``endpoint`` alone (its target the
    polygons of that rank, its instruction the task and which end to point at). A failure is a one-line
    :class:`SampleError` naming the sample."""
    where = f"sample {sample.id}"
    if sample.problem is not None:
        raise SampleError(sample.problem)
    if not spec.inside(sample.image):
        raise SampleError(f"{where}: image {sample.image} lies outside dataset.root "
                          "(dataset.allow_outside_root=true reads it)")  # fmt: skip
    if not sample.image.is_file():
        raise SampleError(f"{where}: image not found: {sample.image}")
    try:
        with Image.open(sample.image) as im:
            size = Size(*im.size)
    except (OSError, ValueError, Image.DecompressionBombError) as e:
        raise SampleError(f"{where}: cannot open {sample.image.name}: {e}".splitlines()[0]) from None
    if max_side is not None and max(size.width, size.height) > max_side:
        raise SampleError(
            f"{where}: image is {size.width}x{size.height}, a side above scenes.max_side {max_side}", size
        )
    for r in sample.regions:
        b = bounds(r.points)
        s = EDGE_SLACK_PX
        if b.x0 < -s or b.y0 < -s or b.x1 > size.width + s or b.y1 > size.height + s:
            raise SampleError(
                f"{where}: polygon {r.id} reaches outside the {size.width}x{size.height} image "
                f"(bounds {[round(v, 2) for v in b.as_list()]})",
                size,
            )
    mine = first_targets(sample.regions, point_number(endpoint))
    u = _union(mine)
    box = Box(max(u.x0, 0.0), max(u.y0, 0.0), min(u.x1, float(size.width)), min(u.y1, float(size.height)))
    target = Element("target", "target", box)
    others = [
        Element(
            f"banned:{r.id}" if r.type == "Banned" else r.id,
            r.type.lower(),
            _clip(bounds(r.points), size),
            role="panel",
            interactive=r.type == "Target",
        )  # fmt: skip
        for r in sample.regions
        if r not in mine
    ]
    banned = [r.points for r in sample.regions if r.type == "Banned"]
    aims = [a for r in sorted(mine, key=lambda r: -area(r.points)) if (a := inside_point(r.points, banned))]
    task_id = sample.id if endpoint is None else f"{sample.id}:{endpoint}"
    text = sample.instruction if endpoint is None else endpoint_instruction(sample, endpoint)
    ends: tuple[SceneTruth, ...] = ()
    if endpoint is None and sample.meta.get("task_kind") == "drag":
        ends = tuple(snapshot_of(sample, cache, spec, max_side, e).truth for e in ("from", "to"))
    truth = SceneTruth(
        task_id, size, text, "target", box, (target, *others), target_aim=aims[0] if aims else None, ends=ends
    )
    polys = [(r.id, r.type, r.rank, r.points) for r in sample.regions]
    blob = f"{_digest(sample.image)}|{polys}|{text}"
    return LazySnapshot(truth, hashlib.sha256(blob.encode()).hexdigest()[:16], sample.image, cache)


def _clip(b: Box, size: Size) -> Box:
    return Box(max(b.x0, 0.0), max(b.y0, 0.0), min(b.x1, float(size.width)), min(b.y1, float(size.height)))


def endpoints(sample: ActSample) -> list[Endpoint]:
    """A multi-point sample's point tasks ``1`` .. ``K``; none for a click, a drag (one two-point task) or a
    sample that cannot be used (it is one task, which fails)."""
    if sample.problem is not None or sample.meta.get("task_kind") != "multi":
        return []
    return [str(i) for i in range(1, required_points(sample.regions) + 1)]


class ActSpotScenes:
    """The selected CUActSpot samples: a :class:`~dvoc_bench.scenes.sources.TaskSource` in id order whose
    probe is the ``polygon`` rule. A click is one task; a drag's is a two-point task (its truth's ``ends``):
    one trial gives both points, every method grounding each end (one-shot in one call), and each point is
    probed on its own polygons through its end's id (``<id>:from``, ``<id>:to``, which :meth:`snapshot` and
    :meth:`probe` also take). A multi-point sample of ``K`` points is ``K`` tasks ``<id>:1`` .. ``<id>:K``
    (``tasks=[X]`` runs them all, ``tasks=[X:2]`` one), scored together by the set's own rule
    (:func:`dvoc_bench.analysis.datasets.points_success`)."""

    kind: SceneKind = "dataset"
    ordered = True
    live = False

    def __init__(
        self, spec: DatasetSpec, lang: str = "en", picks: list[str] | None = None, max_side: int | None = None
    ) -> None:
        self.spec = spec
        self.lang = lang
        self.max_side = max_side
        point = re.compile(r":\d+$")  # ``X:2``: point 2 of the multi-point sample X
        wanted = None if picks is None else list(dict.fromkeys(point.sub("", p) for p in picks))
        chosen = pick(load(spec, lang), spec, wanted, WHERE_KEYS)
        self.samples = {s.id: s for s in chosen}
        """Selected samples by sample id."""
        self.tasks: list[str] = []
        """The task ids in order: a sample's id, or a multi-point sample's ``<id>:1`` .. ``<id>:K``."""
        for s in chosen:
            ends = endpoints(s)
            self.tasks += [f"{s.id}:{e}" for e in ends] if ends else [s.id]
        if picks is not None and any(point.search(p) for p in picks):  # ``tasks=[X:2]``: that point only
            named = set(picks)
            self.tasks = [t for t in self.tasks if t in named or point.sub("", t) in named]
            unknown = [p for p in picks if p not in self.tasks and p not in self.samples]
            if unknown:
                raise ConfigError(
                    f"tasks: {unknown[0]!r} is not a task of dataset={FORMAT} (a multi-point sample's points "
                    "are <id>:1 .. <id>:K; clicks and drags are their sample id)"
                )
        self.cache = ImageCache()

    def _resolve(self, task_id: str) -> tuple[ActSample, Endpoint | None]:
        """A task's sample, and the point its id names (``None``: the sample's one task): a drag's
        ``<id>:from`` / ``<id>:to`` (the ends of its one task), a multi-point sample's ``<id>:N``."""
        if task_id in self.samples and not endpoints(self.samples[task_id]):
            return self.samples[task_id], None
        base, _, end = task_id.rpartition(":")
        sample = self.samples.get(base)
        kind = None if sample is None else sample.meta.get("task_kind")
        if sample is not None and kind == "drag" and end in ("from", "to"):
            return sample, end
        if sample is not None and end in endpoints(sample):
            return sample, end
        raise KeyError(f"unknown task {task_id!r} of dataset={FORMAT}")

    def ids(self) -> list[str]:
        return list(self.tasks)

    def snapshot(self, task_id: str) -> Snapshot:
        sample, end = self._resolve(task_id)
        return snapshot_of(sample, self.cache, self.spec, self.max_side, end)

    def meta(self, task_id: str) -> dict[str, Any]:
        """The trial record's ``sample`` block (:class:`dvoc_bench.core.records.SampleMeta`)."""
        s, end = self._resolve(task_id)
        text = s.instruction if end is None else endpoint_instruction(s, end)
        points = required_points(s.regions) if s.problem is None else None
        return {"dataset": FORMAT, "file": s.id, **s.meta, "endpoint": end, "points": points,
                "instruction": text, "image": s.image.name}  # fmt: skip

    def probe(self, task_id: str, point: Point) -> Probe:
        """The ``polygon`` rule's verdict on ``point`` for the task's point, or for the drag end its id
        names (it decides ``hit``; the box rule stays beside it)."""
        s, end = self._resolve(task_id)
        hit, under = point_verdict(point, s.regions, point_number(end))
        return Probe(hit_element=under, hit=hit, hit_rule="polygon")

    def close(self) -> None:
        return None


def cuactspot_source(options: DatasetChoice | None) -> ActSpotScenes | None:
    """The source of CUActSpot's selected samples; ``None`` without options."""
    if options is None:
        return None
    d = options.settings
    return ActSpotScenes(spec_from_options(d), d.lang, options.picks, options.max_side)


registry.source(FORMAT, kind="dataset")(cuactspot_source)
