"""The headline finding, restated from the authors' records: every figure with its rule, slice and n.

One function builds the table the README, docs/paper.md and the report's coordinate-frame audit show
(:func:`headline_block`), from the authors' per-trial tree (every recorded one-shot answer: the aggregate
files keep only the last answer of a successful trial) and their ``predict_ablation.json`` /
``alpha_ablation.json``:

- :func:`point_table`: every recorded point answer (one-shot ``click_at``; DVOC absolute-mode answers)
  read as pixels (as the authors' harness did) and as 0–1000 units (``x * (W - 1) / 1000``), per model and
  slice: the first one-shot call (its prompt carried no task), the retries (they did) and all answers;
  counts under three rules: inside the target box, the paper's radius ``d < max(w/2, h/2, 30)`` and
  ``d < 30``; the median error of the 0–1000 reading. A reply without a tool call was recorded as (0, 0)
  and counts as an answer that misses under every reading.
- :func:`offset_table`: DVOC relative-mode offsets (non-zero reports, crosshair at least
  :data:`OFFSET_MIN_PX` from the target centre) by the reading that puts the implied target nearest the
  true one: pixels (``draft + r``), 0–1000 units (``draft + r * (W - 1) / 1000``) or the mixed reading
  (target in 0–1000 units minus the crosshair in pixels: ``(draft + r) * (W - 1) / 1000``).
- :func:`facts_lines`: the per-axis gains of the offsets on 800×600 (:func:`~dvoc_bench.analysis.honest.
  frame_audit_offsets`) and the α ablation's counts, the only α ablation in the records (Gemini 3.1 FL).

Web target boxes are inferred (:mod:`~dvoc_bench.analysis.upstream`): their box and radius counts are
approximate, which the table says.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dvoc_bench.analysis import honest
from dvoc_bench.analysis.schema import Runs
from dvoc_bench.analysis.upstream import MAIN_MODELS, discover_upstream, load_upstream

OFFSET_MIN_PX = 30.0
"""An offset is classified only when the crosshair is at least this far from the target centre (closer,
the readings differ by a few pixels and the nearest one is noise)."""

LABELS = {
    "gemini-3.1-flash-lite": "Gemini 3.1 FL",
    "gemini-2.5-flash-lite": "Gemini 2.5 FL",
    "gemma-4-26b": "Gemma 4 26B",
    "gemma-4-31b": "Gemma 4 31B",
}
SLICES = ("first call (no task)", "retries (task)", "all answers")
RULE_COLS = ("box", "radius", "eps")
"""Count columns per reading: ``{pixel,norm}_{box,radius,eps}``."""
READINGS = {"pixel": "pixel", "norm1000": "norm"}

POINT_COLUMNS = [
    "model",
    "answers",
    "slice",
    "n",
    *(f"{r}_{c}" for r in READINGS.values() for c in RULE_COLS),
    "median_err_norm_px",
]
OFFSET_COLUMNS = ["model", "n", "pixel", "norm1000", "mixed"]


def _order(df: pd.DataFrame) -> pd.DataFrame:
    rank = {m: i for i, m in enumerate(MAIN_MODELS)}
    srank = {s: i for i, s in enumerate(SLICES)}
    keys = df.assign(_m=df["model"].map(rank), _s=df["slice"].map(srank), _a=df["answers"] != "one-shot")
    return keys.sort_values(["_a", "_m", "_s"]).drop(columns=["_m", "_s", "_a"]).reset_index(drop=True)


def _audit_rows(steps: pd.DataFrame, answers: str, by: tuple[str, ...], slice_of: Mapping) -> list[dict]:
    """Rows of :func:`point_table` from the frame audit of ``steps`` grouped ``by`` (model [, has_task])."""
    a = honest.frame_audit_points(steps, by=by)
    rows = []
    for key, g in a.groupby(list(by), sort=False):
        key = key if isinstance(key, tuple) else (key,)
        model = key[0]
        sl = slice_of[key[1]] if len(key) > 1 else "all answers"
        g = g.set_index("reading")
        n = int(g.loc["pixel", "n"])
        row: dict = {"model": model, "answers": answers, "slice": sl, "n": n}
        for reading, tag in READINGS.items():
            for rule, col in zip(RULE_COLS, ("hit", "hit_radius", "within_eps"), strict=True):
                row[f"{tag}_{rule}"] = int(round(float(g.loc[reading, col]) * n))
        row["median_err_norm_px"] = float(g.loc["norm1000", "median_err_px"])
        rows.append(row)
    return rows


def point_table(main: Runs, predict: Runs | None = None) -> pd.DataFrame:
    """Counts of on-target point answers per model and slice, read as pixels and as 0–1000 units
    (:data:`POINT_COLUMNS`). ``main``: the per-trial tree's main benchmark; ``predict``: the relative vs
    absolute ablation (its absolute-mode answers become rows of their own)."""
    if not all(Path(src).is_dir() for src in main.sources):  # an aggregate keeps a success's last answer
        raise ValueError(
            f"{main.sources}: the one-shot answers need the per-trial tree, not an aggregate file"
        )
    s = main.steps
    clicks = s[(s["kind"] == "click") & s["model"].isin(list(MAIN_MODELS)) & s["raw_x"].notna()]
    slice_of = {False: SLICES[0], True: SLICES[1]}
    rows = _audit_rows(clicks, "one-shot", ("model", "has_task"), slice_of)
    rows += _audit_rows(clicks, "one-shot", ("model",), slice_of)
    if predict is not None:
        ps = predict.steps
        ab = ps[(ps["predict"] == "absolute") & ps["raw_x"].notna()]
        rows += _audit_rows(ab, "DVOC absolute mode", ("model",), slice_of)
    return _order(pd.DataFrame(rows, columns=POINT_COLUMNS))


def offset_readings(steps: pd.DataFrame) -> pd.DataFrame:
    """Per DVOC relative-mode step with a non-zero report and the crosshair at least
    :data:`OFFSET_MIN_PX` from the target centre: the distance from the true target of the target each
    reading implies (``pixel``, ``norm1000``, ``mixed``) and the ``nearest`` of them."""
    s = steps[(steps["kind"] == "verify") & steps["raw_dx"].notna() & steps["model"].isin(list(MAIN_MODELS))]
    p = s[["draft_x", "draft_y"]].to_numpy(float)
    r = s[["raw_dx", "raw_dy"]].to_numpy(float)
    t = s[["target_cx", "target_cy"]].to_numpy(float)
    f = np.c_[(s["image_w"].to_numpy(float) - 1) / 1000, (s["image_h"].to_numpy(float) - 1) / 1000]
    keep = (np.abs(r).sum(axis=1) > 0) & (np.hypot(*(t - p).T) >= OFFSET_MIN_PX)
    implied = {"pixel": p + r, "norm1000": p + r * f, "mixed": (p + r) * f}
    out = pd.DataFrame({k: np.hypot(*(v - t).T) for k, v in implied.items()}, index=s.index)
    out["nearest"] = out[list(implied)].idxmin(axis=1)
    out["model"] = s["model"].astype(str)
    return out[keep]


def offset_table(main: Runs) -> pd.DataFrame:
    """Per model: classified DVOC offsets (``n``) and how many each reading fits best
    (:data:`OFFSET_COLUMNS`)."""
    o = offset_readings(main.steps)
    rows = []
    for model in MAIN_MODELS:
        g = o[o["model"] == model]
        if len(g):
            c = g["nearest"].value_counts()
            rows.append({"model": model, "n": len(g), **{k: int(c.get(k, 0)) for k in OFFSET_COLUMNS[2:]}})
    return pd.DataFrame(rows, columns=OFFSET_COLUMNS)


def gains_800x600(main: Runs) -> pd.DataFrame:
    """Per model: the least-squares gain through the origin of the reported offsets on the true ones per
    axis on 800×600 (``gain0_x``, ``gain0_y``, ``n``) and what 0–1000 units predict (1.25, 1.67)."""
    s = main.steps
    off = honest.frame_audit_offsets(s[(s["kind"] == "verify") & s["model"].isin(list(MAIN_MODELS))])
    off = off[(off["image_w"] == 800) & (off["image_h"] == 600)]
    off = off.assign(_m=off["model"].map({m: i for i, m in enumerate(MAIN_MODELS)})).sort_values("_m")
    return off[["model", "n", "gain0_x", "gain0_y"]].reset_index(drop=True)


def alpha_counts(alpha: Runs) -> pd.DataFrame:
    """The α ablation per schedule: model(s), valid trials and hits under the paper's radius rule."""
    t = alpha.trials[alpha.trials["valid"].astype(bool) & (alpha.trials["method"] == "dvoc")]
    rows = []
    for arm in ("decay", "constant", "undamped"):
        g = t[t["alpha"] == arm]
        if len(g):
            models = ", ".join(sorted(LABELS.get(m, m) for m in set(g["model"].astype(str))))
            rows.append({"alpha": arm, "models": models, "n": len(g), "radius": int(g["hit_radius"].sum())})
    return pd.DataFrame(rows, columns=["alpha", "models", "n", "radius"])


# --------------------------------------------------------------------------------------------- markdown


def _pct(k: int, n: int) -> str:
    return "-" if n == 0 else f"{100 * k / n:.0f} %"


def point_markdown(points: pd.DataFrame) -> str:
    """The point table as the README prints it (percentages of ``n``; counts in the function's frame)."""
    lines = [
        "| model | answers: slice | n | read as pixels: box / radius | read as 0–1000: box / radius / "
        "d < 30 | median error, 0–1000 |",
        "|---|---|---|---|---|---|",
    ]
    for r in points.itertuples(index=False):
        n = int(r.n)
        pix = " / ".join(_pct(getattr(r, f"pixel_{c}"), n) for c in ("box", "radius"))
        nrm = " / ".join(_pct(getattr(r, f"norm_{c}"), n) for c in RULE_COLS)
        lines.append(
            f"| {LABELS.get(r.model, r.model)} | {r.answers}: {r.slice} | {n} | {pix} | {nrm} "
            f"| {r.median_err_norm_px:.1f} px |"
        )
    return "\n".join(lines)


def offset_markdown(offsets: pd.DataFrame) -> str:
    lines = [
        f"| model | DVOC offsets classified (non-zero, crosshair ≥ {OFFSET_MIN_PX:.0f} px off) | nearest "
        "reading: pixels / 0–1000 / mixed |",
        "|---|---|---|",
    ]
    for r in offsets.itertuples(index=False):
        n = int(r.n)
        lines.append(
            f"| {LABELS.get(r.model, r.model)} | {n} | "
            f"{_pct(r.pixel, n)} / {_pct(r.norm1000, n)} / {_pct(r.mixed, n)} |"
        )
    return "\n".join(lines)


PAPER_THREE = ("gemini-3.1-flash-lite", "gemma-4-26b", "gemma-4-31b")
"""The models of the paper's one-shot table (Table 4.4): the sentences quote ranges over these three
(Gemini 2.5 FL has 20 one-shot answers; its rows stay in the table)."""


def _range(values: list[float]) -> str:
    lo, hi = (f"{100 * v:.0f}" for v in (min(values), max(values)))
    return f"{lo} %" if lo == hi else f"{lo}–{hi} %"


def finding_lines(points: pd.DataFrame, offsets: pd.DataFrame) -> str:
    """The headline as sentences, every figure with its slice, rule, n and models (from :func:`point_table`
    and :func:`offset_table`)."""
    one = points[points["answers"] == "one-shot"].set_index(["slice", "model"])

    def cell(sl: str) -> pd.DataFrame:
        return one.loc[sl].loc[list(PAPER_THREE)]

    def rate(sl: str, col: str) -> str:
        c = cell(sl)
        return _range(list(c[col] / c["n"]))

    def ns(sl: str) -> str:
        return " / ".join(str(int(v)) for v in cell(sl)["n"])

    r, a, f = SLICES[1], SLICES[2], SLICES[0]
    med = " / ".join(f"{v:.1f}" for v in cell(r)["median_err_norm_px"])
    who = "Gemini 3.1 FL / Gemma 4 26B / Gemma 4 31B"
    lines = [
        f"- **Retries** (the prompt carried the task), read as 0–1000: {rate(r, 'norm_radius')} within the "
        f"paper's radius, {rate(r, 'norm_box')} inside the box (n = {ns(r)}, {who}; median error {med} px); "
        f"read as pixels: {rate(r, 'pixel_radius')} within the radius.",
        f"- **All answers**, read as 0–1000: {rate(a, 'norm_radius')} within the radius, "
        f"{rate(a, 'norm_box')} inside the box (n = {ns(a)}); read as pixels: {rate(a, 'pixel_radius')} "
        "within the radius.",
        f"- **First call** (the prompt carried no task), read as 0–1000: {rate(f, 'norm_radius')} within the "
        f"radius, {rate(f, 'norm_box')} inside the box (n = {ns(f)}): a second cause, beside the frame.",
    ]
    ab = points[points["answers"] != "one-shot"]
    for row in ab.itertuples(index=False):
        lines.append(
            f"- **{row.answers}** ({LABELS.get(row.model, row.model)}, all answers, n = {int(row.n)}): "
            f"read as 0–1000, {int(row.norm_box)} of {int(row.n)} inside the box; read as pixels, "
            f"{int(row.pixel_radius)} of {int(row.n)} within the radius."
        )
    off = offsets.set_index("model")
    shares = ", ".join(
        f"{LABELS[m]} {_pct(int(off.loc[m, 'pixel']), int(off.loc[m, 'n']))} of {int(off.loc[m, 'n'])}"
        for m in PAPER_THREE
        if m in off.index
    )
    lines.append(f"- **DVOC offsets** nearest the pixel reading: {shares}.")
    return "\n".join(lines)


def facts_lines(gains: pd.DataFrame, alpha: pd.DataFrame | None) -> str:
    """The gains and the α ablation as sentences (from :func:`gains_800x600` and :func:`alpha_counts`)."""
    g = "; ".join(
        f"{LABELS.get(r.model, r.model)} {r.gain0_x:.2f} / {r.gain0_y:.2f} (n = {int(r.n)})"
        for r in gains.itertuples(index=False)
    )
    out = [
        f"Per-axis gain of the DVOC offsets on 800×600 (x / y; least squares through the origin; 0–1000 "
        f"units predict 1.25 / 1.67, pixels 1 / 1): {g}."
    ]
    if alpha is not None and len(alpha):
        arms = ", ".join(f"{r.alpha} {int(r.radius)}/{int(r.n)}" for r in alpha.itertuples(index=False))
        who = ", ".join(sorted(set(alpha["models"])))
        out.append(f"The α ablation (the records' only one; {who}; paper radius, valid trials): {arms}.")
    return "\n\n".join(out)


def headline_block(upstream: Path | str) -> str:
    """The headline tables and lines from the authors' records under ``upstream`` (any depth)."""
    roles = discover_upstream(upstream)
    if "tree" not in roles:
        raise FileNotFoundError(f"{upstream}: the headline needs the authors' per-trial tree")
    main = load_upstream(roles["tree"])
    predict = load_upstream(roles["predict"]) if "predict" in roles else None
    alpha = alpha_counts(load_upstream(roles["alpha"])) if "alpha" in roles else None
    return headline_markdown(main, predict, alpha)


def headline_markdown(main: Runs, predict: Runs | None, alpha: pd.DataFrame | None) -> str:
    points, offsets = point_table(main, predict), offset_table(main)
    return "\n\n".join(
        [
            "Point answers (authors' records; web boxes inferred; box = inside the target box, radius = "
            "d < max(w/2, h/2, 30), the paper's rule; 0–1000 read as x·(W−1)/1000; a reply without a tool "
            "call counts as a miss):",
            point_markdown(points),
            finding_lines(points, offsets),
            offset_markdown(offsets),
            facts_lines(gains_800x600(main), alpha),
        ]
    )
