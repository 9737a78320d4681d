"""precision-cua-bench ("See, Point, Refine", microsoft/precision-cua-bench, MIT) as a task source:
``dataset=precision_cua dataset.root=DIR``.

``DIR`` is the release's ``dataset/`` folder (or the repository holding it): ``<theme>/combined_data.jsonl``
for the four themes (``vscode_dark``, ``vscode_light``, ``cursor_dark``, ``cursor_light``) and
``images/``. One line is one target: ``image`` (a name under ``images/``), ``conversations`` (the first
``human`` turn is the instruction; the ``gpt`` turn is the authors' reference point, not read),
``bbox`` = ``[x0, y0, x1, y1]`` pixels, ``image_size`` = ``[w, h]``, ``label_type``. The task id is
``<theme>:<line index>``. Targets are boxes, many of them a caret position 1-2 px wide: the ``box`` rule
is the set's own. A line that cannot be read as a target fails its own trials (one line naming the file
and line), the sweep goes on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, finite_numbers
from dvoc_bench.core.jsonread import MAX_LINE_BYTES, JsonError, loads
from dvoc_bench.core.records import SceneKind
from dvoc_bench.core.scene import Snapshot
from dvoc_bench.scenes import sources as registry
from dvoc_bench.scenes.dataset_source import (
    DatasetChoice,
    DatasetScenes,
    ImageCache,
    SampleError,
    spec_from_options,
)
from dvoc_bench.scenes.datasets import DatasetSpec, Sample
from dvoc_bench.scenes.screen_sets import pick, size_class

FORMAT = "precision_cua"
WHERE_KEYS = ("category", "application", "file", "size_class")
"""``dataset.where`` keys: ``label_type``, ``vscode | cursor``, the theme folder, the size class."""

BROKEN = Box(0.0, 0.0, 1.0, 1.0)
"""The placeholder box of a line that cannot be read (its snapshot raises before the box is used)."""


def data_dir(root: Path) -> Path:
    """The folder holding the theme folders: ``root`` itself, or its ``dataset/``."""
    if not root.is_dir():
        raise ConfigError(f"dataset.root: not a directory: {root}")
    for cand in (root, root / "dataset"):
        if any(cand.glob("*/combined_data.jsonl")):
            return cand
    raise ConfigError(f"dataset.root: no <theme>/combined_data.jsonl under {root} (dataset={FORMAT}; "
                      "docs/datasets.md)")  # fmt: skip


def _instruction(rec: Mapping[str, Any]) -> str | None:
    turns = rec.get("conversations")
    if not isinstance(turns, list):
        return None
    for turn in turns:
        if isinstance(turn, Mapping) and turn.get("from") == "human" and isinstance(turn.get("value"), str):
            text = str(turn["value"]).replace("<image>", "").strip()
            return text or None
    return None




def _line(theme: str, index: int, text: str, images: Path) -> tuple[Sample, str | None]:
    """One line as a sample, and what is wrong with it (``None``: nothing)."""
    sid = f"{theme}:{index}"
    meta: dict[str, str | None] = {"file": theme, "application": theme.split("_")[0]}
    broken = Sample(sid, images / "-", BROKEN, "", None, meta)
    try:
        rec = loads(text, "JSON", max_bytes=MAX_LINE_BYTES)
    except JsonError as e:  # the caller names the file's line
        return broken, "not valid JSON: " + str(e).removeprefix("JSON: ")
    if not isinstance(rec, Mapping):
        return broken, "a line must be a JSON object"
    name = rec.get("image")
    box = finite_numbers(rec.get("bbox"), 4)
    size = finite_numbers(rec.get("image_size"), 2)
    instruction = _instruction(rec)
    meta["category"] = str(rec["label_type"]) if rec.get("label_type") is not None else None
    problem = None
    if not isinstance(name, str) or not name:
        problem = "missing the image file name"
    elif box is None:
        problem = f"bbox must be four finite numbers, got {rec.get('bbox')!r}"
    elif not (box[0] < box[2] and box[1] < box[3]):
        problem = f"bbox {box} is empty (x1 <= x0 or y1 <= y0)"
    elif instruction is None:
        problem = "no human turn in conversations (the instruction)"
    b = Box(*box) if box is not None else BROKEN
    if problem is None:
        meta["size_class"] = size_class(b)
    img = images / name if isinstance(name, str) and name else images / "-"
    shown = (int(size[0]), int(size[1])) if size is not None else None
    return Sample(sid, img, b, instruction or "", shown, meta), problem


def load(spec: DatasetSpec) -> tuple[list[Sample], dict[str, str]]:
    """Every target, in theme then line order, and the problems of the lines that cannot be used
    (task id -> why). An unreadable file is a :class:`ConfigError` naming it."""
    base = data_dir(spec.root)
    images = spec.images or base / "images"
    themes = sorted(p.parent.name for p in base.glob("*/combined_data.jsonl"))
    if spec.files:
        unknown = [f for f in spec.files if f not in themes]
        if unknown:
            raise ConfigError(f"dataset.files: {unknown[0]!r} is not a theme folder ({', '.join(themes)})")
        themes = [t for t in themes if t in spec.files]
    samples: list[Sample] = []
    problems: dict[str, str] = {}
    for theme in themes:
        path = base / theme / "combined_data.jsonl"
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"dataset: {theme}/combined_data.jsonl: cannot read: {e}") from None
        for i, text in enumerate(lines):
            if not text.strip():
                continue
            s, problem = _line(theme, i, text, images)
            samples.append(s)
            if problem:
                problems[s.id] = f"sample {s.id} ({theme}/combined_data.jsonl line {i + 1}): {problem}"
    return samples, problems


class PrecisionScenes(DatasetScenes):
    """The selected targets of precision-cua-bench: a task source in the set's order (the snapshot and its
    checks are the ScreenSpot family's: image present, of its stated size, the box inside it)."""

    kind: SceneKind = "dataset"

    def __init__(
        self, spec: DatasetSpec, picks: list[str] | None = None, max_side: int | None = None
    ) -> None:
        self.spec = spec
        self.max_side = max_side
        samples, self.problems = load(spec)
        self.samples = {s.id: s for s in pick(samples, spec, picks, WHERE_KEYS)}
        self.cache = ImageCache()

    def snapshot(self, task_id: str) -> Snapshot:
        if task_id in self.problems:
            raise SampleError(self.problems[task_id])
        return super().snapshot(task_id)


def precision_source(options: DatasetChoice | None) -> PrecisionScenes | None:
    """The source of precision-cua-bench's selected targets; ``None`` without options."""
    if options is None:
        return None
    return PrecisionScenes(spec_from_options(options.settings), options.picks, options.max_side)


registry.source(FORMAT, kind="dataset")(precision_source)
