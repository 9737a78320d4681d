"""Which scenes the simulator does not reproduce under cross-validation.

``scene_validation.json`` beside this module is written by ``python -m dvoc_bench.calibrate --upstream
<clone> --cross-validate`` (never by hand): the simulator's leave-one-scene-out p-value per scene S1-S6. A
simulated result that depends on per-scene behaviour (a per-task table of a simulated model) carries
:data:`MARKER` on exactly the scenes whose p-value is below :data:`ALPHA`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from dvoc_bench.core.jsonread import load_file

DATA = Path(__file__).with_name("scene_validation.json")
"""The generated file (shipped in the package)."""
MARKER = "per-scene not validated"
"""The visible marker on a per-scene simulated result the cross-validation rejects."""
ALPHA = 0.05
"""A scene whose cross-validation p-value is below this is not validated."""


def write(
    path: Path | str, pvalues: Mapping[str, float], *, records: str, table: Sequence[Mapping[str, Any]] = ()
) -> None:
    """Write the per-scene p-values (and the whole CV table, for the README) to ``path``."""
    doc = {
        "about": "written by python -m dvoc_bench.calibrate --cross-validate; do not edit",
        "records_digest": records,
        "alpha": ALPHA,
        "scene_p": {k: float(v) for k, v in sorted(pvalues.items())},
        "table": [dict(r) for r in table],
    }
    Path(path).write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    _read.cache_clear()


def load(path: Path | str | None = None) -> dict[str, Any]:
    """The generated document (:data:`DATA` by default; empty when it was never written)."""
    return _read(Path(path if path is not None else DATA))


@lru_cache(maxsize=8)
def _read(p: Path) -> dict[str, Any]:
    return load_file(p) if p.is_file() else {}


def unvalidated(path: Path | str | None = None) -> frozenset[str]:
    """Scenes whose cross-validation p-value is below :data:`ALPHA`."""
    return unvalidated_in(load(path))


def unvalidated_in(doc: Mapping[str, Any]) -> frozenset[str]:
    """:func:`unvalidated` of a loaded document."""
    return frozenset(s for s, p in doc.get("scene_p", {}).items() if p < doc.get("alpha", ALPHA))


def marker(task: str, *, simulated: bool, path: Path | str | None = None) -> str:
    """:data:`MARKER` for a simulated result on a scene the cross-validation rejects, else ``""``."""
    return MARKER if simulated and str(task) in unvalidated(path) else ""
