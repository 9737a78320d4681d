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
naming the first bad row and field.

Imports are validated like configs (:func:`check_row`): numbers finite (integers within 2**53), counts,
tokens and costs not negative, the target box ordered and inside the image when its size is given, text
at most :data:`MAX_TEXT` characters without control characters (they would cut the report's tables), one
row per trial (its ``trial_key``, else model, method, task, start point and repeat). A ``.jsonl`` file is
read one line at a time, each at most :data:`MAX_ROW_BYTES` (a longer line is refused before it is parsed),
so reading costs one row's memory beyond the rows kept.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.columns import Columns
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
    take_column,
)
from dvoc_bench.core.control import LoopConfig
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.jsonread import loads
from dvoc_bench.core.scoring import score
from dvoc_bench.core.text import safe_text

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
SPEND = ("tokens_in", "tokens_out", "cost_usd")
"""A trial's spend: a row without one of them but with it on every call gets the calls' sum."""
EXTRA_PREFIXES = ("override.", "overrides")
"""Columns outside the schema that an export keeps: the Hydra overrides of a multirun's jobs."""


MAX_ROW_BYTES = 4 * 2**20
"""Longest line of a ``.jsonl`` import, bytes (a trial of fifteen calls is a few KB)."""
MAX_TEXT = 10_000
"""Longest text field of an imported row or call, characters."""
BOX_SLACK = 0.01
"""How far past the image's edge a target box may reach, as a share of that side (ScreenSpot-Pro's
annotations have boxes starting at y = -1)."""
MAX_INT = 2**53
"""Largest magnitude of an imported integer (exact as a float; pandas' Int64 holds it)."""
NON_NEGATIVE = ("model_calls", "tokens_in", "tokens_out", "cost_usd", "latency_s", "est_tokens_in",
                "est_tokens_out", "reported_cost_usd", "image_w", "image_h", "parse_errors")  # fmt: skip
"""Counts, tokens, costs and sizes: never below 0."""
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
"""Characters a text field may not hold (C0/C1 controls but tab and newline, line and paragraph separators).
Tabs and newlines are text our own records hold (a multi-point task's second line, an error's detail);
the report's cells flatten them."""
LONG_TEXT = ("episode", "error")
"""Text fields our own records may hold longer than :data:`MAX_TEXT` (an episode's steps as JSON, an error's
detail): bounded by the row's size instead (:data:`MAX_ROW_BYTES`)."""


class SchemaError(ValueError):
    """A file that does not match the export schema (the message names the first bad field)."""


def parse_json(text: str | bytes) -> Any:
    """The one JSON parse of an import's text (one line, or a whole file): ``ValueError`` or
    ``RecursionError`` on bad input, for the caller to name the place: the project's one bounded reader
    (:func:`dvoc_bench.core.jsonread.loads`; its :class:`JsonError` is a ``ValueError``)."""
    return loads(text, "JSON")


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


def _read(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of an export file, one at a time (``.jsonl``: line by line, each line bounded)."""
    if path.suffix == ".parquet":
        try:
            df = pd.read_parquet(path)
        except (OSError, ValueError) as e:
            raise SchemaError(f"{path}: not a readable parquet file ({e})") from None
        for r in df.itertuples(index=False):
            yield {c: _plain(v) for c, v in zip(df.columns, r, strict=True)}
        return
    for i, text in json_lines(path):
        try:
            row = parse_json(text)
        except (ValueError, RecursionError) as e:  # JSONDecodeError, a huge integer, nesting
            why = e.msg if isinstance(e, json.JSONDecodeError) else " ".join(str(e).split())[:120]
            raise SchemaError(f"{path}: line {i}: not JSON ({why or 'nested too deep'})") from None
        if not isinstance(row, dict):
            raise SchemaError(f"{path}: line {i}: a row is a JSON object, got {type(row).__name__}")
        yield row


def json_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of the non-blank lines of ``path``, each read at most :data:`MAX_ROW_BYTES`
    (a longer line is refused before anything parses it) and decoded as UTF-8."""
    with path.open("rb") as f:
        i = 0
        while raw := f.readline(MAX_ROW_BYTES + 1):
            i += 1
            if len(raw) > MAX_ROW_BYTES:
                raise SchemaError(
                    f"{path}: line {i}: longer than {MAX_ROW_BYTES // 2**20} MB (one row at most)"
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise SchemaError(f"{path}: line {i}: not UTF-8 (byte {e.start})") from None
            if text.strip():
                yield i, text


def _shown(value: Any) -> str:
    """A value as an error names it: at most 40 characters of its repr."""
    r = repr(value)
    return r if len(r) <= 40 else r[:37] + "..."


def _check(value: Any, kind: str, name: str = "") -> str | None:
    """Why ``value`` is not a valid value of the schema type ``kind`` for field ``name`` (``None``: it is,
    or it is null)."""
    if value is None:
        return None
    if kind in (BOOL, NBOOL):
        return None if isinstance(value, bool) else f"expected true or false, got {_shown(value)}"
    if kind in (INT, FLOAT):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if kind == INT and not (number and (isinstance(value, int) or value.is_integer())):
            return f"expected an integer, got {_shown(value)}"
        if not number:
            return f"expected a number, got {_shown(value)}"
        if not math.isfinite(value):
            return f"expected a finite number, got {value!r}"
        if abs(value) > MAX_INT:
            return f"{_shown(value)} is out of range (at most 2**53 in magnitude)"
        if value < 0 and name in NON_NEGATIVE:
            return f"{value!r} is negative"
        return None
    if kind == "json":
        return None if isinstance(value, list | str) else f"expected a list of calls, got {_shown(value)}"
    if not isinstance(value, str):
        return f"expected a string, got {_shown(value)}"
    if len(value) > MAX_TEXT and name not in LONG_TEXT:
        return f"{len(value)} characters (at most {MAX_TEXT})"
    m = CONTROL.search(value)
    if m:
        return f"control character U+{ord(m.group()):04X} at {m.start()} (it would cut the report's tables)"
    return None


def _check_fields(
    d: dict[str, Any], schema: dict[str, str], prefix: str, unknown: str, extra: tuple[str, ...] = ()
) -> None:
    """Check every field of ``d`` (a row or a call) against ``schema`` in place: an unknown name or a bad
    value raises :class:`SchemaError` (``<prefix><name>`: ...``); text is made valid UTF-8 (a lone
    surrogate becomes U+FFFD). Names starting with one of ``extra`` pass as they are (a row's
    :data:`EXTRA_PREFIXES`)."""
    for name, value in d.items():
        if extra and name.startswith(extra):
            continue
        if name not in schema:
            raise SchemaError(f"{prefix}{name[:60]}`: {unknown}")
        why = _check(value, schema[name], name)
        if why:
            raise SchemaError(f"{prefix}{name}`: {why}")
        if isinstance(value, str):
            d[name] = safe_text(value)


def check_row(where: str, row: dict[str, Any]) -> None:
    """Validate one export row in place (``calls`` parsed to a list, text made valid UTF-8); raise
    :class:`SchemaError` naming ``where`` (the file and row) and the first bad field."""
    for name in REQUIRED:
        if row.get(name) is None:
            raise SchemaError(f"{where}: field `{name}`: required (schema version {SCHEMA_VERSION})")
    if row["schema_version"] != SCHEMA_VERSION:
        raise SchemaError(
            f"{where}: field `schema_version`: {_shown(row['schema_version'])}; this version reads "
            f"{SCHEMA_VERSION}"
        )
    _check_fields(
        row, FIELDS, f"{where}: field `", "not in the export schema (docs/equal-cost.md)", EXTRA_PREFIXES
    )
    _check_box(where, row)
    calls = row.get("calls")
    if isinstance(calls, str):
        try:
            calls = parse_json(calls)
        except (ValueError, RecursionError):
            raise SchemaError(f"{where}: field `calls`: not a JSON list of calls") from None
    calls = calls or []
    if not isinstance(calls, list):
        raise SchemaError(f"{where}: field `calls`: expected a list of calls, got {_shown(calls)}")
    for j, call in enumerate(calls):
        if not isinstance(call, dict):
            raise SchemaError(f"{where}: field `calls[{j}]`: expected an object, got {_shown(call)}")
        _check_fields(call, CALL_FIELDS, f"{where}: field `calls[{j}].", "not a field of a call")
    row["calls"] = calls


def _check_box(where: str, row: dict[str, Any]) -> None:
    """The target box ordered (x0 <= x1, y0 <= y1) and, when the image size is given, inside it up to
    :data:`BOX_SLACK` of a side (published annotations reach a pixel or two past the edge); without a
    size, no edge below ``-BOX_SLACK`` of its box's extent."""
    x0, y0, x1, y1 = (row[k] for k in ("target_x0", "target_y0", "target_x1", "target_y1"))
    if x0 > x1 or y0 > y1:
        name = "target_x1" if x0 > x1 else "target_y1"
        raise SchemaError(f"{where}: field `{name}`: the box ({x0:g}, {y0:g}, {x1:g}, {y1:g}) is not ordered")
    for name in ("image_w", "image_h"):
        if row.get(name) is not None and row[name] < 1:
            raise SchemaError(f"{where}: field `{name}`: {row[name]!r} is not a size (at least 1)")
    w, h = row.get("image_w"), row.get("image_h")
    for name, v, hi in (
        ("target_x0", x0, w),
        ("target_y0", y0, h),
        ("target_x1", x1, w),
        ("target_y1", y1, h),
    ):
        slack = BOX_SLACK * (hi if hi is not None else max(x1 - x0, y1 - y0, 1.0))
        if v < -slack or (hi is not None and v > hi + slack):
            size = f"the {w}x{h} image" if w is not None and h is not None else "the image"
            raise SchemaError(f"{where}: field `{name}`: {v:g} is outside {size}")


def _key(row: dict[str, Any], path: Path) -> tuple[Any, ...]:
    """What makes a row one trial: its ``trial_key``, else model, method, task, start point and repeat."""
    if row.get("trial_key") is not None:
        return (row.get("run_dir") or str(path), row["trial_key"])
    return (row["model"], row["method"], row["task"], row.get("start_index") or 0, row.get("rep") or 0)


def _validated(path: Path, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The rows, each validated as it comes (:func:`check_row`), then one row per trial key checked once
    the last is read (the keys' hashes kept, 8 bytes a row: a table of every key was ~100 bytes a row)."""
    hashes, keyed = array("q"), bytearray()
    for i, row in enumerate(rows, 1):
        check_row(f"{path}: row {i}", row)
        hashes.append(hash(_key(row, path)))
        keyed.append(row.get("trial_key") is not None)
        yield row
    repeat = first_repeat(np.frombuffer(hashes, dtype=np.int64))
    if repeat is not None:
        first, again = repeat
        field = "trial_key" if keyed[again] else "rep"
        raise SchemaError(
            f"{path}: row {again + 1}: field `{field}`: the same trial as row {first + 1} (one row per "
            "trial: give `trial_key`, or `start_index` / `rep` to tell repeats apart)"
        )


def first_repeat(values: np.ndarray) -> tuple[int, int] | None:
    """The first place (0-based) whose value an earlier place holds, with that earlier place's first:
    ``(first, again)``; ``None`` when every value is distinct."""
    order = np.argsort(values, kind="stable")  # equal values keep their places' order
    ordered = values[order]
    later = order[1:][ordered[1:] == ordered[:-1]]  # every place after the first of its value
    if not len(later):
        return None
    again = int(later.min())
    return int(np.flatnonzero(values == values[again])[0]), again


def _rescore(row: dict[str, Any], loop: LoopConfig) -> None:
    """Score a row another harness wrote (``source`` not ``run``) by this project's rules, in place: the
    loop's epsilon and radius minimum where the row has none, the target's centre, ``hit`` (inside the
    box), ``within_eps``, ``hit_radius``, the radius and the final distance."""
    if row.get("epsilon") is None:
        row["epsilon"] = loop.epsilon
    if row.get("hit_radius_min") is None:
        row["hit_radius_min"] = loop.hit_radius_min
    x0, y0, x1, y1 = (float(row[k]) for k in ("target_x0", "target_y0", "target_x1", "target_y1"))
    row["target_cx"], row["target_cy"] = (x0 + x1) / 2, (y0 + y1) / 2
    fx, fy = row.get("final_x"), row.get("final_y")
    pt = None if fx is None or fy is None else Point(float(fx), float(fy))
    sc = score(pt, Box(x0, y0, x1, y1), float(row["epsilon"]), float(row["hit_radius_min"]))
    row.update(hit=sc.hit, within_eps=sc.within_eps, hit_radius=sc.hit_radius, radius_px=sc.radius_px,
               hit_box=sc.hit, hit_rule="box",
               final_dist_px=None if sc.final_dist_px is None else round(sc.final_dist_px, 3))  # fmt: skip


def _with_defaults(path: Path, i: int, row: dict[str, Any]) -> None:
    """The defaults of a row (``i``: its 0-based place in the file), in place: source ``import``, the file
    as its run directory, ``<file>#<i>`` as its key, status ``ok``, one call for a prediction without its
    calls, a spend left out but stated on every call summed from the calls."""
    row["source"] = row.get("source") or "import"
    row["run_dir"] = row.get("run_dir") or str(path)
    row["trial_key"] = row.get("trial_key") or f"{path.name}#{i}"
    row["status"] = row.get("status") or "ok"
    row["valid"] = row["status"] == "ok"
    row["simulated"] = bool(row.get("simulated") or False)
    if row.get("model_calls") is None:  # a prediction without its calls: one answer, one call
        row["model_calls"] = len(row["calls"]) or 1
    for name in SPEND:  # a trial's spend left out but stated per call: the sum of its calls
        vals = [c.get(name) for c in row["calls"]]
        if row.get(name) is None and vals and all(v is not None for v in vals):
            row[name] = sum(vals)


def load_export(path: Path | str) -> Runs:
    """Read an export file (ours or another harness's in the documented schema) into :class:`Runs`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such export file")
    if path.suffix not in FORMATS:
        raise SchemaError(f"{path}: unknown export format {path.suffix!r}; allowed: {', '.join(FORMATS)}")
    return load_rows(path, _read(path))


def load_rows(path: Path, rows: Iterable[dict[str, Any]]) -> Runs:
    """Validate and score export rows (read from ``path``, or converted from another harness's log by
    :mod:`dvoc_bench.analysis.foreign`) into :class:`Runs`, one row at a time: each row is checked,
    given its defaults, scored and added to typed columns (:class:`~dvoc_bench.analysis.columns.Columns`)
    before the next is read, so no row is kept as a row."""
    trials, steps = Columns(TRIAL_COLUMNS), Columns(STEP_COLUMNS)
    of_trial = array("q")  # each call's trial, by its place
    loop = LoopConfig()
    for i, row in enumerate(_validated(path, rows)):
        _with_defaults(path, i, row)
        if row["source"] != "run":
            _rescore(row, loop)
        link = {"trial_key": row["trial_key"], "run_dir": row["run_dir"], "source": row["source"]}
        for call in row.pop("calls"):
            steps.add({**call, **link})
            of_trial.append(i)
        row.pop("schema_version")
        trials.add(row)
    if not trials.n:
        raise SchemaError(f"{path}: no rows")
    t = trials.frame()
    return Runs(t, _steps(steps, t, np.frombuffer(of_trial, dtype=np.int64)), [str(path)])


def _steps(steps: Columns, trials: pd.DataFrame, of_trial: Any) -> pd.DataFrame:
    """The calls' frame with the trial columns every step carries (:func:`~dvoc_bench.analysis.loaders.
    attach_trials`' columns, taken from each call's trial by its place instead of by a merge: the calls
    came in their trials' order) and the true offset of a shown crosshair where the call has none."""
    given = {step: take_column(trials[name], of_trial) for name, step in TRIAL_TO_STEP.items()}
    s = steps.frame(given)
    for axis in ("x", "y"):
        if s[f"draft_{axis}"].notna().any():  # no crosshair shown: the column stays empty (no memory)
            s[f"true_d{axis}"] = s[f"true_d{axis}"].fillna(s[f"target_c{axis}"] - s[f"draft_{axis}"])
    return s
