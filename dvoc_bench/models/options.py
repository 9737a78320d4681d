"""Settings of real models that the whole config declares (``cache:``, ``image:``): see
:mod:`dvoc_bench.runner.settings`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from dvoc_bench.core.declare import Declared, validate


class CacheOptions(Declared):
    """The ``cache:`` block: the response cache of real models (docs/cost.md)."""

    enabled: bool = False
    """Cache replies of real (non-simulator) models; a repeated request costs nothing."""
    dir: str = "runs/.cache"
    """Where entries live (relative paths are relative to the working directory); one folder per model
    id + api base."""


class ImageOptions(Declared):
    """The ``image:`` block: a model's input limits (global, overridden key by key by a model config's own
    ``image:``). The harness downscales every frame it sends to fit them, for every model kind (simulated
    ones too), and states the size sent in the prompt (:mod:`dvoc_bench.draw.sending`)."""

    max_side: int | None = Field(None, ge=16)
    """Longest side of the image sent, pixels; ``None``: no limit (never upscaled)."""
    max_pixels: int | None = Field(None, ge=256)
    """Most pixels (width x height) of the image sent; ``None``: no limit (never upscaled)."""


def model_image(
    own: Mapping[str, Any] | None, default: ImageOptions | None = None, where: str = ""
) -> ImageOptions:
    """The input limits of one model: its config's own ``image:`` block (``own``) over the global
    ``default``; a bad value is a one-line ``ConfigError`` naming ``<where>image.<key>``."""
    base = (default or ImageOptions()).model_dump()
    if not own:
        return default or ImageOptions()
    return validate(ImageOptions, {**base, **dict(own)}, f"{where}image.")
