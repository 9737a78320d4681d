"""``python -m dvoc_bench.coords MODEL --image-size W H --answer '...'``: what a model's answer means on the
screen, by the same mapping a sweep applies to a one-shot answer (docs/frames.md).

It reads the model's config (``conf/model/MODEL.yaml``, or ``--models DIR``), sizes the image the way the
sweep sends a ``W x H`` screenshot to that model (its ``image:`` limits, then its declared resize), reads
``--answer`` with the model's ``prompt_style`` (``--style`` overrides it), converts it from the declared
frame and maps it back to the screenshot, clamped to it as a trial's final point is. It prints the parsed
answer, the frame rule applied and, last, the screen pixel as ``x, y``. An answer outside the frame's
declared range is reported ``out_of_frame`` (exit 1), one that cannot be read ``parse_error`` and one that
declines ``refusal`` (exit 1); a
bad model name or option is one line, exit 2. No model is called and no key is needed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.frames import PROMPT_STYLES
from dvoc_bench.core.geometry import Point, Size, clamp_point
from dvoc_bench.draw.sending import model_view
from dvoc_bench.methods.common import read_point
from dvoc_bench.models.base import Reply
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.frames_doc import frames_table
from dvoc_bench.models.options import model_image
from dvoc_bench.protocol.native import point_parser

__all__ = ["main", "screen_point"]


def _fmt(v: float) -> str:
    return f"{round(v, 3):g}"


def screen_point(
    model: str, size: Size, answer: str, models_dir: Path | None = None, style: str | None = None
) -> tuple[list[str], Point | None]:
    """The report lines and the screen pixel of ``answer`` from ``model`` on a ``size`` screenshot
    (``None`` when the answer is unusable). ``ConfigError`` for a bad model or style."""
    cfg = load_model_config(model, models_dir or default_conf_dir() / "model", check_key=False)
    style = style or cfg.prompt_style
    if style not in PROMPT_STYLES:
        raise ConfigError(f"--style: unknown value {style!r}; allowed: {', '.join(PROMPT_STYLES)}")
    rule = cfg.frame
    limits = model_image(cfg.image, None, f"model {cfg.name}: ")
    view = model_view(size, None, limits.max_side, limits.max_pixels, rule)
    parsed = point_parser(style, rule)(Reply(text=answer))
    lines = [
        f"model: {cfg.name} (prompt_style {style})",
        f"frame rule: {rule.describe()}" + (f"  [{rule.source}]" if rule.source else ""),
        *([f"mapping: {rule.mapping}  [{rule.mapping_source}]"] if rule.mapping_source else []),
        f"image: {size.width}x{size.height} screenshot, sent and seen at {view.sent.width}x"
        f"{view.sent.height}",
    ]
    if parsed.values is None:
        lines.append(f"parsed: {parsed.status} ({parsed.detail})")
        return lines, None
    raw = parsed.values
    lines.append(
        f"parsed: x={_fmt(raw['x'])}, y={_fmt(raw['y'])} in {rule.units} ({parsed.detail or parsed.status})"
    )
    seen, out_of_frame = read_point(parsed, rule, view.sent)
    if seen is None:
        lines.append(f"{out_of_frame} (not clamped: a sweep records the step out_of_frame)")
        return lines, None
    lines.append(f"in the image seen: {_fmt(seen.x)}, {_fmt(seen.y)} px")
    on_screen = view.to_original(seen)
    final = clamp_point(on_screen, size)
    if final != on_screen:
        lines.append(f"clamped to the screenshot from {_fmt(on_screen.x)}, {_fmt(on_screen.y)}")
    lines.append(f"{_fmt(final.x)}, {_fmt(final.y)}")
    return lines, final


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.coords",
        description="Print what a model's answer means on the screen (the sweep's one-shot mapping).",
    )
    p.add_argument("model", nargs="?", help="a model config name (conf/model/<name>.yaml)")
    p.add_argument("--image-size", nargs=2, type=int, metavar=("W", "H"),
                   help="the screenshot's width and height, pixels")  # fmt: skip
    p.add_argument("--answer", help="the model's reply text, in its prompt style's format")
    p.add_argument("--table", action="store_true", help="print the frames table of docs/frames.md instead")
    p.add_argument(
        "--style", default=None, help=f"read the answer in this style ({', '.join(PROMPT_STYLES)})"
    )
    p.add_argument(
        "--models", type=Path, default=None, help="the folder of model configs (default conf/model)"
    )
    args = p.parse_args(argv)
    if args.table:
        print(frames_table(args.models or default_conf_dir() / "model"))
        return 0
    if args.model is None or args.image_size is None or args.answer is None:
        print("config error: MODEL, --image-size W H and --answer are required (or --table)", file=sys.stderr)
        return 2
    w, h = args.image_size
    if w < 1 or h < 1:
        print(f"config error: --image-size: must be positive, got {w} {h}", file=sys.stderr)
        return 2
    try:
        lines, point = screen_point(args.model, Size(w, h), args.answer, args.models, args.style)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0 if point is not None else 1


if __name__ == "__main__":
    sys.exit(main())
