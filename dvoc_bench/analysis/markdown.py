"""Markdown rendering of analysis tables (no ``tabulate`` dependency), and the escaping of text the report
did not write (dataset text, instructions, model and task names, imported fields): rendered by a Markdown
renderer that passes raw HTML through (mistune's default), none of it becomes HTML, a link or an image."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.honest import summary_keys
from dvoc_bench.analysis.paper import PAPER_LABELS


def _default(v: Any) -> str:
    if v is None or v is pd.NA:
        return "-"
    if isinstance(v, bool | np.bool_):  # numpy's in an object column (a boolean column holding <NA>)
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "∞"
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
    return str(v)


_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def _entities(s: str) -> str:
    return re.sub(r"[&<>]", lambda m: _HTML[m.group()], s)


def escape_text(text: str) -> str:
    """``text`` with ``&``, ``<`` and ``>`` written as entities outside its code spans (inside one, a
    renderer shows them as they are), so no raw HTML in it reaches the page; renders as the same text."""
    out, at = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [_entities(text[at : m.start()]), m.group()]
        at = m.end()
    return "".join([*out, _entities(text[at:])])


def escape_inline(s: str) -> str:
    """A value the report did not write, for a place among markdown (a link's text, a caption, a table cell):
    one line, no HTML, and none of the characters that open a link, an image or a code span."""
    s = " ".join(str(s).split())
    return _entities(re.sub(r"([\\`\[\]!])", r"\\\1", s))


def escape_cell(cell: str) -> str:
    """A table cell: one line, ``|`` escaped, no HTML (entities), and no link or image (``](`` broken)."""
    cell = " ".join(cell.split()).replace("|", "\\|").replace("](", "]\\(")
    return escape_text(cell)


def md_table(df: pd.DataFrame, fmt: Mapping[str, Callable[[Any], str]] | None = None) -> str:
    """``df`` as a GitHub markdown table; ``fmt`` maps a column to its cell formatter. Every cell and header
    is escaped (:func:`escape_cell`): the values come from records and imports."""
    fmt = dict(fmt or {})
    if df.empty:
        return "_(no rows)_"
    cols = list(df.columns)
    body = [
        [fmt.get(c, _default)(v) for c, v in zip(cols, row, strict=True)]
        for row in df.itertuples(index=False)
    ]
    lines = [
        "| " + " | ".join(escape_cell(str(c)) for c in cols) + " |",
        "|" + "|".join("---" for _ in cols) + "|",
    ]
    lines += ["| " + " | ".join(escape_cell(cell) for cell in r) + " |" for r in body]
    return "\n".join(lines)


def pct(v: Any) -> str:
    return "-" if v is None or v is pd.NA or not math.isfinite(float(v)) else f"{100 * float(v):.1f}%"


def px(v: Any) -> str:
    return "-" if v is None or v is pd.NA or not math.isfinite(float(v)) else f"{float(v):.1f}"


def usd(v: Any) -> str:
    if v is None or v is pd.NA:
        return "unknown"
    v = float(v)
    if math.isnan(v):
        return "unknown"
    if math.isinf(v):
        return "no success"
    return f"${v:.4f}"


def label_models(df: pd.DataFrame, paper_names: bool = False) -> pd.DataFrame:
    """Mark the model of every simulated row ``[SIMULATED]``, with the assumptions the row rests on (column
    ``assumed`` or ``simulated_assumptions``, e.g. ``[SIMULATED; overlay effect assumed]``), and drop
    those columns."""
    from dvoc_bench.core.assumptions import marker

    out = df.copy()
    col = next((c for c in ("assumed", "simulated_assumptions") if c in out), None)
    if "model" in out and "simulated" in out:
        cells = out[col] if col else [None] * len(out)
        tags = [marker(bool(s), [a]) for s, a in zip(out["simulated"], cells, strict=True)]
        out["model"] = [
            (PAPER_LABELS.get(m, m) if paper_names else str(m)) + (f" [{t}]" if t else "")
            for m, t in zip(out["model"], tags, strict=True)
        ]
    return out.drop(columns=["simulated", "assumed", "simulated_assumptions"], errors="ignore")


def summary_view(s: pd.DataFrame) -> pd.DataFrame:
    """An honest summary (:func:`~dvoc_bench.analysis.honest.summary`) reduced to readable columns, the
    intervals written as ``[lo, hi]``."""
    if s.empty:
        return s
    keys = summary_keys(s)
    extra = [c for c in ("assumed", "scene_check") if c in s]
    out = label_models(s[[*keys, "simulated", *extra]])
    out["valid/total"] = [f"{v}/{t}" for v, t in zip(s["valid"], s["total"], strict=True)]
    out["errors"] = s["errors"].to_numpy()
    out["rate [95% CI]"] = [
        f"{pct(r)} [{pct(a)}, {pct(b)}]"
        for r, a, b in zip(s["rate"], s["rate_lo"], s["rate_hi"], strict=True)
    ]
    out["raw rate"] = s["raw_rate"].map(pct).to_numpy()
    out["mean dist px [95% CI]"] = [
        f"{px(m)} [{px(a)}, {px(b)}]"
        for m, a, b in zip(s["mean_dist"], s["dist_lo"], s["dist_hi"], strict=True)
    ]
    out["median px"] = s["median_dist"].map(px).to_numpy()
    out["mean iters"] = s["mean_iters"].map(px).to_numpy()
    out["calls"] = s["calls"].to_numpy()
    out["tokens in/out"] = [
        "-" if i is pd.NA or o is pd.NA else f"{int(i)}/{int(o)}"
        for i, o in zip(s["tokens_in"], s["tokens_out"], strict=True)
    ]
    out["cost"] = s["cost_usd"].map(usd).to_numpy()
    out["cost / success"] = s["cost_per_success"].map(usd).to_numpy()
    return out
