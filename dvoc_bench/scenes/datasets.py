"""Standard grounding datasets read from a local copy: ScreenSpot, ScreenSpot-v2, ScreenSpot-Pro, manifest.

Formats, as published (docs/datasets.md); every field is read defensively:

- ``screenspot`` (the SeeClick release): ``screenspot_{mobile,desktop,web}.json`` and ``screenspot_imgs/``.
  A sample: ``img_filename``, ``bbox`` = ``[x, y, w, h]`` pixels, ``instruction``, ``data_type``
  (``text | icon``), ``data_source`` (``ios``, ``android``, ``windows``, ``macos``, ...), maybe ``id``.
  The file's middle word (mobile, desktop, web) is recorded as the sample's ``platform``.
- ``screenspot_v2``: the same fields in ``screenspot_{mobile,desktop,web}_v2.json`` and
  ``screenspotv2_image/``.
- ``screenspot_pro``: ``annotations/<task>.json`` and ``images/``; a sample: ``img_filename`` (relative to
  ``images/``), ``bbox`` = ``[x1, y1, x2, y2]`` pixels, ``img_size`` = ``[w, h]``, ``instruction``,
  ``ui_type``, ``platform``, ``application``, ``group``, ``id``.
- ``manifest``: ``*.jsonl`` files, one sample a line: ``{image, bbox_xyxy, instruction, id, tags}``;
  ``image`` relative to the manifest's folder; ``tags`` a mapping whose ``ui_type``, ``platform``,
  ``application``, ``group``, ``data_source`` keys are the sample's metadata.

Copies converted to parquet (images embedded, normalised boxes) are refused with a one-line hint. Each
file's boxes are checked against their images' sizes in both conventions
(:mod:`dvoc_bench.scenes.box_convention`): a file whose boxes fit the other convention far better than the
one its format names is refused in one line, with the override ``dataset.box_format``.
Everything here is pure reading and selection: no image is decoded (:mod:`dvoc_bench.scenes.dataset_source`
loads them lazily).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import numpy as np

from dvoc_bench.core.declare import ConfigError, Declared, NonNegInt, PosInt
from dvoc_bench.core.geometry import Box, finite_numbers
from dvoc_bench.core.jsonread import MAX_LINE_BYTES, JsonError, bounded_lines, load_file, loads
from dvoc_bench.core.text import safe_text
from dvoc_bench.scenes.box_convention import BoxFormat, convention, evidence

FORMATS = ("screenspot", "screenspot_v2", "screenspot_pro", "manifest")
"""Dataset formats accepted in ``dataset=<format>``."""

META_KEYS = ("ui_type", "platform", "application", "group", "data_source", "file")
"""Metadata every sample carries (``None`` when its format has no such field); ``dataset.where`` keys."""


class DatasetSettings(Declared):
    """A standard dataset as the task source (docs/datasets.md): ``dataset=<format>
    dataset.root=DIR``; its samples are the tasks (``tasks=[...]`` then picks sample ids)."""

    format: Literal[
        "screenspot", "screenspot_v2", "screenspot_pro", "manifest", "cuactspot", "precision_cua"
    ] | None = None
    """Set by ``dataset=<format>`` (the ``conf/dataset/`` group); ``null``: no dataset (S1-S6, web)."""
    root: str | None = None
    """The folder of your local copy (required with a dataset)."""
    images: str | None = None
    """The image folder, when not the format's own (``screenspot_imgs/``, ``screenspotv2_image/``,
    ``images/``; a manifest's images are relative to the manifest)."""
    files: list[str] = []
    """Annotation files to read (names under the root; default: all of the format's)."""
    limit: PosInt | None = None
    """Draw this many samples, stratified by ui type x (group, else data source); ``null``: all."""
    sample_seed: NonNegInt = 0
    """Seed of the ``limit`` draw."""
    where: dict[str, str | list[str]] | None = None
    """Keep samples whose metadata match, e.g. ``{ui_type: icon, platform: macos}`` (keys: ui_type,
    platform, application, group, data_source, file; a list allows several values)."""
    allow_outside_root: bool = False
    """Read annotation files and images that lie outside ``root`` (and ``images``), symlinks resolved;
    off, such a file is refused and such an image fails its sample."""
    lang: Literal["en", "zh"] = "en"
    """CUActSpot: the task text's language (``en``: its ``task_en``; ``zh``: its Chinese ``task``; a sample
    written in one language only keeps it, and records which)."""
    box_format: Literal["xyxy", "xywh"] | None = None
    """How every file's ``bbox`` is written, overriding the format's own convention (``xyxy``:
    ``[x1, y1, x2, y2]``, ``xywh``: ``[x, y, w, h]``); ``null``: the format's, checked against the images'
    sizes (a file that fits the other convention far better is refused, naming this override)."""



@dataclass(frozen=True)
class Layout:
    """Where a format keeps its annotation files and images, relative to ``dataset.root``."""

    files: str
    """Glob of the annotation files."""
    images: str
    """The image folder (``img_filename`` is relative to it); ``""``: the annotation file's own folder."""
    box: str
    """``xywh`` or ``xyxy``: how ``bbox`` is written."""
    exclude: str | None = None
    """Glob of files the ``files`` glob also matches but that belong to another format."""


LAYOUTS: dict[str, Layout] = {
    "screenspot": Layout("screenspot_*.json", "screenspot_imgs", "xywh", exclude="screenspot_*_v2.json"),
    "screenspot_v2": Layout("screenspot_*_v2.json", "screenspotv2_image", "xywh"),
    "screenspot_pro": Layout("annotations/*.json", "images", "xyxy"),
    "manifest": Layout("*.jsonl", "", "xyxy"),
}


@dataclass(frozen=True)
class Sample:
    """One dataset sample: a screenshot file, the target's box and the instruction."""

    id: str
    """The sample's ``id`` when it has one, else ``<file stem>:<index>`` (the task id)."""
    image: Path
    """The screenshot file (not opened here)."""
    box: Box
    """Target box ``[x0, y0, x1, y1]`` in image pixels (converted from ``xywh`` where written so)."""
    instruction: str
    """The task text."""
    img_size: tuple[int, int] | None
    """``[w, h]`` the annotation states (ScreenSpot-Pro); checked against the file when it is loaded."""
    meta: dict[str, str | None] = field(default_factory=dict)
    """:data:`META_KEYS` -> value (``file``: the annotation file's stem)."""


@dataclass(frozen=True)
class DatasetSpec:
    """What ``dataset.*`` asks for (validated settings, see :class:`DatasetSettings`)."""

    format: str
    root: Path
    images: Path | None = None
    files: tuple[str, ...] = ()
    limit: int | None = None
    sample_seed: int = 0
    where: Mapping[str, Any] = field(default_factory=dict)
    allow_outside_root: bool = False
    box_format: BoxFormat | None = None

    def inside(self, path: Path) -> bool:
        """Whether ``path`` (symlinks resolved) lies inside the root or the image folder, or may lie
        anywhere (``allow_outside_root``)."""
        if self.allow_outside_root:
            return True
        try:
            real = Path(path).resolve()
        except (ValueError, OSError):  # a NUL byte or a name the filesystem refuses: not inside anything
            return False
        bases = [self.root, *([self.images] if self.images else [])]
        return any(real.is_relative_to(b.resolve()) for b in bases)


def _parquet_hint(root: Path) -> str | None:
    found = sorted(root.glob("*.parquet")) + sorted(root.glob("*/*.parquet"))
    if not found:
        return None
    return (
        f"dataset.root: {root} holds a parquet copy ({found[0].name}: images embedded, boxes normalised), "
        'not the JSON release; use the JSON release or write a manifest (docs/datasets.md)'
    )


def annotation_files(spec: DatasetSpec) -> list[Path]:
    """The annotation files to read: ``dataset.files`` (relative to the root, or names), else the format's."""
    root, layout = spec.root, LAYOUTS[spec.format]
    if not root.is_dir():
        raise ConfigError(f"dataset.root: not a directory: {root}")
    if spec.files:
        out = []
        for name in spec.files:
            p = root / name
            if not p.is_file() and spec.format == "screenspot_pro":
                p = root / "annotations" / name
            if not spec.inside(p):
                raise ConfigError(
                    f"dataset.files: {name!r} lies outside dataset.root {root} "
                    "(dataset.allow_outside_root=true reads it)"
                )
            if not p.is_file():
                raise ConfigError(f"dataset.files: {name!r} not found under {root}")
            out.append(p)
        return out
    found = sorted(root.glob(layout.files))
    if layout.exclude:
        skip = set(root.glob(layout.exclude))
        found = [p for p in found if p not in skip]
    if not found:
        hint = _parquet_hint(root)
        if hint:
            raise ConfigError(hint)
        raise ConfigError(
            f"dataset.root: no {layout.files} under {root} (dataset={spec.format}; "
            'docs/datasets.md)'
        )
    return found




def _text(v: Any) -> str | None:
    return None if v is None else safe_text(str(v))  # a lone surrogate cannot be written: U+FFFD


def _bad(where: str, why: str) -> ConfigError:
    return ConfigError(f"dataset: {where}: {why}")


def _read_records(path: Path) -> tuple[list[Any], list[str]]:
    """The file's records, and where each is said to be in an error: ``<file> line N`` (the file's own
    line, blank lines counted) in a ``.jsonl``, ``<file>[i]`` in a JSON list."""
    try:
        if path.suffix == ".jsonl":
            records, wheres = [], []
            with path.open("rb") as f:
                for n, (_, raw, size) in enumerate(bounded_lines(f), 1):
                    where = f"{path.name} line {n}"  # the file's own line, blank lines counted
                    if size > len(raw):
                        raise _bad(where, f"{size} bytes, over {MAX_LINE_BYTES}; not read")
                    if raw.strip():
                        records.append(loads(raw, where, max_bytes=MAX_LINE_BYTES))
                        wheres.append(where)
            return records, wheres
        data = load_file(path)
    except OSError as e:
        raise _bad(path.name, f"cannot read: {e}") from None
    except JsonError as e:  # not UTF-8, not JSON, nested too deeply, too large
        msg = str(e).removeprefix(str(path) + ": ")
        if msg.startswith(f"{path.name} line "):
            raise ConfigError(f"dataset: {msg}") from None
        raise _bad(path.name, f"not readable: {msg}") from None
    if not isinstance(data, list):
        raise _bad(path.name, f"expected a list of samples, got {type(data).__name__}")
    return data, [f"{path.name}[{i}]" for i in range(len(data))]


def _sample(
    fmt: str, rec: Any, path: Path, index: int, images: Path, box: str | None = None, where: str = ""
) -> Sample:
    where = where or f"{path.name}[{index}]"
    if not isinstance(rec, Mapping):
        raise _bad(where, f"a sample must be a mapping, got {type(rec).__name__}")
    layout = LAYOUTS[fmt]
    name = rec.get("image") if fmt == "manifest" else rec.get("img_filename")
    if not isinstance(name, str) or not name:
        raise _bad(where, "missing the image file name")
    raw_box = rec.get("bbox_xyxy") if fmt == "manifest" else rec.get("bbox")
    nums = finite_numbers(raw_box, 4)
    if nums is None:
        raise _bad(where, f"bbox must be four finite numbers, got {raw_box!r}")
    if (box or layout.box) == "xywh":
        x, y, w, h = nums
        nums = [x, y, x + w, y + h]
    instruction = rec.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise _bad(where, "missing the instruction")
    size = finite_numbers(rec.get("img_size"), 2)
    stem = path.stem
    if fmt == "manifest":
        tags = rec.get("tags")
        tags = tags if isinstance(tags, Mapping) else {}
        meta = {k: _text(tags.get(k)) for k in META_KEYS if k != "file"}
    elif fmt == "screenspot_pro":
        meta = {k: _text(rec.get(k)) for k in ("ui_type", "platform", "application", "group")}
        meta["data_source"] = _text(rec.get("data_source"))
    else:  # ScreenSpot v1 / v2: the platform is the file's middle word (mobile, desktop, web)
        platform = stem.removeprefix("screenspot_").removesuffix("_v2")
        meta = {"ui_type": _text(rec.get("data_type")), "platform": platform, "application": None,
                "group": None, "data_source": _text(rec.get("data_source"))}  # fmt: skip
    meta["file"] = stem
    sid = rec.get("id")
    return Sample(
        id=safe_text(str(sid)) if sid is not None and str(sid) != "" else f"{stem}:{index}",
        image=images / name,
        box=Box(*nums),
        instruction=safe_text(instruction.strip()),  # a lone surrogate cannot be written: U+FFFD
        img_size=(int(size[0]), int(size[1])) if size is not None else None,
        meta=meta,
    )


def load_samples(spec: DatasetSpec) -> list[Sample]:
    """Every sample of the dataset, in file order (no image opened). A malformed annotation (no box, no
    instruction) is a :class:`ConfigError` naming the file and index; per-image problems (missing file,
    box outside the image, size disagreeing with ``img_size``) surface when the sample is loaded."""
    out: list[Sample] = []
    seen: dict[str, str] = {}
    for path in annotation_files(spec):
        own = path.parent if spec.format == "manifest" else spec.root / LAYOUTS[spec.format].images
        images = spec.images or own
        records, wheres = _read_records(path)
        box = _box_format(spec, path, records, images)
        for i, (rec, where) in enumerate(zip(records, wheres, strict=True)):
            s = _sample(spec.format, rec, path, i, images, box, where)
            if s.id in seen:  # ids must be unique task ids: a repeated one gets its file and index
                s = Sample(f"{path.stem}:{i}", s.image, s.box, s.instruction, s.img_size, s.meta)
            if s.id in seen:
                raise _bad(where, f"sample id {s.id!r} appears twice (also in {seen[s.id]})")
            seen[s.id] = path.name
            out.append(s)
    return out


def _box_format(spec: DatasetSpec, path: Path, records: list[Any], images: Path) -> BoxFormat:
    """The convention ``path``'s boxes are read in: ``dataset.box_format``, else the layout's unless the
    boxes and their images' sizes show the other far better (refused, :mod:`box_convention`)."""
    named: BoxFormat = "xywh" if LAYOUTS[spec.format].box == "xywh" else "xyxy"
    if spec.box_format is not None:
        return spec.box_format
    manifest = spec.format == "manifest"
    key = "bbox_xyxy" if manifest else "bbox"

    def image_of(rec: Any) -> Path | None:
        name = rec.get("image" if manifest else "img_filename")
        if not isinstance(name, str) or not name:
            return None
        image = images / name
        return image if spec.inside(image) else None

    return convention(named, None, evidence(records, key, image_of), path.name)


def _matches(sample: Sample, where: Mapping[str, Any]) -> bool:
    for key, want in where.items():
        values = want if isinstance(want, list | tuple) else [want]
        have = sample.meta.get(key)
        if have is None or have.lower() not in {str(v).lower() for v in values}:
            return False
    return True


def stratum(sample: Sample) -> tuple[str, str]:
    """The stratum of ``dataset.limit``: ui type x (group, else data source)."""
    m = sample.meta
    return (m.get("ui_type") or "-", m.get("group") or m.get("data_source") or "-")


def stratified(samples: Sequence[Sample], limit: int, seed: int) -> list[Sample]:
    """``limit`` samples drawn without replacement, proportionally to each stratum's size (largest
    remainder), seeded by ``seed``; returned in dataset order. ``limit >= len(samples)``: all of them."""
    if limit >= len(samples):
        return list(samples)
    strata: dict[tuple[str, str], list[int]] = {}
    for i, s in enumerate(samples):
        strata.setdefault(stratum(s), []).append(i)
    keys = sorted(strata)
    n = len(samples)
    quota = {k: limit * len(strata[k]) / n for k in keys}
    take = {k: int(math.floor(q)) for k, q in quota.items()}
    left = limit - sum(take.values())
    for k in sorted(keys, key=lambda k: (-(quota[k] - take[k]), k))[:left]:
        take[k] += 1
    rng = np.random.default_rng(seed)
    chosen: list[int] = []
    for k in keys:
        idx = strata[k]
        chosen.extend(int(i) for i in rng.permutation(idx)[: take[k]])
    return [samples[i] for i in sorted(chosen)]


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


T = TypeVar("T", bound=_HasId)


def by_ids(samples: Sequence[T], picks: Sequence[str]) -> list[T]:
    """The samples named in ``picks`` (``tasks=[...]``), in their order, each once; an unknown id is a
    one-line :class:`ConfigError` naming ``tasks``."""
    known = {s.id: s for s in samples}
    missing = [p for p in picks if p not in known]
    if missing:
        raise ConfigError(
            f"tasks: unknown sample id {missing[0]!r} ({len(known)} samples after dataset.where, "
            f"e.g. {', '.join(list(known)[:3])})"
        )
    return [known[p] for p in dict.fromkeys(picks)]


def select(samples: Sequence[Sample], spec: DatasetSpec, picks: Sequence[str] | None) -> list[Sample]:
    """``dataset.where`` filter, then the ``tasks=[...]`` picks (sample ids), then ``dataset.limit``."""
    for key in spec.where:
        if key not in META_KEYS:
            raise ConfigError(f"dataset.where: unknown key {key!r}; allowed: {', '.join(META_KEYS)}")
    out = [s for s in samples if _matches(s, spec.where)]
    if picks is not None:
        out = by_ids(out, picks)
    if not out:
        raise ConfigError(f"dataset.where: no sample matches {dict(spec.where)}")
    if spec.limit is not None:
        out = stratified(out, spec.limit, spec.sample_seed)
    return out
