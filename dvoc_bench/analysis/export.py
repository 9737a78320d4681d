"""The per-sample export: one row per trial, in a versioned schema derived from the record types, that
another harness's predictions can be written in and scored by this project's rules.

The fields are the analysis schema's trial columns (:data:`~dvoc_bench.analysis.schema.TRIAL_COLUMNS`,
themselves derived from :class:`dvoc_bench.core.records.TrialRecord`: the sample's identity and
metadata, the method and its knobs, the final point, every rule's verdict, calls, tokens, cost, the
frame rule), plus ``schema_version`` and ``calls``: the trial's model calls in order, each with the step
columns that are not copied from the trial (:data:`CALL_FIELDS`, from
:data:`~dvoc_bench.analysis.schema.STEP_COLUMNS`), so that the accuracy-at-a-budget tables rebuild from
the file alone. Nothing here lists a field by hand except :data:`REQUIRED`, the few a foreign row cannot
be scored without.

:func:`export` writes ``.parquet`` or ``.jsonl``; :func:`load_export` reads either back into a
:class:`~dvoc_bench.analysis.schema.Runs`. A row whose ``source`` is not ``run`` (another harness's) is
scored here: ``hit`` (inside the target box), ``within_eps`` and ``hit_radius`` from its final point and
target box (:func:`dvoc_bench.core.scoring.score`, with the loop's default epsilon and radius minimum
when the row has none). A file that does not match the schema raises :class:`SchemaError`, one line
naming the first bad field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from dvoc_bench.analysis.loaders import attach_trials
from dvoc_bench.analysis.schema import (
    BOOL,
    FLOAT,
    INT,
    NBOOL,
    STEP_COLUMNS,
    TRIAL_COLUMNS,
    TRIAL_TO_STEP,
    Runs,
    coerce,
)
from dvoc_bench.core.control import LoopConfig
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.jsonread import MAX_LINE_BYTES, JsonError, loads
from dvoc_bench.core.scoring import score

SCHEMA_VERSION = 1
"""Version of the export schema; a file of another version is refused."""
FORMATS = (".parquet", ".jsonl")
CALL_FIELDS: dict[str, str] = {
    k: v
    for k, v in STEP_COLUMNS.items()
    if k not in {"trial_key", "source", "run_dir", *TRIAL_TO_STEP.values()}
}
"""The fields of one element of ``calls`` (the step columns not copied from the trial)."""
FIELDS: dict[str, str] = {"schema_version": INT, **TRIAL_COLUMNS, "calls": "json"}
"""Every field of an export row and its type."""
REQUIRED = ("schema_version", "model", "method", "task", "target_x0", "target_y0", "target_x1", "target_y1")
"""Fields a row must have (a missing final point is a miss; every other field may be absent or null)."""
EXTRA_PREFIXES = ("override.", "overrides")
"""Columns outside the schema that an export keeps: the Hydra overrides of a multirun's jobs."""


class SchemaError(ValueError):
    """A file that does not match the export schema (the message names the first bad field)."""


def _plain(v: Any) -> Any:
    """A JSON-ready scalar (pandas NA and NaN become ``None``)."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            return None
    return v


def export_frame(runs: Runs) -> pd.DataFrame:
    """The export rows of ``runs``: one per trial, ``calls`` as JSON text."""
    t = runs.trials
    extra = [c for c in t.columns if c.startswith(EXTRA_PREFIXES)]
    out = coerce(t, TRIAL_COLUMNS)[[*TRIAL_COLUMNS, *extra]].copy()
    s = runs.steps.sort_values(["run_dir", "trial_key", "index"], kind="stable")
    calls: dict[tuple[str, str], list[dict[str, Any]]] = {}
    cols = [c for c in CALL_FIELDS if c in s.columns]
    for key, g in s.groupby(["run_dir", "trial_key"], sort=False):
        calls[(str(key[0]), str(key[1]))] = [
            {c: _plain(v) for c, v in zip(cols, row, strict=True)} for row in g[cols].itertuples(index=False)
        ]
    out.insert(0, "schema_version", SCHEMA_VERSION)
    out["calls"] = [
        json.dumps(calls.get((str(r), str(k)), []), ensure_ascii=False, allow_nan=False)
        for r, k in zip(out["run_dir"], out["trial_key"], strict=True)
    ]
    return out


def export(runs: Runs, path: Path | str) -> Path:
    """Write ``runs`` as ``path`` (``.parquet`` or ``.jsonl``, one row per trial)."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise SchemaError(f"{path}: unknown export format {path.suffix!r}; allowed: {', '.join(FORMATS)}")
    df = export_frame(runs)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        df.to_parquet(path, index=False)
        return path
    with path.open("w", encoding="utf-8") as f:
        for row in df.itertuples(index=False):
            d = {c: _plain(v) for c, v in zip(df.columns, row, strict=True)}
            d["calls"] = json.loads(d["calls"])
            f.write(json.dumps(d, ensure_ascii=False, allow_nan=False) + "\n")
    return path


def _read(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".parquet":
        try:
            df = pd.read_parquet(path)
        except (OSError, ValueError) as e:
            raise SchemaError(f"{path}: not a readable parquet file ({e})") from None
        return [
            {c: _plain(v) for c, v in zip(df.columns, r, strict=True)} for r in df.itertuples(index=False)
        ]
    rows = []
    with path.open(encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = loads(line, f"{path}: line {i}", max_bytes=MAX_LINE_BYTES)
            except JsonError as e:
                raise SchemaError(str(e)) from None
            if not isinstance(row, dict):
                raise SchemaError(f"{path}: line {i}: a row is a JSON object, got {type(row).__name__}")
            rows.append(row)
    return rows


def _check(value: Any, kind: str) -> str | None:
    """Why ``value`` is not of the schema type ``kind`` (``None``: it is, or it is null)."""
    if value is None:
        return None
    if kind in (BOOL, NBOOL):
        return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
    if kind == INT:
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok or (isinstance(value, float) and value.is_integer())
        return None if ok else f"expected an integer, got {value!r}"
    if kind == FLOAT:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok else f"expected a number, got {value!r}"
    if kind == "json":
        return None if isinstance(value, list | str) else f"expected a list of calls, got {value!r}"
    return None if isinstance(value, str) else f"expected a string, got {value!r}"


def _validate(path: Path, rows: list[dict[str, Any]]) -> None:
    for i, row in enumerate(rows, 1):
        where = f"{path}: row {i}"
        for name in REQUIRED:
            if row.get(name) is None:
                raise SchemaError(f"{where}: field `{name}`: required (schema version {SCHEMA_VERSION})")
        if row["schema_version"] != SCHEMA_VERSION:
            raise SchemaError(
                f"{where}: field `schema_version`: {row['schema_version']!r}; this version reads "
                f"{SCHEMA_VERSION}"
            )
        for name, value in row.items():
            if name.startswith(EXTRA_PREFIXES):
                continue
            if name not in FIELDS:
                raise SchemaError(f"{where}: field `{name}`: not in the export schema (docs/equal-cost.md)")
            why = _check(value, FIELDS[name])
            if why:
                raise SchemaError(f"{where}: field `{name}`: {why}")
        calls = row.get("calls")
        try:
            calls = loads(calls, f"{where}: field `calls`") if isinstance(calls, str) else (calls or [])
        except JsonError as e:
            raise SchemaError(str(e)) from None
        for j, call in enumerate(calls):
            if not isinstance(call, dict):
                raise SchemaError(f"{where}: field `calls[{j}]`: expected an object, got {call!r}")
            for name, value in call.items():
                if name not in CALL_FIELDS:
                    raise SchemaError(f"{where}: field `calls[{j}].{name}`: not a field of a call")
                why = _check(value, CALL_FIELDS[name])
                if why:
                    raise SchemaError(f"{where}: field `calls[{j}].{name}`: {why}")
        row["calls"] = calls


def _rescore(t: pd.DataFrame) -> pd.DataFrame:
    """Score the rows another harness wrote (``source`` not ``run``) by this project's rules."""
    foreign = t["source"].fillna("import") != "run"
    if not foreign.any():
        return t
    loop = LoopConfig()
    t = t.copy()
    t.loc[foreign, "epsilon"] = t.loc[foreign, "epsilon"].fillna(loop.epsilon)
    t.loc[foreign, "hit_radius_min"] = t.loc[foreign, "hit_radius_min"].fillna(loop.hit_radius_min)
    t.loc[foreign, "target_cx"] = (t["target_x0"] + t["target_x1"]) / 2
    t.loc[foreign, "target_cy"] = (t["target_y0"] + t["target_y1"]) / 2
    idx = t.index[foreign]
    cols = ["final_x", "final_y", "target_x0", "target_y0", "target_x1", "target_y1", "epsilon",
            "hit_radius_min"]  # fmt: skip
    out: dict[str, list[Any]] = {k: [] for k in ("hit", "within_eps", "hit_radius", "radius_px",
                                                 "final_dist_px")}  # fmt: skip
    for fx, fy, x0, y0, x1, y1, eps, rmin in t.loc[idx, cols].itertuples(index=False):  # one row at a time
        pt = None if pd.isna(fx) or pd.isna(fy) else Point(float(fx), float(fy))
        sc = score(pt, Box(float(x0), float(y0), float(x1), float(y1)), float(eps), float(rmin))
        out["hit"].append(sc.hit)
        out["within_eps"].append(sc.within_eps)
        out["hit_radius"].append(sc.hit_radius)
        out["radius_px"].append(sc.radius_px)
        out["final_dist_px"].append(math.nan if sc.final_dist_px is None else round(sc.final_dist_px, 3))
    for k, v in out.items():
        t.loc[idx, k] = v
    t.loc[idx, "hit_box"] = out["hit"]
    t.loc[idx, "hit_rule"] = "box"
    return t


def load_export(path: Path | str) -> Runs:
    """Read an export file (ours or another harness's in the documented schema) into :class:`Runs`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such export file")
    if path.suffix not in FORMATS:
        raise SchemaError(f"{path}: unknown export format {path.suffix!r}; allowed: {', '.join(FORMATS)}")
    return load_rows(path, _read(path))


def load_rows(path: Path, rows: list[dict[str, Any]]) -> Runs:
    """Validate and score export rows (read from ``path``, or converted from another harness's log by
    :mod:`dvoc_bench.analysis.foreign`) into :class:`Runs`."""
    if not rows:
        raise SchemaError(f"{path}: no rows")
    _validate(path, rows)
    for i, row in enumerate(rows):  # the defaults of a foreign row
        row.setdefault("source", "import")
        row["source"] = row["source"] or "import"
        row["run_dir"] = row.get("run_dir") or str(path)
        row["trial_key"] = row.get("trial_key") or f"{path.name}#{i}"
        row["status"] = row.get("status") or "ok"
        row["valid"] = row["status"] == "ok"
        row["simulated"] = bool(row.get("simulated") or False)
        if row.get("model_calls") is None:  # a prediction without its calls: one answer, one call
            row["model_calls"] = len(row["calls"]) or 1
    calls = [{**c, "trial_key": r["trial_key"], "run_dir": r["run_dir"], "source": r["source"]}
             for r in rows for c in r["calls"]]  # fmt: skip
    frame = pd.DataFrame([{k: v for k, v in r.items() if k not in ("calls", "schema_version")} for r in rows])
    trials = _rescore(coerce(frame, TRIAL_COLUMNS))
    trials = coerce(trials, TRIAL_COLUMNS)
    steps = coerce(pd.DataFrame(calls), STEP_COLUMNS)
    steps = coerce(attach_trials(steps, trials), STEP_COLUMNS)
    return Runs(trials, steps, [str(path)])
