"""Rows kept as typed columns while they stream in: what an import holds between reading a row and
building the report's frames.

An import used to keep every validated row as a Python dict (and every call as one) until the last row
was read, then build a pandas frame of all of them and convert it to the schema's dtypes: about 7 KB a
trial, several copies at once. :class:`Columns` keeps one typed buffer per column instead and only for the
columns some row fills: a float is 8 bytes (``array('d')``, NaN for null), an integer 8 bytes and a mask
byte, a boolean 1 byte (0, 1, or 2 for null), a text 8 bytes (a reference; repeated values are one shared
object, :data:`SHARE_UP_TO` distinct values per column). A column no row fills costs nothing, in the
buffers and in the frame :meth:`Columns.frame` builds: there it is the schema's empty column held in no
memory (:func:`~dvoc_bench.analysis.schema.empty_column`), equal to the one
:func:`~dvoc_bench.analysis.schema.coerce` would have made.

:meth:`Columns.frame` gives the same frame as ``coerce(pd.DataFrame(rows), schema)`` on the same rows
(schema columns first with their dtypes, then the other columns in the order they first appeared, their
dtype inferred by pandas), provided every value has its column's type (the import checks that first).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.schema import BOOL, FLOAT, INT, NBOOL, empty_column

SHARE_UP_TO = 65_536
"""Distinct values of a text column kept as one shared object each; past that (keys, one per row) values
are kept as they come, so the table of shared values stays bounded."""

_NULL_BOOL = 2


class _Column:
    """One column's values for rows ``0 .. len - 1`` (rows not given are null)."""

    def __len__(self) -> int:
        raise NotImplementedError

    def pad(self, n: int) -> None:
        """Nulls up to row ``n`` (exclusive)."""
        raise NotImplementedError

    def put(self, v: Any) -> None:
        raise NotImplementedError

    def nbytes(self) -> int:
        """Bytes of the buffers (references only, for text: the shared values are counted once)."""
        raise NotImplementedError


class _Float(_Column):
    def __init__(self) -> None:
        self.v = array("d")

    def __len__(self) -> int:
        return len(self.v)

    def pad(self, n: int) -> None:
        if n > len(self.v):
            self.v.extend([math.nan] * (n - len(self.v)))

    def put(self, v: Any) -> None:
        self.v.append(float(v))

    def nbytes(self) -> int:
        return len(self.v) * self.v.itemsize

    def array(self) -> Any:
        return np.frombuffer(self.v, dtype=np.float64)  # the buffer itself, no copy


class _Int(_Column):
    def __init__(self) -> None:
        self.v = array("q")
        self.null = bytearray()

    def __len__(self) -> int:
        return len(self.v)

    def pad(self, n: int) -> None:
        if n > len(self.v):
            self.v.extend([0] * (n - len(self.v)))
            self.null.extend(b"\x01" * (n - len(self.null)))

    def put(self, v: Any) -> None:
        self.v.append(int(round(v)))
        self.null.append(0)

    def nbytes(self) -> int:
        return len(self.v) * self.v.itemsize + len(self.null)

    def array(self) -> Any:
        values = np.frombuffer(self.v, dtype=np.int64)
        mask = np.frombuffer(self.null, dtype=np.uint8).view(bool)  # 0 or 1: the same bytes, no copy
        return pd.arrays.IntegerArray(values, mask)


class _Bool(_Column):
    def __init__(self, nullable: bool) -> None:
        self.v = bytearray()
        self.nullable = nullable

    def __len__(self) -> int:
        return len(self.v)

    def pad(self, n: int) -> None:
        if n > len(self.v):
            self.v.extend(bytes([_NULL_BOOL]) * (n - len(self.v)))

    def put(self, v: Any) -> None:
        self.v.append(1 if v else 0)

    def nbytes(self) -> int:
        return len(self.v)

    def array(self) -> Any:
        codes = np.frombuffer(self.v, dtype=np.uint8)
        if not self.nullable:  # coerce: a null of a plain boolean column is False
            return codes == 1
        return pd.arrays.BooleanArray(codes == 1, codes == _NULL_BOOL)


class _Other(_Column):
    """A column outside the schema (a Hydra job's ``override.*``): values as they are."""

    def __init__(self) -> None:
        self.v: list[Any] = []

    def __len__(self) -> int:
        return len(self.v)

    def pad(self, n: int) -> None:
        if n > len(self.v):
            self.v.extend([None] * (n - len(self.v)))

    def put(self, v: Any) -> None:
        self.v.append(v)

    def nbytes(self) -> int:
        return len(self.v) * 8


class _Text(_Other):
    """A text column: each distinct value held once (up to :data:`SHARE_UP_TO` of them)."""

    def __init__(self) -> None:
        super().__init__()
        self.shared: dict[str, str] = {}

    def put(self, v: Any) -> None:
        if len(self.shared) < SHARE_UP_TO:
            v = self.shared.setdefault(v, v)
        elif v in self.shared:
            v = self.shared[v]
        self.v.append(v)

    def array(self) -> Any:
        return pd.array(self.v, dtype="string")


class Columns:
    """Rows added one at a time (:meth:`add`), kept as one typed buffer per column they fill."""

    def __init__(self, schema: Mapping[str, str]) -> None:
        self.schema = schema
        """Column -> dtype of the schema (:data:`~dvoc_bench.analysis.schema.TRIAL_COLUMNS` or the
        steps')."""
        self.n = 0
        """Rows added."""
        self.cols: dict[str, _Column] = {}
        """The columns some row filled, in the order they first appeared."""

    def _new(self, name: str) -> _Column:
        dtype = self.schema.get(name)
        col: _Column
        if dtype == FLOAT:
            col = _Float()
        elif dtype == INT:
            col = _Int()
        elif dtype in (BOOL, NBOOL):
            col = _Bool(nullable=dtype == NBOOL)
        elif dtype is None:
            col = _Other()
        else:
            col = _Text()
        col.pad(self.n)
        self.cols[name] = col
        return col

    def add(self, row: Mapping[str, Any]) -> None:
        """Append one row; a null value is left out (the column's null)."""
        for name, v in row.items():
            if v is None and (name in self.schema or name in self.cols):
                continue  # a schema column's null; a column outside it is kept even when null (pandas')
            col = self.cols.get(name)
            if col is None:
                col = self._new(name)
            col.pad(self.n)
            col.put(v)
        self.n += 1

    def nbytes(self) -> int:
        """Bytes held by the buffers (what the rows cost until :meth:`frame`)."""
        return sum(c.nbytes() for c in self.cols.values())

    def frame(self, given: Mapping[str, Any] | None = None) -> pd.DataFrame:
        """The rows as a frame: the schema's columns with its dtypes (``given``: columns already built, by
        name), then the others. Numbers keep their buffers (no copy); the frame's blocks are left as
        built (pandas joins them when an operation needs it)."""
        out: dict[str, Any] = {}
        for name, dtype in self.schema.items():
            if given is not None and name in given:
                out[name] = given[name]
                continue
            col = self.cols.pop(name, None)
            if col is None:
                out[name] = empty_column(dtype, self.n)
                continue
            col.pad(self.n)
            out[name] = col.array()  # type: ignore[attr-defined]
        for name, col in self.cols.items():
            if isinstance(col, _Other):  # outside the schema: its dtype inferred, as pandas would
                col.pad(self.n)
                out[name] = col.v
        self.cols = {}
        # one frame of every column (a concat of two would copy each, the empty views too)
        return pd.DataFrame(out, copy=False)
