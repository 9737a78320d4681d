"""Our own helper server: the seed's stdin protocol in front of the ``onnx`` or ``rknn`` backend.

    python -m dvoc_bench.detect.helper --backend onnx --model det.onnx --anchors RK_anchors.txt \\
        [--confidence 0.3] [--nms-iou 0.6] [--threads 2] [--max-boxes 50] [--max-side 16384] [--self-test]

It behaves like the board's C helper (protocol in :mod:`dvoc_bench.detect.helper_protocol`): it loads the
model, prints ``READY <w> <h>``, then answers ``D`` requests with ``OK <n> <ms>`` and ``n`` box lines until
``Q`` or the end of its input. Any failure (an unknown command byte, a bad size, a truncated image, a
failed inference, a model that does not load) prints ``ERR <message>`` and exits with status 1: after a
protocol error the byte stream cannot be trusted, and the client starts a fresh helper. Bad start-up
arguments print ``ERR bad arguments: ...`` and exit with status 2. ``--anchors`` is required (the anchors
ship with the model); ``--anchors yolov5-default`` says YOLOv5's default anchors are meant. Start-up
defaults are the board runner's (``--confidence 0 --nms-iou 0.8``); the Agent passes 0.3 / 0.6.
``--self-test`` runs one blank 800x600 page through the model, prints the reply and exits.
Stdout carries protocol lines only; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import BinaryIO, NoReturn

import numpy as np

from dvoc_bench.detect.helper_protocol import (
    HEADER,
    MAX_SIDE,
    REQUEST_DETECT,
    REQUEST_QUIT,
    error_line,
    format_ok,
)
from dvoc_bench.detect.types import Detector, DetectorError

log = logging.getLogger("dvoc_bench.detect.helper")


class RequestError(Exception):
    """A request that breaks the protocol (the helper answers ERR and exits)."""


def _read_exact(stream: BinaryIO, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(n - len(buf))
        if not chunk:
            raise RequestError(f"input ended after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


def serve(detector: Detector, stdin: BinaryIO, stdout: BinaryIO, *, max_side: int = MAX_SIDE) -> int:
    """Answer requests until ``Q`` or end of input (0) or the first failure (``ERR``, 1)."""

    def send(text: str) -> None:
        stdout.write(text.encode("utf-8"))
        stdout.flush()

    while True:
        cmd = stdin.read(1)
        if not cmd or cmd == REQUEST_QUIT:
            return 0
        if cmd in (b"\n", b"\r", b" "):
            continue  # tolerate a newline after Q/D typed by hand
        try:
            if cmd != REQUEST_DETECT:
                raise RequestError(f"unknown request byte 0x{cmd[0]:02x}")
            w, h = HEADER.unpack(_read_exact(stdin, HEADER.size))
            if not (0 < w <= max_side and 0 < h <= max_side):
                raise RequestError(f"image size {w}x{h} outside 1..{max_side}")
            data = _read_exact(stdin, w * h * 3)
            image = np.frombuffer(data, dtype=np.uint8).reshape(h, w, 3)
            run = detector.run(image)
        except (RequestError, DetectorError, ValueError) as e:
            log.error("request failed: %s", e)
            send(error_line(str(e)))
            return 1
        ms = run.inference_ms if run.inference_ms is not None else run.wall_ms
        send(format_ok(list(run.detections), ms))


def build(args: argparse.Namespace) -> Detector:
    """The backend named on the command line."""
    from dvoc_bench.detect.service import resolve_anchors
    from dvoc_bench.detect.yolo import PostConfig

    anchors = resolve_anchors(args.anchors, "--anchors")
    post = PostConfig(args.confidence, args.nms_iou, args.max_boxes)
    if args.backend == "onnx":
        from dvoc_bench.detect.onnx_backend import OnnxDetector

        return OnnxDetector(args.model, anchors, threads=args.threads, post=post)
    from dvoc_bench.detect.rknn_backend import RknnDetector

    return RknnDetector(args.model, anchors, post=post, core_mask=args.core_mask)


def _fraction(s: str) -> float:
    v = float(s)
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {s}")
    return v


class UsageError(Exception):
    """Bad start-up arguments (answered with one ``ERR`` line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _positive(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {s}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {s}")
    return v


def parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="python -m dvoc_bench.detect.helper",
        description="UI-grounding helper speaking the seed's stdin protocol (READY / D / OK / Q / ERR).",
    )
    ap.add_argument("--backend", choices=("onnx", "rknn"), default="onnx")
    ap.add_argument("--model", required=True, help="the .onnx or .rknn model")
    ap.add_argument(
        "--anchors",
        required=True,
        help="RK_anchors.txt (18 numbers) shipped with the model, or yolov5-default for YOLOv5's anchors",
    )
    ap.add_argument("--confidence", type=_fraction, default=0.0, help="confidence threshold (default 0)")
    ap.add_argument("--nms-iou", type=_fraction, default=0.8, help="NMS IoU threshold (default 0.8)")
    ap.add_argument("--max-boxes", type=_positive, default=50)
    ap.add_argument("--threads", type=_positive, default=2, help="onnxruntime threads")
    ap.add_argument("--max-side", type=_positive, default=MAX_SIDE, help="largest accepted image side")
    ap.add_argument("--core-mask", type=int, default=None, help="rknn: NPU core mask for init_runtime")
    ap.add_argument("--runtime", help="accepted for compatibility with the board's helper; ignored")
    ap.add_argument("--self-test", action="store_true", help="run one blank page and print the reply")
    return ap


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="helper: %(message)s")
    out = sys.stdout.buffer
    try:
        args = parser().parse_args(argv)
    except UsageError as e:  # the client reads stdout: a bad start-up is an ERR line, not a usage text
        log.error("bad arguments: %s", e)
        out.write(error_line(f"bad arguments: {e}").encode("utf-8"))
        out.flush()
        return 2
    try:
        detector = build(args)
    except (DetectorError, OSError, ValueError) as e:
        out.write(error_line(f"cannot load the model: {e}").encode("utf-8"))
        out.flush()
        return 1
    try:
        size = getattr(detector, "input_size", 960)
        if args.self_test:
            page = np.full((600, 800, 3), 255, dtype=np.uint8)
            run = detector.run(page)
            ms = run.inference_ms if run.inference_ms is not None else run.wall_ms
            out.write(format_ok(list(run.detections), ms).encode("utf-8"))
            out.flush()
            return 0
        out.write(f"READY {size} {size}\n".encode())
        out.flush()
        return serve(detector, sys.stdin.buffer, out, max_side=args.max_side)
    finally:
        detector.close()


if __name__ == "__main__":
    sys.exit(main())
