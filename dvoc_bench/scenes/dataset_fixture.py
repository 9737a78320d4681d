"""Small datasets in the public formats, built from rendered screenshots whose target boxes are known.

Used by the tests (every format, 1280x720 and 3840x2160) and by ``python -m dvoc_bench.bench dataset``
(a 500-sample 4K fixture). A screen is a synthetic scene (Pillow, DejaVu Sans): rows of labelled buttons
("text" targets) and unlabelled square icons ("icon" targets) at sizes scaled to the screen; each target
is written in the format's own box convention (ScreenSpot ``[x, y, w, h]``, ScreenSpot-Pro and the
manifest ``[x1, y1, x2, y2]``), so reading it back must give the drawn box.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Box
from dvoc_bench.draw.render import encode_png
from dvoc_bench.scenes.synthetic import render_synthetic

SCREENSPOT_SPLITS = ("mobile", "desktop", "web")
SOURCES = {"mobile": ("ios", "android"), "desktop": ("windows", "macos"), "web": ("shop", "forum")}
PRO_APPS = (("vscode", "macos", "Dev"), ("photoshop", "windows", "Creative"), ("excel", "macos", "Office"))


@dataclass(frozen=True)
class Expected:
    """What a fixture sample must load as."""

    id: str
    box: Box
    ui_type: str
    instruction: str
    meta: dict[str, Any] = field(default_factory=dict)


def screen(width: int, height: int, seed: int, n: int) -> tuple[np.ndarray, list[tuple[Box, str, str]]]:
    """A rendered screen and ``n`` targets on it: ``(box, "text" | "icon", label)``."""
    rng = np.random.default_rng(seed)
    k = width / 1280
    bw, bh, ic, gap = int(150 * k), int(40 * k), int(24 * k), int(30 * k)
    cols = max(1, (width - gap) // (bw + gap))
    elements: list[dict[str, Any]] = [
        {
            "id": "bar",
            "kind": "rect",
            "box": [0, 0, width - 1, int(36 * k)],
            "fill": [52, 56, 64],
            "interactive": False,
            "role": "panel",
            "label": "title bar",
        },  # fmt: skip
    ]
    targets: list[tuple[Box, str, str]] = []
    for i in range(n):
        row, col = divmod(i, cols)
        x0 = gap + col * (bw + gap) + int(rng.integers(0, max(1, gap // 2)))
        y0 = int(60 * k) + row * (bh + gap)
        if i % 2 == 0:  # a labelled button: a "text" target
            label = f"Item {seed}-{i}"
            box = [x0, y0, x0 + bw, y0 + bh]
            elements.append({"id": f"t{i}", "kind": "rect", "box": box, "fill": [70, 110, 200],
                             "outline": [230, 230, 230], "text": label,
                             "text_at": [x0 + int(10 * k), y0 + int(10 * k)],
                             "text_color": [255, 255, 255], "font_size": max(10, int(16 * k))})  # fmt: skip
            targets.append((Box(*map(float, box)), "text", label))
        else:  # an unlabelled square: an "icon" target
            box = [x0, y0 + (bh - ic) // 2, x0 + ic, y0 + (bh - ic) // 2 + ic]
            colour = [int(c) for c in rng.integers(60, 250, 3)]
            elements.append({"id": f"t{i}", "kind": "rect", "box": box, "fill": colour,
                             "label": f"icon {i}"})  # fmt: skip
            targets.append((Box(*map(float, box)), "icon", f"the square icon number {i}"))
        if y0 + bh >= height:
            raise ValueError(f"{n} targets do not fit a {width}x{height} screen")
    spec = {"id": f"screen{seed}", "name": "fixture", "difficulty": "easy", "size": [width, height],
            "background": [236, 238, 242], "instruction": "fixture", "target": "t0",
            "elements": elements}  # fmt: skip
    return np.asarray(render_synthetic(spec).image), targets


def _write_png(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_png(image))


def write_fixture(
    root: Path | str, fmt: str, size: tuple[int, int] = (1280, 720), *, screens: int = 3, per_screen: int = 2,
    with_ids: bool = True, copies: int = 1, seed: int = 0,
) -> list[Expected]:  # fmt: skip
    """Write a ``fmt`` dataset under ``root`` (``screens`` rendered screenshots, ``per_screen`` targets on
    each; ``copies``: each screenshot file written that many times under other names, with its samples,
    for large fixtures at little rendering cost). Returns every sample as it must load."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    w, h = size
    out: list[Expected] = []
    files: dict[Path, list[dict[str, Any]]] = {}
    for si in range(screens):
        image, targets = screen(w, h, seed + si, per_screen)
        for c in range(copies):
            name = f"s{seed + si}_{c}.png"
            if fmt in ("screenspot", "screenspot_v2"):
                split = SCREENSPOT_SPLITS[si % 3]
                folder = "screenspot_imgs" if fmt == "screenspot" else "screenspotv2_image"
                img_path, rel = root / folder / name, name
                suffix = "" if fmt == "screenspot" else "_v2"
                ann = root / f"screenspot_{split}{suffix}.json"
            elif fmt == "screenspot_pro":
                app, platform, group = PRO_APPS[si % len(PRO_APPS)]
                img_path, rel = root / "images" / app / name, f"{app}/{name}"
                ann = root / "annotations" / f"{app}_{platform}.json"
            else:
                img_path, rel = root / "shots" / name, f"shots/{name}"
                ann = root / "manifest.jsonl"
            if c == 0:
                _write_png(img_path, image)
                first = img_path
            else:
                img_path.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(first, img_path)
            recs = files.setdefault(ann, [])
            for ti, (box, kind, label) in enumerate(targets):
                instruction = f"click {label}" if kind == "text" else f"click {label}"
                index = len(recs)
                sid = f"{fmt}_{si}_{c}_{ti}" if with_ids else f"{ann.stem}:{index}"
                meta: dict[str, Any]
                rec: dict[str, Any]
                if fmt in ("screenspot", "screenspot_v2"):
                    source = SOURCES[split][ti % 2]
                    rec = {"img_filename": rel, "bbox": [box.x0, box.y0, box.w, box.h],
                           "instruction": instruction, "data_type": kind, "data_source": source}  # fmt: skip
                    meta = {"platform": split, "data_source": source}
                elif fmt == "screenspot_pro":
                    rec = {"img_filename": rel, "bbox": box.as_list(), "img_size": [w, h],
                           "instruction": instruction, "instruction_cn": "点击", "ui_type": kind,
                           "platform": platform, "application": app, "group": group}  # fmt: skip
                    meta = {"platform": platform, "application": app, "group": group}
                else:
                    rec = {"image": rel, "bbox_xyxy": box.as_list(), "instruction": instruction,
                           "tags": {"ui_type": kind, "application": "fixture"}}  # fmt: skip
                    meta = {"application": "fixture"}
                if with_ids:
                    rec["id"] = sid
                recs.append(rec)
                out.append(Expected(sid, box, kind, instruction, meta))
    for ann, recs in files.items():
        ann.parent.mkdir(parents=True, exist_ok=True)
        if ann.suffix == ".jsonl":
            ann.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
        else:
            ann.write_text(json.dumps(recs, ensure_ascii=False), encoding="utf-8")
    return out
