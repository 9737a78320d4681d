"""Dataset samples as task sources (``dataset=screenspot|screenspot_v2|screenspot_pro|manifest``).

Each registered format builds a :class:`DatasetScenes` (a task source) whose tasks are the selected
samples (:mod:`dvoc_bench.scenes.datasets`). A sample's snapshot is lazy: building it reads the image
file's header (its size) and bytes (the content hash) but decodes no pixels; :attr:`LazySnapshot.image`
decodes on use, through a small per-source cache, so a sweep over 1,581 4K screenshots holds a handful of
them at a time. A sample whose image is missing, unreadable, smaller than its box or of another size
than its ``img_size`` fails with :class:`SampleError` (``error_class = "scene"``): its own trials are
errors, the sweep goes on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.core.memo import Memo
from dvoc_bench.core.pixels import decode_rgb, open_checked
from dvoc_bench.core.records import Probe, SceneKind
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes import sources as registry
from dvoc_bench.scenes.datasets import FORMATS, DatasetSettings, DatasetSpec, Sample, load_samples, select

CACHE_IMAGES = 4
"""Decoded screenshots a dataset source keeps (the sweep runs a dataset's trials task by task)."""


class SampleError(registry.SceneError):
    """One sample cannot be used (missing image, box outside it, wrong size): its trials are errors."""

    def __init__(self, message: str, size: Size | None = None) -> None:
        super().__init__(message)
        self.size = size


class ImageCache:
    """The last :data:`CACHE_IMAGES` decoded screenshots (read-only arrays), thread-safe."""

    def __init__(self, capacity: int = CACHE_IMAGES) -> None:
        self._items: Memo[np.ndarray] = Memo(capacity)

    @property
    def loads(self) -> int:
        """Decodes so far (a test reads it to see the loading is lazy)."""
        return self._items.misses

    def get(self, path: Path) -> np.ndarray:
        return self._items.get(path, lambda: _decode(path))


def _decode(path: Path) -> np.ndarray:
    """The screenshot at ``path`` as a read-only ``HxWx3`` uint8 array; a file that does not decode raises
    :class:`SampleError` (its sample fails, not the sweep)."""
    try:
        arr = decode_rgb(path)  # at most MAX_PIXELS pixels, checked before decoding
    except (OSError, ValueError, Image.DecompressionBombError) as e:  # a truncated file: its sample fails
        raise SampleError(f"{path.name}: cannot decode: {e}".splitlines()[0]) from None
    arr.setflags(write=False)
    return arr


class LazySnapshot(Snapshot):
    """A :class:`Snapshot` whose pixels are decoded on use (:class:`ImageCache`), not held."""

    path: Path
    """The sample's image file."""
    _cache: ImageCache

    def __init__(self, truth: SceneTruth, content_hash: str, path: Path, cache: ImageCache) -> None:
        object.__setattr__(self, "truth", truth)
        object.__setattr__(self, "content_hash", content_hash)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "_cache", cache)

    @property
    def image(self) -> np.ndarray:
        return self._cache.get(self.path)

    def __repr__(self) -> str:
        return f"LazySnapshot({self.truth.scene_id!r}, {self.path})"


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sample_snapshot(
    sample: Sample, cache: ImageCache, spec: DatasetSpec | None = None, max_side: int | None = None
) -> LazySnapshot:
    """The sample's lazy snapshot, checked: the image lies inside the dataset (``spec``), exists and opens,
    no side exceeds ``max_side`` (``scenes.max_side``), its size equals ``img_size``, the box lies inside it
    and is not empty. A failure is a :class:`SampleError` in one line: the sample fails its own trials."""
    where = f"sample {sample.id}"
    stated = Size(*sample.img_size) if sample.img_size else None
    if spec is not None and not spec.inside(sample.image):
        raise SampleError(
            f"{where}: image {sample.image} lies outside dataset.root (dataset.allow_outside_root=true "
            "reads it)",
            stated,
        )
    if not sample.image.is_file():
        raise SampleError(f"{where}: image not found: {sample.image}", stated)
    try:
        with open_checked(sample.image) as im:  # the header only: no pixels decoded
            size = Size(*im.size)
    except (OSError, ValueError, Image.DecompressionBombError) as e:  # TooManyPixels included
        raise SampleError(f"{where}: cannot open {sample.image.name}: {e}", stated) from None
    if max_side is not None and max(size.width, size.height) > max_side:
        shown = f"{size.width}x{size.height}"
        raise SampleError(f"{where}: image is {shown}, a side above scenes.max_side {max_side}", size)
    if stated is not None and stated != size:
        said = f"{stated.width}x{stated.height}"
        raise SampleError(f"{where}: image is {size.width}x{size.height}, img_size says {said}", size)
    b = sample.box
    if not (0 <= b.x0 <= b.x1 <= size.width and 0 <= b.y0 <= b.y1 <= size.height) or b.area <= 0:
        shown = f"{size.width}x{size.height}"
        raise SampleError(f"{where}: box {b.as_list()} is empty or outside the {shown} image", size)
    meta = {k: v for k, v in sample.meta.items() if v}
    label = sample.meta.get("ui_type") or "target"
    target = Element("target", label, b, role="text" if label == "text" else "button")
    truth = SceneTruth(sample.id, size, sample.instruction, "target", b, (target,))
    blob = f"{_file_digest(sample.image)}|{b.as_list()}|{sample.instruction}|{sorted(meta.items())}"
    return LazySnapshot(truth, hashlib.sha256(blob.encode()).hexdigest()[:16], sample.image, cache)


class DatasetScenes:
    """The selected samples of one dataset: a :class:`~dvoc_bench.scenes.sources.TaskSource` whose tasks
    run in the dataset's order."""

    kind: SceneKind = "dataset"
    ordered = True
    live = False

    def __init__(
        self, spec: DatasetSpec, picks: list[str] | None = None, max_side: int | None = None
    ) -> None:
        self.spec = spec
        self.max_side = max_side
        """Largest image side a sample may have (``scenes.max_side``; ``None``: no limit)."""
        self.samples = {s.id: s for s in select(load_samples(spec), spec, picks)}
        """Selected samples by task id, in dataset order."""
        self.cache = ImageCache()

    def ids(self) -> list[str]:
        return list(self.samples)

    def snapshot(self, task_id: str) -> Snapshot:
        return sample_snapshot(self.samples[task_id], self.cache, self.spec, self.max_side)

    def meta(self, task_id: str) -> dict[str, Any]:
        """What the trial record keeps of the sample (:class:`dvoc_bench.core.records.SampleMeta`)."""
        s = self.samples[task_id]
        return {"dataset": self.spec.format, **s.meta, "instruction": s.instruction,
                "image": s.image.name, "img_size": list(s.img_size) if s.img_size else None}  # fmt: skip

    def probe(self, task_id: str, point: Point) -> Probe | None:
        return None  # a screenshot has no live truth: the target box decides

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class DatasetChoice:
    """The options of a dataset source: the validated ``dataset.*`` settings and the picked sample ids."""

    settings: DatasetSettings
    """``dataset.*``."""
    picks: list[str] | None = None
    """``tasks=[...]`` naming sample ids; ``None``: every selected sample."""
    max_side: int | None = None
    """``scenes.max_side``: an image with a longer side fails its sample."""


def spec_from_options(d: DatasetSettings) -> DatasetSpec:
    """The :class:`DatasetSpec` of the validated ``dataset.*`` settings (``root`` required)."""
    if d.format is None or not d.root:
        raise ConfigError(f"dataset.root: required with dataset={d.format} (the folder of your local copy)")
    return DatasetSpec(
        format=d.format,
        root=Path(d.root).expanduser(),
        images=Path(d.images).expanduser() if d.images else None,
        files=tuple(d.files),
        limit=d.limit,
        sample_seed=d.sample_seed,
        where=dict(d.where or {}),
        allow_outside_root=d.allow_outside_root,
        box_format=d.box_format,
    )


def dataset_source(options: DatasetChoice | None) -> DatasetScenes | None:
    """The source of a dataset's selected samples; ``None`` without options (the built-in scenes'
    registry has no dataset)."""
    if options is None:
        return None
    return DatasetScenes(spec_from_options(options.settings), options.picks, options.max_side)


for _name in FORMATS:
    registry.source(_name, kind="dataset")(dataset_source)
