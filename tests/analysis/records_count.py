"""An independent count of the headline table from the authors' raw record files.

Imports nothing of dvoc_bench (``tests/analysis/test_headline.py`` checks it): it reads the JSON files of
the authors' repository with ``json`` alone and recomputes every cell of
:func:`dvoc_bench.analysis.headline.point_table`, ``offset_table``, ``gains_800x600`` and ``alpha_counts``
in its own way: the one-shot answers from the tool call of each ``iter_NNN.json`` (not the values the
authors' harness stored), the first call by its iteration number (not by its prompt), the DVOC offsets
from each trial's ``iteration_history``, the α ablation from the stored ``final_dist``.

The geometry it needs is written out here from the authors' scene code (``examples/benchmark/tasks/
synthetic.py``: S1–S6 boxes) and from the inferred sizes of the web targets (centre from each record when
it has one).
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

MAIN = ("gemini-3.1-flash-lite", "gemini-2.5-flash-lite", "gemma-4-26b", "gemma-4-31b")
BOXES = {
    "S1": (360, 275, 440, 325),
    "S2": (388, 294, 412, 306),
    "S3": (300, 200, 420, 240),
    "S4": (10, 10, 70, 40),
    "S5": (200, 224, 450, 256),
    "S6": (150, 350, 230, 390),
}
WEB = {  # task -> (centre when the record has none, inferred width and height)
    "W1": ((640.0, 470.5), (380.0, 44.0)),
    "W2": ((379.5, 30.0), (85.0, 60.0)),
    "W3": ((492.0, 215.5), (245.333, 19.0)),
    "W4": ((1014.9, 410.5), (54.0, 29.0)),
    "W5": ((640.0, 357.5), (316.0, 47.0)),
}


def size_of(task: str) -> tuple[int, int]:
    return (1280, 720) if task.startswith("W") else (800, 600)


def box_of(task: str, rec: dict) -> tuple[float, float, float, float, float, float]:
    """(x0, y0, x1, y1, cx, cy) of the task's target in this record."""
    tp = rec.get("target_position")
    if task in BOXES:
        x0, y0, x1, y1 = BOXES[task]
        cx, cy = (tp["x"], tp["y"]) if tp else ((x0 + x1) / 2, (y0 + y1) / 2)
        return x0, y0, x1, y1, cx, cy
    (cx, cy), (w, h) = WEB[task]
    if tp:
        cx, cy = tp["x"], tp["y"]
    return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, cx, cy


def judge(x: float, y: float, b: tuple) -> tuple[bool, bool, bool, float]:
    """(inside the box, d < max(w/2, h/2, 30), d < 30, d)."""
    x0, y0, x1, y1, cx, cy = b
    d = math.hypot(x - cx, y - cy)
    radius = max((x1 - x0) / 2, (y1 - y0) / 2, 30.0)
    return x0 <= x <= x1 and y0 <= y <= y1, d < radius, d < 30.0, d


def _answer(iter_file: dict) -> tuple[float, float] | None:
    """The point of one one-shot call: its first tool call's x, y; (0, 0) for a reply without a tool call
    (as the authors recorded it); ``None`` for a call that failed (no reply)."""
    out = iter_file.get("model_output") or {}
    msg = out.get("raw_message")
    if not isinstance(msg, dict):
        return None
    calls = msg.get("tool_calls") or []
    if not calls:
        return 0.0, 0.0
    args = calls[0]["function"]["arguments"]
    args = json.loads(args) if isinstance(args, str) else args
    return float(args["x"]), float(args["y"])


def _trials(tree: Path, method: str):
    for tj in sorted(tree.glob("*/*/*/*/trial.json")):
        rec = json.loads(tj.read_text(encoding="utf-8"))
        if rec.get("method") == method and rec.get("model_key") in MAIN:
            yield tj.parent, rec


def _cell(points: list[tuple[float, float, tuple, int, int]]) -> dict:
    """Counts for a list of (x, y, box, W, H): per reading and rule, and the 0–1000 median error."""
    out = {"n": len(points)}
    for tag, scale in (("pixel", False), ("norm", True)):
        hits = [0, 0, 0]
        errs = []
        for x, y, b, w, h in points:
            px, py = (x * (w - 1) / 1000, y * (h - 1) / 1000) if scale else (x, y)
            *flags, d = judge(px, py, b)
            hits = [a + int(f) for a, f in zip(hits, flags, strict=True)]
            errs.append(d)
        out.update({f"{tag}_box": hits[0], f"{tag}_radius": hits[1], f"{tag}_eps": hits[2]})
        if scale:
            out["median_err_norm_px"] = statistics.median(errs)
    return out


def point_cells(records: Path) -> dict[tuple[str, str, str], dict]:
    """(model, answers, slice) -> counts, from ``artifacts/previous_runs`` of the authors' repository."""
    by: dict[tuple[str, str, str], list] = {}
    for folder, rec in _trials(records / "artifacts", "naive"):
        task, model = rec["task_id"], rec["model_key"]
        b, (w, h) = box_of(task, rec), size_of(task)
        for f in sorted(folder.glob("iter_*.json")):
            it = json.loads(f.read_text(encoding="utf-8"))
            pt = _answer(it)
            if pt is None:
                continue
            sl = "first call (no task)" if it["iteration"] == 0 else "retries (task)"
            for key in ((model, "one-shot", sl), (model, "one-shot", "all answers")):
                by.setdefault(key, []).append((*pt, b, w, h))
    for rec in json.loads((records / "predict_ablation.json").read_text(encoding="utf-8")):
        if rec.get("predict_mode") != "absolute":
            continue
        task = rec["task_id"]
        b, (w, h) = box_of(task, rec), size_of(task)
        for hh in rec.get("iteration_history") or []:
            x = hh["draft"]["x"] + hh["error"]["dx"]  # the harness stored answer - draft
            y = hh["draft"]["y"] + hh["error"]["dy"]
            by.setdefault((rec["model_key"], "DVOC absolute mode", "all answers"), []).append((x, y, b, w, h))
    return {k: _cell(v) for k, v in by.items()}


def offset_cells(records: Path, min_px: float = 30.0) -> dict[str, dict]:
    """model -> classified DVOC offsets: n and the count of each nearest reading."""
    out: dict[str, dict] = {}
    for _, rec in _trials(records / "artifacts", "dvoc"):
        task, model = rec["task_id"], rec["model_key"]
        *_, cx, cy = box_of(task, rec)
        w, h = size_of(task)
        fx, fy = (w - 1) / 1000, (h - 1) / 1000
        for hh in rec.get("iteration_history") or []:
            px, py = hh["draft"]["x"], hh["draft"]["y"]
            rx, ry = hh["error"]["dx"], hh["error"]["dy"]
            if (rx == 0 and ry == 0) or math.hypot(cx - px, cy - py) < min_px:
                continue
            implied = {
                "pixel": (px + rx, py + ry),
                "norm1000": (px + rx * fx, py + ry * fy),
                "mixed": ((px + rx) * fx, (py + ry) * fy),
            }
            best = min(implied, key=lambda k: math.hypot(implied[k][0] - cx, implied[k][1] - cy))
            c = out.setdefault(model, {"n": 0, "pixel": 0, "norm1000": 0, "mixed": 0})
            c["n"] += 1
            c[best] += 1
    return out


def gains(records: Path) -> dict[str, tuple[float, float, int]]:
    """model -> per-axis least-squares gain through the origin of reported on true offsets, 800×600."""
    acc: dict[str, list[float]] = {}
    for _, rec in _trials(records / "artifacts", "dvoc"):
        task = rec["task_id"]
        if size_of(task) != (800, 600):
            continue
        *_, cx, cy = box_of(task, rec)
        a = acc.setdefault(rec["model_key"], [0.0, 0.0, 0.0, 0.0, 0])
        for hh in rec.get("iteration_history") or []:
            tx, ty = cx - hh["draft"]["x"], cy - hh["draft"]["y"]
            a[0] += hh["error"]["dx"] * tx
            a[1] += tx * tx
            a[2] += hh["error"]["dy"] * ty
            a[3] += ty * ty
            a[4] += 1
    return {m: (a[0] / a[1], a[2] / a[3], int(a[4])) for m, a in acc.items()}


def alpha_cells(records: Path) -> dict[str, tuple[int, int]]:
    """α schedule -> (hits under the paper's radius from the stored final distance, valid trials)."""
    names = {"default": "decay", "constant05": "constant", "undamped": "undamped"}
    out: dict[str, list[int]] = {}
    for rec in json.loads((records / "alpha_ablation.json").read_text(encoding="utf-8")):
        if rec.get("error") is not None or rec.get("final_dist") == 999:
            continue
        b = box_of(rec["task_id"], rec)
        radius = max((b[2] - b[0]) / 2, (b[3] - b[1]) / 2, 30.0)
        c = out.setdefault(names[rec["alpha_schedule"]], [0, 0])
        c[0] += int(rec["final_dist"] < radius)
        c[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}
