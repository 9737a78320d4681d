"""An Inspect log of dvoc-bench's tasks (``inspect eval dvoc_bench/...``) as export rows.

Each sample that a dvoc-bench solver ran holds the trial record and its steps in its metadata (``dvoc``):
the record our runner wrote, so a row keeps its verdicts (``source`` ``run``: the box, DOM, toolkit or
polygon rule it was scored by) and is not scored again. The log is read by Inspect's own reader
(``inspect_ai.log.read_eval_log``, the optional ``inspect`` extra). A sample without that metadata (another
solver, an error before the trial ran) is left out with one warning counting them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from dvoc_bench.analysis.export import CALL_FIELDS, FIELDS, SCHEMA_VERSION, SchemaError
from dvoc_bench.analysis.loaders import flatten_step, flatten_trial

log = logging.getLogger(__name__)

METADATA = "dvoc"
"""The sample metadata key the solvers write (``dvoc_bench.inspect.solvers.METADATA``)."""


def read_eval(path: Path) -> Any:
    """The log at ``path`` by Inspect's reader; a one-line :class:`SchemaError` when it cannot be read."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise SchemaError(
            f'{path}: an Inspect log needs the inspect extra (pip install -e ".[inspect]")'
        ) from None
    try:
        return read_eval_log(str(path))
    except Exception as e:  # Inspect's own error, in one line
        raise SchemaError(f"{path}: not a readable Inspect log: {str(e).splitlines()[0][:200]}") from None


def rows_of(path: Path, eval_log: Any) -> list[dict[str, Any]]:
    """Export rows of the samples a dvoc-bench solver ran (their epochs apart: ``#e<N>`` on the key)."""
    rows, left = [], 0
    for sample in eval_log.samples or []:
        block = (sample.metadata or {}).get(METADATA)
        if not block or "trial" not in block:
            left += 1
            continue
        trial = flatten_trial(block["trial"])
        row = {k: v for k, v in trial.items() if k in FIELDS}
        meta = sample.metadata or {}
        for col, key in (("image_w", "width"), ("image_h", "height")):  # the screenshot's size (the task's)
            if row.get(col) is None and isinstance(meta.get(key), int):
                row[col] = meta[key]
        row["schema_version"] = SCHEMA_VERSION
        row["source"] = "run"
        row["run_dir"] = str(path)
        if (sample.epoch or 1) > 1:
            row["trial_key"] = f"{row['trial_key']}#e{sample.epoch}"
        row["calls"] = [
            {k: v for k, v in flatten_step(s).items() if k in CALL_FIELDS and v is not None}
            for s in block.get("steps") or []
        ]
        rows.append(row)
    if left:
        log.warning(
            "%s: %d sample(s) hold no dvoc-bench trial (another solver, or an error): left out", path, left
        )
    if not rows:
        raise SchemaError(f"{path}: no sample of this log was run by a dvoc-bench solver")
    return rows
