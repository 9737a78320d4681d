"""The fit of a simulator profile to a model's step-level records (trial outcomes are never read).

- offsets: one EM over a mixture whose components are exactly the simulator's generative paths
  (:func:`fit_offsets`): the native-frame mixture (pixel / norm1000 / mixed = target in 0-1000 units minus
  the crosshair in pixels), a gain per axis, the inlier noise scale and family (Laplace or Student-t, by
  likelihood), the distance-proportional jitter (``noise.rel``), the outlier rate and size, the shrink
  below 100 px and the reversal rate at 30-100 px; per canvas (800x600, 1280x720) and pooled;
- confidence: categorical per bucket of the reported magnitude (:func:`fit_confidence`);
- point answers (one-shot ``click_at``): frame, noise, outliers, confidence, and how often a prompt without
  the task still lands on the target (:func:`fit_oneshot`);
- consistency (:func:`fit_consistency`), the share of replies without a tool call and the latency per call
  (:func:`fit_latency`);
- :func:`fit_model` gathers all of it into a :class:`ModelFit`.

The near-target rates fitted here are plain shares; :func:`~dvoc_bench.calibration.replay.refine_discrete`
corrects them by replaying the simulator.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.calibration.extract import (
    CALIBRATED_MODELS,
    CalibrationData,
    axis_drop_axis_reach,
    axis_drop_reach,
    click_table,
    discrete_shares,
    finite_or_zero,
    model_repeat_pairs,
    no_tool_share,
    replay_truths,
    verify_table,
    zeros_on_box,
)

MIN_OFFSET_STEPS = 100
"""Fewer valid DVOC steps than this and a model is not fitted (Gemini 2.5 FL has 22)."""
FRAMES = ("pixel", "norm1000", "mixed")
"""Native frames the offset fit separates (the simulator's ``norm1`` never occurs in the records)."""
FRAME_VOTE_PX = 30.0
"""A one-shot answer votes for a frame only when it lies this close to the target in that reading."""
CONF_EDGES = (0.5, 30.0, 100.0, 300.0)
"""Upper bounds (px) of the confidence buckets by reported magnitude; the first holds ``(0, 0)``."""
NOISE_FAMILIES = ("laplace", "student_t")
T_DFS = (1.5, 2.0, 3.0, 5.0, 10.0)
"""Student-t degrees of freedom tried."""
MAX_OUTLIER_P = 0.15
"""Cap of the wide component's share. Without it the EM uses the wide component as a second noise scale
(45 % of Gemini's reports), which in the simulator becomes target displacements in random directions
even next to the target, where Gemini's errors stay small and rarely reverse (4 % at 30-100 px); capped,
the spread goes to the distance-proportional jitter and the heavier-tailed noise instead."""


BOX_RULE_SHARE = 0.9
"""A model's ``(0, 0)`` reports follow the box (``near.zero_rule: box``) when at least this share of them
came with the crosshair on the target box or at most ``BOX_NEAR_PX`` from it ..."""
BOX_RULE_MIN_ZEROS = 20
"""... and there are at least this many of them (Gemma 4 26B has 7: too few to tell, it keeps the distance
rule)."""


IN_BOX_SPLIT = {
    "p_zero_in_box_below_15": "zero_in_box_below_15",
    "p_zero_in_box_below_30": "zero_in_box_15_30",
    "p_zero_in_box": "zero_in_box_over_30",
}
"""``zero_rule: box``: the in-box rates by the crosshair's distance to the box centre and the recorded shares
they start from (Gemini 3.1 FL: 15 of 17 within 15 px, 48 of 82 at 15-30, 43 of 114 further)."""


def zero_rule(vt: pd.DataFrame) -> str:
    """``box`` or ``distance``: what decides the model's ``(0, 0)`` reports in the records
    (:data:`BOX_RULE_SHARE`, :data:`BOX_RULE_MIN_ZEROS`; Gemini 3.1 FL: 112 of 118 on the box)."""
    on, n = zeros_on_box(vt)
    return "box" if n >= BOX_RULE_MIN_ZEROS and on >= BOX_RULE_SHARE * n else "distance"


# ------------------------------------------------------------------------------------------- offset EM


@dataclass(frozen=True)
class OffsetFit:
    """Maximum-likelihood fit of the simulator's offset mechanism to non-zero reports (one canvas or
    pooled)."""

    n: int
    """Reports used (non-zero, tool call present, no dropped axis)."""
    frames: dict[str, float]
    """Native-frame weights (pixel, norm1000, mixed)."""
    gain: tuple[float, float]
    """Gain per axis in the native frame."""
    shrink_below_100: float
    """Gain factor below ``shrink_below_px``."""
    shrink_below_px: float
    """Where the shrink starts (px; the edge of :data:`SHRINK_EDGES` of largest likelihood)."""
    p_reverse_30_100: float
    """Reversal probability at 30-100 px."""
    noise_dist: str
    """``laplace`` or ``student_t``."""
    noise_scale_px: float
    """Inlier scale (Laplace b / Student-t scale), px of the perceived target."""
    noise_df: float
    """Student-t degrees of freedom (3.0 for Laplace, unused)."""
    noise_rel: float
    """Noise proportional to the distance measured (the simulator's ``noise.rel``)."""
    outlier_p: float
    """Share of reports from the wide component."""
    outlier_scale_px: float
    """Laplace scale of the wide component (px)."""
    outlier_min_px: float
    """10th percentile of the outliers' displacement (px), for the simulator's uniform magnitude."""
    outlier_max_px: float
    """90th percentile of the outliers' displacement (px)."""
    loglik: float
    """Maximised log-likelihood."""
    loglik_alt: float
    """Log-likelihood of the other noise family (its best df for Student-t)."""
    frame_share: dict[str, float]
    """Share of reports whose most probable frame is each frame (hard assignment)."""


def _offset_arrays(vt: pd.DataFrame) -> dict[str, np.ndarray]:
    return {
        "r": vt[["rx", "ry"]].to_numpy(float),
        "t": vt[["tx", "ty"]].to_numpy(float),
        "P": vt[["px", "py"]].to_numpy(float),
        "T": vt[["Tx", "Ty"]].to_numpy(float),
        "g": vt[["gx", "gy"]].to_numpy(float),
        "d": vt["d"].to_numpy(float),
    }


def _logpdf(e: np.ndarray, scale: float | np.ndarray, family: str, df: float) -> np.ndarray:
    """Log-density of a Laplace (scale b) or Student-t (scale, df); ``scale`` may vary per step."""
    if family == "laplace":
        return -np.log(2 * scale) - np.abs(e) / scale
    c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi) - np.log(scale)
    return c - (df + 1) / 2 * np.log1p((e / scale) ** 2 / df)


def _residuals(
    a: Mapping[str, np.ndarray], gain: Sequence[float], shrink: float, edge: float = 100.0
) -> tuple[np.ndarray, np.ndarray]:
    """Perceived-target error ``e`` (px) per (step, frame, reversal, axis) and the log-Jacobian per (step,
    frame, reversal): the simulator's offset path inverted for each component."""
    r, t, p, tt, g, d = a["r"], a["t"], a["P"], a["T"], a["g"], a["d"]
    gain_arr = np.asarray(gain, dtype=float)
    k = np.where(d < edge, shrink, 1.0)[:, None]
    n = len(r)
    e = np.empty((n, 3, 2, 2))
    jac = np.empty((n, 3, 2))
    native = r / gain_arr
    for fi, frame in enumerate(FRAMES):
        for rev, sign in ((0, 1.0), (1, -1.0)):
            if frame == "pixel":
                e[:, fi, rev] = native / (k * sign) - t
                jac[:, fi, rev] = np.log(gain_arr * k).sum(1)
            elif frame == "norm1000":
                e[:, fi, rev] = native / g / (k * sign) - t
                jac[:, fi, rev] = np.log(gain_arr * g * k).sum(1)
            else:  # mixed: b = g*T^ - P in "pixels", so T^ = (b + P) / g
                e[:, fi, rev] = (native / (k * sign) + p) / g - tt
                jac[:, fi, rev] = np.log(gain_arr * g * k).sum(1)
    return e, jac


def _component_logdens(
    a: Mapping[str, np.ndarray], prm: Mapping[str, Any], family: str, df: float
) -> np.ndarray:
    """Log-density per (step, frame, reversal, outlier). The inlier scale of an axis is
    ``sqrt(scale^2 + (rel * |t_axis|)^2)``: the simulator's absolute noise plus its multiplicative gain
    jitter (to first order a noise proportional to that axis's offset; a Laplace with the summed variance)."""
    e, jac = _residuals(a, prm["gain"], prm["shrink"], prm.get("shrink_px", 100.0))
    sc = np.sqrt(prm["scale"] ** 2 + (prm["rel"] * np.abs(a["t"])) ** 2)[:, None, None, :]
    inl = _logpdf(e, sc, family, df).sum(-1) - jac
    out = _logpdf(e, prm["out_scale"], "laplace", 0.0).sum(-1) - jac
    return np.stack([inl, out], axis=-1)


def _argmax_1d(
    f: Any, lo: float, hi: float, *, log: bool = False, n_grid: int = 13, n_refine: int = 14
) -> float:
    """Maximiser of ``f`` on ``[lo, hi]``: a coarse grid, then golden-section search around the best point
    (on a log scale when ``log``)."""
    to = (lambda v: math.log(v)) if log else (lambda v: v)
    back = (lambda v: math.exp(v)) if log else (lambda v: v)
    a, b = to(lo), to(hi)
    grid = np.linspace(a, b, n_grid)
    vals = [f(back(v)) for v in grid]
    i = int(np.argmax(vals))
    step = grid[1] - grid[0]
    a, b = max(grid[i] - step, to(lo)), min(grid[i] + step, to(hi))
    phi = (math.sqrt(5) - 1) / 2
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = f(back(c)), f(back(d))
    for _ in range(n_refine):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = f(back(c))
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = f(back(d))
    best = (c, fc) if fc >= fd else (d, fd)
    return float(back(best[0])) if best[1] >= vals[i] else float(back(grid[i]))


_START = {
    "frames": {"pixel": 0.2, "norm1000": 0.6, "mixed": 0.2},
    "gain": (1.0, 1.0),
    "shrink": 1.0,
    "rho": 0.05,
    "q": 0.1,
    "scale": 5.0,
    "rel": 0.0,
    "out_scale": 80.0,
}


SHRINK_EDGES = (45.0, 60.0, 100.0)
"""Candidate distances (px) below which the model under-reports (``near.shrink_below_px``): the EM runs
from every start at each edge; 100 px (the first profiles' fixed edge, last here) is kept unless another
edge raises the log-likelihood by more than :data:`SHRINK_EDGE_GAIN`."""
SHRINK_EDGE_GAIN = 1.0
"""The edge is a fitted (discrete) parameter too: the price of moving it off 100 px, in log-likelihood (as
AIC charges one parameter). A flat likelihood (no shrink to speak of) keeps 100."""


_STARTS = (
    _START,
    {**_START, "rel": 0.2, "q": 0.05, "scale": 3.0},
    {**_START, "rel": 0.3, "q": 0.02, "scale": 2.0, "shrink": 0.6},
)
"""EM starting points (the likelihood has local optima: a wide outlier component competes with the noise
that grows with distance); the best maximum wins."""


def _em(
    a: Mapping[str, np.ndarray],
    family: str,
    df: float,
    iters: int = 30,
    tol: float = 1e-5,
    start: Mapping[str, Any] | None = None,
    relative: bool = True,
) -> tuple[float, dict[str, Any], np.ndarray]:
    """EM over frame x reversal x outlier; gains, shrink and scales by 1-D search in the M-step.
    ``relative=False`` keeps the distance-proportional noise at 0."""
    prm: dict[str, Any] = json.loads(json.dumps(_START if start is None else start))
    prm["gain"] = [float(v) for v in prm["gain"]]
    if not relative:
        prm["rel"] = 0.0
    n = len(a["r"])
    mid = (a["d"] >= 30.0) & (a["d"] < 100.0)
    w = np.array([max(prm["frames"][f], 1e-3) for f in FRAMES])
    w /= w.sum()
    last = -math.inf
    resp = np.zeros((n, 3, 2, 2))
    ll = -math.inf
    for _ in range(iters):
        rho, q = prm["rho"], prm["q"]
        lrev = np.where(mid[:, None], np.log([1 - rho, rho])[None, :], np.array([[0.0, -np.inf]]))
        lj = (
            _component_logdens(a, prm, family, df)
            + np.log(w)[None, :, None, None]
            + lrev[:, None, :, None]
            + np.log([1 - q, q])[None, None, None, :]
        )
        m = lj.max(axis=(1, 2, 3), keepdims=True)
        ll = float((m.reshape(n) + np.log(np.exp(lj - m).sum(axis=(1, 2, 3)))).sum())
        if abs(ll - last) < tol * max(1.0, abs(ll)):
            break
        last = ll
        resp = np.exp(lj - m)
        resp /= resp.sum(axis=(1, 2, 3), keepdims=True)
        w = np.clip(resp.sum(axis=(0, 2, 3)) / n, 1e-4, None)
        w /= w.sum()
        if mid.any():
            prm["rho"] = float(np.clip(resp[mid][:, :, 1, :].sum() / mid.sum(), 1e-4, 0.5))
        prm["q"] = float(np.clip(resp[..., 1].sum() / n, 1e-4, MAX_OUTLIER_P))

        def expected(key: str, value: Any, resp: np.ndarray = resp) -> float:
            return float((resp * _component_logdens(a, {**prm, key: value}, family, df)).sum())

        prm["gain"][0] = _argmax_1d(lambda v: expected("gain", [v, prm["gain"][1]]), 0.5, 2.0)
        prm["gain"][1] = _argmax_1d(lambda v: expected("gain", [prm["gain"][0], v]), 0.5, 2.0)
        prm["shrink"] = _argmax_1d(lambda v: expected("shrink", v), 0.3, 1.5)
        prm["scale"] = _argmax_1d(lambda v: expected("scale", v), 0.3, 80.0, log=True)
        if relative:
            prm["rel"] = max(0.0, _argmax_1d(lambda v: expected("rel", v), -0.02, 0.6))
        lo_out = max(2 * prm["scale"], 5.0)
        prm["out_scale"] = _argmax_1d(lambda v: expected("out_scale", v), lo_out, 800.0, log=True)
    prm["frames"] = dict(zip(FRAMES, (float(v) for v in w), strict=True))
    prm["gain"] = (prm["gain"][0], prm["gain"][1])
    return ll, prm, resp


def fit_offsets(vt: pd.DataFrame, family: str = "auto", iters: int = 40) -> OffsetFit:
    """Fit frames, gain, noise, outliers, shrink and reversal to the non-zero reports of ``vt``.

    ``family``: ``laplace``, ``student_t`` or ``auto`` (the larger likelihood; Student-t pays one parameter
    for its df, AIC). Uses reports with a tool call, not ``(0, 0)``, and no axis dropped.
    """
    use = vt[~vt["no_tool"] & ~vt["zero"] & ~vt["drop_x"] & ~vt["drop_y"]]
    if len(use) < 5:
        raise ValueError(f"fit_offsets: {len(use)} usable reports, need at least 5")
    a = _offset_arrays(use)
    fits: dict[str, tuple[float, dict[str, Any], np.ndarray, float]] = {}
    by_edge = {
        edge: max(
            (_em(a, "laplace", 0.0, iters, start={**st, "shrink_px": edge}) for st in _STARTS),
            key=lambda f: f[0],
        )
        for edge in SHRINK_EDGES
    }
    edge_best = max(SHRINK_EDGES, key=lambda e: by_edge[e][0])
    keep = (
        by_edge[edge_best][0] - by_edge[SHRINK_EDGES[-1]][0] <= SHRINK_EDGE_GAIN
    )  # not clearly better: 100 px
    ll, prm, resp = by_edge[SHRINK_EDGES[-1] if keep else edge_best]
    if family in ("laplace", "auto"):
        fits["laplace"] = (ll, prm, resp, 0.0)
    if family in ("student_t", "auto"):
        start = prm
        best: tuple[float, dict[str, Any], np.ndarray, float] | None = None
        for df in T_DFS:
            ll, prm, resp = _em(a, "student_t", df, min(iters, 15), start=start)
            if best is None or ll > best[0]:
                best = (ll, prm, resp, df)
        assert best is not None
        fits["student_t"] = best
    if family == "auto":
        chosen = "student_t" if fits["student_t"][0] - 1.0 > fits["laplace"][0] else "laplace"
    else:
        chosen = family
    ll, prm, resp, df = fits[chosen]
    other = [v[0] for k, v in fits.items() if k != chosen]
    e, _ = _residuals(a, prm["gain"], prm["shrink"], prm.get("shrink_px", 100.0))
    out_w = resp[..., 1]  # (n, frame, rev)
    mags = np.hypot(e[..., 0], e[..., 1])
    lo, hi = _weighted_quantiles(mags.ravel(), out_w.ravel(), (0.1, 0.9))
    hard = resp.sum(axis=(2, 3)).argmax(axis=1)
    share = {f: float((hard == i).mean()) for i, f in enumerate(FRAMES)}
    return OffsetFit(
        n=len(use),
        frames=prm["frames"],
        gain=prm["gain"],
        shrink_below_100=prm["shrink"],
        shrink_below_px=float(prm.get("shrink_px", 100.0)),
        p_reverse_30_100=prm["rho"],
        noise_dist=chosen,
        noise_scale_px=prm["scale"],
        noise_df=df if chosen == "student_t" else 3.0,
        noise_rel=float(prm["rel"]),
        outlier_p=prm["q"],
        outlier_scale_px=prm["out_scale"],
        outlier_min_px=lo,
        outlier_max_px=max(hi, lo),
        loglik=ll,
        loglik_alt=other[0] if other else math.nan,
        frame_share=share,
    )


def _weighted_quantiles(x: np.ndarray, w: np.ndarray, qs: Sequence[float]) -> tuple[float, ...]:
    ok = np.isfinite(x) & (w > 0)
    x, w = x[ok], w[ok]
    if len(x) == 0 or w.sum() <= 0:
        return tuple(math.nan for _ in qs)
    order = np.argsort(x)
    x, w = x[order], w[order]
    c = np.cumsum(w) / w.sum()
    return tuple(float(x[min(int(np.searchsorted(c, q)), len(x) - 1)]) for q in qs)


# ----------------------------------------------------------------------------------------- confidence


def fit_confidence(vt: pd.DataFrame, gain: Sequence[float], frame: str, alpha: float = 1.0) -> dict[str, Any]:
    """Categorical confidence overall and per bucket of the reported magnitude (px of the model's belief:
    the report divided by the gain and, for a norm1000 model, by 1000/(W-1)). Sparse buckets are smoothed
    toward the overall distribution with ``alpha`` pseudo-counts."""
    ok = vt[~vt["no_tool"] & vt["conf"].notna()]
    c = ok["conf"].round(2)
    fx = ok["gx"] if frame == "norm1000" else 1.0
    fy = ok["gy"] if frame == "norm1000" else 1.0
    mag = np.hypot(ok["rx"] / (gain[0] * fx), ok["ry"] / (gain[1] * fy))
    values = sorted(c.unique().tolist())
    overall = np.array([(c == v).sum() for v in values], dtype=float)
    overall_p = overall / overall.sum()
    buckets = []
    lo = -1.0
    edges = [*CONF_EDGES, math.inf]
    for hi in edges:
        sel = (mag > lo) & (mag <= hi)
        counts = np.array([((c == v) & sel).sum() for v in values], dtype=float)
        total = counts.sum() + alpha
        p = (counts + alpha * overall_p) / total if total > 0 else overall_p
        buckets.append(
            {"max_px": None if math.isinf(hi) else hi, "n": int(counts.sum()), "values": values, "probs": p}
        )
        lo = hi
    return {"values": values, "probs": overall_p, "buckets": buckets, "n": int(len(c))}


# --------------------------------------------------------------------------------------------- one-shot


def fit_oneshot(ct: pd.DataFrame, first_elements: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Point answers with the task: frame (pixel vs 0-1000, voted by the answers near the target), Laplace
    noise of the answers within 30 px of the target, outlier share (answers beyond), confidence; and
    ``no_task_target`` (share of task-less first answers inside the target box, over scenes whose first
    interactive element is not the target)."""
    ok = ct[~ct["no_tool"]]
    tasked = ok[ok["has_task"]]
    if len(tasked) == 0:
        raise ValueError("fit_oneshot: no answers with the task")
    # the frame is read only from answers near the target in one reading (elsewhere the answer named
    # another element, and the smaller error says nothing about the frame)
    near = np.minimum(tasked["err_norm"], tasked["err_px"]) < FRAME_VOTE_PX
    votes_norm = (near & (tasked["err_norm"] <= tasked["err_px"])).sum()
    norm_share = float(votes_norm / near.sum()) if near.sum() else 1.0
    dominant_norm = norm_share >= 0.5
    norm = np.where(near, tasked["err_norm"] <= tasked["err_px"], dominant_norm)
    ex = np.where(norm, tasked["nx"] - tasked["Tx"], tasked["x"] - tasked["Tx"])
    ey = np.where(norm, tasked["ny"] - tasked["Ty"], tasked["y"] - tasked["Ty"])
    # the simulator's point outliers are other elements (far); an answer within FRAME_VOTE_PX of the
    # target is an inlier, whose small offsets (e.g. the card centre instead of its heading) are noise
    dist = np.hypot(ex, ey)
    inl = dist <= FRAME_VOTE_PX
    e = np.concatenate([ex[inl], ey[inl]])
    scale = max(float(np.mean(np.abs(e))), 0.05) if len(e) else 0.05  # Laplace maximum likelihood
    outlier_p = float((~inl).mean())
    untasked = ok[~ok["has_task"] & (ok["index"] == 0)]
    if first_elements is not None:
        untasked = untasked[[first_elements.get(t) != "target" for t in untasked["task"]]]
    ux = np.where(untasked["err_norm"] <= untasked["err_px"], untasked["nx"], untasked["x"])
    uy = np.where(untasked["err_norm"] <= untasked["err_px"], untasked["ny"], untasked["y"])
    inside = (ux >= untasked["x0"]) & (ux <= untasked["x1"]) & (uy >= untasked["y0"]) & (uy <= untasked["y1"])
    conf = tasked["conf"].dropna().round(2)
    values = sorted(conf.unique().tolist())
    probs = [float((conf == v).mean()) for v in values]
    return {
        "n_tasked": len(tasked),
        "n_untasked_first": len(untasked),
        "norm1000_share": norm_share,
        "frame_votes": int(near.sum()),
        "noise_px": float(scale),
        "outlier_p": outlier_p,
        "err_p50": float(np.median(np.hypot(ex, ey))),
        "err_p90": float(np.quantile(np.hypot(ex, ey), 0.9)),
        "no_task_target": float(inside.mean()) if len(untasked) else math.nan,
        "conf_values": values,
        "conf_probs": probs,
    }


def first_element_of(task: str) -> str | None:
    """``"target"`` when the first interactive element of our copy of the scene is the target, else
    ``"other"``; ``None`` when unknown (the authors' web pages: their first element is never the target)."""
    if not task.startswith("S"):
        return "other"
    try:
        from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

        truth = SceneRegistry(default_scenes_dir()).truth(task)
    except (KeyError, FileNotFoundError, ValueError):
        return None
    first = next((e for e in truth.elements if e.interactive), None)
    return None if first is None else ("target" if first.id == truth.target_id else "other")


# ---------------------------------------------------------------------------------------- other fits


def single_element_misses(ct: pd.DataFrame, px: float = FRAME_VOTE_PX) -> int:
    """One-shot answers with the task that missed (> ``px`` from the target in their better reading) on a
    scene holding a single element (our copies of S1, S2, S4): 0 supports ``oneshot.wrong_element_only``."""
    ok = ct[~ct["no_tool"] & ct["has_task"]]
    synthetic = [str(t) for t in ok["task"].unique() if str(t).startswith("S")]
    truths = replay_truths(synthetic)
    single = [t for t in synthetic if len(truths[t].elements) == 1]
    sel = ok[ok["task"].isin(single)]
    return int((np.minimum(sel["err_norm"], sel["err_px"]) > px).sum())


def fit_consistency(
    pairs: Mapping[str, tuple[int, int]], chance: Mapping[str, float] | None = None
) -> dict[str, float]:
    """``consistency`` (the per-call repeat rate) per mode from :func:`repeat_pairs`: two calls on identical
    input agree when both gave the modal answer (``c**2``) or, otherwise, by chance (``q``: the share of
    identical answers among fresh draws, from a replay without repeats), so ``share = c**2 + (1 - c**2) q``
    and ``c = sqrt((share - q) / (1 - q))`` (share with a half pseudo-count: a handful of pairs does not
    give 0 or 1)."""
    out = {}
    for m, (k, n) in pairs.items():
        s = (k + 0.5) / (n + 1.0)
        q = min((chance or {}).get(m, 0.0), 0.99)
        out[m] = math.sqrt(max(0.0, (s - q) / (1.0 - q)))
    return out


def fit_latency(trials: pd.DataFrame, model: str) -> dict[str, Any]:
    """Seconds per call (wall time / calls of valid trials; includes any backoff the authors' harness slept)
    per method, with a log-normal fit (median, log-sd) of the DVOC calls."""
    t = trials[(trials["model"] == model) & trials["valid"] & (trials["model_calls"].fillna(0) > 0)]
    out: dict[str, Any] = {}
    for method, g in t.groupby("method"):
        per = (g["wall_s"].astype(float) / g["model_calls"].astype(float)).dropna()
        per = per[per > 0]
        if len(per) == 0:
            continue
        logs = np.log(per.to_numpy())
        out[str(method)] = {
            "trials": len(per),
            "median_s": float(np.median(per)),
            "p90_s": float(np.quantile(per, 0.9)),
            "sigma": float(np.std(logs, ddof=1)) if len(logs) > 1 else 0.0,
        }
    return out


# ----------------------------------------------------------------------------------------- model fit


@dataclass
class ModelFit:
    """Everything fitted for one model."""

    model: str
    """Recorded model key."""
    pooled: OffsetFit
    """Offset fit over every canvas."""
    canvases: dict[str, OffsetFit]
    """Offset fit per canvas (``800x600``, ``1280x720``)."""
    shares: dict[str, dict[str, float]]
    """Plain discrete shares, pooled (``all``) and per canvas."""
    near: dict[str, dict[str, float | str | None]]
    """Near-target rates and axis drop used in the profile, per canvas and ``all`` (after refinement), with
    the ``zero_rule`` (``box`` or ``distance``) and the axis-drop reaches (px; ``None``: no bound)."""
    confidence: dict[str, Any]
    """Confidence fit (:func:`fit_confidence`)."""
    oneshot: dict[str, Any]
    """One-shot fit (:func:`fit_oneshot`), plus ``wrong_element_only`` (:func:`single_element_misses`)."""
    oneshot_canvases: dict[str, dict[str, Any]]
    """One-shot fit per canvas."""
    no_tool: tuple[int, int]
    """(replies without a tool call, replies)."""
    latency: dict[str, Any]
    """Seconds per call by method (:func:`fit_latency`)."""
    pairs: dict[str, tuple[int, int]]
    """Identical answers on identical inputs (:func:`repeat_pairs`)."""
    counts: dict[str, int]
    """Records used: trials, steps by kind."""
    sources: dict[str, str]
    """Where the records came from."""
    loaded_at: str
    """When they were read."""
    chance: dict[str, float] = field(default_factory=dict)
    """Share of identical answers among fresh draws on identical input, per mode (set by the replay)."""
    overlays: tuple[str, ...] = ("full",)
    """Overlay modes of the DVOC steps fitted."""
    records_digest: str = ""
    """Content hash of the records fitted (:func:`~dvoc_bench.calibration.extract.records_digest`)."""
    pairs_borrowed: tuple[str, ...] = ()
    """Modes whose pairs come from every model's records (this model's inputs never recurred)."""
    refinement: list[dict[str, Any]] = field(default_factory=list)
    """Rounds of :func:`refine_discrete` (simulated vs recorded shares)."""


def _dominant(frames: Mapping[str, float]) -> str:
    return "norm1000" if frames.get("norm1000", 0.0) >= frames.get("pixel", 0.0) else "pixel"


def fit_model(data: CalibrationData, model: str, *, family: str = "auto", iters: int = 40) -> ModelFit:
    """Fit every part of a model's profile from its step-level records (no trial outcome is read)."""
    steps = data.runs.steps
    vt = verify_table(steps, model)
    if int((~vt["no_tool"]).sum()) < MIN_OFFSET_STEPS:
        raise ValueError(
            f"{model}: {int((~vt['no_tool']).sum())} valid DVOC steps, need {MIN_OFFSET_STEPS} "
            "to fit a profile"
        )
    pooled = fit_offsets(vt, family, iters)
    canvases = {c: fit_offsets(g, family, iters) for c, g in vt.groupby("canvas") if len(g) >= 20}
    shares = {"all": discrete_shares(vt)} | {c: discrete_shares(g) for c, g in vt.groupby("canvas")}
    rule = zero_rule(vt)
    near = {
        k: {
            "zero_rule": rule,
            "p_zero_below_30": finite_or_zero(v["zero_below_30"]),
            "p_zero_30_100": finite_or_zero(v["zero_30_100"]),
            "p_zero_in_box": finite_or_zero(v["zero_in_box"]),
            "p_zero_box_near": finite_or_zero(v["zero_box_near"]),
            "axis_drop": finite_or_zero(v["axis_drop"]),
            "axis_drop_x": finite_or_zero(v["axis_drop_x"]),
            "axis_drop_y": finite_or_zero(v["axis_drop_y"]),
            "axis_drop_max_px": axis_drop_reach(vt),
            "axis_drop_max_axis_px": axis_drop_axis_reach(vt if k == "all" else vt[vt["canvas"] == k]),
        }
        for k, v in shares.items()
    }
    if rule == "box":  # a model that stops on the button also drops the axis it is aligned on
        for k, v in shares.items():
            for ax in ("x", "y"):
                near[k][f"axis_drop_{ax}"] = finite_or_zero(v[f"axis_drop_{ax}_off_span"])
                near[k][f"axis_drop_{ax}_in_span"] = finite_or_zero(v[f"axis_drop_{ax}_in_span"])
            for key, share in IN_BOX_SPLIT.items():  # sparse: the pooled share, else the unsplit one
                tries = (v[share], shares["all"][share], v["zero_in_box"], shares["all"]["zero_in_box"])
                near[k][key] = finite_or_zero(next((x for x in tries if math.isfinite(x)), math.nan))
    conf = fit_confidence(vt, pooled.gain, _dominant(pooled.frames))
    ct = click_table(steps, model)
    firsts = {t: first_element_of(t) for t in ct["task"].unique()}
    oneshot = fit_oneshot(ct, firsts)
    oneshot["wrong_element_only"] = single_element_misses(ct) == 0
    oneshot_canvases = {
        c: fit_oneshot(g, firsts) for c, g in ct.groupby("canvas") if g["has_task"].sum() >= 20
    }
    pairs, borrowed = model_repeat_pairs(steps, vt, ct)
    trials = data.runs.trials
    tr = trials[trials["model"] == model]
    return ModelFit(
        model=model,
        pooled=pooled,
        canvases=canvases,
        shares=shares,
        near=near,
        confidence=conf,
        oneshot=oneshot,
        oneshot_canvases=oneshot_canvases,
        no_tool=no_tool_share(steps, model),
        latency=fit_latency(trials, model),
        pairs=pairs,
        pairs_borrowed=borrowed,
        overlays=_overlays(steps, model),
        counts={
            "trials": len(tr),
            "valid_trials": int(tr["valid"].sum()),
            "verify_steps": len(vt),
            "click_steps": len(ct),
        },
        sources=dict(data.sources),
        loaded_at=data.loaded_at,
        records_digest=data.digest,
    )


def _overlays(steps: pd.DataFrame, model: str) -> tuple[str, ...]:
    """Overlay modes of the model's recorded DVOC steps (the authors' main records: ``full`` only)."""
    s = steps[(steps["model"] == model) & (steps["kind"] == "verify")]
    return tuple(sorted({str(v) for v in s["overlay"].fillna("full")})) or ("full",)


def fittable_models(data: CalibrationData) -> list[str]:
    """Models with at least :data:`MIN_OFFSET_STEPS` valid DVOC steps (others lack the data)."""
    vt = verify_table(data.runs.steps)
    counts = vt[~vt["no_tool"]].groupby("model").size()
    return [m for m in (*CALIBRATED_MODELS, "gemini-2.5-flash-lite") if counts.get(m, 0) >= MIN_OFFSET_STEPS]
