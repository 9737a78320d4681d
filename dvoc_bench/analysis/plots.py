"""Figures from the trials / steps frames (DESIGN §11). Every function returns a matplotlib ``Figure``.

Figures are built with the object API (``matplotlib.figure.Figure``, no pyplot), so nothing here picks or
changes a backend: saving uses Agg, and a notebook shows the returned figure inline. Every figure whose
data includes a simulated trial says **SIMULATED** in its title.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from dvoc_bench.analysis.honest import RULE_TEXT, check_rule

SIM_TAG = "SIMULATED"
_COLORS = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]


def titled(text: str, simulated: bool) -> str:
    """``text`` with the SIMULATED tag when the data is simulated."""
    return f"{SIM_TAG}: {text}" if simulated else text


def _sim(df: pd.DataFrame) -> bool:
    return bool(len(df)) and "simulated" in df and bool(df["simulated"].astype(bool).any())


def save(fig: Figure, path: Path | str, dpi: int = 110) -> Path:
    """Write ``fig`` as PNG (Agg) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def _empty(title: str, simulated: bool, note: str) -> Figure:
    fig = Figure(figsize=(6, 2.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, note, ha="center", va="center")
    ax.set_title(titled(title, simulated))
    return fig


def success_bars(
    summary: pd.DataFrame, group: str = "model", hue: str = "method", title: str | None = None
) -> Figure:
    """Bars of ``rate`` per ``group`` x ``hue`` with the Wilson interval (``rate_lo``/``rate_hi``) as error
    bars; ``summary`` is :func:`dvoc_bench.analysis.honest.summary` output."""
    rule = str(summary["rule"].iloc[0]) if len(summary) else "hit"
    sim = _sim(summary)
    head = title or f"Success rate, rule {rule}, Wilson 95% intervals"
    if summary.empty:
        return _empty(head, sim, "no trials")
    groups = list(dict.fromkeys(summary[group].astype(str)))
    hues = list(dict.fromkeys(summary[hue].astype(str)))
    fig = Figure(
        figsize=(max(6.0, 1.3 * len(groups) * max(1, len(hues)) ** 0.5 + 2), 4.2), layout="constrained"
    )
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(hues))
    for j, hv in enumerate(hues):
        sub = summary[summary[hue].astype(str) == hv]
        sub = sub.set_index(sub[group].astype(str))
        xs, ys, lo, hi = [], [], [], []
        for i, gv in enumerate(groups):
            if gv in sub.index:
                r = sub.loc[gv]
                r = r.iloc[0] if isinstance(r, pd.DataFrame) else r
                xs.append(i + (j - (len(hues) - 1) / 2) * width)
                ys.append(r["rate"])
                lo.append(r["rate"] - r["rate_lo"])
                hi.append(r["rate_hi"] - r["rate"])
        ax.bar(
            xs,
            ys,
            width=width * 0.95,
            color=_COLORS[j % len(_COLORS)],
            label=hv,
            yerr=[lo, hi],
            capsize=3,
            error_kw={"elinewidth": 1},
        )
    ax.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"success rate ({rule})")
    ax.legend(title=hue, fontsize=8)
    ax.set_title(titled(head, sim), fontsize=10)
    fig.text(0.01, 0.005, RULE_TEXT.get(rule, rule), fontsize=7, color="#555")
    return fig


def distance_vs_iteration(
    steps: pd.DataFrame, by: str = "model", title: str | None = None, min_n: int = 3
) -> Figure:
    """True distance of the DVOC draft vs iteration: median line and inter-quartile band per ``by``, drawn
    at iterations that at least ``min_n`` trials reached (log scale; distances below 0.5 px drawn at 0.5)."""
    s = steps[(steps["kind"] == "verify") & steps["true_dist_px"].notna()]
    sim = _sim(s)
    head = title or "DVOC: true distance of the crosshair vs iteration (median, IQR band)"
    if s.empty:
        return _empty(head, sim, "no DVOC steps")
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for j, (name, g) in enumerate(s.groupby(by, sort=True)):
        q = g.groupby("index")["true_dist_px"].quantile([0.25, 0.5, 0.75]).unstack().clip(lower=0.5)
        n = g.groupby("index").size()
        q = q[n >= min_n]
        c = _COLORS[j % len(_COLORS)]
        ax.plot(q.index, q[0.5], marker="o", ms=3, color=c, label=f"{name} (n={g['trial_key'].nunique()})")
        ax.fill_between(q.index, q[0.25], q[0.75], color=c, alpha=0.18, linewidth=0)
    ax.axhline(30, ls="--", color="#888", lw=1)
    ax.text(ax.get_xlim()[1], 30, " 30 px", va="center", fontsize=7, color="#666")
    ax.set_yscale("log")
    ax.set_xlabel(f"iteration (shown where >= {min_n} trials reached it)")
    ax.set_ylabel("true distance to target centre (px)")
    ax.legend(fontsize=7)
    ax.set_title(titled(head, sim), fontsize=10)
    return fig


_IMAGES: dict[str, tuple[np.ndarray | None, str]] = {}


def scene_image(task: str, size: tuple[int, int] | None = None) -> tuple[np.ndarray | None, str]:
    """The clean screenshot of ``task`` from our :class:`~dvoc_bench.scenes.SceneRegistry` (``None``
    when the scene is not ours), and a note saying where it came from. Rendered once per process."""
    if task not in _IMAGES:
        try:
            from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

            snap = SceneRegistry(default_scenes_dir()).snapshot(task)
            _IMAGES[task] = (snap.image, "scene rendered by dvoc_bench.scenes")
        except Exception as e:  # unknown scene, no browser for a web page, ...: draw without the image
            _IMAGES[task] = (None, f"scene image not available ({type(e).__name__})")
    img, note = _IMAGES[task]
    if img is not None and size is not None and (img.shape[1], img.shape[0]) != tuple(size):
        return None, "scene image size differs from the records"
    return img, note


def trajectories(
    runs_trials: pd.DataFrame,
    steps: pd.DataFrame,
    task: str,
    *,
    model: str | None = None,
    method: str = "dvoc",
    max_trials: int = 12,
    title: str | None = None,
) -> Figure:
    """DVOC trajectories (draft after draft, final point as a cross) drawn on the scene image, with the
    target box. The image comes from :class:`~dvoc_bench.scenes.SceneRegistry`; for a scene we cannot
    render, and for the authors' web pages (ours are different pages), the axes show the canvas and boxes
    only. The authors' synthetic scenes are drawn with our S1–S6, which reproduce their layout."""
    t = runs_trials[(runs_trials["task"] == task) & (runs_trials["method"] == method) & runs_trials["valid"]]
    if model is not None:
        t = t[t["model"] == model]
    sim = _sim(t)
    who = f" — {model}" if model else ""
    head = title or f"{method} trajectories on {task}{who}"
    if t.empty:
        return _empty(head, sim, "no valid trials for this task")
    t = t.head(max_trials)
    w, h = int(t["image_w"].iloc[0]), int(t["image_h"].iloc[0])
    theirs_web = bool((t["source"] == "upstream").all()) and str(t["scene_kind"].iloc[0]) == "web"
    img, note = (
        (None, "the authors' page is not ours: canvas only") if theirs_web else scene_image(task, (w, h))
    )
    fig = Figure(figsize=(8, 8 * h / w + 0.6), layout="constrained")
    ax = fig.add_subplot()
    if img is not None:
        ax.imshow(img, extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    else:
        ax.set_facecolor("#f4f4f4")
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(h - 0.5, -0.5)
    r = t.iloc[0]
    ax.add_patch(
        _rect(
            r["target_x0"], r["target_y0"], r["target_x1"], r["target_y1"], dashed=bool(r["target_inferred"])
        )
    )
    st = steps[steps["kind"] == "verify"]
    for j, (_, tr) in enumerate(t.iterrows()):
        c = _COLORS[j % len(_COLORS)]
        ss = st[(st["run_dir"] == tr["run_dir"]) & (st["trial_key"] == tr["trial_key"])].sort_values("index")
        xs = [*ss["draft_x"].tolist(), tr["final_x"]]
        ys = [*ss["draft_y"].tolist(), tr["final_y"]]
        ax.plot(xs, ys, "-o", ms=3, lw=1.2, color=c, alpha=0.9)
        ax.plot([tr["final_x"]], [tr["final_y"]], "x", ms=9, mew=2, color=c)
    ax.set_title(titled(head, sim), fontsize=10)
    fig.text(
        0.01,
        0.005,
        f"{note}; target box {'inferred (dashed)' if r['target_inferred'] else 'solid'}; "
        f"x = final point; {len(t)} trials",
        fontsize=7,
        color="#555",
    )
    return fig


def _rect(x0: float, y0: float, x1: float, y1: float, dashed: bool = False):
    from matplotlib.patches import Rectangle

    return Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="#00e5ff", lw=2, ls="--" if dashed else "-")


def heatmap(
    trials: pd.DataFrame, rule: str = "hit", method: str = "dvoc", title: str | None = None
) -> Figure:
    """Model x task success rate (valid trials, one rule), the cell text giving ``k/n``."""
    check_rule(rule)
    t = trials[(trials["method"] == method) & trials["valid"]]
    sim = _sim(t)
    head = title or f"{method}: success by model and task (rule {rule})"
    if t.empty:
        return _empty(head, sim, f"no valid {method} trials")
    g = t.groupby(["model", "task"])[rule].agg(["sum", "count"])
    rate = (g["sum"] / g["count"]).unstack("task")
    tasks = sorted(rate.columns, key=lambda s: (str(s)[:1], int(str(s)[1:]) if str(s)[1:].isdigit() else 0))
    rate = rate[tasks]
    fig = Figure(figsize=(1.0 + 0.75 * len(tasks), 1.2 + 0.5 * len(rate)), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(rate.to_numpy(dtype=float), vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    for i, m in enumerate(rate.index):
        for j, task in enumerate(tasks):
            if (m, task) in g.index:
                k, n = g.loc[(m, task)]
                ax.text(j, i, f"{int(k)}/{int(n)}", ha="center", va="center", fontsize=7)
    ax.set_xticks(range(len(tasks)), tasks)
    ax.set_yticks(range(len(rate)), rate.index)
    fig.colorbar(im, ax=ax, shrink=0.8, label="success rate")
    ax.set_title(titled(head, sim), fontsize=10)
    return fig


def distance_cdf(
    trials: pd.DataFrame, by: Sequence[str] = ("model", "method"), title: str | None = None
) -> Figure:
    """Empirical CDF of the final distance (valid trials) per group, log x, with the 30 px line."""
    t = trials[trials["valid"] & trials["final_dist_px"].notna()]
    sim = _sim(t)
    head = title or "Final distance to the target centre (CDF, valid trials)"
    if t.empty:
        return _empty(head, sim, "no valid trials")
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.add_subplot()
    for j, (name, g) in enumerate(t.groupby(list(by), sort=True)):
        d = np.sort(g["final_dist_px"].to_numpy(dtype=float))
        y = np.arange(1, len(d) + 1) / len(d)
        label = " / ".join(map(str, name if isinstance(name, tuple) else (name,)))
        ax.step(
            np.maximum(d, 0.1),
            y,
            where="post",
            color=_COLORS[j % len(_COLORS)],
            label=f"{label} (n={len(d)})",
            ls="-" if j < len(_COLORS) else "--",
        )
    ax.axvline(30, ls="--", color="#888", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("final distance (px, log)")
    ax.set_ylabel("share of trials")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=7)
    ax.set_title(titled(head, sim), fontsize=10)
    return fig


def frame_audit_bars(audit: pd.DataFrame, rule: str = "hit_radius", title: str | None = None) -> Figure:
    """The frame audit as bars: per group, the ``rule`` rate of the same answers read as pixels, 0–1000
    and 0–1 (``audit`` from :func:`dvoc_bench.analysis.honest.frame_audit_points`)."""
    sim = _sim(audit)
    head = title or f"Absolute answers re-read in each coordinate frame (rule {rule})"
    if audit.empty:
        return _empty(head, sim, "no absolute answers recorded")
    keys = [
        c
        for c in audit.columns
        if c
        not in (
            "reading",
            "as_recorded",
            "simulated",
            "n",
            "hit",
            "hit_radius",
            "within_eps",
            "median_err_px",
        )
    ]

    def cell(col: str, v: object) -> str:
        if col == "has_task":
            return "" if v is None or v is pd.NA else ("with task" if bool(v) else "no task")
        return str(v)

    lab = pd.Series(
        [" / ".join(x for x in (cell(c, r[c]) for c in keys) if x) for _, r in audit.iterrows()],
        index=audit.index,
    )
    a = audit.assign(_g=lab)
    groups = list(dict.fromkeys(a["_g"]))
    readings = list(dict.fromkeys(a["reading"]))
    fig = Figure(figsize=(max(6.0, 0.9 * len(groups) + 2), 4.4), layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / len(readings)
    for j, rd in enumerate(readings):
        sub = a[a["reading"] == rd].set_index("_g")
        ys = [float(sub.loc[g, rule]) if g in sub.index else np.nan for g in groups]
        xs = [i + (j - (len(readings) - 1) / 2) * width for i in range(len(groups))]
        ax.bar(xs, ys, width=width * 0.95, color=_COLORS[j % len(_COLORS)], label=f"read as {rd}")
    ax.set_xticks(range(len(groups)), groups, rotation=25, ha="right", fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"{rule} rate")
    ax.legend(fontsize=8)
    ax.set_title(titled(head, sim), fontsize=10)
    return fig
