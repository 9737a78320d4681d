"""A detector chosen by command-line flags (``--detector NAME --model P --imgsz N --conf C --iou T``), as the
``detector`` config node :func:`dvoc_bench.detect.config.detector_config` validates.

Each flag goes to the key the backend has for it (``--conf`` is ``confidence``, ``--iou`` is ``nms_iou``);
a flag the backend has no key for is a :class:`ConfigError` naming the flag, and so is the ``oracle``,
which reads a scene's truth that a bare image does not have. ``extra`` (``--set KEY=VALUE``) sets any other
key of the backend (``command`` for ``helper``, ``max_boxes``, ``threads``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.detect.config import BACKENDS, DETECTOR_SETTINGS, DetectorConfig, detector_config

FLAG_KEYS = {"--model": "model", "--imgsz": "imgsz", "--conf": "confidence", "--iou": "nms_iou"}
"""Each flag and the detector key it sets."""

NEEDS_TRUTH = ("oracle",)
"""Backends that read the scene's truth rather than the pixels (no use on a bare image)."""


def parse_sets(items: Sequence[str]) -> dict[str, str]:
    """``["KEY=VALUE", ...]`` as a mapping; ``ConfigError`` naming ``--set`` for an item without ``=``."""
    out: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ConfigError(f"--set: expected KEY=VALUE, got {item!r}")
        out[key.strip().removeprefix("detector.")] = value
    return out


def node_from_flags(
    name: str, flags: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The ``detector`` node of backend ``name`` with the flags given (``{"--model": "m.pt", ...}``; ``None``
    values are left out) and the ``extra`` keys."""
    pixel = [b for b in BACKENDS if b not in NEEDS_TRUTH]
    if name in NEEDS_TRUTH:
        raise ConfigError(
            f"--detector: {name} reads a scene's ground truth, which an image does not have; "
            f"use one of {', '.join(pixel)}"
        )
    if name not in BACKENDS:
        raise ConfigError(f"--detector: unknown value {name!r}; allowed: {', '.join(pixel)}")
    fields = DETECTOR_SETTINGS[name].model_fields
    node: dict[str, Any] = {"backend": name}
    for flag, value in (flags or {}).items():
        if value is None:
            continue
        key = FLAG_KEYS[flag]
        if key not in fields:
            raise ConfigError(f"{flag}: detector {name} has no {key} setting")
        node[key] = value
    for key, value in (extra or {}).items():
        if key == "backend":
            raise ConfigError("--set: backend is chosen with --detector")
        node[key] = value
    return node


def config_from_flags(
    name: str, flags: Mapping[str, Any] | None = None, extra: Mapping[str, Any] | None = None
) -> DetectorConfig:
    """:func:`node_from_flags` validated (a bad value or file is a ``ConfigError`` naming
    ``detector.<key>``)."""
    return detector_config(node_from_flags(name, flags, extra))
