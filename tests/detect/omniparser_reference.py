"""The committed ultralytics reference of ``detector=omniparser`` (``tests/data/omniparser_reference.json``).

Two steps, two interpreters (ultralytics is never a dependency of the project):

1. ``python -m tests.detect.omniparser_reference render OUT`` (the project's venv) renders the screens of
   :data:`SCREENS` through the project's web scenes (pinned fonts) to ``OUT/<id>.png``;
2. ``python tests/detect/omniparser_reference.py reference OUT JSON --weights model.pt`` (a separate venv
   with ``torch==2.14.1 torchvision==0.29.1 ultralytics``) runs ultralytics' ``predict`` on each PNG with
   OmniParser's settings (conf 0.05, iou 0.1) at imgsz 640 and 1280 and writes the boxes, the ultralytics
   version and the weights' sha256. It imports nothing of dvoc_bench.

The same interpreter writes the held-out reference of ``python -m dvoc_bench.bench ultra-agree``:
``python tests/detect/omniparser_reference.py boxes OUT.json --weights model.pt KIND=IMAGE...`` runs the
same ``predict`` on any screenshots (each labelled with its kind, e.g. ``pages=/tmp/shots/P1.png``) and
writes, per image, its path, kind, sha256 and the boxes at each size, with the versions of ultralytics and
torch, the weights' sha256 and the date.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

SCREENS = ("W1", "W2", "W3", "W4", "W5")
"""Scenes of ``scenes/web`` whose screenshots the reference holds (1280x720, the DVOC fonts)."""

SIZES = (640, 1280)
"""``imgsz`` values of the reference."""


def render(out: Path) -> dict[str, object]:
    """Render :data:`SCREENS` to ``out/<id>.png``; returns ``{id: Snapshot}``."""
    from PIL import Image

    from dvoc_bench.scenes.web.source import WebOptions, WebScenes

    root = Path(__file__).resolve().parents[2] / "scenes" / "web"
    web = WebScenes(WebOptions(timeout_s=30))
    snaps: dict[str, object] = {}
    try:
        for sid in SCREENS:
            snap = web.load(root / f"{sid}.yaml")
            snaps[sid] = snap
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                Image.fromarray(snap.image).save(out / f"{sid}.png")
    finally:
        web.close()
    return snaps


def reference(shots: Path, weights: Path) -> dict[str, object]:
    """ultralytics' boxes on every ``shots/<id>.png`` (run in the ultralytics venv)."""
    import ultralytics
    from PIL import Image
    from ultralytics import YOLO

    model = YOLO(str(weights))
    out: dict[str, object] = {
        "ultralytics": ultralytics.__version__,
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "conf": 0.05,
        "iou": 0.1,
        "images": {},
    }
    for sid in SCREENS:
        img = Image.open(shots / f"{sid}.png").convert("RGB")
        entry = {"png_sha256": hashlib.sha256((shots / f"{sid}.png").read_bytes()).hexdigest()[:16]}
        for size in SIZES:
            entry[str(size)] = _predict(model, img, size)  # type: ignore[assignment]
        out["images"][sid] = entry  # type: ignore[index]
    return out


def _predict(model: object, img: object, size: int) -> list[list[float]]:
    r = model.predict(source=img, conf=0.05, iou=0.1, imgsz=size, verbose=False)[0]  # type: ignore[attr-defined]
    return [
        [round(float(v), 2) for v in b] + [round(float(s), 4)]
        for b, s in zip(r.boxes.xyxy.tolist(), r.boxes.conf.tolist(), strict=True)
    ]


def boxes(images: list[str], weights: Path) -> dict[str, object]:
    """ultralytics' boxes on ``KIND=PATH`` screenshots at :data:`SIZES` (run in the ultralytics venv)."""
    import datetime

    import torch
    import ultralytics
    from PIL import Image
    from ultralytics import YOLO

    model = YOLO(str(weights))
    out: dict[str, object] = {
        "ultralytics": ultralytics.__version__,
        "torch": torch.__version__,
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "conf": 0.05,
        "iou": 0.1,
        "date": datetime.date.today().isoformat(),
        "images": [],
    }
    for item in images:
        kind, sep, path = item.partition("=")
        if not sep:
            raise SystemExit(f"expected KIND=IMAGE, got {item!r}")
        img = Image.open(path).convert("RGB")
        entry: dict[str, object] = {
            "path": str(Path(path).resolve()),
            "kind": kind,
            "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
            "size": list(img.size),
        }
        for size in SIZES:
            entry[str(size)] = _predict(model, img, size)
        out["images"].append(entry)  # type: ignore[attr-defined]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["render", "reference", "boxes"])
    ap.add_argument("shots", type=Path, help="render/reference: the PNG folder; boxes: the JSON written")
    ap.add_argument("json", nargs="*", help="reference: the JSON written; boxes: KIND=IMAGE ...")
    ap.add_argument("--weights", type=Path)
    a = ap.parse_intermixed_args(argv)
    if a.step == "boxes":
        if not a.json or a.weights is None:
            ap.error("boxes needs KIND=IMAGE ... and --weights")
        a.shots.write_text(json.dumps(boxes(a.json, a.weights), indent=1) + "\n", encoding="utf-8")
        return 0
    if a.step == "render":
        render(a.shots)
        return 0
    if len(a.json) != 1 or a.weights is None:
        ap.error("reference needs JSON and --weights")
    Path(a.json[0]).write_text(json.dumps(reference(a.shots, a.weights), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
