"""What the calibration reads from the records: statistics and tables, no fit, no simulation.

- :func:`load_calibration_data`: the authors' records split by role (the per-trial tree is fitted,
  ``predict_ablation.json`` is validation only);
- :func:`verify_table`: one row per DVOC ``report_offset`` step (drawn crosshair, true and reported offset);
  :func:`click_table`: one row per one-shot ``click_at`` answer. Both work on the authors' steps and on
  ours, and on the simulator's replays of them (:mod:`~dvoc_bench.calibration.replay`);
- plain shares (:func:`discrete_shares`), repeated situations (:func:`repeat_pairs`), the per-step
  statistics of the records and their recorded-vs-simulated comparison with bootstrap intervals
  (:func:`step_statistics`, :func:`compare_steps`), the one-shot statistics;
- :func:`replay_truths`: the ground truth of the authors' scenes (S1-S6 from our scene files, W1-W5 as
  the inferred target box).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.analysis.schema import Runs
from dvoc_bench.analysis.upstream import (
    CANVAS,
    INSTRUCTIONS,
    WEB_TARGETS,
    discover_upstream,
    load_upstream,
    synthetic_box,
)
from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.models.simulator.behaviour import BOX_NEAR_PX

CALIBRATED_MODELS = ("gemini-3.1-flash-lite", "gemma-4-26b", "gemma-4-31b")
"""Models with enough valid records to fit (162-598 DVOC steps each)."""
BIN_EDGES = (0.0, 30.0, 100.0, 300.0, math.inf)
"""True-distance bins of the residual statistics (px)."""
BIN_LABELS = ("<30", "30-100", "100-300", ">300")


def round_to(v: float, nd: int = 3) -> float:
    """``v`` rounded to ``nd`` decimals, as a plain float (the profiles' numbers)."""
    return float(round(float(v), nd))


def finite_or_zero(v: float) -> float:
    """``v``, or 0.0 when it is ``None`` or not finite (a share over an empty set)."""
    return 0.0 if v is None or not math.isfinite(v) else float(v)


def sim_name(model: str) -> str:
    """Profile name of a recorded model: ``gemma-4-26b`` -> ``sim-gemma-4-26b``."""
    return f"sim-{model}"


def recorded_name(model: str) -> str:
    """Recorded model of a profile name (inverse of :func:`sim_name`)."""
    return model.removeprefix("sim-")


def distance_bin(d: pd.Series | np.ndarray) -> pd.Categorical:
    """The residual-statistics bin of each distance (px)."""
    return pd.cut(np.asarray(d, dtype=float), list(BIN_EDGES), right=False, labels=list(BIN_LABELS))


def canvas_name(w: int, h: int) -> str:
    return f"{int(w)}x{int(h)}"


# ------------------------------------------------------------------------------------------------ data


@dataclass
class CalibrationData:
    """The authors' records, split by role."""

    runs: Runs
    """The main benchmark (the per-trial tree's): every fit reads its steps; its trials are validation."""
    predict: Runs | None
    """The predict-mode ablation (``predict_ablation.json``): validation only, never fitted."""
    sources: dict[str, str]
    """Role -> path of every file or folder read."""
    loaded_at: str
    """UTC time of loading (ISO 8601)."""
    digest: str = ""
    """Content hash of the step-level records the fit reads (:func:`records_digest`): the profile names it
    instead of a date, so the same records give the same file."""


def load_calibration_data(upstream: Path | str) -> CalibrationData:
    """Load the authors' records under ``upstream`` (their repository's clone, its ``artifacts/previous_runs``
    folder or the per-trial tree: :func:`dvoc_bench.analysis.upstream.locate`)."""
    found = discover_upstream(upstream)
    if "tree" not in found:
        raise FileNotFoundError(
            f"{upstream}: no per-trial tree <model>/<task>/<method>/pos<N>_rep<M>/trial.json; the fit needs "
            "the per-call records"
        )
    runs = load_upstream(found["tree"], text=True)
    runs.steps["input_sha"] = input_digests(runs.steps)
    runs.steps = runs.steps.drop(
        columns=[c for c in ("prompt", "reply_text", "reply_tool_calls") if c in runs.steps]
    )
    predict = load_upstream(found["predict"]) if "predict" in found else None
    sources = {k: str(v) for k, v in found.items() if k in ("tree", "predict")}
    now = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return CalibrationData(
        runs=runs, predict=predict, sources=sources, loaded_at=now, digest=records_digest(runs.steps)
    )


DIGEST_SKIPS = (
    "run_dir",
    "source",
    "image_scale",
    "sent_w",
    "sent_h",
    "crop_x0",
    "crop_y0",
    "crop_x1",
    "crop_y1",
    "seen_w",
    "seen_h",
    "frame_rule",
    "prompt_style",
    "served_model",
    "system_fingerprint",
    "engine",
    "est_tokens_in",
    "est_tokens_out",
    "reported_cost_usd",
    "drag_end",
    "episode_step",
)
"""Step columns the records digest leaves out: where the records were read from, and what only our own
harness writes (the image sent: scale, size, zoom crop; the image the model saw and the frame rule and
prompt style it was read by; who served a call: the model id, fingerprint and engine a server stated;
the harness's own token estimate of a call whose reported usage was far below it; which end of a drag
and which step of an episode a call grounded;
added to the schema after the profiles were first fitted, always empty in the authors' records, so they
must not change its digest)."""


def records_digest(steps: pd.DataFrame) -> str:
    """sha256 (16 hex digits) of the step rows, independent of file paths and of the time of reading."""
    cols = sorted(c for c in steps.columns if c not in DIGEST_SKIPS)
    rows = steps[cols].astype(str).sort_values(["trial_key", "index"], kind="stable")
    h = hashlib.sha256("|".join(cols).encode())
    for row in rows.itertuples(index=False):
        h.update("\x1f".join(row).encode())
    return h.hexdigest()[:16]


def input_digests(steps: pd.DataFrame) -> pd.Series:
    """A digest of each call's whole input as the model saw it: the prompt text, and the image it was
    sent (for a DVOC call the scene, the drawn crosshair and the iteration label; for a one-shot call the
    raw screenshot of the task). Two calls with the same digest had identical inputs; ``None`` when the
    prompt was not recorded."""
    out: list[str | None] = []
    for r in steps[["model", "task", "kind", "index", "draft_x", "draft_y", "prompt"]].itertuples(
        index=False
    ):
        if not isinstance(r.prompt, str):
            out.append(None)
            continue
        if r.kind == "verify":
            image = f"{r.task}|{r.index}|{_trunc(r.draft_x)},{_trunc(r.draft_y)}"
        else:
            image = f"{r.task}|raw"
        out.append(hashlib.sha256(f"{r.model}|{r.kind}|{image}|{r.prompt}".encode()).hexdigest()[:16])
    return pd.Series(out, index=steps.index, dtype=object)


def _trunc(v: Any) -> str:
    try:
        return str(math.floor(float(v)))
    except (TypeError, ValueError):
        return "-"


def _crosshair(draft: np.ndarray, protocol: pd.Series) -> np.ndarray:
    """The drawn crosshair centre: truncated under the paper protocol (the authors' ``int()``), else
    rounded."""
    paper = (protocol.fillna("paper") == "paper").to_numpy()[:, None]
    return np.where(paper, np.floor(draft), np.round(draft))


BOX_COLUMNS = ("target_x0", "target_y0", "target_x1", "target_y1")


def _box_distance(s: pd.DataFrame, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-axis distance (px) of the drawn crosshair ``p`` to the target box's span on that axis (0 within
    it; NaN without the box)."""
    if not all(c in s.columns for c in BOX_COLUMNS):
        return np.full(len(s), np.nan), np.full(len(s), np.nan)
    x0, y0, x1, y1 = (s[c].astype(float).to_numpy() for c in BOX_COLUMNS)
    dx = np.maximum.reduce([x0 - p[:, 0], np.zeros(len(s)), p[:, 0] - x1])
    dy = np.maximum.reduce([y0 - p[:, 1], np.zeros(len(s)), p[:, 1] - y1])
    return dx, dy


def verify_table(steps: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """One row per ``report_offset`` step (relative mode, drawn crosshair), with the true and reported offset.

    Works on the authors' steps and on ours (``raw_dx`` is what the model said, in its own units).
    Columns: ``model, trial_key, task, canvas, index, W, H, gx, gy`` (1000 / (W-1), 1000 / (H-1)), ``px, py``
    (drawn crosshair), ``Tx, Ty`` (target centre), ``tx, ty, d, bin`` (true offset, px), ``rx, ry, conf``,
    ``no_tool`` (no tool call), ``zero`` (a (0, 0) report), ``drop_x, drop_y`` (axis reported 0 while > 30 px
    off), ``bd`` (the drawn crosshair's distance to the target box, px; 0 inside, NaN without a box) and
    ``bdx, bdy`` (its distance to the box's span on each axis).
    """
    s = steps[(steps["kind"] == "verify") & (steps["predict"].fillna("relative") == "relative")]
    s = s[s["overlay"].fillna("full") != "none"]
    if model is not None:
        s = s[s["model"] == model]
    s = s[s["draft_x"].notna() & s["target_cx"].notna()]
    w = s["image_w"].astype(float).to_numpy()
    h = s["image_h"].astype(float).to_numpy()
    p = _crosshair(s[["draft_x", "draft_y"]].to_numpy(float), s["protocol"])
    tgt = s[["target_cx", "target_cy"]].to_numpy(float)
    rx = s["raw_dx"].where(s["raw_dx"].notna(), s["rep_dx"]).astype(float).to_numpy()
    ry = s["raw_dy"].where(s["raw_dy"].notna(), s["rep_dy"]).astype(float).to_numpy()
    no_tool = (s["parse_status"].fillna("ok") != "ok").to_numpy()
    t = tgt - p
    d = np.hypot(t[:, 0], t[:, 1])
    out = pd.DataFrame(
        {
            "model": s["model"].astype(str).to_numpy(),
            "trial_key": s["trial_key"].astype(str).to_numpy(),
            "task": s["task"].astype(str).to_numpy(),
            "canvas": [canvas_name(a, b) for a, b in zip(w, h, strict=True)],
            "index": s["index"].astype(int).to_numpy(),
            "W": w,
            "H": h,
            "gx": 1000.0 / (w - 1),
            "gy": 1000.0 / (h - 1),
            "px": p[:, 0],
            "py": p[:, 1],
            "Tx": tgt[:, 0],
            "Ty": tgt[:, 1],
            "tx": t[:, 0],
            "ty": t[:, 1],
            "d": d,
            "rx": np.nan_to_num(rx),
            "ry": np.nan_to_num(ry),
            "conf": s["confidence"].astype(float).to_numpy(),
            "no_tool": no_tool,
            "input_sha": _inputs(s),
        }
    )
    out["bin"] = distance_bin(out["d"])
    out["bdx"], out["bdy"] = _box_distance(s, p)
    out["bd"] = np.hypot(out["bdx"], out["bdy"])
    ok = ~out["no_tool"]
    out["zero"] = ok & (out["rx"] == 0) & (out["ry"] == 0)
    out["drop_x"] = ok & ~out["zero"] & (out["rx"] == 0) & (out["tx"].abs() > 30)
    out["drop_y"] = ok & ~out["zero"] & (out["ry"] == 0) & (out["ty"].abs() > 30)
    return out.reset_index(drop=True)


def _inputs(s: pd.DataFrame) -> np.ndarray:
    """The ``input_sha`` column (:func:`input_digests`), ``None`` where it was not computed."""
    if "input_sha" not in s.columns:
        return np.full(len(s), None, dtype=object)
    return s["input_sha"].to_numpy(dtype=object)


def _has_task(s: pd.DataFrame) -> np.ndarray:
    """The recorded ``has_task``; where unknown, the protocol decides (paper: every attempt but the first)."""
    known = s["has_task"].astype("boolean")
    paper = s["protocol"].fillna("paper") == "paper"
    fallback = ~paper | (s["index"] > 0)
    return known.fillna(fallback).astype(bool).to_numpy()


def click_table(steps: pd.DataFrame, model: str | None = None) -> pd.DataFrame:
    """One row per one-shot ``click_at`` answer: the raw point, and its error read as pixels and as 0-1000.

    Columns: ``model, task, canvas, index, has_task, W, H, x, y, conf, no_tool, Tx, Ty, x0, y0, x1, y1``,
    ``err_px`` (read as pixels), ``nx, ny, err_norm`` (read as 0-1000 units, converted to px).
    """
    s = steps[(steps["kind"] == "click") & (steps["method"] == "oneshot")]
    s = s[s["parse_status"].fillna("ok") != "call_error"]
    if model is not None:
        s = s[s["model"] == model]
    w = s["image_w"].astype(float).to_numpy()
    h = s["image_h"].astype(float).to_numpy()
    x = s["raw_x"].astype(float).fillna(0.0).to_numpy()
    y = s["raw_y"].astype(float).fillna(0.0).to_numpy()
    tx, ty = s["target_cx"].astype(float).to_numpy(), s["target_cy"].astype(float).to_numpy()
    out = pd.DataFrame(
        {
            "model": s["model"].astype(str).to_numpy(),
            "trial_key": s["trial_key"].astype(str).to_numpy(),
            "task": s["task"].astype(str).to_numpy(),
            "canvas": [canvas_name(a, b) for a, b in zip(w, h, strict=True)],
            "index": s["index"].astype(int).to_numpy(),
            "has_task": _has_task(s),
            "W": w,
            "H": h,
            "x": x,
            "y": y,
            "conf": s["confidence"].astype(float).to_numpy(),
            "no_tool": (s["parse_status"].fillna("ok") != "ok").to_numpy(),
            "Tx": tx,
            "Ty": ty,
            "x0": s["target_x0"].astype(float).to_numpy(),
            "y0": s["target_y0"].astype(float).to_numpy(),
            "x1": s["target_x1"].astype(float).to_numpy(),
            "y1": s["target_y1"].astype(float).to_numpy(),
            "input_sha": _inputs(s),
        }
    )
    out["err_px"] = np.hypot(out["x"] - tx, out["y"] - ty)
    out["nx"] = out["x"] * (out["W"] - 1) / 1000.0
    out["ny"] = out["y"] * (out["H"] - 1) / 1000.0
    out["err_norm"] = np.hypot(out["nx"] - tx, out["ny"] - ty)
    return out.reset_index(drop=True)


# ------------------------------------------------------------------------------------ discrete shares


MIN_BIN_REPLIES = 10
"""The in-box zero shares split by distance (``zero_in_box_below_15``, ``_15_30``, ``_over_30``) are NaN
below this many replies (1280x720 holds 3 of Gemini's in-box replies within 15 px): the fit then uses the
pooled share."""


def discrete_shares(vt: pd.DataFrame) -> dict[str, float]:
    """Plain shares: ``(0, 0)`` reports per bin (of the true distance, and of the crosshair's distance to
    the target box: inside, at most ``BOX_NEAR_PX`` outside, further; inside split again by the true
    distance: below 15, 15-30, from 30 px), axis drops (split by the
    crosshair's place against the box's span on that axis: ``*_in_span`` is the share of non-zero replies
    with that axis 0 whatever its offset, ``*_off_span`` the axis-drop share), reversals at 30-100 px
    (replies with a tool call)."""
    ok = vt[~vt["no_tool"]]

    def share(mask: pd.Series, among: pd.Series, min_n: int = 1) -> float:
        n = int(among.sum())
        return float((mask & among).sum() / n) if n >= min_n else math.nan

    near = ok["d"] < 30
    mid = (ok["d"] >= 30) & (ok["d"] < 100)
    far = (ok["d"] >= 100) & (ok["d"] < 300)
    nz = ~ok["zero"]
    ax = pd.concat([(nz & (ok["tx"].abs() > 30)), (nz & (ok["ty"].abs() > 30))])
    drops = pd.concat([ok["drop_x"], ok["drop_y"]])
    cos = ok["rx"] * ok["tx"] + ok["ry"] * ok["ty"]
    axx, axy = nz & (ok["tx"].abs() > 30), nz & (ok["ty"].abs() > 30)
    inside = ok["bd"] <= 0
    return {
        "axis_drop_x": float((ok["drop_x"] & axx).sum() / axx.sum()) if axx.sum() else math.nan,
        "axis_drop_y": float((ok["drop_y"] & axy).sum() / axy.sum()) if axy.sum() else math.nan,
        "zero_below_30": share(ok["zero"], near),
        "zero_30_100": share(ok["zero"], mid),
        "zero_100_300": share(ok["zero"], far),
        "axis_drop": float((drops & ax).sum() / ax.sum()) if ax.sum() else math.nan,
        "reverse_30_100": share(nz & (cos < 0), mid & nz),
        "reverse_below_30": share(nz & (cos < 0), near & nz),
        "zero_in_box": share(ok["zero"], ok["bd"] <= 0),
        "zero_in_box_below_15": share(ok["zero"], inside & (ok["d"] < 15), MIN_BIN_REPLIES),
        "zero_in_box_15_30": share(ok["zero"], inside & (ok["d"] >= 15) & near, MIN_BIN_REPLIES),
        "zero_in_box_over_30": share(ok["zero"], inside & ~near, MIN_BIN_REPLIES),
        "zero_box_near": share(ok["zero"], (ok["bd"] > 0) & (ok["bd"] <= BOX_NEAR_PX)),
        "zero_off_box": share(ok["zero"], ok["bd"] > BOX_NEAR_PX),
        "axis_drop_x_in_span": share(ok["rx"] == 0, nz & (ok["bdx"] <= BOX_NEAR_PX)),
        "axis_drop_x_off_span": share(ok["drop_x"], axx & (ok["bdx"] > BOX_NEAR_PX)),
        "axis_drop_y_in_span": share(ok["ry"] == 0, nz & (ok["bdy"] <= BOX_NEAR_PX)),
        "axis_drop_y_off_span": share(ok["drop_y"], axy & (ok["bdy"] > BOX_NEAR_PX)),
    }


def zeros_on_box(vt: pd.DataFrame) -> tuple[int, int]:
    """``(zero reports with the crosshair at most BOX_NEAR_PX from the target box, zero reports)`` over the
    replies whose box distance is known."""
    z = vt[vt["zero"].astype(bool) & vt["bd"].notna()]
    return int((z["bd"] <= BOX_NEAR_PX).sum()), len(z)


# ------------------------------------------------------------------------------------------ repeats


def identical_input_pairs(df: pd.DataFrame, answer: Sequence[str]) -> tuple[int, int]:
    """``(identical answers, pairs)`` over every pair of answered calls with the same input
    (``input_sha``: the same prompt text and the same image, :func:`input_digests`). Rows without a
    digest (our runs, replays) are left out."""
    ok = df[df["input_sha"].notna() & ~df["no_tool"].astype(bool)] if "input_sha" in df.columns else df[:0]
    k = n = 0
    for _, g in ok.groupby("input_sha", sort=True):
        answers = [tuple(a) for a in g[list(answer)].to_numpy(float)]
        for i, u in enumerate(answers):
            for w in answers[i + 1 :]:
                n += 1
                k += int(u == w)
    return k, n


def offset_repeats(vt: pd.DataFrame) -> tuple[int, int]:
    """``(identical, pairs)`` over DVOC calls with identical inputs: the same prompt and the same frame
    (scene, crosshair, iteration label). In the authors' records these are mostly first steps of the
    repeats of one task and start point, and later steps of trials that had answered identically."""
    return identical_input_pairs(vt, ("rx", "ry"))


def point_repeats(ct: pd.DataFrame) -> tuple[int, int]:
    """``(identical, pairs)`` over one-shot calls with identical inputs (the same screenshot and the same
    prompt: first calls of one task, and retries after the same previous click)."""
    return identical_input_pairs(ct, ("x", "y"))


def repeat_pairs(vt: pd.DataFrame, ct: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Identical inputs and identical answers, ``{"offset": ..., "point": ...}`` (see
    :func:`offset_repeats`, :func:`point_repeats`)."""
    return {"offset": offset_repeats(vt), "point": point_repeats(ct)}


def model_repeat_pairs(
    steps: pd.DataFrame, vt: pd.DataFrame, ct: pd.DataFrame
) -> tuple[dict[str, tuple[int, int]], tuple[str, ...]]:
    """The pairs the per-call repeat rate is fitted on: the model's own (``vt``, ``ct``: its tables), and for
    a mode where no identical input recurs for it, every model's in ``steps``; with the modes borrowed."""
    pairs = repeat_pairs(vt, ct)
    borrowed = tuple(m for m, (_, n) in pairs.items() if n == 0)
    if borrowed:
        every = repeat_pairs(verify_table(steps), click_table(steps))
        pairs = {m: every[m] if m in borrowed else v for m, v in pairs.items()}
    return pairs, borrowed


def axis_drop_reach(vt: pd.DataFrame, min_beyond: int = 10) -> float | None:
    """The distance bound of axis drops: the smallest bin edge (100 or 300 px) beyond which no axis was
    dropped while at least ``min_beyond`` axes more than 30 px off were reported there; ``None`` (no bound)
    otherwise."""
    ok = vt[~vt["no_tool"] & ~vt["zero"]]
    drops = ok[ok["drop_x"] | ok["drop_y"]]
    for edge in (100.0, 300.0):
        beyond = ok[ok["d"] >= edge]
        axes = int((beyond["tx"].abs() > 30).sum() + (beyond["ty"].abs() > 30).sum())
        if len(drops) and drops["d"].max() < edge and axes >= min_beyond:
            return edge
    return None


def axis_drop_axis_reach(vt: pd.DataFrame, min_beyond: int = 10) -> float | None:
    """The per-axis reach of axis drops: the smallest edge (60, 100 or 300 px) that no dropped axis was
    further off than (its own component), while at least ``min_beyond`` axes further off were reported;
    ``None`` (no bound) otherwise."""
    ok = vt[~vt["no_tool"] & ~vt["zero"]]
    dropped = pd.concat([ok.loc[ok["drop_x"], "tx"], ok.loc[ok["drop_y"], "ty"]]).abs()
    axes = pd.concat([ok["tx"], ok["ty"]]).abs()
    for edge in (60.0, 100.0, 300.0):
        if len(dropped) and dropped.max() <= edge and int((axes > edge).sum()) >= min_beyond:
            return edge
    return None


def no_tool_share(steps: pd.DataFrame, model: str) -> tuple[int, int]:
    """``(replies without a tool call, replies)`` over every answered call of ``model`` (errors excluded)."""
    s = steps[(steps["model"] == model) & steps["kind"].isin(["verify", "click"])]
    s = s[s["parse_status"].fillna("ok") != "call_error"]
    return int((s["parse_status"].fillna("ok") != "ok").sum()), len(s)


# ------------------------------------------------------------------------------------- scene truths


def replay_truths(tasks: Sequence[str]) -> dict[str, Any]:
    """Ground truth of the authors' scenes for replaying steps: S1-S6 from our scene files (the authors'
    geometry), W1-W5 as the target box inferred from the recorded clicks (their pages are not ours)."""
    from dvoc_bench.core.scene import Element, SceneTruth

    out: dict[str, Any] = {}
    for task in tasks:
        if task.startswith("S"):
            try:
                from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

                out[task] = SceneRegistry(default_scenes_dir()).truth(task)
                continue
            except (KeyError, FileNotFoundError, ValueError):
                box = synthetic_box(task)
                size = Size(*CANVAS["synthetic"])
        else:
            (cx, cy), (w, h) = WEB_TARGETS[task]
            box = Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
            size = Size(*CANVAS["web"])
        elem = Element(id="target", box=box, label=task, interactive=True)
        elements: tuple[Element, ...] = (elem,)
        if task.startswith(
            "W"
        ):  # their pages start with other controls (logo, e-mail field, ...): a stand-in
            first = Element(id="first", box=Box(40, 20, 140, 50), label="first control", interactive=True)
            elements = (first, elem)
        out[task] = SceneTruth(
            scene_id=task,
            size=size,
            target_id="target",
            target_box=box,
            instruction=INSTRUCTIONS.get(task, ""),
            elements=elements,
        )
    return out


# ------------------------------------------------------------------------------------- step statistics


def step_statistics(vt: pd.DataFrame, by: str = "canvas") -> pd.DataFrame:
    """Per-step statistics in long form (``group, stat, bin, value, n``): gain through the origin
    per axis, quantiles of the frame-corrected residual |r/g - t| (0-1000 reading) and of the raw residual
    |r - t|, per distance bin the share of (0, 0) reports, of reversals and of dropped x / y axes, the
    confidence mean and the share of each confidence value, and the share of replies without a tool call."""
    rows: list[dict[str, Any]] = []
    groups = [("all", vt)] + ([(str(k), g) for k, g in vt.groupby(by)] if by else [])
    for name, g in groups:

        def add(stat: str, b: str, value: float, n: int, name: str = name) -> None:
            rows.append({"group": name, "stat": stat, "bin": b, "value": value, "n": n})

        ok = g[~g["no_tool"]]
        add("no_tool_share", "all", float(g["no_tool"].mean()) if len(g) else math.nan, len(g))
        for ax in ("x", "y"):
            t, r = ok[f"t{ax}"], ok[f"r{ax}"]
            den = float((t * t).sum())
            add(f"gain0_{ax}", "all", float((t * r).sum() / den) if den else math.nan, len(ok))
        fc = np.hypot(ok["rx"] / ok["gx"] - ok["tx"], ok["ry"] / ok["gy"] - ok["ty"])
        raw = np.hypot(ok["rx"] - ok["tx"], ok["ry"] - ok["ty"])
        for q in (0.5, 0.75, 0.9):
            add(
                f"resid_norm_p{int(q * 100)}",
                "all",
                float(np.quantile(fc, q)) if len(fc) else math.nan,
                len(fc),
            )
            add(
                f"resid_raw_p{int(q * 100)}",
                "all",
                float(np.quantile(raw, q)) if len(raw) else math.nan,
                len(raw),
            )
        for b in BIN_LABELS:
            gb = ok[ok["bin"] == b]
            if len(gb) == 0:
                continue
            nz = gb[~gb["zero"]]
            cos = nz["rx"] * nz["tx"] + nz["ry"] * nz["ty"]
            add("zero_share", b, float(gb["zero"].mean()), len(gb))
            add("reverse_share", b, float((cos < 0).mean()) if len(nz) else math.nan, len(nz))
            for ax in ("x", "y"):
                far = nz[f"t{ax}"].abs() > 30
                k = int(far.sum())
                add(f"axis_drop_{ax}_share", b, float(nz.loc[far, f"drop_{ax}"].mean()) if k else math.nan, k)
            add("conf_mean", b, float(gb["conf"].mean()), len(gb))
            cr = gb["conf"].round(2)
            for v in sorted(cr.dropna().unique()):
                add(f"conf={v:.2f}", b, float((cr == v).mean()), len(gb))
    return pd.DataFrame(rows)


def compare_steps(
    recorded: pd.DataFrame, simulated: pd.DataFrame, *, n_boot: int = 400, seed: int = 0
) -> pd.DataFrame:
    """Recorded vs simulated step statistics side by side, with a 95 % bootstrap interval of the recorded
    value (trials resampled) and whether the simulated value falls inside it (``within``)."""
    rec = step_statistics(recorded)
    sim = step_statistics(simulated)
    rng = np.random.default_rng(seed)
    keys = recorded["trial_key"].unique()
    by_trial = {k: g for k, g in recorded.groupby("trial_key")}
    boots = []
    for _ in range(n_boot):
        pick = rng.choice(keys, size=len(keys), replace=True)
        sample = pd.concat([by_trial[k] for k in pick], ignore_index=True)
        boots.append(step_statistics(sample).set_index(["group", "stat", "bin"])["value"])
    bt = pd.concat(boots, axis=1)
    lo = bt.quantile(0.025, axis=1).rename("rec_lo")
    hi = bt.quantile(0.975, axis=1).rename("rec_hi")
    out = rec.merge(sim, on=["group", "stat", "bin"], how="outer", suffixes=("_rec", "_sim"))
    out = out.merge(pd.concat([lo, hi], axis=1).reset_index(), on=["group", "stat", "bin"], how="left")
    out["diff"] = out["value_sim"] - out["value_rec"]
    out["within"] = (out["value_sim"] >= out["rec_lo"] - 1e-12) & (out["value_sim"] <= out["rec_hi"] + 1e-12)
    return out.rename(
        columns={"value_rec": "recorded", "value_sim": "simulated", "n_rec": "n", "n_sim": "n_simulated"}
    )


def goodness_summary(cmp: pd.DataFrame, group: str = "all") -> pd.DataFrame:
    """Main statistics of :func:`compare_steps` for one group, compact (for the profile's ``fit:`` block)."""
    main = cmp[(cmp["group"] == group) & ~cmp["stat"].str.startswith("conf=")]
    return main[["stat", "bin", "recorded", "simulated", "rec_lo", "rec_hi", "within", "n"]].reset_index(
        drop=True
    )


def confidence_distance(cmp: pd.DataFrame, group: str = "all") -> pd.DataFrame:
    """Total-variation distance between recorded and simulated confidence histograms, per distance bin."""
    c = cmp[(cmp["group"] == group) & cmp["stat"].str.startswith("conf=")].fillna(
        {"recorded": 0.0, "simulated": 0.0}
    )
    rows = []
    for b, g in c.groupby("bin", sort=False):
        rows.append(
            {
                "bin": b,
                "tv_distance": float(0.5 * (g["recorded"] - g["simulated"]).abs().sum()),
                "n": int(g["n"].max()),
            }
        )
    return pd.DataFrame(rows)


def oneshot_statistics(ct: pd.DataFrame) -> dict[str, float]:
    """One-shot statistics: median / p90 error of answers with the task read in their best frame, share
    within 30 px, share read best as 0-1000, task-less first answers inside the target box, mean
    confidence."""
    ok = ct[~ct["no_tool"]]
    tasked = ok[ok["has_task"]]
    best = np.minimum(tasked["err_norm"], tasked["err_px"])
    first = ok[~ok["has_task"] & (ok["index"] == 0)]
    fx = np.where(first["err_norm"] <= first["err_px"], first["nx"], first["x"])
    fy = np.where(first["err_norm"] <= first["err_px"], first["ny"], first["y"])
    inside = (fx >= first["x0"]) & (fx <= first["x1"]) & (fy >= first["y0"]) & (fy <= first["y1"])
    return {
        "tasked_n": float(len(tasked)),
        "tasked_err_p50": float(np.median(best)) if len(best) else math.nan,
        "tasked_err_p90": float(np.quantile(best, 0.9)) if len(best) else math.nan,
        "tasked_within_30": float((best < 30).mean()) if len(best) else math.nan,
        "norm1000_share": float((tasked["err_norm"] <= tasked["err_px"]).mean()) if len(tasked) else math.nan,
        "first_n": float(len(first)),
        "first_on_target": float(inside.mean()) if len(first) else math.nan,
        "conf_mean": float(tasked["conf"].mean()) if len(tasked) else math.nan,
    }


def recorded_trials(data: CalibrationData, models: Sequence[str] = CALIBRATED_MODELS) -> pd.DataFrame:
    """The authors' main-benchmark trials of ``models`` (every trial; :func:`compare_trials` keeps the
    valid ones)."""
    t = data.runs.trials
    return t[t["model"].isin(list(models)) & t["method"].isin(["dvoc", "oneshot"])].reset_index(drop=True)
