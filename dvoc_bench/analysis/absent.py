"""Absent targets in the report (docs/absent.md): correct refusals and false clicks beside the hit rate.

A trial's screen has its target (``absent`` = ``off``) or not (``remove``: taken off the screen;
``ask_missing``: the instruction names an element the screen does not have). On a present target the
outcome is a hit (rule ``hit``: the box, or the DOM / toolkit element under the point), and a "not present"
answer (``refused``) is a miss; on an absent one there is nothing to hit: a refusal is the right answer and
any click (a final point, ``final_x``) is a false click. A trial that ended with neither (every reply
unusable) is counted in ``trials`` and in both rates' denominators, in neither numerator.

Every rate has the report's one interval (:func:`~dvoc_bench.analysis.clustered.sample_rate_interval`:
Wilson 95 %, clustered by sample). Rows are per model, method, kind of screen, variant and whether the
request offered the "not present" answer (``offer_absent``): a model that was never offered it cannot
refuse, and a model that never refuses shows a false-click rate of 100 %.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dvoc_bench.analysis.clustered import INTERVAL, sample_rate_interval

KEYS = ("model", "method", "scene_kind", "absent", "offer_absent")
"""The grouping of :func:`absent_table`."""

RULE_TEXT = (
    "present target (absent = off): hit = rule `hit` (the point on the target's box, or its DOM / toolkit "
    "element), a refusal (the model's not-present answer) is a miss; absent target (remove / ask_missing): "
    "refusal = the trial ended on the not-present answer (no click), false click = the trial clicked a point"
)
"""The scoring rule of the table, in words."""


def has_absent(trials: pd.DataFrame) -> bool:
    """Whether the trials hold an absent-target variant or a request that offered the not-present answer."""
    if "absent" not in trials.columns:
        return False
    offered = trials["offer_absent"].fillna(False).astype(bool) if "offer_absent" in trials else False
    return bool((trials["absent"].fillna("off") != "off").any() or pd.Series(offered).any())


def _rate(success: pd.Series, g: pd.DataFrame) -> tuple[float, float, float]:
    lo, hi = sample_rate_interval(success.astype(float), g)
    return float(success.mean()), lo, hi


def absent_table(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per :data:`KEYS` group of the trials that ran (``status`` ok): ``trials``, ``samples``,
    ``hit`` (present rows only), ``refusal`` and ``false_click`` (absent rows only), each rate with its
    ``_lo`` / ``_hi`` bounds (:data:`INTERVAL`); ``simulated`` kept for the model label."""
    t = trials[trials["status"] == "ok"].copy()
    t["absent"] = t["absent"].fillna("off")
    t["offer_absent"] = t["offer_absent"].fillna(False).astype(bool)
    t["refused"] = t["refused"].fillna(False).astype(bool)
    rows: list[dict[str, Any]] = []
    for key, g in t.groupby(list(KEYS), sort=True, dropna=False):
        row: dict[str, Any] = dict(zip(KEYS, key, strict=True))
        row["simulated"] = bool(g["simulated"].any()) if "simulated" in g else False
        row["trials"], row["samples"] = len(g), int(g["task"].nunique())
        present = row["absent"] == "off"
        clicked = g["final_x"].notna() & ~g["refused"]
        cols = {
            "hit": g["hit"].astype(bool) if present else None,
            "refusal": g["refused"],
            "false_click": None if present else clicked,
        }
        for name, success in cols.items():
            if success is None:
                row[name] = row[f"{name}_lo"] = row[f"{name}_hi"] = float("nan")
            else:
                row[name], row[f"{name}_lo"], row[f"{name}_hi"] = _rate(success, g)
        rows.append(row)
    return pd.DataFrame(rows)


def table_view(tab: pd.DataFrame) -> pd.DataFrame:
    """:func:`absent_table` with each rate and its interval in one cell (``51.0 % [38.2, 63.7]``)."""
    out = tab[[*KEYS, "simulated", "trials", "samples"]].copy()
    for name in ("hit", "refusal", "false_click"):
        out[name] = [
            "-" if pd.isna(v) else f"{100 * v:.1f} % [{100 * lo:.1f}, {100 * hi:.1f}]"
            for v, lo, hi in zip(tab[name], tab[f"{name}_lo"], tab[f"{name}_hi"], strict=True)
        ]
    return out


def figure(tab: pd.DataFrame) -> Any:
    """Bars per model and method: the refusal rate and the false-click rate on absent targets and the hit
    rate on present ones, with :data:`INTERVAL` bars (one hue per variant and measure)."""
    from dvoc_bench.analysis.plots import grouped_bars

    parts = []
    for name, label in (("hit", "hit (present)"), ("refusal", "refusal"), ("false_click", "false click")):
        sub = tab[tab[name].notna()]
        if sub.empty:
            continue
        sim = sub["simulated"].map({True: " [SIMULATED]", False: ""})
        parts.append(
            pd.DataFrame(
                {
                    "_g": sub["model"].astype(str) + sim + " / " + sub["method"].astype(str),
                    "_h": label + ", " + sub["absent"].astype(str) + ", " + sub["scene_kind"].astype(str),
                    "value": sub[name],
                    "lo": sub[f"{name}_lo"],
                    "hi": sub[f"{name}_hi"],
                }
            )
        )
    v = pd.concat(parts, ignore_index=True)
    title = f"Absent targets: refusals and false clicks (hits on present targets), {INTERVAL}"
    if bool(tab["simulated"].any()):
        title = "SIMULATED rows marked; " + title
    n, k = tab["trials"], tab["samples"]
    note = (
        "present: hit = rule `hit`, a refusal a miss; absent: refusal = no click, false click = any click. "
        f"n per bar: {int(n.min())}-{int(n.max())} trials on {int(k.min())}-{int(k.max())} samples"
    )
    return grouped_bars(
        v,
        list(dict.fromkeys(v["_g"])),
        list(dict.fromkeys(v["_h"])),
        "rate",
        title=title,
        legend_title="measure",
        note=note,
    )
