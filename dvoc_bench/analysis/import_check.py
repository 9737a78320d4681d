"""Imported results beside the source's own verdicts: per imported file, model and method, the source's count
of hits beside ours (the project's rule, ``hit``: the point inside the truth box, edges included), and every
sample where the two differ, with its cause (:func:`cause`).

The source's verdict is the row's ``paper_success`` and its logged point ``source_x``, ``source_y``
(:mod:`dvoc_bench.analysis.foreign`); rows without a source verdict (a zoom's step 1 alone) are left out.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dvoc_bench.analysis.markdown import md_table
from dvoc_bench.analysis.schema import keep_rows

Block = tuple[Any, ...]

EDGE_PX = 1.0
"""A point this close to the truth box's border (pixels, either side) is an edge case."""
SAME_PX = 1.0
"""Two readings of one reply this close (pixels, per axis) are one point, rounded differently."""
CAUSES = {
    "parse": "one side read a point from the reply, the other none",
    "frame": "the same reply read to points more than 1 px apart (a different frame or mapping)",
    "edge": "the point lies within 1 px of the truth box's border: the two rules differ on the border "
    "(inclusive or not, sub-pixel values logged rounded)",
    "rounding": "the two points differ by at most 1 px, away from the border",
    "rule": "the same point, away from the border: the source's box or rule differs",
}
"""Each cause of a differing verdict, as the report explains it."""


def _near_edge(x: float, y: float, box: tuple[float, float, float, float]) -> bool:
    x0, y0, x1, y1 = box
    e = EDGE_PX
    outer = x0 - e <= x <= x1 + e and y0 - e <= y <= y1 + e
    inner = x0 + e < x < x1 - e and y0 + e < y < y1 - e
    return outer and not inner


def cause(r: Any) -> str:
    """Why our verdict differs from the source's on row ``r`` (``final_x, final_y``: ours; ``source_x,
    source_y``: the source's point; ``target_*``: the truth box): one of :data:`CAUSES`."""
    ours = (
        None if pd.isna(r["final_x"]) or pd.isna(r["final_y"]) else (float(r["final_x"]), float(r["final_y"]))
    )
    sx, sy = r["source_x"], r["source_y"]
    theirs = None if pd.isna(sx) or pd.isna(sy) else (float(sx), float(sy))
    if (ours is None) != (theirs is None) or ours is None or theirs is None:
        return "parse"
    d = max(abs(ours[0] - theirs[0]), abs(ours[1] - theirs[1]))
    if d > SAME_PX:
        return "frame"
    box = (float(r["target_x0"]), float(r["target_y0"]), float(r["target_x1"]), float(r["target_y1"]))
    if _near_edge(*ours, box) or _near_edge(*theirs, box):
        return "edge"
    return "rounding" if d > 0 else "rule"


def _with_verdict(t: pd.DataFrame) -> pd.DataFrame:
    """The imported rows that carry their source's verdict."""
    return keep_rows(t, (t["source"] == "import") & t["paper_success"].notna())


def differing(t: pd.DataFrame) -> pd.DataFrame:
    """The imported rows whose source verdict differs from ours, with their cause."""
    v = _with_verdict(t)
    d = v[v["paper_success"].astype(bool) != v["hit"].astype(bool)].copy()
    d["cause"] = [cause(r) for _, r in d.iterrows()]
    return d


def _pt(x: Any, y: Any) -> str:
    return "-" if pd.isna(x) or pd.isna(y) else f"{float(x):.1f}, {float(y):.1f}"


def blocks(t: pd.DataFrame) -> list[Block]:
    """The report's section on imported results (nothing when no row was imported with a verdict)."""
    v = _with_verdict(t)
    if v.empty:
        return []
    diff = differing(t)
    rows = []
    for (src, model, method), g in v.groupby(["run_dir", "model", "method"], sort=True):
        dg = diff[(diff["run_dir"] == src) & (diff["model"] == model) & (diff["method"] == method)]
        n = len(g)
        theirs, ours = int(g["paper_success"].astype(bool).sum()), int(g["hit"].astype(bool).sum())
        rows.append({
            "source": str(src), "model": model, "method": method, "samples": n,
            "source_hits": theirs, "source_acc": f"{100 * theirs / n:.1f} %", "our_hits": ours,
            "our_acc": f"{100 * ours / n:.1f} %", "differ": len(dg),
            "causes": ", ".join(f"{k} {c}" for k, c in dg["cause"].value_counts().sort_index().items())
            or "-",
            "calls_per_sample": f"{g['model_calls'].astype(float).mean():.2f}",
        })  # fmt: skip
    out: list[Block] = [("h", 3, "Imported results: the source's verdicts beside ours")]
    out += [("p", "Unit: sample (one imported record). `source_hits`: the source harness's own verdicts as "
                  "logged; `our_hits`: this project's rule `hit` (the final point inside the truth box, "
                  "edges included) on the same rows; `calls_per_sample`: model calls per record as the "
                  "source ran them. Every sample where the two differ is listed below with its cause: "
                  + "; ".join(f"`{k}`: {v}" for k, v in CAUSES.items()) + ".")]  # fmt: skip
    out += [("table", md_table(pd.DataFrame(rows)))]
    if diff.empty:
        out += [("p", "Every verdict agrees.")]
        return out
    show = pd.DataFrame({
        "model": diff["model"], "method": diff["method"], "row": diff["paper_trial_id"], "task": diff["task"],
        "source": diff["paper_success"].map({True: "hit", False: "miss"}),
        "ours": diff["hit"].map({True: "hit", False: "miss"}),
        "source_point": [_pt(x, y) for x, y in zip(diff["source_x"], diff["source_y"], strict=True)],
        "our_point": [_pt(x, y) for x, y in zip(diff["final_x"], diff["final_y"], strict=True)],
        "box": [f"{a:g}, {b:g}, {c:g}, {d:g}" for a, b, c, d in
                diff[["target_x0", "target_y0", "target_x1", "target_y1"]].itertuples(index=False)],
        "cause": diff["cause"],
    })  # fmt: skip
    out += [("p", f"The {len(diff)} samples whose verdicts differ (box: x0, y0, x1, y1 in pixels):")]
    out += [("table", md_table(show.reset_index(drop=True)))]
    return out


def counts(t: pd.DataFrame) -> dict[tuple[str, str], tuple[int, int, int]]:
    """``(model, method) -> (samples, source hits, our hits)`` of the imported rows with a source verdict."""
    v = _with_verdict(t)
    return {
        (str(m), str(k)): (
            len(g),
            int(g["paper_success"].astype(bool).sum()),
            int(g["hit"].astype(bool).sum()),
        )
        for (m, k), g in v.groupby(["model", "method"], sort=True)
    }


__all__ = ["CAUSES", "blocks", "cause", "counts", "differing"]
