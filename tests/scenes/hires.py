"""A test-only task source of 3840x2160 screens, in one file: importing it registers the source
``hires_test`` (a subfolder of a scenes directory holding ``*.json`` synthetic specs); nothing in the package
is touched. :func:`write_fixture` writes the samples, whose target boxes the tests know.

The screens are drawn by the synthetic renderer at 4K: a dark desktop with a title bar, a grid of small
distractor icons, and one small target (28x20 px, a few labelled) placed near the corners, the edges and the
centre, where a downscaled image leaves it about 11x8 px.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dvoc_bench.scenes import SceneFolder
from dvoc_bench.scenes.sources import source
from dvoc_bench.scenes.synthetic import render_synthetic

NAME = "hires_test"
SIZE = (3840, 2160)
TARGET_WH = (28, 20)
TARGET_AT = [(40, 60), (3770, 2110), (1905, 1075), (3000, 300), (600, 1800), (2400, 1500)]
"""Top-left corners of the targets of the fixture samples (the first two sit near opposite corners)."""


def sample_spec(i: int) -> dict[str, Any]:
    """The synthetic spec of sample ``H<i>``: its target box is ``TARGET_AT[i]`` + ``TARGET_WH``."""
    x, y = TARGET_AT[i]
    w, h = TARGET_WH
    elements: list[dict[str, Any]] = [
        {
            "id": "bar",
            "kind": "rect",
            "box": [0, 0, SIZE[0] - 1, 40],
            "fill": [60, 64, 72],
            "role": "panel",
            "label": "title bar",
        }
    ]
    for k in range(60):  # distractor icons on a grid, kept away from the target
        gx, gy = 150 + (k % 12) * 300, 200 + (k // 12) * 380
        if abs(gx - x) < 120 and abs(gy - y) < 120:
            continue
        elements.append(
            {"id": f"icon{k}", "kind": "rect", "box": [gx, gy, gx + w, gy + h], "fill": [90, 90, 200],
             "role": "button", "label": f"icon {k}", "interactive": True}
        )  # fmt: skip
    elements.append(
        {"id": "target", "kind": "rect", "box": [x, y, x + w, y + h], "fill": [230, 120, 40],
         "outline": [255, 255, 255], "outline_width": 1, "role": "button", "label": "orange button",
         "interactive": True}
    )  # fmt: skip
    return {
        "id": f"H{i}",
        "name": f"hires-{i}",
        "difficulty": "hard",
        "size": list(SIZE),
        "background": [30, 32, 36],
        "instruction": "Click the small orange button",
        "target": "target",
        "elements": elements,
    }


def target_box(i: int) -> tuple[int, int, int, int]:
    x, y = TARGET_AT[i]
    return (x, y, x + TARGET_WH[0], y + TARGET_WH[1])


def write_fixture(root: Path, n: int = len(TARGET_AT)) -> list[str]:
    """Write samples ``H0..H<n-1>`` under ``root/hires_test/``; their ids."""
    folder = root / NAME
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"H{i}.json").write_text(json.dumps(sample_spec(i)))
    return [f"H{i}" for i in range(n)]


def _load(path: Path, max_side: int = 8192):  # noqa: ANN202
    return render_synthetic(json.loads(path.read_text()), max_side)


@source(NAME, kind="synthetic")
def build(options: Any) -> SceneFolder:
    return SceneFolder("*.json", _load, kind="synthetic")
