"""``python -m dvoc_bench.mark IMAGE... --detector NAME [--model PATH] [--imgsz N] [--conf C] [--iou T]
[--set KEY=VALUE ...] [--json] [--draw OUT]``: what a Set-of-Mark detector sees on your own screenshots.

- ``--json`` prints ``{"<image>": [[x1, y1, x2, y2, score], ...]}``: every box the detector returned, in
  source pixels (continuous coordinates, two decimals; descending score). Without it, one line per image:
  boxes, marks, milliseconds.
- ``--draw OUT`` writes the marked frame SoM would send (boxes over ``max_area_frac`` of the screen
  dropped, at most 50 by score, numbered tags): ``OUT`` is the PNG for one image, a folder (created;
  ``<stem>.png`` inside) for several or when it ends with ``/``.

Any pixel detector of the ``detector`` group works (``cv``, ``onnx``, ``rknn``, ``helper``, ``omniparser``);
``--conf``/``--iou``/``--imgsz``/``--model`` set its ``confidence``/``nms_iou``/``imgsz``/``model``, and
``--set KEY=VALUE`` any other of its keys (``--set anchors=RK_anchors.txt``, ``--set command="..."``). Bad
input (a missing image, bad weights, an unknown detector or flag) is one ``config error:`` line, exit 2,
before anything is detected; a detector that fails on an image is one line, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _draw_paths(images: list[str], out: str) -> list[Path]:
    if len(images) == 1 and not out.endswith("/") and not Path(out).is_dir():
        return [Path(out)]
    folder = Path(out)
    stems = [Path(i).stem for i in images]
    names = stems if len(set(stems)) == len(stems) else [f"{k}-{s}" for k, s in enumerate(stems, 1)]
    return [folder / f"{n}.png" for n in names]


def main(argv: list[str] | None = None) -> int:
    from dvoc_bench.core.declare import ConfigError
    from dvoc_bench.detect.flags import FLAG_KEYS, config_from_flags, parse_sets
    from dvoc_bench.detect.service import build_detector
    from dvoc_bench.detect.types import DetectorError
    from dvoc_bench.draw.marking import mark_image, read_image

    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.mark",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("images", nargs="+", metavar="IMAGE", help="screenshots (PNG, JPEG, ...)")
    ap.add_argument("--detector", required=True, help="cv, onnx, rknn, helper or omniparser")
    ap.add_argument("--model", help="the detector's model file (detector.model)")
    ap.add_argument("--imgsz", type=int, help="letterbox size (detector.imgsz; omniparser)")
    ap.add_argument("--conf", type=float, help="score threshold (detector.confidence)")
    ap.add_argument("--iou", type=float, help="NMS IoU threshold (detector.nms_iou)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other detector key")
    ap.add_argument("--json", action="store_true", help="print the boxes as JSON")
    ap.add_argument("--draw", metavar="OUT", help="write the marked frame(s) here")
    args = ap.parse_intermixed_args(argv)
    flags = {f: getattr(args, f.lstrip("-")) for f in FLAG_KEYS}
    detector = None
    try:
        cfg = config_from_flags(args.detector, flags, parse_sets(args.set))
        images = [read_image(p) for p in args.images]
        outs = _draw_paths(args.images, args.draw) if args.draw else None
        detector = build_detector(cfg)
    except (ConfigError, DetectorError) as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    found: dict[str, list[list[float]]] = {}
    try:
        for k, (name, image) in enumerate(zip(args.images, images, strict=True)):
            try:
                m = mark_image(
                    image,
                    detector,
                    max_area_frac=cfg.max_area_frac,
                    tag_layout=cfg.tag_layout,
                    draw=bool(outs),
                )
            except DetectorError as e:
                print(f"{name}: detector {cfg.backend} failed: {e}", file=sys.stderr)
                return 1
            found[name] = [d.as_list() for d in m.run.detections]
            if outs and m.png is not None:
                outs[k].parent.mkdir(parents=True, exist_ok=True)
                outs[k].write_bytes(m.png)
            if not args.json:
                drawn = f" -> {outs[k]}" if outs else ""
                n = len(m.run.detections)
                print(f"{name}: {n} boxes, {len(m.marks)} marked, {m.run.wall_ms:.0f} ms{drawn}")
    finally:
        detector.close()
    if args.json:
        print(json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
