"""The two frames every analysis works on: ``trials`` (one row per trial) and ``steps`` (one row per model
call), with typed columns, and the :class:`Runs` container that holds them.

Both our run directories and the authors' records are loaded into this schema, so every table and plot
works on either. Points and boxes are flattened into ``*_x`` / ``*_y`` columns (pixels of the image the
model saw). Columns a source cannot fill are present and empty (``<NA>`` / ``NaN``); in an import's frames
they hold no memory (:func:`empty_column`: read-only, so a table assigns new columns and never writes into
the frames it is given; :func:`keep_rows` filters a whole frame without copying them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import numpy as np
import pandas as pd

from dvoc_bench.core.records import DragRecord, SampleMeta, SomRecord, TrialRecord

STR, FLOAT, INT, BOOL, NBOOL = "string", "float64", "Int64", "bool", "boolean"

_POINTS = {
    "start": ("start_x", "start_y"),
    "final_point": ("final_x", "final_y"),
    "drop_point": ("drop_x", "drop_y"),
    "target_centre": ("target_cx", "target_cy"),
}
"""Point fields of :class:`TrialRecord` -> their two columns."""

_BOXES = {"target_box": "target"}
"""Box fields -> column prefix (``<prefix>_x0`` .. ``<prefix>_y1``)."""

_NESTED = {"som": SomRecord, "sample": SampleMeta, "drag": DragRecord}
"""Nested record fields -> their record type (flattened into ``<field>_<name>`` columns)."""

_NULLABLE = {"hit_box"}
"""Columns that another source (the authors' records) may leave unknown: nullable booleans."""


def dtype_of(hint: Any) -> str:
    """The column dtype of a record field's type: lists and mappings become JSON text."""
    args = [a for a in get_args(hint) if a is not type(None)]
    optional = get_origin(hint) in (Union, UnionType) and len(args) < len(get_args(hint))
    base = args[0] if optional and len(args) == 1 else hint
    if get_origin(base) is Literal or base is str:
        return STR
    if base is bool:
        return NBOOL if optional else BOOL
    if base is int:
        return INT
    if base is float:
        return FLOAT
    return STR


def record_columns(cls: type, prefix: str = "") -> dict[str, str]:
    """Column -> dtype of a record type's fields as the loaders flatten them."""
    out: dict[str, str] = {}
    for name, hint in get_type_hints(cls).items():
        if name in _POINTS:
            out.update(dict.fromkeys(_POINTS[name], FLOAT))
        elif name in _BOXES:
            out.update({f"{_BOXES[name]}_{c}": FLOAT for c in ("x0", "y0", "x1", "y1")})
        elif name in _NESTED:
            out.update(record_columns(_NESTED[name], prefix=f"{name}_"))
        else:
            out[prefix + name] = NBOOL if name in _NULLABLE else dtype_of(hint)
    return out


TRIAL_COLUMNS: dict[str, str] = {
    # provenance: where the row came from
    "trial_key": STR,  # our trial hash, or the authors' record path / file#index
    "source": STR,  # "run" (ours) or "upstream" (the authors' records)
    "run_dir": STR,  # run directory (ours) or the authors' file / tree it came from
    "job": INT,  # Hydra multirun job number, <NA> for a single run
    # every field of the trials.jsonl line (dvoc_bench.core.records.TrialRecord), points and boxes flattened
    **record_columns(TrialRecord),
    # derived by the loaders
    "image_w": INT,
    "image_h": INT,
    "valid": BOOL,  # status == "ok"
    "target_inferred": BOOL,  # True when the target box is inferred (the authors' web scenes)
    # the authors' own fields (upstream only; an imported harness's own verdict and id: analysis/foreign.py)
    "paper_success": NBOOL,  # their stored `success` (a mixed rule: see analysis/honest.py)
    "paper_final_dist": FLOAT,  # their stored `final_dist` (0.1 px; NaN for their 999 error marker)
    "paper_method": STR,  # their method string (dvoc, naive, dvoc_full_absolute, ...)
    "paper_trial_id": STR,
    "source_x": FLOAT,  # the point an imported harness logged (its `pred`), pixels (imports only)
    "source_y": FLOAT,
}
"""Column -> pandas dtype of ``Runs.trials`` (further columns: ``override.<key>`` of Hydra jobs). The
record's own columns are derived from :class:`~dvoc_bench.core.records.TrialRecord`, so a field added there
is a column here."""

STEP_COLUMNS: dict[str, str] = {
    "trial_key": STR,
    "source": STR,
    "run_dir": STR,
    "index": INT,  # 0-based call index within the trial
    "kind": STR,  # verify | click | baseline
    "drag_end": STR,  # a two-point trial's call: from | to | both (one call for both points)
    "draft_x": FLOAT,  # crosshair shown (verify steps)
    "draft_y": FLOAT,
    "true_dist_px": FLOAT,  # true distance of the draft (verify) / of the answered point (click)
    "true_dx": FLOAT,  # target centre - draft (verify steps): the offset a perfect model reports
    "true_dy": FLOAT,
    "frame_sha": STR,
    "request_sha": STR,
    "parse_status": STR,
    "parse_detail": STR,
    "has_task": NBOOL,  # the prompt contained the task instruction (<NA> when unknown)
    "raw_dx": FLOAT,  # numbers as the model gave them, in its own frame
    "raw_dy": FLOAT,
    "raw_x": FLOAT,
    "raw_y": FLOAT,
    "raw_conf": FLOAT,
    "frame": STR,  # frame the harness read them in
    "px_dx": FLOAT,  # the same numbers converted to pixels by the harness
    "px_dy": FLOAT,
    "px_x": FLOAT,
    "px_y": FLOAT,
    "confidence": FLOAT,
    "rep_dx": FLOAT,  # offset the loop used (pixels)
    "rep_dy": FLOAT,
    "alpha": FLOAT,  # gain applied to the offset (float; the schedule name is `alpha_schedule`)
    "decision": STR,
    "step_raw_dx": FLOAT,
    "step_raw_dy": FLOAT,
    "step_dx": FLOAT,  # applied (clamped) step
    "step_dy": FLOAT,
    "next_x": FLOAT,
    "next_y": FLOAT,
    "image_scale": FLOAT,  # sent pixels per screenshot pixel (resized or zoomed); <NA> when sent as is
    "sent_w": INT,  # size of the image actually sent (the answer frame's), when resized or cropped
    "sent_h": INT,
    "seen_w": INT,  # size of the image the model saw (its answer frame's; the step's seen_size)
    "seen_h": INT,
    "frame_rule": STR,  # the answer frame in one line: units, axes, resize with its parameters
    "prompt_style": STR,  # tool_call or the family's native style; <NA> in records before it was recorded
    "crop_x0": FLOAT,  # the screenshot region the image showed (zoom rounds); <NA> for the whole screen
    "crop_y0": FLOAT,
    "crop_x1": FLOAT,
    "crop_y1": FLOAT,
    "latency_s": FLOAT,
    "tokens_in": INT,
    "tokens_out": INT,
    "cost_usd": FLOAT,
    "est_tokens_in": INT,  # the harness's own token estimate, when the reported usage was far below it
    "est_tokens_out": INT,
    "reported_cost_usd": FLOAT,  # the reported counts' cost, when the estimate priced the call
    "cached": BOOL,
    "error_class": STR,
    "error": STR,
    "served_model": STR,  # the model id the server said answered
    "system_fingerprint": STR,  # an OpenAI-compatible server's system_fingerprint
    "engine": STR,  # the serving engine and version the server stated (vLLM's /version)
    # copied from the trial for convenience
    "model": STR,
    "simulated": BOOL,
    "task": STR,
    "scene_kind": STR,
    "method": STR,
    "protocol": STR,
    "alpha_schedule": STR,
    "overlay": STR,
    "predict": STR,
    "coord_frame": STR,
    "start_index": INT,
    "rep": INT,
    "image_w": INT,
    "image_h": INT,
    "target_cx": FLOAT,
    "target_cy": FLOAT,
    "target_x0": FLOAT,
    "target_y0": FLOAT,
    "target_x1": FLOAT,
    "target_y1": FLOAT,
}
"""Column -> pandas dtype of ``Runs.steps``."""

TEXT_COLUMNS: dict[str, str] = {"prompt": STR, "reply_text": STR, "reply_tool_calls": STR}
"""Large text columns of ``steps``, loaded only with ``text=True`` (tool calls as a JSON string)."""

TRIAL_TO_STEP = {
    "model": "model",
    "simulated": "simulated",
    "task": "task",
    "scene_kind": "scene_kind",
    "method": "method",
    "protocol": "protocol",
    "alpha": "alpha_schedule",
    "overlay": "overlay",
    "predict": "predict",
    "coord_frame": "coord_frame",
    "start_index": "start_index",
    "rep": "rep",
    "image_w": "image_w",
    "image_h": "image_h",
    "target_cx": "target_cx",
    "target_cy": "target_cy",
    "target_x0": "target_x0",
    "target_y0": "target_y0",
    "target_x1": "target_x1",
    "target_y1": "target_y1",
}
"""Trial columns copied onto every step (trial name -> step name)."""


def narrow(frame: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """The named columns of ``frame`` that it has, in its own order: what a table groups or filters, so
    the copies a group or a filter makes hold the columns the table reads, not every column of the schema
    (~1 KB a trial, ~0.6 KB a call: an import of 1,000,000 trials copied whole for each group of a table)."""
    want = set(columns)
    return frame[[c for c in frame.columns if c in want]]


def empty_column(dtype: str, n: int) -> Any:
    """The empty column of ``n`` rows of a schema dtype, held in (almost) no memory: a float, boolean or
    text column is its null seen ``n`` times (a read-only view of stride 0: a write into it raises, assign
    a new column instead); a nullable integer or boolean is a mask of a byte a row over values never
    touched (pandas' grouped reductions refuse a view). It reads, filters and groups as the full column of
    nulls :func:`coerce` makes (a cumulative sum of a text column, meaningless, raises). An import's frame
    holds the columns its rows leave out this way (:class:`~dvoc_bench.analysis.columns.Columns`)."""
    if dtype == FLOAT:
        return np.broadcast_to(np.float64(np.nan), (n,))
    if dtype in (INT, NBOOL):
        # pandas' grouped reductions of masked arrays need contiguous, writable buffers: real ones, the
        # values zeros the system gives without touching (not resident until written), the mask a byte a row
        values = np.zeros(n, dtype=np.int64 if dtype == INT else bool)
        mask = np.ones(n, dtype=bool)
        return pd.arrays.IntegerArray(values, mask) if dtype == INT else pd.arrays.BooleanArray(values, mask)
    if dtype == BOOL:
        return np.broadcast_to(False, (n,))
    null = np.empty(1, dtype=object)
    null[0] = pd.NA
    # StringArray's constructor normalises its nulls in place, which a read-only view refuses; the one
    # value is already the null it would make (python storage, whatever mode.string_storage says)
    return pd.arrays.StringArray._simple_new(np.broadcast_to(null, (n,)), pd.StringDtype("python"))


def _buffers(col: pd.Series) -> list[np.ndarray]:
    """The numpy buffers behind a column (an extension array's values and mask, or the array itself)."""
    arr = col.array
    parts = [getattr(arr, a) for a in ("_data", "_mask", "_ndarray") if hasattr(arr, a)]
    return [p for p in parts if isinstance(p, np.ndarray)] or [col.to_numpy()]


def _is_empty_view(col: pd.Series) -> bool:
    """True for a column made by :func:`empty_column` (or a view like it: every buffer of stride 0)."""
    return len(col) > 1 and all(b.strides == (0,) for b in _buffers(col))


def _all_null_masked(col: pd.Series) -> bool:
    """True for a nullable integer or boolean column whose every value is null."""
    arr = col.array
    return isinstance(arr, pd.arrays.IntegerArray | pd.arrays.BooleanArray) and bool(arr._mask.all())


def held_bytes(frame: pd.DataFrame) -> int:
    """Bytes the columns of ``frame`` hold (texts as references): ``memory_usage(deep=False)`` without the
    views of :func:`empty_column` (none) and the values under an all-null mask (never touched)."""
    total = 0
    for _, col in frame.items():
        skip = col.array._data if _all_null_masked(col) else None
        total += sum(b.nbytes for b in _buffers(col) if b.strides != (0,) and b is not skip)
    return total


def keep_rows(frame: pd.DataFrame, mask: Any) -> pd.DataFrame:
    """``frame[mask]`` (``mask``: booleans, one per row, in the frame's order; a null keeps no row) as a
    new frame whose columns of :func:`empty_column` stay empty at no cost: what a table filters the whole
    trials or steps frame with (a plain filter copies every column of the schema, ~1 KB a trial, even the
    ~120 an import leaves empty). The same index, columns and dtypes as ``frame[mask]``; a frame of its
    own (set columns on it freely)."""
    if isinstance(mask, pd.Series) and not mask.index.equals(frame.index):
        return frame[mask]  # another index: pandas aligns it (or refuses), as a plain filter does
    if len(mask) != len(frame):
        raise ValueError(f"a mask of {len(mask)} rows for a frame of {len(frame)}")
    if isinstance(mask, pd.Series | pd.api.extensions.ExtensionArray):
        mask = mask.to_numpy(dtype=bool, na_value=False)  # a null keeps no row, as in ``frame[mask]``
    keep = np.flatnonzero(np.asarray(mask, dtype=bool))
    if frame.columns.has_duplicates:
        return frame.iloc[keep].copy()
    out = {name: take_column(col, keep) for name, col in frame.items()}
    return pd.DataFrame(out, index=frame.index.take(keep), copy=False)


def take_column(col: pd.Series, positions: Any) -> Any:
    """The values of ``col`` at ``positions`` (0-based, any count, repeats allowed) as an array: a column
    of :func:`empty_column` gives one again (no memory), any other a copy."""
    positions = np.asarray(positions, dtype=np.intp)
    dtype = str(col.dtype)
    if dtype in (FLOAT, INT, BOOL, NBOOL, STR) and (_is_empty_view(col) or _all_null_masked(col)):
        if len(positions) and (positions.min() < -len(col) or positions.max() >= len(col)):
            raise IndexError(f"positions outside a column of {len(col)} rows")  # as a take would say
        return empty_column(dtype, len(positions))
    return col.array.take(positions)


def coerce(df: pd.DataFrame, columns: Mapping[str, str]) -> pd.DataFrame:
    """Give ``df`` every column of ``columns`` with its dtype (missing ones empty), schema columns first."""
    n = len(df)
    out: dict[str, Any] = {}
    for name, dtype in columns.items():
        col = df[name] if name in df.columns else pd.Series([None] * n, index=df.index, dtype=object)
        if dtype == BOOL:
            if col.dtype != bool:
                col = col.astype(object)
                col = col.where(col.notna(), False).astype(bool)
            out[name] = col
        elif dtype == NBOOL:
            out[name] = col.astype(object).astype("boolean")
        elif dtype == FLOAT:
            out[name] = pd.to_numeric(col, errors="coerce").astype("float64")
        elif dtype == INT:
            out[name] = pd.to_numeric(col, errors="coerce").round().astype("Int64")
        else:
            out[name] = col.astype("string")
    res = pd.DataFrame(out, index=df.index)
    extra = [c for c in df.columns if c not in columns]
    if extra:
        res = pd.concat([res, df[extra]], axis=1)
    return res.reset_index(drop=True)


def empty_frame(columns: Mapping[str, str]) -> pd.DataFrame:
    """A frame with no rows and the schema's columns and dtypes."""
    return coerce(pd.DataFrame(), columns)


@dataclass
class Runs:
    """Trials and steps of one or more sources, in the common schema."""

    trials: pd.DataFrame
    """One row per trial (columns: :data:`TRIAL_COLUMNS`, plus ``override.<key>`` of Hydra jobs)."""
    steps: pd.DataFrame
    """One row per model call (columns: :data:`STEP_COLUMNS`, plus :data:`TEXT_COLUMNS` if loaded)."""
    sources: list[str] = field(default_factory=list)
    """The run directories / files the rows came from."""
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Run directory -> the settings it was made with (its fingerprint's ``dotted.key -> value``), for the
    run directories that recorded them: what names the knob when two runs disagree on one trial key."""

    @property
    def simulated(self) -> bool:
        """True when any trial was produced by the simulated VLM."""
        return bool(len(self.trials)) and bool(self.trials["simulated"].any())

    def select(self, **equal: Any) -> Runs:
        """The trials whose columns equal the given values (a list means "any of"), with their steps."""
        mask = pd.Series(True, index=self.trials.index)
        for col, val in equal.items():
            if col not in self.trials.columns:
                raise KeyError(f"no trial column {col!r}; columns: {', '.join(self.trials.columns)}")
            vals = val if isinstance(val, list | tuple | set) else [val]
            mask &= self.trials[col].isin(list(vals)).fillna(False).astype(bool)
        trials = self.trials[mask].reset_index(drop=True)
        keys = set(zip(trials["run_dir"], trials["trial_key"], strict=True))
        sk = pd.Series(list(zip(self.steps["run_dir"], self.steps["trial_key"], strict=True)), dtype=object)
        steps = self.steps[sk.isin(keys).to_numpy()].reset_index(drop=True)
        return Runs(trials, steps, list(self.sources), dict(self.settings))

    @staticmethod
    def concat(*parts: Runs) -> Runs:
        """Stack several :class:`Runs` (columns missing in one part stay empty)."""
        if not parts:
            return Runs(empty_frame(TRIAL_COLUMNS), empty_frame(STEP_COLUMNS), [])
        trials = pd.concat([p.trials for p in parts], ignore_index=True)
        steps = pd.concat([p.steps for p in parts], ignore_index=True)
        settings = {k: v for p in parts for k, v in p.settings.items()}
        return Runs(trials, steps, [s for p in parts for s in p.sources], settings)

    def __repr__(self) -> str:
        sim = " SIMULATED" if self.simulated else ""
        return f"Runs({len(self.trials)} trials, {len(self.steps)} steps, {len(self.sources)} sources{sim})"
