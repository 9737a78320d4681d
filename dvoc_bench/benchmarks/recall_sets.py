"""The screens ``python -m dvoc_bench.bench recall`` measures besides web tasks, each with its truth.

- **docs**: six real documentation pages installed on this machine, one task per page
  (:data:`DOC_PAGES`, from :mod:`dvoc_bench.benchmarks.ocr_docs`): rustdoc's ``Vec`` (DOC1), Node's
  ``fs`` (DOC4), the Valgrind manual (DOC5), libffi's (DOC6), Debian's Python policy (DOC7), the Rust book
  (DOC8). The truth is the DOM's, as for W1-W5. A page that is not installed is left out, with its reason.
- **desktop**: D1-D4, Tk applications on a private X display; the truth is the toolkit's widgets
  (buttons, entries, check buttons, list items; text labels are not interactive).
- **screenspot**: a ScreenSpot-format fixture (:func:`dvoc_bench.scenes.dataset_fixture.write_fixture`:
  rendered screens of labelled buttons and unlabelled square icons, every one of them annotated as a
  sample), read back through the ScreenSpot loader; one screen per image, its truth every sample box on
  it, each sample a target. A real ScreenSpot annotates one target per sample, not every element, so on
  it only the targets' rows mean anything.

Every screen comes as a :class:`~dvoc_bench.core.scene.Snapshot` (the oracle reads its truth) and the
list of its target boxes.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot

DOC_PAGES = ("DOC1", "DOC4", "DOC5", "DOC6", "DOC7", "DOC8")
"""One task of each distinct documentation page of :data:`dvoc_bench.benchmarks.ocr_docs.DOC_TASKS`."""

D_TASKS = ("D1", "D2", "D3", "D4")
"""The repository's desktop tasks (``scenes/desktop``)."""

Screen = tuple[Snapshot, list[Box]]
"""A rendered screen and its targets (inclusive pixel boxes, as the truth's)."""


def docs_task_files(out_dir: Path) -> tuple[list[Path], list[str]]:
    """The task files of the documentation pages present (written into ``out_dir``) and why others are
    absent."""
    from dvoc_bench.benchmarks.ocr_docs import write_tasks

    return write_tasks(out_dir, list(DOC_PAGES))


def desktop_screens(ids: Sequence[str]) -> list[Screen]:
    """D1-D4 rendered on a private X display (Xvfb + Tk)."""
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir

    reg = SceneRegistry(default_scenes_dir(), sources=build_sources({}, names=["desktop"]))
    try:
        shots = [reg.snapshot(i) for i in ids]
    finally:
        reg.close()
    return [(s, [s.target_box]) for s in shots]


def screenspot_screens(screens: int = 3, per_screen: int = 12, seed: int = 0) -> list[Screen]:
    """A ScreenSpot-format fixture written to a temporary folder and read back with the ScreenSpot
    loader: one screen per image, every sample box of that image its truth and its targets."""
    from PIL import Image

    from dvoc_bench.scenes.dataset_fixture import write_fixture
    from dvoc_bench.scenes.datasets import DatasetSpec, load_samples

    out: list[Screen] = []
    with tempfile.TemporaryDirectory(prefix="dvoc-screenspot-") as d:
        write_fixture(d, "screenspot", screens=screens, per_screen=per_screen, seed=seed)
        samples = load_samples(DatasetSpec("screenspot", Path(d)))
        by_image: dict[Path, list] = {}
        for s in samples:
            by_image.setdefault(s.image, []).append(s)
        for k, (path, group) in enumerate(sorted(by_image.items()), 1):
            with Image.open(path) as im:
                image = np.asarray(im.convert("RGB"))
            els = tuple(Element(s.id, s.instruction, s.box) for s in group)
            size = Size(image.shape[1], image.shape[0])
            truth = SceneTruth(f"SS{k}", size, group[0].instruction, els[0].id, els[0].box, els)
            digest = hashlib.sha256(image.tobytes()).hexdigest()[:16]
            out.append((Snapshot(truth, image, digest), [e.box for e in els]))
    return out
