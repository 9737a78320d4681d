"""Dataset samples as task sources (``dataset=screenspot|screenspot_v2|screenspot_pro|manifest``).

Each registered format builds a :class:`~dvoc_bench.scenes.SceneSource` whose scenes are the selected
samples (:mod:`dvoc_bench.scenes.datasets`). A sample's snapshot is lazy: building it reads the image
file's header (its size) and bytes (the content hash) but decodes no pixels; :attr:`LazySnapshot.image`
decodes on use, through a small per-source cache, so a sweep over 1,581 4K screenshots holds a handful of
them at a time. A sample whose image is missing, unreadable, smaller than its box or of another size
than its ``img_size`` fails with :class:`SampleError` (``error_class = "scene"``): its own trials are
errors, the sweep goes on.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from dvoc_bench import registry
from dvoc_bench.declare import ConfigError
from dvoc_bench.geometry import Size
from dvoc_bench.scenes.datasets import FORMATS, DatasetSpec, Sample, load_samples, select
from dvoc_bench.scenes.types import Element, SceneTruth, Snapshot

CACHE_IMAGES = 4
"""Decoded screenshots a dataset source keeps (the sweep runs a dataset's trials task by task)."""


class SampleError(ConfigError):
    """One sample cannot be used (missing image, box outside it, wrong size): its trials are errors."""

    error_class = "scene"

    def __init__(self, message: str, size: Size | None = None) -> None:
        super().__init__(message)
        self.size = size


class ImageCache:
    """The last :data:`CACHE_IMAGES` decoded screenshots (read-only arrays), thread-safe."""

    def __init__(self, capacity: int = CACHE_IMAGES) -> None:
        self.capacity = capacity
        self._items: OrderedDict[Path, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.loads = 0
        """Decodes so far (a test reads it to see the loading is lazy)."""

    def get(self, path: Path) -> np.ndarray:
        with self._lock:
            hit = self._items.get(path)
            if hit is not None:
                self._items.move_to_end(path)
                return hit
        with Image.open(path) as im:
            arr = np.asarray(im.convert("RGB"), dtype=np.uint8)
        arr.setflags(write=False)
        with self._lock:
            self.loads += 1
            self._items[path] = arr
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)
        return arr


class LazySnapshot(Snapshot):
    """A :class:`Snapshot` whose pixels are decoded on use (:class:`ImageCache`), not held."""

    def __init__(self, truth: SceneTruth, content_hash: str, path: Path, cache: ImageCache) -> None:
        object.__setattr__(self, "truth", truth)
        object.__setattr__(self, "content_hash", content_hash)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "_cache", cache)

    @property  # type: ignore[override]
    def image(self) -> np.ndarray:
        return self._cache.get(self.path)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"LazySnapshot({self.truth.scene_id!r}, {self.path})"  # type: ignore[attr-defined]


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sample_snapshot(sample: Sample, cache: ImageCache) -> LazySnapshot:
    """The sample's lazy snapshot, checked: the image exists and opens, its size equals ``img_size``, the
    box lies inside it and is not empty. A failure is a :class:`SampleError` in one line."""
    where = f"sample {sample.id}"
    stated = Size(*sample.img_size) if sample.img_size else None
    if not sample.image.is_file():
        raise SampleError(f"{where}: image not found: {sample.image}", stated)
    try:
        with Image.open(sample.image) as im:  # the header only: no pixels decoded
            size = Size(*im.size)
    except (OSError, ValueError) as e:
        raise SampleError(f"{where}: cannot open {sample.image.name}: {e}", stated) from None
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
    """The selected samples of one dataset, as a source's backend (``SceneSource.backend``)."""

    def __init__(self, spec: DatasetSpec, picks: list[str] | None = None) -> None:
        self.spec = spec
        self.samples = {s.id: s for s in select(load_samples(spec), spec, picks)}
        """Selected samples by task id, in dataset order."""
        self.cache = ImageCache()

    def load(self, sample_id: str) -> Snapshot:
        return sample_snapshot(self.samples[sample_id], self.cache)

    def meta(self, sample_id: str) -> dict[str, Any]:
        """What the trial record keeps of the sample (:class:`dvoc_bench.records.SampleMeta`)."""
        s = self.samples[sample_id]
        return {"dataset": self.spec.format, **s.meta, "instruction": s.instruction,
                "image": s.image.name, "img_size": list(s.img_size) if s.img_size else None}  # fmt: skip


def spec_from_options(options: Mapping[str, Any]) -> DatasetSpec:
    """The :class:`DatasetSpec` of validated ``dataset.*`` settings (``root`` required)."""
    root = options.get("root")
    if not root:
        fmt = options.get("format")
        raise ConfigError(f"dataset.root: required with dataset={fmt} (the folder of your local copy)")
    images = options.get("images")
    return DatasetSpec(
        format=str(options["format"]),
        root=Path(root).expanduser(),
        images=Path(images).expanduser() if images else None,
        files=tuple(options.get("files") or ()),
        limit=options.get("limit"),
        sample_seed=int(options.get("sample_seed") or 0),
        where=dict(options.get("where") or {}),
    )


NO_FILES = "*.dataset-samples-are-not-files"
"""Glob matching nothing: dataset samples are not files of the scenes directory."""


def dataset_source(options: Any) -> Any:
    """A :class:`~dvoc_bench.scenes.SceneSource` of a dataset's selected samples (``options``: the
    ``dataset`` settings plus ``picks``); without options (the built-in scenes' registry) it has none."""
    from dvoc_bench.scenes import SceneSource

    if not options:
        return SceneSource(NO_FILES, lambda p: None, kind="dataset")  # type: ignore[arg-type,return-value]
    scenes = DatasetScenes(spec_from_options(options), options.get("picks"))
    return SceneSource(
        NO_FILES,
        lambda p: None,  # type: ignore[arg-type,return-value]
        extra={sid: s.image for sid, s in scenes.samples.items()},
        backend=scenes,
        kind="dataset",
        load_id=scenes.load,
        meta=scenes.meta,
    )


for _name in FORMATS:
    registry.source(_name, kind="dataset")(dataset_source)
