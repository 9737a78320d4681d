"""Phone trials (``web.device`` set, docs/phones.md): the hit rule beside AndroidControl's three
conventions, each with its interval, and whether every real tap agreed with the hit rule."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dvoc_bench.analysis.clustered import INTERVAL, sample_rate_interval
from dvoc_bench.analysis.schema import keep_rows
from dvoc_bench.core.scoring import PHONE_RULES

RULES = ("hit", *PHONE_RULES)
"""The columns compared: the DOM hit rule, then ``ac_box``, ``ac_grown``, ``ac_screen14``."""

RULE_TEXT = {
    "hit": "the DOM element under the point is the target or inside it",
    "ac_box": "inside the target box (AndroidControl's box rule)",
    "ac_grown": "inside the box grown x1.2 about its centre, or within 0.04 max(W, H) px of its centre "
    "(Qwen2.5-VL's AndroidControl evaluation)",
    "ac_screen14": "within 0.14 of the centre in screen-normalised coordinates (AITW's tap threshold, used "
    "on AndroidControl by OS-Atlas and UI-TARS)",
}
"""Each rule in words, for the report."""


def phone_trials(t: pd.DataFrame) -> pd.DataFrame:
    """The phone trials that ran (a device set and ``ac_box`` recorded)."""
    if "device" not in t.columns or "ac_box" not in t.columns:
        return t.iloc[0:0]
    m = (t["device"].fillna("-") != "-") & t["ac_box"].notna() & (t["status"] == "ok")
    return keep_rows(t, m)


def table(
    t: pd.DataFrame, by: tuple[str, ...] = ("model", "simulated", "device", "method")
) -> pd.DataFrame:
    """One row per group: ``n``, every rule's rate with its interval (:data:`INTERVAL`), and the taps:
    how many trials tapped for real (``taps``) and in how many the tap's verdict equalled ``hit``."""
    p = phone_trials(t)
    rows: list[dict[str, Any]] = []
    for key, g in p.groupby(list(by), sort=True, dropna=False):
        row: dict[str, Any] = dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True))
        row["n"] = len(g)
        for r in RULES:
            y = g[r].astype(bool).astype(float)
            lo, hi = sample_rate_interval(y, g)
            row[r], row[f"{r}_lo"], row[f"{r}_hi"] = float(y.mean()), lo, hi
        tapped = g[g["clicked_target"].notna()]
        row["taps"] = len(tapped)
        row["taps_agree"] = int((tapped["clicked_target"].astype(bool) == tapped["hit"].astype(bool)).sum())
        rows.append(row)
    return pd.DataFrame(rows)


__all__ = ["INTERVAL", "RULES", "RULE_TEXT", "phone_trials", "table"]
