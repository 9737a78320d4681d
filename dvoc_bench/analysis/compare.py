"""Methods compared paired, on the same samples: the difference in success with a paired interval clustered
by sample, McNemar's exact test and a win / tie / loss count per sample.

Two trials pair when they share the model, the sample (``task``), the start index and the repeat, and
both are valid; the methods compared are *variants*: a method with the settings of every knob the run
varied (``dvoc alpha=decay`` and ``dvoc alpha=adaptive`` are two variants, never pooled). Knobs that apply
to every method (the protocol, :data:`COMMON`) split the comparison instead. The interval is
:func:`dvoc_bench.analysis.intervals.paired_difference_interval` (Newcombe's paired Wilson interval) on the
effective number of pairs, the samples as clusters (:data:`~dvoc_bench.analysis.intervals.DIFF_INTERVAL`);
the p-value is McNemar's exact two-sided test on the discordant pairs (the package's one,
:func:`dvoc_bench.analysis.honest.mcnemar_exact`). A sample is a win
for ``a`` when ``a``'s success rate over its pairs there is higher than ``b``'s.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from dvoc_bench.analysis.honest import ASSUMED_COLUMNS, assumed_of, check_rule, headline_keys, mcnemar_exact
from dvoc_bench.analysis.intervals import DIFF_INTERVAL, paired_difference_interval
from dvoc_bench.analysis.schema import keep_rows, narrow

COMMON = ("protocol",)
"""Knobs every method has: a comparison is made within one setting of each."""
PAIR_KEYS = ("task", "start_index", "rep")
"""What makes two trials of one model a pair."""
__all__ = ["COMMON", "DIFF_INTERVAL", "PAIR_KEYS", "method_pairs", "variants"]


def variants(trials: pd.DataFrame, split: Sequence[str]) -> pd.Series:
    """Each trial's method with the knobs of ``split`` it uses (``-`` = not used, left out)."""
    out = trials["method"].astype(str)
    for k in split:
        v = trials[k].astype(str)
        used = ~v.isin(["-", "<NA>", "nan", "None"])
        out = out + (" " + k + "=" + v).where(used, "")
    return out


def method_pairs(trials: pd.DataFrame, rule: str = "hit", split: Sequence[str] | None = None) -> pd.DataFrame:
    """Every pair of method variants run on the same samples, per model (and setting of :data:`COMMON`):
    pairs, samples, each side's rate, ``diff`` = rate(a) - rate(b) with ``lo`` / ``hi``
    (:data:`DIFF_INTERVAL`), the discordant counts, McNemar's exact p, and wins / ties / losses of ``a``
    over the samples. ``split``: the knobs that make variants (default: every knob the run varied)."""
    check_rule(rule)
    knobs = headline_keys(trials)[2:] if split is None else list(split)
    common = [k for k in knobs if k in COMMON]
    vkeys = [k for k in knobs if k not in COMMON]
    cols = ("valid", "method", rule, "model", *ASSUMED_COLUMNS, *knobs, *PAIR_KEYS)
    v = keep_rows(narrow(trials, *cols), trials["valid"])
    if v.empty:
        return pd.DataFrame()
    v["variant"] = variants(v, vkeys)
    v["_s"] = v[rule].fillna(False).astype(bool)
    keys = [k for k in PAIR_KEYS if k in v.columns]
    rows = []
    for name, g in v.groupby(["model", *common], dropna=False, sort=True):
        name = name if isinstance(name, tuple) else (name,)
        names = sorted(g["variant"].unique(), key=lambda s: (s.split(" ")[0] != "dvoc", s))
        for a, b in itertools.combinations(names, 2):
            row = _pair(g, a, b, keys)
            if row is None:
                continue
            head: dict[str, Any] = dict(zip(["model", *common], name, strict=True))
            sel = g[g["variant"].isin([a, b])]
            rows.append({**head, "a": a, "b": b, "simulated": bool(sel["simulated"].any()),
                         "assumed": assumed_of(sel), **row, "rule": rule})  # fmt: skip
    return pd.DataFrame(rows)


def _pair(g: pd.DataFrame, a: str, b: str, keys: list[str]) -> dict[str, Any] | None:
    sa = g[g["variant"] == a][[*keys, "_s"]]
    sb = g[g["variant"] == b][[*keys, "_s"]]
    if sa.duplicated(keys).any() or sb.duplicated(keys).any():
        return None  # not one trial per key on a side: not a paired design
    m = sa.merge(sb, on=keys, suffixes=("_a", "_b"))
    if m.empty:
        return None
    xa, xb = m["_s_a"].astype(bool), m["_s_b"].astype(bool)
    both, a_only = int((xa & xb).sum()), int((xa & ~xb).sum())
    b_only, neither = int((~xa & xb).sum()), int((~xa & ~xb).sum())
    m["_d"] = xa.astype(float) - xb.astype(float)
    per = m.groupby("task", sort=True)["_d"].agg(["sum", "size"])
    lo, hi = paired_difference_interval(
        both, a_only, b_only, neither, clusters=(per["sum"].to_numpy(), per["size"].to_numpy())
    )
    rate = m.groupby("task", sort=True)[["_s_a", "_s_b"]].mean()
    n = len(m)
    return {
        "pairs": n,
        "samples": len(per),
        "rate_a": float(xa.mean()),
        "rate_b": float(xb.mean()),
        "diff": (a_only - b_only) / n if n else math.nan,
        "lo": lo,
        "hi": hi,
        "a_only": a_only,
        "b_only": b_only,
        "mcnemar_p": mcnemar_exact(a_only, b_only),
        "wins": int((rate["_s_a"] > rate["_s_b"]).sum()),
        "ties": int((rate["_s_a"] == rate["_s_b"]).sum()),
        "losses": int((rate["_s_a"] < rate["_s_b"]).sum()),
    }
