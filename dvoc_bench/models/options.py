"""Settings of real models that the whole config declares (``cache:``, ``image:``): see
:mod:`dvoc_bench.settings`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dvoc_bench.declare import Declared


class CacheOptions(Declared):
    """The ``cache:`` block: the response cache of real models (README "Real models")."""

    enabled: bool = False
    """Cache replies of real (non-simulator) models; a repeated request costs nothing."""
    dir: str = "runs/.cache"
    """Where entries live (relative paths are relative to the working directory); one folder per model
    id + api base."""


class ImageOptions(Declared):
    """The ``image:`` block (global, overridden by a model config's own ``image:``)."""

    max_side: int | None = Field(None, ge=16)
    """Longest side of the image sent, pixels; ``None`` sends the screenshot as it is (never upscaled)."""
    pixel_answers: Literal["stated", "sent"] = "stated"
    """``stated`` | ``sent``: which grid a pixel-frame model answers in when the image was downscaled."""
