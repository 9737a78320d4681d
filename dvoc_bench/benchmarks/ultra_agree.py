"""How closely ``detector=omniparser`` reproduces ultralytics' own boxes on held-out screenshots.

    python -m dvoc_bench.bench ultra-agree --reference REF.json [--model PATH] [--iou-match 0.7] [--per-image]

``REF.json`` is written by ultralytics itself, in a separate interpreter (ultralytics and torch are never
dependencies of the project)::

    /path/to/ultralytics-venv/bin/python tests/detect/omniparser_reference.py boxes REF.json \\
        --weights model.pt pages=shot1.png desktop=shot2.png ...

It holds, per screenshot, its path, kind, sha256 and ultralytics' boxes at each imgsz (conf 0.05, NMS IoU
0.1, OmniParser's settings), with the ultralytics and torch versions and the weights' sha256. This script
runs our detector on the same files with the same settings (the weights' sha256 must be the reference's,
each screenshot's sha256 its entry's) and matches the boxes greedily one to one at IoU >= ``--iou-match``
(ultralytics' boxes by descending score, each to the unused box of ours it overlaps most): **recall** is
the share of ultralytics' boxes matched, **precision** the share of ours that match one of theirs, **min
IoU** the loosest matched pair. Figures
per kind and imgsz, pooled over the kind's screenshots (``--per-image`` adds each screenshot), beside the
targets (recall >= 0.95 and precision >= 0.90 at 1280; >= 0.90 and >= 0.85 at 640). The last line is
machine readable: ``<kind>@<imgsz>_recall=... <kind>@<imgsz>_precision=...``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dvoc_bench.core.jsonread import load_file

TARGETS = {1280: (0.95, 0.90), 640: (0.90, 0.85)}
"""Required (recall, precision) of ultralytics' boxes by imgsz."""


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of every ``x1, y1, x2, y2`` row of ``a`` against every row of ``b`` (``len(a) x len(b)``)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    ix = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    iy = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = ix * iy
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def greedy_matches(
    reference: Sequence[Sequence[float]], ours: Sequence[Sequence[float]], thr: float
) -> list[float]:
    """The IoU of each one-to-one match at IoU >= ``thr``: each reference box (``x1, y1, x2, y2[, score]``),
    by descending score when given, takes the unused box of ``ours`` it overlaps most."""
    if not reference or not ours:
        return []
    ref = np.asarray([r[:4] for r in reference], dtype=np.float64)
    order = (
        np.argsort([-r[4] for r in reference], kind="stable") if len(reference[0]) > 4 else range(len(ref))
    )
    iou = iou_matrix(ref, np.asarray([o[:4] for o in ours], dtype=np.float64))
    used = np.zeros(iou.shape[1], dtype=bool)
    out: list[float] = []
    for i in order:
        row = np.where(used, -1.0, iou[i])
        j = int(np.argmax(row))
        if row[j] >= thr:
            used[j] = True
            out.append(float(row[j]))
    return out


@dataclass
class Tally:
    """Matched boxes of one kind at one imgsz."""

    matched: int = 0
    """Boxes of ours matched one to one with a box of ultralytics'."""
    theirs: int = 0
    """ultralytics' boxes."""
    ours: int = 0
    """Our boxes."""
    images: int = 0
    """Screenshots counted."""
    min_iou: float = 1.0
    """Lowest IoU of a matched pair (1.0 when none matched)."""

    def add(self, other: Tally) -> None:
        """Pool ``other`` into this tally."""
        self.matched += other.matched
        self.theirs += other.theirs
        self.ours += other.ours
        self.images += other.images
        self.min_iou = min(self.min_iou, other.min_iou)

    @property
    def recall(self) -> float:
        return self.matched / self.theirs if self.theirs else 1.0

    @property
    def precision(self) -> float:
        return self.matched / self.ours if self.ours else 1.0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_reference(path: Path) -> dict:
    """The reference JSON, checked for the keys this script reads (``ValueError`` naming what is wrong)."""
    try:
        ref = load_file(path)
    except (OSError, ValueError) as e:
        raise ValueError(f"--reference: cannot read {path}: {type(e).__name__}: {e}") from None
    for key in ("weights_sha256", "images", "conf", "iou"):
        if key not in ref:
            raise ValueError(f"--reference: {path}: no {key!r} (omniparser_reference.py boxes writes it)")
    return ref


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench ultra-agree",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--reference", type=Path, required=True, help="ultralytics' boxes (JSON)")
    ap.add_argument("--model", type=Path, default=None, help="the weights (default: the tests' copy)")
    ap.add_argument("--iou-match", type=float, default=0.7, help="IoU at which two boxes match (0.7)")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    ap.add_argument("--per-image", action="store_true", help="also print each screenshot's figures")
    args = ap.parse_args(argv)

    from PIL import Image

    from dvoc_bench.detect.omniparser import OmniparserDetector, default_weights, file_sha256

    try:
        ref = load_reference(args.reference)
    except ValueError as err:
        ap.error(str(err))
    weights = args.model or default_weights()
    if not weights.is_file():
        ap.error(f"--model: no weights at {weights}")
    if file_sha256(weights) != ref["weights_sha256"]:
        ap.error(f"--model: {weights} is not the reference's weights (sha256 {ref['weights_sha256']})")
    images = ref["images"]
    for e in images:  # every screenshot checked before anything runs
        p = Path(e["path"])
        if not p.is_file() or _sha256(p) != e["sha256"]:
            ap.error(f"--reference: {p} is missing or not the screenshot the reference was made on")
    sizes = sorted({int(k) for e in images for k in e if k.isdigit()})
    tallies: dict[tuple[str, int], Tally] = {}
    rows = []
    for size in sizes:
        det = OmniparserDetector(
            weights,
            imgsz=size,
            confidence=float(ref["conf"]),
            nms_iou=float(ref["iou"]),
            threads=args.threads,
        )
        for e in images:
            p = Path(e["path"])
            img = np.asarray(Image.open(p).convert("RGB"))
            ours = [d.box.as_list() for d in det.run(img).detections]
            theirs = e[str(size)]
            m = greedy_matches(theirs, ours, args.iou_match)
            one = Tally(len(m), len(theirs), len(ours), 1, min(m, default=1.0))
            tallies.setdefault((e["kind"], size), Tally()).add(one)
            rows.append((e["kind"], p.name, size, one))
        det.close()

    load = os.getloadavg()
    print(
        f"omniparser vs ultralytics {ref.get('ultralytics', '?')} (torch {ref.get('torch', '?')}, "
        f"reference of {ref.get('date', '?')}); weights sha256 {ref['weights_sha256']}; conf {ref['conf']}, "
        f"iou {ref['iou']}; matched at IoU >= {args.iou_match:g}; {datetime.date.today().isoformat()}, load "
        f"{load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}"
    )
    if args.per_image:
        print("| kind | screenshot | imgsz | ultralytics | ours | matched | recall | precision | min IoU |")
        print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for kind, name, size, t in rows:
            print(
                f"| {kind} | {name} | {size} | {t.theirs} | {t.ours} | {t.matched} | {t.recall:.3f} | "
                f"{t.precision:.3f} | {t.min_iou:.3f} |"
            )
    print("| kind | imgsz | shots | ultralytics | ours | matched | recall | precision | min IoU | target |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    pooled: dict[int, Tally] = {}
    for (_kind, size), t in sorted(tallies.items()):
        pooled.setdefault(size, Tally()).add(t)
    last = []
    for (kind, size), t in [*sorted(tallies.items()), *((("all", s), t) for s, t in sorted(pooled.items()))]:
        want = TARGETS.get(size)
        ok = "" if want is None else ("met" if t.recall >= want[0] and t.precision >= want[1] else "NOT met")
        goal = "" if want is None else f"R ≥ {want[0]:.2f}, P ≥ {want[1]:.2f}: {ok}"
        print(
            f"| {kind} | {size} | {t.images} | {t.theirs} | {t.ours} | {t.matched} | {t.recall:.3f} | "
            f"{t.precision:.3f} | {t.min_iou:.3f} | {goal} |"
        )
        last.append(f"{kind}@{size}_recall={t.recall:.4f} {kind}@{size}_precision={t.precision:.4f}")
    print(" ".join(last))
    return 0
