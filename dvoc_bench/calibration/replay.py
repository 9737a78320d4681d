"""The simulator replayed on recorded situations: same scene, same drawn crosshair, the task in
the text as the paper protocol words it. The only module of the calibration that builds a
:class:`~dvoc_bench.models.simulator.SimulatedModel` itself.

- :func:`replay_offsets` / :func:`replay_clicks`: the simulator's answers to the recorded DVOC inputs and
  one-shot inputs, in the columns of :func:`~dvoc_bench.calibration.extract.verify_table` /
  :func:`~dvoc_bench.calibration.extract.click_table`;
- :func:`refine_discrete`: step-level indirect inference of the zero-report and axis-drop rates;
- :func:`draw_crosshair` / :func:`crosshair_frame`: the replayed image, drawn by the harness's renderer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dvoc_bench.calibration.extract import canvas_name, discrete_shares, round_to
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.draw.render import OverlayStyle, crosshair_centre, draw_overlay

CROSSHAIR_ONLY = OverlayStyle(label_fg=(0, 0, 0), label_bg=(0, 0, 0))
"""The harness's crosshair (pure red, 3 px bars, 15 px arms) with its labels drawn black: on the black
replay canvas the frame holds the crosshair alone, which is all the simulator reads of it."""


def draw_crosshair(canvas: np.ndarray, draft: Point) -> tuple[slice, slice]:
    """Draw the crosshair at ``draft`` into the black ``canvas`` in place, with the harness's renderer
    (:func:`~dvoc_bench.draw.render.draw_overlay`, mode ``crosshair``, :data:`CROSSHAIR_ONLY`), and return the
    window drawn (set it back to 0 to reuse the canvas).

    Only the window around the crosshair goes through the renderer (a whole 1280x720 frame costs tens of
    ms in Pillow; the replay draws tens of thousands): its edges are the image's edges or lie beyond the
    crosshair, so the renderer clips exactly as on the whole frame."""
    h, w, _ = canvas.shape
    cx, cy = crosshair_centre(draft)
    r = max(CROSSHAIR_ONLY.crosshair_arm, CROSSHAIR_ONLY.crosshair_width) + 1
    ys = slice(min(max(cy - r, 0), h), min(max(cy + r + 1, 0), h))
    xs = slice(min(max(cx - r, 0), w), min(max(cx + r + 1, 0), w))
    if ys.start < ys.stop and xs.start < xs.stop:
        local = Point(cx - xs.start, cy - ys.start)
        canvas[ys, xs] = draw_overlay(
            canvas[ys, xs], local, mode="crosshair", iteration=0, position_label=None, style=CROSSHAIR_ONLY
        )
    return ys, xs


def crosshair_frame(size: Size, draft: Point) -> np.ndarray:
    """A black ``size`` frame with the crosshair at ``draft`` (:func:`draw_crosshair`): what a replayed
    step shows the simulator."""
    canvas = np.zeros((int(size.height), int(size.width), 3), dtype=np.uint8)
    draw_crosshair(canvas, draft)
    return canvas


def replay_offsets(
    profile: Any,
    vt: pd.DataFrame,
    truths: Mapping[str, Any],
    *,
    seed: int = 0,
    reps: int = 1,
    name: str = "sim",
) -> pd.DataFrame:
    """The simulator's replies to the recorded DVOC inputs: same scene, same drawn crosshair, the task in
    the text (the paper protocol's wording, no crosshair line), ``reps`` draws per step.

    Returns ``vt``'s rows (repeated ``reps`` times, column ``rep``) with ``rx, ry, conf, no_tool, zero,
    drop_x, drop_y`` replaced by the simulator's."""
    from dvoc_bench.models.base import ModelRequest
    from dvoc_bench.models.simulator import SimProfile, SimulatedModel
    from dvoc_bench.protocol.paper import dvoc_prompt
    from dvoc_bench.protocol.tools import tools_for

    prof = profile if isinstance(profile, SimProfile) else SimProfile.from_mapping(profile)
    model = SimulatedModel(name, prof, lambda sid: truths[sid])
    tools = tools_for("offset")
    canvases: dict[tuple[int, int], np.ndarray] = {}
    rows = []
    for rep in range(reps):
        for i, row in enumerate(vt.itertuples(index=False)):
            size = (int(row.W), int(row.H))
            canvas = canvases.setdefault(size, np.zeros((size[1], size[0], 3), dtype=np.uint8))
            window = draw_crosshair(canvas, Point(int(row.px), int(row.py)))
            text = dvoc_prompt(
                instruction=truths[row.task].instruction, overlay="full", predict="relative", history=()
            )
            req = ModelRequest(
                text=text,
                image_png=None,
                image_size=Size(*size),
                tools=tools,
                scene_id=row.task,
                seed=int(seed) * 1_000_003 + rep * 100_003 + i,
                image_rgb=canvas,
            )
            reply = model.respond(req)
            canvas[window] = 0
            if reply.tool_calls:
                args = json.loads(reply.tool_calls[0].arguments)
                rows.append((rep, float(args["dx"]), float(args["dy"]), float(args["confidence"]), False))
            else:
                rows.append((rep, 0.0, 0.0, 0.0, True))
    sim = pd.concat([vt] * reps, ignore_index=True)
    arr = pd.DataFrame(rows, columns=["rep", "rx", "ry", "conf", "no_tool"])
    for c in arr.columns:
        sim[c] = arr[c].to_numpy()
    ok = ~sim["no_tool"]
    sim["zero"] = ok & (sim["rx"] == 0) & (sim["ry"] == 0)
    sim["drop_x"] = ok & ~sim["zero"] & (sim["rx"] == 0) & (sim["tx"].abs() > 30)
    sim["drop_y"] = ok & ~sim["zero"] & (sim["ry"] == 0) & (sim["ty"].abs() > 30)
    return sim


def refine_discrete(
    block: dict[str, Any],
    vt: pd.DataFrame,
    truths: Mapping[str, Any],
    *,
    rounds: int = 3,
    reps: int = 3,
    seed: int = 0,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Correct the zero-report rates (by distance bin, or inside / near the box under ``near.zero_rule:
    box``, then with the axis-drop rates split by the box's span) and the axis-drop rates so that the
    simulator, replayed on the recorded inputs, reproduces the recorded shares per canvas (its rules act
    on the *perceived* offset in its native frame, the records are binned by the true distance).
    Multiplicative updates, clipped to [0, 1]. Returns the new ``sim`` block and the per-round log."""
    block = json.loads(json.dumps(block))  # deep copy
    target = {c: discrete_shares(g) for c, g in vt.groupby("canvas")}
    history = []
    by_box = block.get("near", {}).get("zero_rule") == "box"
    keys: tuple[tuple[str, str, str], ...] = (
        (
            ("zero_in_box_below_15", "near", "p_zero_in_box_below_15"),
            ("zero_in_box_15_30", "near", "p_zero_in_box_below_30"),
            ("zero_in_box_over_30", "near", "p_zero_in_box"),
            ("zero_box_near", "near", "p_zero_box_near"),
            ("axis_drop_x_off_span", "axis_drop", "p_x"),
            ("axis_drop_y_off_span", "axis_drop", "p_y"),
            ("axis_drop_x_in_span", "axis_drop", "p_x_in_span"),
            ("axis_drop_y_in_span", "axis_drop", "p_y_in_span"),
        )
        if by_box
        else (
            ("zero_below_30", "near", "p_zero_below_30"),
            ("zero_30_100", "near", "p_zero_30_100"),
            ("axis_drop_x", "axis_drop", "p_x"),
            ("axis_drop_y", "axis_drop", "p_y"),
        )
    )
    for rnd in range(rounds):
        sim = replay_offsets(block, vt, truths, seed=seed + rnd, reps=reps)
        got = {c: discrete_shares(g) for c, g in sim.groupby("canvas")}
        entry: dict[str, Any] = {"round": rnd}
        for c in target:
            sec = next((e for e in block.get("canvas", []) if canvas_name(*e["size"]) == c), block)
            for share_key, section, knob in keys:
                obs, simv = target[c][share_key], got[c][share_key]
                entry[f"{c}.{share_key}"] = (round_to(obs), round_to(simv))
                cur = float(sec[section][knob])
                if not (math.isfinite(obs) and math.isfinite(simv)):
                    continue
                if simv > 0:  # damped multiplicative step (the replay is noisy)
                    new = cur * (obs / simv) ** 0.7 if cur > 0 else obs
                else:
                    new = obs if obs > 0 else cur
                sec[section][knob] = round_to(min(max(new, 0.0), 1.0))
        history.append(entry)
    return block, history


def replay_clicks(
    profile: Any, ct: pd.DataFrame, truths: Mapping[str, Any], *, seed: int = 0, reps: int = 1
) -> pd.DataFrame:
    """The simulator's ``click_at`` answers to the recorded one-shot inputs (with / without the task as
    recorded); same columns as :func:`click_table`."""
    from dvoc_bench.models.base import ModelRequest
    from dvoc_bench.models.simulator import SimProfile, SimulatedModel
    from dvoc_bench.protocol.paper import oneshot_prompt
    from dvoc_bench.protocol.tools import tools_for

    prof = profile if isinstance(profile, SimProfile) else SimProfile.from_mapping(profile)
    model = SimulatedModel("sim", prof, lambda sid: truths[sid])
    tools = tools_for("point")
    blank: dict[tuple[int, int], np.ndarray] = {}
    rows = []
    for rep in range(reps):
        for i, row in enumerate(ct.itertuples(index=False)):
            size = (int(row.W), int(row.H))
            img = blank.setdefault(size, np.zeros((size[1], size[0], 3), dtype=np.uint8))
            text = oneshot_prompt(
                instruction=truths[row.task].instruction,
                attempt=1 if row.has_task else 0,
                previous=Point(0, 0),
            )
            req = ModelRequest(
                text=text,
                image_png=None,
                image_size=Size(*size),
                tools=tools,
                scene_id=row.task,
                seed=seed * 1_000_003 + rep * 100_003 + i,
                image_rgb=img,
            )
            reply = model.respond(req)
            if reply.tool_calls:
                a = json.loads(reply.tool_calls[0].arguments)
                rows.append((float(a["x"]), float(a["y"]), float(a["confidence"]), False))
            else:
                rows.append((0.0, 0.0, 0.0, True))
    sim = pd.concat([ct] * reps, ignore_index=True)
    sim["rep"] = np.repeat(np.arange(reps), len(ct))
    arr = np.asarray(rows, dtype=object)
    sim["x"], sim["y"], sim["conf"] = (
        arr[:, 0].astype(float),
        arr[:, 1].astype(float),
        arr[:, 2].astype(float),
    )
    sim["no_tool"] = arr[:, 3].astype(bool)
    sim["err_px"] = np.hypot(sim["x"] - sim["Tx"], sim["y"] - sim["Ty"])
    sim["nx"] = sim["x"] * (sim["W"] - 1) / 1000.0
    sim["ny"] = sim["y"] * (sim["H"] - 1) / 1000.0
    sim["err_norm"] = np.hypot(sim["nx"] - sim["Tx"], sim["ny"] - sim["Ty"])
    return sim
