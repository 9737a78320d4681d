"""What the real-screen sets with their own formats share (CUActSpot, precision-cua-bench): the target's
size class, the ``dataset.where`` / ``tasks=[...]`` / ``dataset.limit`` selection over their metadata.

The ScreenSpot family keeps its own in :mod:`dvoc_bench.scenes.datasets`; these sets carry other
metadata (category, language, task kind), so their ``dataset.where`` keys differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box
from dvoc_bench.scenes.datasets import DatasetSpec, by_ids, stratified

SIZE_CLASSES = ((8.0, "<8 px"), (24.0, "8-24 px"), (64.0, "24-64 px"))
"""Upper bounds (exclusive) of the size classes by the target's shorter side; above the last: ``>=64 px``."""


def size_class(box: Box) -> str:
    """The size class of a target box by its shorter side (:data:`SIZE_CLASSES`)."""
    side = min(box.w, box.h)
    for bound, name in SIZE_CLASSES:
        if side < bound:
            return name
    return ">=64 px"


class HasMeta(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, str | None]: ...


S = TypeVar("S", bound=HasMeta)


def _matches(meta: Mapping[str, str | None], where: Mapping[str, Any]) -> bool:
    for key, want in where.items():
        values = want if isinstance(want, list | tuple) else [want]
        have = meta.get(key)
        if have is None or have.lower() not in {str(v).lower() for v in values}:
            return False
    return True


def pick(
    samples: Sequence[S], spec: DatasetSpec, picks: Sequence[str] | None, keys: Sequence[str]
) -> list[S]:
    """``dataset.where`` (keys among ``keys``), then the ``tasks=[...]`` picks (sample ids), then
    ``dataset.limit`` (a seeded uniform draw, kept in dataset order). Errors name the setting."""
    for key in spec.where:
        if key not in keys:
            raise ConfigError(f"dataset.where: unknown key {key!r} for dataset={spec.format}; allowed: "
                              f"{', '.join(keys)}")  # fmt: skip
    out = [s for s in samples if _matches(s.meta, spec.where)]
    if picks is not None:
        out = by_ids(out, picks)
    if not out:
        raise ConfigError(f"dataset.where: no sample of dataset={spec.format} matches {dict(spec.where)}")
    if spec.limit is not None:
        out = stratified(out, spec.limit, spec.sample_seed)  # type: ignore[arg-type,assignment]
    return out
