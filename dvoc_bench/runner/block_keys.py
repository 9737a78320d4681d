"""``model.<block>.<key>=V`` without ``+``: a key the block knows is set whether or not the file wrote it.

Hydra composes ``model=<name>`` from the file, so ``model.ocr.engine=rapidocr`` on ``ocr-tesseract`` (whose
``ocr:`` block has no ``engine``) was refused as an unknown key, though ``engine`` is a key of every ``ocr:``
block. ``python -m dvoc_bench`` and :func:`dvoc_bench.runner.compose.compose` rewrite a bare
override of a key the block knows (the model file's top-level keys, ``ocr:``, ``parse:``, ``pricing:``,
``limits:``, ``image:``, ``sim:`` at any depth) into Hydra's add-or-override form ``++``; its value is then
validated where the block is read, as the file's would be. A key no block knows, and the ``+`` / ``++``
forms, are left to Hydra (an unknown key and a ``+`` on a key already set are one ``config error`` line,
:mod:`dvoc_bench.app.hydra_errors`).
"""

from __future__ import annotations

from collections.abc import Sequence

_BLOCK_ARG = "model."
_NOT_FILE_KEYS = ("name", "declared", "provider_config", "frame_rule")
"""Fields of the model record that a model file does not write."""


def block_key_known(path: Sequence[str]) -> bool:
    """True when ``path`` (the parts after ``model.``) names a key a model file may write there."""
    allowed = block_keys(path[:-1]) if path and all(path) else None
    return allowed is not None and path[-1] in allowed


def block_keys(path: Sequence[str]) -> tuple[str, ...] | None:
    """The keys a model file may write at ``path`` (the parts after ``model.``; ``()``: the file's top
    level); ``None`` when that place is not a block the harness declares (``params:`` is free)."""
    from pydantic import BaseModel

    from dvoc_bench.core.declare import _model_at
    from dvoc_bench.models.config import Limits, ModelConfig, Pricing
    from dvoc_bench.models.ocr.model import OCR_KEYS
    from dvoc_bench.models.ocr.parser import PARSE_KEYS
    from dvoc_bench.models.options import ImageOptions
    from dvoc_bench.models.simulator.profile import SimProfile

    if not path:
        return tuple(k for k in ModelConfig.model_fields if k not in _NOT_FILE_KEYS)
    block, rest = path[0], tuple(path[1:])
    if block in ("ocr", "parse"):
        return None if rest else (OCR_KEYS if block == "ocr" else PARSE_KEYS)
    models: dict[str, type[BaseModel]] = {
        "pricing": Pricing, "limits": Limits, "image": ImageOptions, "sim": SimProfile
    }  # fmt: skip
    root = models.get(block)
    owner = _model_at(root, rest) if root is not None and rest else root
    return tuple(owner.model_fields) if owner is not None else None


def with_block_keys(argv: Sequence[str]) -> list[str]:
    """``argv`` with each bare ``model.<known key>=V`` written ``++model.<known key>=V`` (else unchanged)."""
    out = []
    for a in argv:
        key, eq, _ = a.partition("=")
        if eq and key.startswith(_BLOCK_ARG) and block_key_known(key[len(_BLOCK_ARG) :].split(".")):
            a = f"++{a}"
        out.append(a)
    return out
