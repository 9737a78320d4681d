"""Another harness's raw replies read again as a sweep reads them (``python -m dvoc_bench.report --import
FILE --reread MODEL``).

:func:`reply_reader` returns a function of ``(reply text, image width, image height)`` that does what a
one-shot trial does with a reply of the model config ``MODEL``: the image is sized the way the sweep sends a
``W x H`` screenshot to that model (its ``image:`` limits, then its declared resize: ``model_view``), the
reply is read by the config's ``prompt_style`` reader (``point_parser``, the sweep's), converted from the
declared frame (``read_point``) and mapped back to the screenshot, clamped to it as a trial's final point
is. It lives on the runner's floor because the analysis may not import the model configs nor the
protocol's readers (``tests/test_layers.py``); the analysis receives the function and never knows how it
reads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dvoc_bench.core.geometry import Size, clamp_point
from dvoc_bench.draw.sending import model_view
from dvoc_bench.methods.common import read_point
from dvoc_bench.models.base import Reply
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.options import model_image
from dvoc_bench.protocol.native import point_parser

ReadBack = tuple[str, float | None, float | None, float | None, float | None, str]
"""What reading one reply gave: ``(status, x, y, raw_x, raw_y, detail)``. ``status``: ``ok`` (a point;
``x, y`` in screenshot pixels, ``raw_x, raw_y`` the numbers as the model wrote them), ``out_of_frame``
(numbers outside the frame's range: ``raw_*`` kept, no point), ``refusal`` (the reader says the model
declined) or ``parse_error`` (nothing read). ``detail``: the reader's tag, or why."""

Reader = Callable[[str, int, int], ReadBack]
"""``reader(reply_text, width, height)``."""


def reply_reader(model: str, models_dir: Path | None = None) -> tuple[Reader, str]:
    """The reader of the model config ``model``'s replies and a line naming what it applies (its prompt
    style and frame rule). ``ConfigError`` (one line) for an unknown or bad config."""
    cfg = load_model_config(model, models_dir or default_conf_dir() / "model", check_key=False)
    rule = cfg.frame
    limits = model_image(cfg.image, None, f"model {cfg.name}: ")
    parse = point_parser(cfg.prompt_style, rule)

    def read(text: str, width: int, height: int) -> ReadBack:
        size = Size(int(width), int(height))
        view = model_view(size, None, limits.max_side, limits.max_pixels, rule)
        parsed = parse(Reply(text=text))
        if parsed.values is None:
            detail = parsed.detail or "no answer"
            return ("refusal" if "refus" in detail else "parse_error", None, None, None, None, detail)
        rx, ry = parsed.values["x"], parsed.values["y"]
        seen, why = read_point(parsed, rule, view.sent)
        if seen is None:
            return ("out_of_frame", None, None, rx, ry, why or "out_of_frame")
        final = clamp_point(view.to_original(seen), size)
        return ("ok", final.x, final.y, rx, ry, parsed.detail or parsed.status)

    line = f"{cfg.name}: prompt_style {cfg.prompt_style}, frame rule {rule.describe()}"
    return read, line
