"""Read the DVOC authors' published records into the common schema.

Three formats are understood:

- an aggregate file ``{"elapsed_seconds", "config", "results": [trial, ...]}`` (``benchmark_results.json``,
  and the final ``complete_results.json``);
- a bare list of trials (the ablation files ``predict_ablation.json``, ``ablation_results.json``,
  ``alpha_ablation.json``);
- the per-trial tree ``<model>/<task>/<dval|naive>/pos<N>_rep<M>/trial.json`` with one ``iter_NNN.json``
  per model call (the prompt sent, the provider's raw message and the values the harness read).

They ship in the authors' repository under ``artifacts/previous_runs/`` (the JSON files) and
``artifacts/previous_runs/artifacts/`` (the tree); any of the clone's root, that folder or the tree may be
given (:func:`locate`).

Every trial keeps the authors' ``success`` as ``paper_success`` and their ``final_dist`` as
``paper_final_dist``. We recompute the rest: the DVOC stop reason and final point by replaying their
policy (ε = 30, confidence ≥ 0.5, window 2, abort on three non-decreasing magnitudes; α 1, 0.5, 0.25),
the distance, and every rule: ``hit`` (inside the target box), ``within_eps`` (d < 30) and ``hit_radius``
(d < max(w/2, h/2, 30), their code's rule). Target boxes: S1–S6 from our scene files (which reproduce
theirs; the table below is the fallback), W1–W5 as *inferred* from the recorded clicks (centre from the
record, width and height inferred from the layout), flagged ``target_inferred``.

Their answers were read as pixels (``coord_frame = "pixel"``), although the models answered in 0–1000
units: the frame audit in :mod:`dvoc_bench.analysis.honest` rereads them. Their naive method is our
``oneshot``; its first call carried no task text (``has_task`` is False on those steps).
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from dvoc_bench.analysis.loaders import attach_trials, user_path
from dvoc_bench.analysis.schema import STEP_COLUMNS, TEXT_COLUMNS, TRIAL_COLUMNS, Runs, coerce
from dvoc_bench.core.control import LoopConfig, Report, alpha, correct, decide
from dvoc_bench.core.geometry import Box, Offset, Point, Size
from dvoc_bench.core.jsonread import load_file, loads
from dvoc_bench.core.scoring import score

log = logging.getLogger(__name__)

MAIN_MODELS = ("gemini-3.1-flash-lite", "gemini-2.5-flash-lite", "gemma-4-26b", "gemma-4-31b")
"""The four models of the paper's tables, in the paper's row order."""

PROVIDERS = {
    "gemini-3.1-flash-lite": ("gemini/gemini-3.1-flash-lite", "gemini"),
    "gemini-2.5-flash-lite": ("gemini/gemini-2.5-flash-lite", "gemini"),
    "gemma-4-26b": ("gemini/gemma-4-26b-a4b-it", "hybrid"),
    "gemma-4-31b": ("gemini/gemma-4-31b-it", "hybrid"),
    "nemotron-12b-vl": ("openrouter/nvidia/nemotron-nano-12b-v2-vl:free", "openrouter"),
    "nemotron-30b": ("openrouter/nvidia/nemotron-3-nano-omni-30b-a3b-reasoning:free", "openrouter"),
    "gemma-4-26b-via-or": ("openrouter/google/gemma-4-26b-a4b-it:free", "openrouter"),
    "gemma-4-31b-via-or": ("openrouter/google/gemma-4-31b-it:free", "openrouter"),
    "openrouter-free-vision": ("openrouter/openrouter/free", "openrouter"),
}
"""Model key -> (first LiteLLM model id tried, provider) as configured by the authors."""

START_POSITIONS = ((194, 92), (361, 205), (308, 151), (184, 426), (638, 124))
"""The authors' five seeded start points, ``pos1`` .. ``pos5`` (also used on 1280×720 pages)."""

CANVAS = {"synthetic": (800, 600), "web": (1280, 720)}
"""Image size by scene kind."""

SYNTHETIC_BOXES = {
    "S1": (360, 275, 440, 325),
    "S2": (388, 294, 412, 306),
    "S3": (300, 200, 420, 240),
    "S4": (10, 10, 70, 40),
    "S5": (200, 224, 450, 256),
    "S6": (150, 350, 230, 390),
}
"""Target boxes of S1–S6 as the authors drew them (fallback when our scene files are absent)."""

WEB_TARGETS = {
    "W1": ((640.0, 470.5), (380.0, 44.0)),
    "W2": ((379.5, 30.0), (85.0, 60.0)),
    "W3": ((492.0, 215.5), (245.333, 19.0)),
    "W4": ((1014.9, 410.5), (54.0, 29.0)),
    "W5": ((640.0, 357.5), (316.0, 47.0)),
}
"""W1–W5: (default centre, inferred width × height). The centre of each record wins when it has one."""

INSTRUCTIONS = {
    "S1": "Click the CLICK ME button",
    "S2": "Click the small green button",
    "S3": "Click the button labeled 'Submit'",
    "S4": "Click the button in the top-left corner",
    "S5": "Click inside the username input field",
    "S6": "Click the BLUE button",
    "W1": "Click the Sign In button",
    "W2": "Click the Docs link in the navigation",
    "W3": "Click the Beta project card",
    "W4": "Click the Edit button for Bob",
    "W5": "Click the Profile link in the dropdown menu",
}
"""Task instruction per scene (to tell whether a prompt carried the task)."""

EPSILON, THRESHOLD, WINDOW, MAX_ITERS, MAX_ATTEMPTS = 30.0, 0.5, 2, 15, 5
ERROR_MARKER = 999
_ALPHA = {"default": "decay", "constant05": "constant", "undamped": "undamped"}
_OVERLAY = {"full": "full", "crosshair-only": "crosshair", "none": "none"}
_PREDICT = {"relative": "relative", "absolute": "absolute"}
_POSREP = re.compile(r"pos(\d+)_rep(\d+)$")


UPSTREAM_ENV = "DVOC_UPSTREAM"
"""Environment variable naming the folder of the authors' records."""


def default_upstream_dir() -> Path | None:
    """The folder named by ``$DVOC_UPSTREAM`` (a relative one read from where the command was typed,
    :func:`~dvoc_bench.analysis.loaders.user_path`); ``None`` when it is unset or absent."""
    env = os.environ.get(UPSTREAM_ENV)
    p = user_path(env) if env else None
    return p if p is not None and p.exists() else None


def is_excluded(model: str) -> bool:
    """The authors' exclusion: OpenRouter-only keys, nemotron and the free router."""
    return model.endswith("-via-or") or model.startswith("nemotron") or model == "openrouter-free-vision"


def classify_error(text: str | None) -> str | None:
    """A short class for the authors' error strings."""
    if not text:
        return None
    t = text.lower()
    if "timeout" in t or "timed out" in t:
        return "timeout"
    if "401" in t or "authentication" in t:
        return "auth"
    if "name resolution" in t:
        return "dns"
    if "429" in t or "quota" in t or "rate" in t:
        return "rate_limit"
    if "404" in t or "no endpoints" in t:
        return "not_found"
    return "other"


# ------------------------------------------------------------------------------------------------ targets


_BOX_CACHE: dict[str, Box] = {}


def synthetic_box(task: str) -> Box:
    """Target box of S1–S6: from our scene files (which reproduce the authors' layout), else the table."""
    if task not in _BOX_CACHE:
        box = None
        try:
            from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

            box = SceneRegistry(default_scenes_dir()).truth(task).target_box
        except (KeyError, FileNotFoundError, ValueError) as e:
            log.info("scene %s not found in our scenes (%s); using the authors' box", task, e)
        if box is None:
            box = Box.from_list(SYNTHETIC_BOXES[task])
        _BOX_CACHE[task] = box
    return _BOX_CACHE[task]


def target_box(task: str, centre: tuple[float, float] | None) -> tuple[Box, bool]:
    """``(box, inferred)`` for a task; web boxes are centred on the record's target when it has one."""
    if task in WEB_TARGETS:
        (cx, cy), (w, h) = WEB_TARGETS[task]
        if centre is not None:
            cx, cy = centre
        return Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2), True
    return synthetic_box(task), False


# ---------------------------------------------------------------------------------------------- knobs


def parse_method(rec: Mapping[str, Any]) -> dict[str, str]:
    """Our ``method, alpha, overlay, predict`` from the authors' record (fields, else the method string)."""
    pm = str(rec.get("method", ""))
    if pm == "naive":
        return {"method": "oneshot", "alpha": "-", "overlay": "-", "predict": "-"}
    out = {"method": "dvoc", "alpha": "decay", "overlay": "full", "predict": "relative"}
    for tok in pm.split("_")[1:]:
        if tok in _OVERLAY:
            out["overlay"] = _OVERLAY[tok]
        elif tok in _PREDICT:
            out["predict"] = tok
        elif tok in _ALPHA:
            out["alpha"] = _ALPHA[tok]
    if rec.get("overlay_mode"):
        out["overlay"] = _OVERLAY.get(rec["overlay_mode"], rec["overlay_mode"])
    if rec.get("predict_mode"):
        out["predict"] = _PREDICT.get(rec["predict_mode"], rec["predict_mode"])
    if rec.get("alpha_schedule"):
        out["alpha"] = _ALPHA.get(rec["alpha_schedule"], rec["alpha_schedule"])
    return out


# ------------------------------------------------------------------------------------------------ replay


def replay_dvoc(
    history: list[Mapping[str, Any]], schedule: str, size: Size
) -> tuple[str, Point | None, list[dict[str, Any]]]:
    """Replay the authors' loop on a DVOC ``iteration_history``.

    Returns ``(stop_reason, final_point, per-step dicts)``; per step: ``alpha``, ``decision``, the raw and
    clamped step and the next draft. The final point is the last verified draft on act / abort and the
    last corrected draft on the iteration cap. ``stop_reason`` is ``"inconsistent"`` when the
    history ends while the policy would have continued (a truncated record).
    """
    reports: list[Report] = []
    cfg = LoopConfig(epsilon=EPSILON, threshold=THRESHOLD, window=WINDOW)
    per: list[dict[str, Any]] = []
    stop, final = "inconsistent", None
    for i, h in enumerate(history):
        draft = Point(float(h["draft"]["x"]), float(h["draft"]["y"]))
        off = Offset(float(h["error"]["dx"]), float(h["error"]["dy"]))
        reports.append(Report(off, float(h.get("confidence") or 0.0)))
        dec = decide(reports, cfg)
        a = alpha(schedule, reports, constant=0.5)
        row: dict[str, Any] = {"alpha": a, "decision": dec}
        if dec == "refine":
            c = correct(draft, off, a, size)
            row.update(step=c.step_raw, clamped=c.step_clamped, next=c.next_draft)
            if i == len(history) - 1 and len(history) >= MAX_ITERS:
                stop, final = "max_iterations", c.next_draft
        else:
            row.update(step=None, clamped=None, next=draft)
            if i == len(history) - 1:
                stop, final = dec, draft
        per.append(row)
        if dec != "refine" and i < len(history) - 1:
            return "inconsistent", None, per
    return stop, final, per


# ---------------------------------------------------------------------------------------------- records


def _xy(v: Any) -> tuple[float, float] | None:
    if isinstance(v, Mapping) and v.get("x") is not None and v.get("y") is not None:
        return float(v["x"]), float(v["y"])
    return None


def _tool_args(raw_message: Mapping[str, Any] | None) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """First tool call's arguments (parsed) and the calls in our ``[{"name", "arguments"}]`` form."""
    if not isinstance(raw_message, Mapping):
        return None, []
    calls = []
    for tc in raw_message.get("tool_calls") or []:
        fn = (tc or {}).get("function") or {}
        calls.append({"name": fn.get("name"), "arguments": fn.get("arguments")})
    if not calls:
        return None, []
    args = calls[0]["arguments"]
    if isinstance(args, str):
        try:
            args = loads(args)
        except ValueError:
            args = None
    return (args if isinstance(args, dict) else None), calls


def _same_draft(iter_file: Mapping[str, Any], draft: tuple[float, float]) -> bool:
    """The ``iter_NNN.json`` belongs to this history entry (the history rounds drafts to 0.1 px)."""
    fd = _xy(iter_file.get("draft"))
    return fd is not None and abs(fd[0] - draft[0]) <= 0.051 and abs(fd[1] - draft[1]) <= 0.051


def _exact_drafts(history: list[Mapping[str, Any]], iters: Mapping[int, Mapping[str, Any]]) -> list[Any]:
    """The history with the unrounded drafts of the ``iter_NNN.json`` files, when every entry has its file
    (a re-run directory can hold files of another run: then the rounded history stays)."""
    if not history or not iters:
        return list(history)
    out = []
    for i, h in enumerate(history):
        f = iters.get(i)
        d = (float(h["draft"]["x"]), float(h["draft"]["y"]))
        if f is None or not _same_draft(f, d):
            return list(history)
        out.append({**h, "draft": dict(f["draft"])})
    return out


def _has_task(prompt: str | None, task: str) -> bool | None:
    instr = INSTRUCTIONS.get(task)
    if prompt is None or instr is None:
        return None
    return instr in prompt


def _trial_and_steps(
    rec: Mapping[str, Any],
    key: str,
    origin: str,
    *,
    start_index: int | None = None,
    rep: int | None = None,
    iter_files: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One authors' record (+ its ``iter_*.json`` contents, if any) -> a trial row and its step rows."""
    model, task = str(rec["model_key"]), str(rec["task_id"])
    kind = "web" if task in WEB_TARGETS else "synthetic"  # the authors' scene set, known in full
    w, h = CANVAS[kind]
    size = Size(w, h)
    knobs = parse_method(rec)
    err = rec.get("error")
    status = "error" if err is not None or rec.get("final_dist") == ERROR_MARKER else "ok"
    centre = _xy(rec.get("target_position"))
    box, inferred = target_box(task, centre)
    tc = box.centre if centre is None else Point(*centre)
    start = _xy(rec.get("start_position"))
    if start_index is None and start is not None:
        pts = [tuple(map(float, p)) for p in START_POSITIONS]
        start_index = pts.index(start) + 1 if start in pts else None
    model_id, provider = PROVIDERS.get(model, (model, "unknown"))
    history = rec.get("iteration_history") or []
    iters = {int(f.get("iteration", i)): f for i, f in enumerate(iter_files or [])}
    steps: list[dict[str, Any]] = []
    final: Point | None = None
    stop = "error"
    if knobs["method"] == "dvoc":
        history = _exact_drafts(history, iters)
        replay_stop, replay_final, per = (
            replay_dvoc(history, knobs["alpha"], size) if history else ("error", None, [])
        )
        if status == "ok":
            stop, final = replay_stop, replay_final
        for i, (hh, pp) in enumerate(zip(history, per, strict=True)):
            dx, dy = float(hh["error"]["dx"]), float(hh["error"]["dy"])
            draft = (float(hh["draft"]["x"]), float(hh["draft"]["y"]))
            row: dict[str, Any] = {
                "index": i,
                "kind": "verify",
                "draft_x": draft[0],
                "draft_y": draft[1],
                "true_dist_px": hh.get("distance_to_target"),
                "frame": "pixel",
                "confidence": hh.get("confidence"),
                "raw_conf": hh.get("confidence"),
                "rep_dx": dx,
                "rep_dy": dy,
                "alpha": pp["alpha"],
                "decision": pp["decision"],
                "parse_status": "ok",
            }
            if knobs["predict"] == "absolute":  # the model answered a point; the harness took point - draft
                row.update(raw_x=draft[0] + dx, raw_y=draft[1] + dy, px_x=draft[0] + dx, px_y=draft[1] + dy)
            else:
                row.update(raw_dx=dx, raw_dy=dy, px_dx=dx, px_dy=dy)
            if pp["step"] is not None:
                row.update(
                    step_raw_dx=pp["step"].dx,
                    step_raw_dy=pp["step"].dy,
                    step_dx=pp["clamped"].dx,
                    step_dy=pp["clamped"].dy,
                )
            row.update(next_x=pp["next"].x, next_y=pp["next"].y)
            f = iters.get(i)
            if f and _same_draft(f, draft):
                out = f.get("model_output") or {}
                args, calls = _tool_args(out.get("raw_message"))
                row.update(
                    prompt=f.get("model_input"),
                    reply_text=(out.get("raw_message") or {}).get("content"),
                    reply_tool_calls=json.dumps(calls) if calls else None,
                )
                if not calls:
                    row.update(parse_status="parse_error", parse_detail="no_tool_call; recorded as zeros")
            row["has_task"] = _has_task(row.get("prompt"), task)
            steps.append(row)
    else:  # naive = our one-shot; every attempt is in the iter files, else in the history
        answers: list[tuple[int, dict[str, Any]]] = []
        if iter_files:
            answers = sorted(iters.items())
        else:
            for j, hh in enumerate(history):
                resp = hh.get("response") or {}
                if "model_output" in resp or "model_input" in resp:  # a failed record keeps raw attempts
                    answers.append((int(resp.get("iteration", j)), resp))
                else:  # a successful record keeps the final answer only
                    answers.append(
                        (
                            int(hh.get("iteration", resp.get("iteration", j))),
                            {"model_output": resp, "flat": True},
                        )
                    )
        for idx, f in answers:
            out = f.get("model_output") or {}
            prompt = f.get("model_input")
            row = {"index": idx, "kind": "click", "frame": "pixel", "prompt": prompt}
            if "error" in out and "x" not in out:
                row.update(parse_status="call_error", error=str(out["error"])[:300])
                row["error_class"] = classify_error(row["error"])
            else:
                args, calls = _tool_args(out.get("raw_message"))
                conf = out.get("confidence") if f.get("flat") else (args or {}).get("confidence")
                x, y = float(out.get("x", 0.0)), float(out.get("y", 0.0))
                row.update(
                    raw_x=x,
                    raw_y=y,
                    px_x=x,
                    px_y=y,
                    raw_conf=conf,
                    confidence=conf,
                    true_dist_px=math.hypot(x - tc.x, y - tc.y),
                    reply_text=(out.get("raw_message") or {}).get("content")
                    if isinstance(out.get("raw_message"), Mapping)
                    else None,
                    reply_tool_calls=json.dumps(calls) if calls else None,
                    parse_status="ok" if (calls or f.get("flat")) else "parse_error",
                    parse_detail=None if (calls or f.get("flat")) else "no_tool_call; recorded as (0, 0)",
                )
            row["has_task"] = _has_task(prompt, task) if prompt is not None else (idx > 0)
            steps.append(row)
        if status == "ok":
            clicks = [s for s in steps if s.get("raw_x") is not None]
            if clicks:
                final = Point(clicks[-1]["raw_x"], clicks[-1]["raw_y"])
            stop = "hit" if rec.get("success") else "attempts_exhausted"
    sc = score(final, box, EPSILON, 30.0)  # the same rules as our own records
    pfd = rec.get("final_dist")
    trial = {
        "trial_key": key,
        "source": "upstream",
        "run_dir": origin,
        "experiment": Path(origin).stem,
        "model": model,
        "model_id": model_id,
        "provider": provider,
        "simulated": False,
        "coord_frame": "pixel",
        "task": task,
        "scene_kind": kind,
        "image_w": w,
        "image_h": h,
        "protocol": "paper",
        **knobs,
        "start_x": start[0] if start else None,
        "start_y": start[1] if start else None,
        "start_index": start_index,
        "rep": rep,
        "epsilon": EPSILON,
        "conf_threshold": THRESHOLD,
        "window": WINDOW,
        "max_iterations": MAX_ITERS,
        "max_attempts": MAX_ATTEMPTS,
        "alpha_constant": 0.5,
        "hit_radius_min": 30.0,
        "status": status,
        "valid": status == "ok",
        "stop_reason": stop,
        "final_x": None if final is None else final.x,
        "final_y": None if final is None else final.y,
        "iterations": rec.get("iterations"),
        "model_calls": rec.get("model_calls"),
        "error_class": classify_error(err) if status == "error" else None,
        "error": None if err is None else str(err)[:300],
        "target_x0": box.x0,
        "target_y0": box.y0,
        "target_x1": box.x1,
        "target_y1": box.y1,
        "target_cx": tc.x,
        "target_cy": tc.y,
        "target_inferred": inferred,
        "final_dist_px": sc.final_dist_px,
        "hit": sc.hit,
        "hit_rule": "box",
        "hit_box": sc.hit,
        "within_eps": sc.within_eps,
        "hit_radius": sc.hit_radius,
        "radius_px": sc.radius_px,
        "wall_s": rec.get("elapsed"),
        "paper_success": bool(rec.get("success")),
        "paper_final_dist": None if pfd is None or pfd == ERROR_MARKER else pfd,
        "paper_method": rec.get("method"),
        "paper_trial_id": rec.get("trial_id"),
    }
    for s in steps:
        s.update(trial_key=key, source="upstream", run_dir=origin)
    return trial, steps


# ---------------------------------------------------------------------------------------------- sources


def _is_tree(path: Path) -> bool:
    return path.is_dir() and next(path.glob("*/*/*/*/trial.json"), None) is not None


MAIN_METHODS = ("dvoc", "naive")
"""The ``method`` of the main benchmark's records. The authors' per-trial tree also holds trials of an
ablation condition (``dvoc_full_relative_default``, in ``dvoc/`` folders) that no aggregate lists: they are
not part of the main benchmark (:func:`tree_extras`)."""


@dataclass(frozen=True)
class Layout:
    """Where the authors' records lie under a path given at any depth: the clone of their repository, its
    ``artifacts/previous_runs`` folder, or the per-trial tree itself (:func:`locate`)."""

    records: Path | None
    """The folder of the aggregate and ablation JSON files (``None``: none beside the tree)."""
    tree: Path | None
    """The per-trial tree ``<model>/<task>/<method>/pos<N>_rep<M>/trial.json`` (``None``: none)."""


def locate(path: Path | str) -> Layout:
    """The records under ``path``, whichever of the clone root, ``artifacts/previous_runs`` or the per-trial
    tree it is; ``FileNotFoundError`` naming every place looked at when there is nothing."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"no such upstream directory: {p}")
    if _is_tree(p):  # the per-trial tree: its aggregates, if any, lie in the folder above
        above = p.parent
        return Layout(above if next(above.glob("*.json"), None) is not None else None, p)
    for folder in (p / "artifacts" / "previous_runs", p):
        tree = folder / "artifacts"
        has_json = folder.is_dir() and next(folder.glob("*.json"), None) is not None
        if has_json or _is_tree(tree):
            return Layout(folder if has_json else None, tree if _is_tree(tree) else None)
    raise FileNotFoundError(
        f"{p}: none of the authors' records found; looked for their JSON files in "
        f"{p / 'artifacts/previous_runs'} and {p}, and for a per-trial tree "
        "<model>/<task>/<method>/pos<N>_rep<M>/trial.json in "
        f"{p / 'artifacts/previous_runs/artifacts'}, {p / 'artifacts'} and {p}"
    )


def _tree_records(
    root: Path, *, main_only: bool = True
) -> Iterable[tuple[dict[str, Any], str, int | None, int | None, list[dict]]]:
    for tj in sorted(root.glob("*/*/*/*/trial.json")):
        rec = load_file(tj)
        if main_only and str(rec.get("method", "")) not in MAIN_METHODS:
            continue
        rel = tj.parent.relative_to(root).as_posix()
        m = _POSREP.search(tj.parent.name)
        pos, rep = (int(m.group(1)), int(m.group(2)) - 1) if m else (None, None)
        iters = [load_file(p) for p in sorted(tj.parent.glob("iter_*.json"))]
        yield rec, rel, pos, rep, iters


def tree_extras(tree: Path | str) -> dict[str, list[str]]:
    """The trials of the per-trial tree outside the main benchmark: their ``method`` -> folder paths."""
    out: dict[str, list[str]] = {}
    root = Path(tree)
    for tj in sorted(root.glob("*/*/*/*/trial.json")):
        method = str(load_file(tj).get("method", ""))
        if method not in MAIN_METHODS:
            out.setdefault(method, []).append(tj.parent.relative_to(root).as_posix())
    return out


def read_records(path: Path) -> list[dict[str, Any]]:
    """The trial records of an aggregate (``{results: [...]}``) or bare-list file."""
    data = load_file(Path(path))
    if isinstance(data, Mapping) and isinstance(data.get("results"), list):
        return list(data["results"])
    if isinstance(data, list):
        return data
    raise ValueError(f"{path}: neither an aggregate {{results: [...]}} nor a list of trial records")


def classify_file(path: Path) -> str:
    """Role of an authors' JSON file: ``aggregate`` or ``predict`` / ``overlay`` / ``alpha`` ablation."""
    data = load_file(Path(path))
    if isinstance(data, Mapping) and "results" in data:
        return "aggregate"
    if not isinstance(data, list):
        raise ValueError(f"{path}: not an authors' results file")
    knobs = pd.DataFrame([parse_method(r) for r in data if isinstance(r, Mapping)])
    if len(knobs) == 0:
        return "ablation"
    for role in ("predict", "overlay", "alpha"):
        if knobs[role].nunique() > 1:
            return role
    return "ablation"


def tree_dirs(records: Path | str, tree: Path | str) -> dict[str, str | None]:
    """For each record of an aggregate file (its trial key, ``<file>#<i>``), the trial folder of the
    per-trial tree whose ``trial.json`` equals it on every field (``None``: none does; the tree was partly
    re-run after the authors aggregated it). Each folder answers one record, in the file's order."""
    p, root = Path(records), Path(tree)
    by_text: dict[str, list[str]] = {}
    for tj in sorted(root.glob("*/*/*/*/trial.json")):
        text = json.dumps(load_file(tj), sort_keys=True)
        by_text.setdefault(text, []).append(tj.parent.relative_to(root).as_posix())
    out: dict[str, str | None] = {}
    for i, rec in enumerate(read_records(p)):
        same = by_text.get(json.dumps(rec, sort_keys=True))
        out[f"{p.name}#{i}"] = same.pop(0) if same else None
    return out


def discover_upstream(path: Path | str) -> dict[str, Path]:
    """The authors' sources under ``path`` (a JSON file, or their repository at any depth: :func:`locate`):
    role -> path.

    Roles: ``main`` (``complete_results.json`` if present, else the per-trial tree), ``tree``,
    ``benchmark_results`` / any other aggregate by file stem, ``predict``, ``overlay``, ``alpha``.
    ``FileNotFoundError`` when ``path`` holds none of them.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such upstream file or directory: {p}")
    layout = Layout(None, None) if p.is_file() else locate(p)
    found: dict[str, Path] = {}
    files = [p] if p.is_file() else sorted(layout.records.glob("*.json")) if layout.records else []
    for f in files:
        try:
            role = classify_file(f)
        except (ValueError, json.JSONDecodeError) as e:
            log.info("skipping %s: %s", f, e)
            continue
        found[f.stem if role in ("aggregate", "ablation") else role] = f
    if layout.tree is not None:
        found["tree"] = layout.tree
    if "complete_results" in found:
        found["main"] = found["complete_results"]
    elif "tree" in found:
        found["main"] = found["tree"]
    elif p.is_file() and classify_file(p) == "aggregate":
        found["main"] = p
    if not found:
        raise FileNotFoundError(f"{p}: none of the authors' records found (no aggregate, ablation or tree)")
    return found


def load_upstream(path: Path | str, *, text: bool = False) -> Runs:
    """Load one of the authors' sources (an aggregate file, an ablation list, or a directory: its per-trial
    tree's main benchmark, found at any depth by :func:`locate`; the trials outside the main benchmark are
    left out, :func:`tree_extras` lists them). The JSON files beside the tree are separate sources (see
    :func:`discover_upstream`). ``text=True`` keeps the prompts and raw replies.
    """
    p = Path(path)
    if p.is_dir():
        tree = locate(p).tree
        if tree is None:
            raise FileNotFoundError(f"{p}: no <model>/<task>/<method>/pos<N>_rep<M>/trial.json tree")
        rows, step_rows = [], []
        for rec, rel, pos, rep, iters in _tree_records(tree):
            t, s = _trial_and_steps(rec, rel, str(tree), start_index=pos, rep=rep, iter_files=iters)
            rows.append(t)
            step_rows.extend(s)
        origin = str(tree)
    elif p.is_file():
        origin = str(p)
        rows, step_rows = [], []
        for i, rec in enumerate(read_records(p)):
            t, s = _trial_and_steps(rec, f"{p.name}#{i}", origin)
            rows.append(t)
            step_rows.extend(s)
    else:
        raise FileNotFoundError(f"no such upstream file or directory: {p}")
    trials = coerce(pd.DataFrame(rows), TRIAL_COLUMNS)
    steps = coerce(pd.DataFrame(step_rows), {**STEP_COLUMNS, **TEXT_COLUMNS})
    steps = coerce(attach_trials(steps, trials), {**STEP_COLUMNS, **TEXT_COLUMNS})
    if not text:
        steps = steps.drop(columns=list(TEXT_COLUMNS))
    steps = steps.sort_values(["trial_key", "index"], kind="stable").reset_index(drop=True)
    return Runs(trials, steps, [origin])
