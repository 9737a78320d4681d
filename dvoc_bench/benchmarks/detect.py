"""Detector latency per screenshot (figures, not assertions).

    python -m dvoc_bench.bench detect [cv|onnx|helper|omniparser|all] [-n 30] [--threads 2] [--size 800x600]
        [--imgsz 640[,1280]] [--model PATH]
    python -m dvoc_bench.bench recall [...]   # recall against the DOM (dvoc_bench.benchmarks.recall)

- ``cv``: the classical detector on the synthetic scenes (800x600).
- ``onnx``: a YOLOv5n-sized model (the v6 layer graph, random weights, 1.76 M parameters) built here at
  960x960, run through onnxruntime with ``--threads`` threads on a screenshot of ``--size``; ``wall`` is
  letterbox + inference + decode + NMS, ``inference`` the onnxruntime call alone.
- ``omniparser``: OmniParser-v2's icon detector (``--model``, default the weights the tests use) at each
  ``--imgsz`` (a comma list, default 640; ``640,1280`` gives ``omniparser@640`` and ``omniparser@1280``) on
  the synthetic S1's screenshot scaled to ``--size`` (give 1280x720); skipped in ``all`` when the weights
  are absent. Per-page figures on real pages: ``bench recall --detectors cv,omniparser --imgsz 640,1280``.
- ``helper``: the same model behind our helper server; ``wall`` is the host's round trip (RGB transfer
  included), ``inference`` the helper's own ``OK`` figure.

Each prints ``median`` and ``p95`` in ms beside the seed's board figures (RV1106G3 NPU, steady state:
median 666 ms, p95 816 ms, excluding initialisation and image decoding). The last line is machine
readable: ``<backend>_median_ms=... <backend>_p95_ms=...``.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.detect.types import DetectionRun

BOARD_MEDIAN_MS = 666.0
"""The seed's RV1106G3 steady-state median per screenshot."""
BOARD_P95_MS = 816.0
"""The seed's RV1106G3 p95 per screenshot."""


def _stats(values: list[float]) -> tuple[float, float]:
    a = np.asarray(values, dtype=np.float64)
    return float(np.median(a)), float(np.percentile(a, 95))


def _time(run: Callable[[], DetectionRun], n: int, warmup: int = 2) -> dict[str, tuple[float, float] | None]:
    for _ in range(warmup):
        run()
    walls, infs = [], []
    for _ in range(n):
        r = run()
        walls.append(r.wall_ms)
        if r.inference_ms is not None:
            infs.append(r.inference_ms)
    return {"wall": _stats(walls), "inference": _stats(infs) if infs else None}


def _screenshot(size: tuple[int, int]) -> np.ndarray:
    """A synthetic scene resized to ``size`` (content does not change a YOLO's cost)."""
    from PIL import Image

    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

    img = SceneRegistry(default_scenes_dir()).snapshot("S3").image
    return np.asarray(Image.fromarray(img).resize(size))


def bench_cv(n: int) -> dict[str, tuple[float, float] | None]:
    from dvoc_bench.detect.cv import CvDetector
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

    reg = SceneRegistry(default_scenes_dir())
    images = [reg.snapshot(s).image for s in reg.ids() if s.startswith("S")]
    det = CvDetector()
    i = iter(range(10**9))
    return _time(lambda: det.run(images[next(i) % len(images)]), n)


def bench_onnx(
    n: int, threads: int, size: tuple[int, int], model: Path
) -> dict[str, tuple[float, float] | None]:
    from dvoc_bench.detect.onnx_backend import OnnxDetector
    from dvoc_bench.detect.yolo import DEFAULT_ANCHORS

    det = OnnxDetector(model, np.asarray(DEFAULT_ANCHORS).reshape(3, 3, 2), threads=threads)
    img = _screenshot(size)
    try:
        return _time(lambda: det.run(img), n)
    finally:
        det.close()


def bench_helper(
    n: int, threads: int, size: tuple[int, int], model: Path
) -> dict[str, tuple[float, float] | None]:
    from dvoc_bench.detect.helper_client import HelperDetector
    from dvoc_bench.detect.service import own_helper_command

    cmd = [*own_helper_command("onnx", str(model), "yolov5-default"), "--threads", str(threads)]
    img = _screenshot(size)
    with HelperDetector(cmd, startup_timeout_s=120) as h:
        out = _time(lambda: h.run(img), n)
        startup = h.last_startup_ms
    print(f"helper start-up (spawn to READY): {startup:.0f} ms")
    return out


def bench_omniparser(n: int, threads: int, size: tuple[int, int], model: Path, imgsz: int) -> dict:
    """OmniParser's detector on a UI screenshot (S1 resized to ``size``)."""
    from PIL import Image

    from dvoc_bench.detect.omniparser import OmniparserDetector

    det = OmniparserDetector(model, imgsz=imgsz, threads=threads)
    img = np.asarray(_page_image().resize(size, Image.Resampling.BILINEAR))
    out = _time(lambda: det.run(img), n)
    det.close()
    return out


def _page_image() -> Any:
    """A rendered UI screenshot without a browser: the synthetic scene S1 (PIL image)."""
    from PIL import Image

    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

    return Image.fromarray(SceneRegistry(default_scenes_dir()).snapshot("S1").image)


def _print(name: str, r: dict[str, tuple[float, float] | None]) -> None:
    for kind, v in r.items():
        if v is not None:
            print(f"{name:15s} {kind:10s} median {v[0]:8.1f} ms   p95 {v[1]:8.1f} ms")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dvoc_bench.bench detect",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("which", nargs="?", default="all", choices=["cv", "onnx", "helper", "omniparser", "all"])
    ap.add_argument("--model", type=Path, default=None, help="omniparser weights (model.pt or .onnx)")
    ap.add_argument("--imgsz", default="640", help="omniparser letterbox sizes, comma list (default 640)")
    ap.add_argument("-n", type=int, default=30, help="timed runs per backend (after 2 warm-up runs)")
    ap.add_argument("--threads", type=int, default=2, help="onnxruntime intra-op threads")
    ap.add_argument("--size", default="800x600", help="screenshot size WxH for onnx/helper")
    args = ap.parse_args(argv)
    try:
        sizes = [int(v) for v in args.imgsz.split(",") if v.strip()]
    except ValueError:
        ap.error(f"--imgsz: expected a comma list of integers, got {args.imgsz!r}")
    w, h = (int(v) for v in args.size.lower().split("x"))
    results: dict[str, dict[str, tuple[float, float] | None]] = {}
    if args.which in ("cv", "all"):
        results["cv"] = bench_cv(args.n)
    if args.which in ("onnx", "helper", "all"):
        from dvoc_bench.detect.synth_models import yolov5n_like_model

        with tempfile.TemporaryDirectory() as d:
            model = yolov5n_like_model(Path(d) / "yolov5n_like.onnx", 960)
            if args.which in ("onnx", "all"):
                results["onnx"] = bench_onnx(args.n, args.threads, (w, h), model)
            if args.which in ("helper", "all"):
                results["helper"] = bench_helper(args.n, args.threads, (w, h), model)
    if args.which in ("omniparser", "all"):
        from dvoc_bench.detect.omniparser import default_weights

        weights = args.model or default_weights()
        if weights.is_file():
            for size in sizes:
                name = "omniparser" if len(sizes) == 1 else f"omniparser@{size}"
                results[name] = bench_omniparser(args.n, args.threads, (w, h), weights, size)
        elif args.which == "omniparser":
            ap.error(f"--model: no weights at {weights}")
    print(
        f"detector latency per screenshot (n={args.n}; onnx/helper: YOLOv5n-sized @960, "
        f"{args.threads} threads, {w}x{h})"
    )
    for name, r in results.items():
        _print(name, r)
    print(
        f"board           RV1106G3   median {BOARD_MEDIAN_MS:8.1f} ms   p95 {BOARD_P95_MS:8.1f} ms"
        "   (the seed's figures)"
    )
    last = []
    for name, r in results.items():
        wall = r["wall"]
        assert wall is not None
        last.append(f"{name}_median_ms={wall[0]:.1f} {name}_p95_ms={wall[1]:.1f}")
    print(" ".join(last))
    return 0
