"""Figures from the trials / steps frames. Every function returns a matplotlib ``Figure``.

Figures are built with the object API (``matplotlib.figure.Figure``, no pyplot), so nothing here picks or
changes a backend: saving uses Agg, and a notebook shows the returned figure inline. Every figure whose
data includes a simulated trial says **SIMULATED** in its title (the figure's ``suptitle``).

They stay readable from 1 to 50 tasks and 1 to 20 models (:mod:`~dvoc_bench.analysis._layout`: sizes
grow with the data, titles wrap, legends sit outside the axes, crowded tick labels turn upright), and
they never pool the settings of a sweep: bars, heat-map rows and lines are split by every knob the run
varied (:func:`~dvoc_bench.analysis.honest.headline_keys`), unless ``split=()`` asks for pooling.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from dvoc_bench.analysis import _layout as L
from dvoc_bench.analysis.honest import AUDIT_VALUES, RULE_TEXT, check_rule, headline_keys, summary_keys
from dvoc_bench.analysis.intervals import RATE_INTERVAL, error_bars
from dvoc_bench.analysis.schema import keep_rows, narrow
from dvoc_bench.core.rundir import HYDRA, HYDRA_CONFIG

SIM_TAG = "SIMULATED"
_COLORS = L.PALETTE
_STEP_KNOBS = {"alpha": "alpha_schedule"}
"""Knob columns named differently in the steps frame (``alpha`` there is the step's numeric alpha)."""
_PLAIN = ("model", "method", "task")
"""Key columns shown by value alone in labels; other keys show as ``knob=value``."""


def titled(text: str, simulated: bool | str) -> str:
    """``text`` with the SIMULATED tag when the data is simulated; ``simulated`` may be the whole tag
    (:func:`_sim`: ``SIMULATED; overlay effect assumed`` when the data rests on an assumption)."""
    if isinstance(simulated, str):
        return f"{simulated}: {text}" if simulated else text
    return f"{SIM_TAG}: {text}" if simulated else text


def title_of(fig: Figure) -> str:
    """The title of a figure made here."""
    return fig.get_suptitle()


def _sim(df: pd.DataFrame) -> str:
    """The figure's tag: empty for real data, ``SIMULATED`` with every assumption of the simulated rows
    (``assumed`` or ``simulated_assumptions`` column; :func:`dvoc_bench.core.assumptions.marker`)."""
    from dvoc_bench.core.assumptions import marker

    if not (len(df) and "simulated" in df and bool(df["simulated"].astype(bool).any())):
        return ""
    col = next((c for c in ("assumed", "simulated_assumptions") if c in df), None)
    sim = df[df["simulated"].astype(bool)]
    return marker(True, sim[col].tolist() if col else ())


def save(fig: Figure, path: Path | str, dpi: int = 110) -> Path:
    """Write ``fig`` as PNG (Agg) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path


def _empty(title: str, simulated: bool | str, note: str) -> Figure:
    fig = Figure(figsize=(6, 2.5), layout="constrained")
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, note, ha="center", va="center")
    L.title(fig, titled(title, simulated))
    return fig


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) or str(v) in ("-", "<NA>", "nan")


def label(row: Any, keys: Sequence[str]) -> str:
    """``a / b / knob=value`` for the key columns of ``row``; a knob that does not apply ("-") is left
    out."""
    parts = []
    for k in keys:
        v = row[k]
        if _missing(v):
            continue
        if k == "has_task":
            parts.append("with task" if bool(v) else "no task")
        elif k in _PLAIN:
            parts.append(str(v))
        else:
            parts.append(f"{k.replace('_schedule', '')}={v}")
    return " / ".join(parts) or "all"


def _labels(df: pd.DataFrame, keys: Sequence[str]) -> pd.Series:
    return pd.Series([label(r, keys) for _, r in df.iterrows()], index=df.index, dtype=object)


def _split(trials: pd.DataFrame, split: Sequence[str] | None, fixed: Sequence[str]) -> list[str]:
    """The knob columns to split by: ``split`` as given, else every knob the run varied."""
    keys = headline_keys(trials) if split is None else list(split)
    return [k for k in keys if k not in fixed and k in trials.columns]


def grouped_bars(
    values: pd.DataFrame,
    groups: Sequence[str],
    hues: Sequence[str],
    value_label: str,
    *,
    title: str,
    legend_title: str | None = None,
    note: str | None = None,
    tick_fontsize: float = 8,
) -> Figure:
    """Bars of ``values`` (columns ``_g`` group, ``_h`` hue, ``value`` and optional ``lo`` / ``hi``
    interval bounds drawn as error bars) with one cluster per group. Up to 14 inches of clusters stand
    upright; more lie horizontally (groups down the y axis), so group labels stay horizontal and legible."""
    nh = max(1, len(hues))
    bar_in = 0.24 if nh > 1 else 0.45
    cluster_in = nh * bar_in + 0.35
    horizontal = len(groups) * cluster_in > 14.0
    legend_in = L.legend_width_in(hues, title=legend_title or "") if legend_title or nh > 1 else 0.0
    if horizontal:
        label_in = max(len(g) for g in groups) * 0.6 * tick_fontsize / 72
        size = (L.clamp(5.5 + label_in + legend_in, 7.0), L.clamp(len(groups) * (nh * 0.15 + 0.2) + 1.6, 4.0))
    else:
        size = (L.clamp(len(groups) * cluster_in + 1.4 + legend_in, 6.0), 4.6)
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.add_subplot()
    width = 0.8 / nh
    for j, hv in enumerate(hues):
        sub = values[values["_h"] == hv].drop_duplicates("_g").set_index("_g")
        present = [g for g in groups if g in sub.index]
        pos = [groups.index(g) + (j - (nh - 1) / 2) * width for g in present]
        r = sub.loc[present]
        err = error_bars(r["value"], r["lo"], r["hi"]) if "lo" in r else None
        kw: dict[str, Any] = {
            "color": L.color(j),
            "hatch": "//" if (j // len(_COLORS)) % 2 else None,
            "label": hv,
            "capsize": 2 if nh > 6 else 3,
            "error_kw": {"elinewidth": 1},
        }
        if horizontal:
            ax.barh(pos, r["value"].to_numpy(float), height=width * 0.95, xerr=err, **kw)
        else:
            ax.bar(pos, r["value"].to_numpy(float), width=width * 0.95, yerr=err, **kw)
    if horizontal:
        ax.set_ylim(len(groups) - 0.4, -0.6)  # first group on top
        ax.set_xlim(0, 1.05)
        ax.set_xlabel(value_label)
        ax.set_yticks(range(len(groups)), list(groups), fontsize=tick_fontsize)
    else:
        ax.set_xlim(-0.6, len(groups) - 0.4)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(value_label)
    L.title(fig, title)
    if note:
        L.footnote(fig, note)
    if legend_title or nh > 1:
        L.legend_outside(fig, ax, title=legend_title)
    if not horizontal:
        L.fit_xticklabels(fig, ax, list(groups), fontsize=tick_fontsize)
    return fig


def success_bars(
    summary: pd.DataFrame,
    group: str = "model",
    hue: str | Sequence[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Bars of ``rate`` per ``group`` and hue, with the :func:`~dvoc_bench.analysis.intervals.
    rate_interval` bounds (``rate_lo`` / ``rate_hi``) as error bars. ``summary`` is
    :func:`dvoc_bench.analysis.honest.summary` output; ``hue`` (default: every other grouping column of
    the summary, e.g. method and the swept knobs) gives one bar per distinct combination."""
    rule = str(summary["rule"].iloc[0]) if len(summary) else "hit"
    sim = _sim(summary)
    head = title or f"Success rate, rule {rule}, {RATE_INTERVAL} intervals"
    if summary.empty:
        return _empty(head, sim, "no trials")
    keys = summary_keys(summary)
    hues = (
        [hue] if isinstance(hue, str) else list(hue) if hue is not None else [k for k in keys if k != group]
    )
    v = pd.DataFrame(
        {
            "_g": summary[group].astype(str),
            "_h": _labels(summary, hues),
            "value": summary["rate"],
            "lo": summary["rate_lo"],
            "hi": summary["rate_hi"],
        }
    )
    return grouped_bars(
        v,
        list(dict.fromkeys(v["_g"])),
        list(dict.fromkeys(v["_h"])),
        f"success rate ({rule})",
        title=titled(head, sim),
        legend_title=" / ".join(hues) or None,
        note=f"{RULE_TEXT.get(rule, rule)}; bars: {RATE_INTERVAL} interval over valid trials",
    )


def _step_knobs(s: pd.DataFrame, split: Sequence[str] | None, by: str) -> list[str]:
    if split is not None:
        cols = [_STEP_KNOBS.get(k, k) for k in split]
        return [c for c in cols if c in s.columns and c != by]
    out = []
    for c in ("alpha_schedule", "overlay", "predict", "protocol"):
        if c in s.columns and c != by and int(s.groupby(by)[c].nunique(dropna=True).max()) > 1:
            out.append(c)
    return out


def distance_vs_iteration(
    steps: pd.DataFrame,
    by: str = "model",
    title: str | None = None,
    min_n: int = 3,
    split: Sequence[str] | None = None,
) -> Figure:
    """True distance of the DVOC draft vs iteration: median line and inter-quartile band per ``by`` (and
    per swept knob: ``split``, default every knob that varies within a ``by`` value), drawn at iterations
    that at least ``min_n`` trials reached (log scale; distances below 0.5 px drawn at 0.5)."""
    s = steps[(steps["kind"] == "verify") & steps["true_dist_px"].notna()]
    sim = _sim(s)
    head = title or "DVOC: true distance of the crosshair vs iteration (median, IQR band)"
    if s.empty:
        return _empty(head, sim, "no DVOC steps")
    keys = [by, *_step_knobs(s, split, by)]
    names, groups = [], []
    for name, g in s.groupby(keys, sort=True, dropna=False):
        names.append(name if isinstance(name, tuple) else (name,))
        groups.append(g)
    labels = [
        f"{label(dict(zip(keys, n, strict=True)), keys)} (n={g['trial_key'].nunique()})"
        for n, g in zip(names, groups, strict=True)
    ]
    styles = L.line_styles(names)
    # a run smaller than min_n trials per group still shows its lines (and the axis label says so)
    min_n = max(1, min(min_n, max(g["trial_key"].nunique() for g in groups)))
    rows = L.panel_rows(names)  # at most MAX_SERIES lines per panel
    w = L.clamp(6.5 + L.legend_width_in(labels, 7), 7.0)
    h = L.clamp(len(rows) * 3.2 + 0.8, 4.4, 24.0)
    fig = Figure(figsize=(w, h), layout="constrained")
    axes = fig.subplots(len(rows), 1, squeeze=False, sharex=True, sharey=True)[:, 0]
    drawn = 0
    for ax, idx in zip(axes, rows, strict=True):
        for i in idx:
            g, lab, (c, ls) = groups[i], labels[i], styles[i]
            q = g.groupby("index")["true_dist_px"].quantile([0.25, 0.5, 0.75]).unstack().clip(lower=0.5)
            n = g.groupby("index").size()
            q = q[n >= min_n]
            ax.plot(q.index, q[0.5], marker="o", ms=3, color=c, ls=ls, label=lab)
            ax.fill_between(q.index, q[0.25], q[0.75], color=c, alpha=0.15, linewidth=0)
            drawn += len(q)
        ax.axhline(30, ls="--", color="#888", lw=1)
        ax.annotate(
            "30 px", (0.005, 30), xycoords=("axes fraction", "data"), fontsize=7, color="#666", va="bottom"
        )
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("true distance (px)", fontsize=8)
        L.legend_outside(fig, ax, fontsize=7)
    axes[-1].set_xlabel(f"iteration (shown where >= {min_n} trials reached it)")
    if not drawn:
        axes[0].text(0.5, 0.5, f"no iteration reached by {min_n} trials", transform=axes[0].transAxes,
                     ha="center")  # fmt: skip
    L.title(fig, titled(head, sim))
    return fig


_IMAGES: dict[tuple[str, str], tuple[np.ndarray | None, str]] = {}


def run_scenes_dir(run_dir: str | Path | None) -> Path | None:
    """The scenes folder a run used (``paths.scenes`` of its saved Hydra config), ``None`` for the
    repository's own ``scenes/`` or when the run has no saved config."""
    if run_dir is None:
        return None
    hydra_dir = Path(str(run_dir)) / HYDRA
    configs = (
        sorted(hydra_dir.glob(f"**/{HYDRA_CONFIG}"), key=lambda p: p.stat().st_mtime)
        if hydra_dir.is_dir()
        else []
    )
    if not configs:
        return None
    try:
        import yaml

        scenes = ((yaml.safe_load(configs[-1].read_text(encoding="utf-8")) or {}).get("paths") or {}).get(
            "scenes"
        )
    except Exception:  # an unreadable config: draw with the repository's scenes
        return None
    return Path(scenes) if scenes else None


def scene_image(
    task: str, size: tuple[int, int] | None = None, scenes_dir: str | Path | None = None
) -> tuple[np.ndarray | None, str]:
    """The clean screenshot of ``task`` from our :class:`~dvoc_bench.scenes.SceneRegistry` over
    ``scenes_dir`` (default: the repository's ``scenes/``; ``None`` when the scene is not there), and a
    note saying where it came from. Rendered once per process."""
    key = (task, str(scenes_dir or ""))
    if key not in _IMAGES:
        try:
            from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

            snap = SceneRegistry(Path(scenes_dir) if scenes_dir else default_scenes_dir()).snapshot(task)
            _IMAGES[key] = (snap.image, "scene rendered by dvoc_bench.scenes")
        except Exception as e:  # unknown scene, no browser for a web page, ...: draw without the image
            _IMAGES[key] = (None, f"scene image not available ({type(e).__name__})")
    img, note = _IMAGES[key]
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
    if "image_w" not in t or pd.isna(t["image_w"].iloc[0]) or pd.isna(t["image_h"].iloc[0]):
        return _empty(head, sim, "image size not recorded (an imported row without image_w, image_h)")
    w, h = int(t["image_w"].iloc[0]), int(t["image_h"].iloc[0])
    theirs_web = bool((t["source"] == "upstream").all()) and str(t["scene_kind"].iloc[0]) == "web"
    img, note = (
        (None, "the authors' page is not ours: canvas only")
        if theirs_web
        else scene_image(task, (w, h), run_scenes_dir(t["run_dir"].iloc[0] if "run_dir" in t else None))
    )
    fig = Figure(figsize=(8, 8 * h / w + 1.0), layout="constrained")
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
        c = L.color(j)
        ss = st[(st["run_dir"] == tr["run_dir"]) & (st["trial_key"] == tr["trial_key"])].sort_values("index")
        xs = [*ss["draft_x"].tolist(), tr["final_x"]]
        ys = [*ss["draft_y"].tolist(), tr["final_y"]]
        ax.plot(xs, ys, "-o", ms=3, lw=1.2, color=c, alpha=0.9)
        ax.plot([tr["final_x"]], [tr["final_y"]], "x", ms=9, mew=2, color=c)
    L.title(fig, titled(head, sim))
    L.footnote(
        fig,
        f"{note}; target box {'inferred (dashed)' if r['target_inferred'] else 'solid'}; "
        f"x = final point; {len(t)} trials",
    )
    return fig


def _rect(x0: float, y0: float, x1: float, y1: float, dashed: bool = False):
    from matplotlib.patches import Rectangle

    return Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="#00e5ff", lw=2, ls="--" if dashed else "-")


def _task_order(tasks: Sequence[Any]) -> list[Any]:
    def key(s: Any) -> tuple[str, int, str]:
        s = str(s)
        return (s[:1], int(s[1:]) if s[1:].isdigit() else 0, s)

    return sorted(tasks, key=key)


def heatmap(
    trials: pd.DataFrame,
    rule: str = "hit",
    method: str = "dvoc",
    title: str | None = None,
    split: Sequence[str] | None = None,
) -> Figure:
    """Model x task success rate (valid trials, one rule), the cell text giving ``k/n`` (left out beyond
    30 tasks). One row per model and swept knob setting (``split``; default every knob the run varied)."""
    check_rule(rule)
    t = trials[(trials["method"] == method) & trials["valid"]]
    sim = _sim(t)
    head = title or f"{method}: success by model and task (rule {rule})"
    if t.empty:
        return _empty(head, sim, f"no valid {method} trials")
    keys = ["model", *_split(t, split, ("model", "method", "task"))]
    t = t.assign(_row=_labels(t, keys))
    g = t.groupby(["_row", "task"], sort=False)[rule].agg(["sum", "count"])
    rate = (g["sum"] / g["count"]).unstack("task")
    rows = list(dict.fromkeys(sorted(t["_row"])))
    tasks = _task_order(rate.columns)
    rate = rate.loc[rows, tasks]
    text = len(tasks) <= 30
    cell_w, cell_h = (0.55, 0.42) if text else (0.3, 0.32)
    label_w = max(len(r) for r in rows) * 0.6 * 8 / 72
    w = L.clamp(len(tasks) * cell_w + label_w + 1.8, 6.0)
    h = L.clamp(len(rows) * cell_h + 1.9, 3.2)
    fig = Figure(figsize=(w, h), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(rate.to_numpy(dtype=float), vmin=0, vmax=1, cmap="RdYlGn", aspect="auto")
    if text:
        for i, row in enumerate(rows):
            for j, task in enumerate(tasks):
                if (row, task) in g.index:
                    k, n = g.loc[(row, task)]
                    ax.text(j, i, f"{int(k)}/{int(n)}", ha="center", va="center", fontsize=7)
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xlabel("task")
    fig.colorbar(im, ax=ax, shrink=0.9, label="success rate", fraction=0.05 if len(tasks) > 3 else 0.15)
    L.title(fig, titled(head, sim))
    if not text:
        L.footnote(fig, f"{len(tasks)} tasks: cell counts left out (see the per-task table)")
    L.fit_xticklabels(fig, ax, [str(x) for x in tasks])
    return fig


ECDF_POINTS = 2000
"""Most steps drawn for one empirical CDF: past it the curve is drawn through its quantiles (the
vertical error at most 1/:data:`ECDF_POINTS`, a fraction of a pixel), not one vertex per trial."""


def ecdf_steps(d: np.ndarray, most: int = ECDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The steps of the empirical CDF of the sorted values ``d``: each distinct value with the share of
    values at or below it (exact); when that is more than ``most`` steps, the ``most`` values at the
    ranks ``ceil(k * n / most)``, k = 1..most, with their exact shares (the largest value always last)."""
    n = len(d)
    if n == 0:
        return d, d
    last = np.flatnonzero(np.append(d[1:] != d[:-1], True))  # the last rank of each distinct value
    if len(last) > most:
        want = np.ceil(np.arange(1, most + 1) * n / most).astype(np.int64) - 1
        last = last[np.searchsorted(last, want)]  # the step that holds each wanted rank
        last = np.unique(last)
    return d[last], (last + 1) / n


def distance_cdf(
    trials: pd.DataFrame,
    by: Sequence[str] = ("model", "method"),
    title: str | None = None,
    split: Sequence[str] | None = None,
) -> Figure:
    """Empirical CDF of the final distance (valid trials) per group (``by`` and every swept knob:
    ``split``), log x, with the 30 px line."""
    t = keep_rows(trials, trials["valid"] & trials["final_dist_px"].notna())
    sim = _sim(t)
    head = title or "Final distance to the target centre (CDF, valid trials)"
    if t.empty:
        return _empty(head, sim, "no valid trials")
    keys = [*by, *_split(t, split, by)]
    curves, names = [], []
    # each group a copy of the columns read, not of the whole frame
    for name, g in narrow(t, *keys, "final_dist_px").groupby(keys, sort=True, dropna=False):
        name = name if isinstance(name, tuple) else (name,)
        d = np.sort(g["final_dist_px"].to_numpy(dtype=float))
        curves.append((f"{label(dict(zip(keys, name, strict=True)), keys)} (n={len(d)})", d))
        names.append(name)
    labels = [c[0] for c in curves]
    styles = L.line_styles(names)
    rows = L.panel_rows(names)  # at most MAX_SERIES lines per panel
    h = L.clamp(len(rows) * 3.2 + 0.8, 4.4, 24.0)
    w = L.clamp(6.5 + L.legend_width_in(labels, 7), 7.0)
    fig = Figure(figsize=(w, h), layout="constrained")
    axes = fig.subplots(len(rows), 1, squeeze=False, sharex=True, sharey=True)[:, 0]
    for ax, idx in zip(axes, rows, strict=True):
        for i in idx:
            (lab, d), (c, ls) = curves[i], styles[i]
            x, y = ecdf_steps(d)
            ax.step(np.maximum(x, 0.1), y, where="post", color=c, ls=ls, label=lab)
        ax.axvline(30, ls="--", color="#888", lw=1)
        ax.set_xscale("log")
        ax.set_ylabel("share of trials", fontsize=8)
        ax.set_ylim(0, 1.02)
        L.legend_outside(fig, ax, fontsize=7)
    axes[-1].set_xlabel("final distance (px, log)")
    L.title(fig, titled(head, sim))
    return fig


def frame_audit_bars(audit: pd.DataFrame, rule: str = "hit_radius", title: str | None = None) -> Figure:
    """The frame audit as bars: per group, the ``rule`` rate of the same answers read as pixels, 0–1000
    and 0–1 (``audit`` from :func:`dvoc_bench.analysis.honest.frame_audit_points`)."""
    sim = _sim(audit)
    head = title or f"Absolute answers re-read in each coordinate frame (rule {rule})"
    if audit.empty:
        return _empty(head, sim, "no absolute answers recorded")
    keys = [c for c in audit.columns if c not in AUDIT_VALUES]
    v = pd.DataFrame(
        {"_g": _labels(audit, keys), "_h": "read as " + audit["reading"].astype(str), "value": audit[rule]}
    )
    return grouped_bars(
        v,
        list(dict.fromkeys(v["_g"])),
        list(dict.fromkeys(v["_h"])),
        f"{rule} rate",
        title=titled(head, sim),
        tick_fontsize=7,
    )


# ------------------------------------------------------------------------------------- equal cost

_CURVE_X = {
    "k": "call budget k (calls allowed per trial)",
    "calls": "calls spent per trial (mean)",
    "tokens": "tokens spent per trial (mean, input + output)",
    "cost_usd": "dollars spent per trial (mean)",
}


def _curve_keys(curve_df: pd.DataFrame) -> list[str]:
    from dvoc_bench.analysis.budget import _CURVE_VALUES

    return [c for c in curve_df.columns if c not in _CURVE_VALUES]


def budget_curves(curve_df: pd.DataFrame, x: str = "k", title: str | None = None) -> Figure:
    """Accuracy at a budget (:func:`dvoc_bench.analysis.budget.curve`): the rate per group against ``x``
    (``k``: the calls allowed; ``calls`` / ``tokens`` / ``cost_usd``: the mean spent per trial up to
    ``k``), with its interval as a band."""
    return headline(curve_df, panels=(x,), title=title)


def headline(curve_df: pd.DataFrame, panels: Sequence[str] | None = None, title: str | None = None) -> Figure:
    """Success against cost per sample: one panel per cost measure, calls always, tokens and dollars
    where a real model recorded them (a simulated model's tokens are placeholders and it costs nothing:
    its curves are drawn in calls only, and the panels say so). One line per group, one marker per call
    budget, the interval as a band."""
    from dvoc_bench.analysis.budget import INTERVAL

    sim = _sim(curve_df)
    rule = str(curve_df["rule"].iloc[0]) if len(curve_df) else "hit"
    head = title or f"Success against cost per trial — rule {rule}, {INTERVAL}"
    if curve_df.empty:
        return _empty(head, sim, "no valid trials")
    df = curve_df.assign(tokens=curve_df["tokens_in"] + curve_df["tokens_out"])
    real = df[~df["simulated"].astype(bool) & (df["calls"] > 0)]  # a model-free baseline costs nothing
    if panels is None:
        panels = ["calls"]
        if real["tokens"].notna().any():
            panels.append("tokens")
        if (real["cost_usd"].fillna(0) > 0).any():
            panels.append("cost_usd")
    keys = _curve_keys(df)
    groups = list(df.groupby(keys, sort=True, dropna=False))
    names = [n if isinstance(n, tuple) else (n,) for n, _ in groups]
    styles = L.line_styles(names)
    labels = [label(dict(zip(keys, n, strict=True)), keys) for n in names]
    rows = L.panel_rows(names)  # at most MAX_SERIES lines per panel: more rows of panels
    h = L.clamp(len(rows) * L.clamp(0.16 * L.MAX_SERIES + 2.0, 2.9), 3.8, 24.0)
    w = L.clamp(3.6 * len(panels) + 1.0 + L.legend_width_in(labels, 7) + 0.3, 7.0)
    fig = Figure(figsize=(w, h), layout="constrained")
    grid = fig.subplots(len(rows), len(panels), squeeze=False, sharex="col", sharey=True)
    from dvoc_bench.analysis.budget import BUDGETS

    for row, idx in zip(grid, rows, strict=True):
        for ax, xcol in zip(row, panels, strict=True):
            for n, i in enumerate(idx):
                (_, g), lab, (c, ls) = groups[i], labels[i], styles[i]
                if xcol in ("tokens", "cost_usd") and bool(g["simulated"].any()):
                    continue  # placeholders: the simulated rows are compared in calls
                g = g.sort_values("k")
                if g[xcol].isna().all():
                    continue
                ax.plot(g[xcol], g["rate"], color=c, ls=ls, marker="o", ms=3, label=lab)
                # the interval at the matched budgets, nudged apart so that the groups' bars stay visible
                b = g[g["k"].isin(BUDGETS)]
                nudge = (n - (len(idx) - 1) / 2) * (0.06 if xcol == "k" else 0.0)
                yerr = error_bars(b["rate"], b["lo"], b["hi"])
                ax.errorbar(b[xcol].to_numpy(dtype=float) + nudge, b["rate"], yerr=yerr, fmt="none",
                            ecolor=c, elinewidth=0.9, capsize=2, alpha=0.7)  # fmt: skip
            ax.set_xlabel(_CURVE_X[xcol], fontsize=8)
            ax.set_ylim(-0.02, 1.02)
            if xcol == "k":
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            else:  # tokens and dollars: long numbers in a narrow panel, few ticks
                ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
                ax.tick_params(axis="x", labelsize=7)
        row[0].set_ylabel(f"success (rule {rule})", fontsize=8)
        handles, labs = row[0].get_legend_handles_labels()  # the calls panel holds every group of the row
        if handles:
            row[-1].legend(handles, labs, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                           fontsize=7, frameon=False, handlelength=L.HANDLE_LENGTH)  # fmt: skip
    L.title(fig, titled(head, sim))
    notes = ["a marker per call budget k = 1, 2, ...: the iterate each trial would act on "
             "after k calls; bars: the interval at k = 1, 2, 3, 5, 8, 15"]  # fmt: skip
    if bool(df["simulated"].astype(bool).any()):
        notes.append(
            "simulated models: tokens are placeholders and they cost nothing, so they are drawn in calls only"
        )
    L.footnote(fig, "; ".join(notes))
    return fig
