"""Calibration (issue 8) without the authors' records: the fit recovers what the simulator was told, the
simulator's calibration knobs behave, the committed profiles load, and a simulated run is reproducible."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dvoc_bench import calibration as cal
from dvoc_bench.analysis.loaders import load_runs
from dvoc_bench.core.geometry import Point, Size, span_distance
from dvoc_bench.draw.render import OverlayStyle, draw_overlay, find_crosshair
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.config import load_model_config
from dvoc_bench.models.factory import build_model
from dvoc_bench.models.simulator import SimProfile, SimulatedModel, load_profile
from dvoc_bench.protocol.tools import tools_for
from dvoc_bench.runner.compose import compose, quick_setup
from dvoc_bench.runner.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf" / "model"
CALIBRATED = ("sim-gemini-3.1-flash-lite", "sim-gemma-4-26b", "sim-gemma-4-31b")


# --------------------------------------------------------------------------------------- fixtures


def _grid(n_per_task: int = 50, seed: int = 1) -> pd.DataFrame:
    """Verify-table inputs on S1-S6: crosshairs spread over the canvas (no reports yet)."""
    rng = np.random.default_rng(seed)
    truths = cal.replay_truths(cal.SYNTHETIC_TASKS)
    rows = []
    for task, tr in truths.items():
        c = tr.target_box.centre
        for _ in range(n_per_task):
            d = float(rng.choice([rng.uniform(5, 30), rng.uniform(30, 100), rng.uniform(100, 320)]))
            ang = rng.uniform(0, 2 * math.pi)
            px = float(np.clip(np.floor(c.x + d * math.cos(ang)), 20, 779))
            py = float(np.clip(np.floor(c.y + d * math.sin(ang)), 20, 579))
            rows.append((task, px, py, c.x, c.y, *span_distance(tr.target_box, Point(px, py))))
    df = pd.DataFrame(rows, columns=["task", "px", "py", "Tx", "Ty", "bdx", "bdy"])
    df["bd"] = np.hypot(df["bdx"], df["bdy"])
    df["model"], df["trial_key"], df["canvas"], df["index"] = (
        "m",
        [f"t{i}" for i in range(len(df))],
        "800x600",
        0,
    )
    df["W"], df["H"] = 800.0, 600.0
    df["gx"], df["gy"] = 1000 / 799, 1000 / 599
    df["tx"], df["ty"] = df["Tx"] - df["px"], df["Ty"] - df["py"]
    df["d"] = np.hypot(df["tx"], df["ty"])
    df["bin"] = cal.distance_bin(df["d"])
    for col in ("rx", "ry", "conf"):
        df[col] = 0.0
    for col in ("no_tool", "zero", "drop_x", "drop_y"):
        df[col] = False
    return df


TRUTHS = cal.replay_truths(cal.SYNTHETIC_TASKS)
KNOWN = {
    "frames": {"norm1000": 0.7, "pixel": 0.2, "mixed": 0.1},
    "noise": {"dist": "laplace", "scale_px": 4.0},
    "outlier": {"p": 0.05, "wrong_element_share": 0.0, "min_px": 80, "max_px": 200},
    "near": {"p_zero_below_30": 0.4, "p_zero_30_100": 0.1},
    "axis_drop": {"p_x": 0.3, "p_y": 0.0},
    "confidence": {"values": [0.9, 1.0], "probs": [0.5, 0.5]},
}


@pytest.fixture(scope="module")
def replayed() -> pd.DataFrame:
    return cal.replay_offsets(KNOWN, _grid(), TRUTHS, seed=3, reps=2)


# --------------------------------------------------------------------------------------- the fit


@pytest.mark.e2e
def test_em_recovers_the_simulators_frames_gain_and_noise(replayed: pd.DataFrame) -> None:
    fit = cal.fit_offsets(replayed, family="laplace", iters=25)
    assert fit.n > 400
    assert fit.frames["norm1000"] == pytest.approx(0.7, abs=0.08)
    assert fit.frames["pixel"] == pytest.approx(0.2, abs=0.08)
    assert fit.frames["mixed"] == pytest.approx(0.1, abs=0.06)
    assert fit.gain == pytest.approx((1.0, 1.0), abs=0.05)
    assert fit.shrink_below_100 == pytest.approx(1.0, abs=0.08)
    assert 2.5 < fit.noise_scale_px < 6.0
    assert fit.outlier_p < 0.15
    assert fit.loglik > fit.loglik_alt or math.isnan(fit.loglik_alt)


@pytest.mark.e2e
def test_the_shrink_edge_is_found_and_kept_at_100_without_a_shrink(replayed: pd.DataFrame) -> None:
    """``near.shrink_below_px``: a simulated model that under-reports below 60 px gives edge 60 and its
    shrink back; one that never under-reports keeps the first profiles' 100 px (no gain, no move)."""
    assert cal.fit_offsets(replayed, family="laplace", iters=25).shrink_below_px == 100.0
    shrunk = {**KNOWN, "near": {**KNOWN["near"], "shrink_below_100": 0.6, "shrink_below_px": 60.0}}
    fit = cal.fit_offsets(cal.replay_offsets(shrunk, _grid(), TRUTHS, seed=3, reps=2), "laplace", 25)
    assert fit.shrink_below_px == 60.0
    assert fit.shrink_below_100 == pytest.approx(0.6, abs=0.08)


def test_discrete_shares_see_the_zero_and_axis_drop_rates(replayed: pd.DataFrame) -> None:
    s = cal.discrete_shares(replayed)
    assert 0.2 < s["zero_below_30"] < 0.55  # noise and the mixed frame push some perceived offsets over 30 px
    assert s["zero_30_100"] == pytest.approx(0.1, abs=0.06)
    assert s["axis_drop_x"] == pytest.approx(0.3, abs=0.08)
    assert s["axis_drop_y"] == 0.0
    assert s["zero_100_300"] < 0.02


@pytest.mark.e2e
def test_refinement_moves_the_rates_toward_the_recorded_shares(replayed: pd.DataFrame) -> None:
    recorded = replayed[replayed["rep"] == 0].drop(columns="rep").reset_index(drop=True)
    start = json.loads(json.dumps(KNOWN))
    start["near"] = {"p_zero_below_30": 0.05, "p_zero_30_100": 0.5}
    start["axis_drop"] = {"p": 0.0, "p_x": 0.0, "p_y": 0.0}
    block, log = cal.refine_discrete(start, recorded, TRUTHS, rounds=3, reps=1, seed=9)
    assert len(log) == 3
    assert abs(block["near"]["p_zero_below_30"] - 0.4) < abs(0.05 - 0.4)
    assert abs(block["near"]["p_zero_30_100"] - 0.1) < abs(0.5 - 0.1)
    assert block["axis_drop"]["p_x"] > 0.15 and block["axis_drop"]["p_y"] == 0.0


def test_confidence_buckets_follow_the_reported_magnitude() -> None:
    vt = _grid(20)
    vt["rx"] = np.where(vt["d"] < 30, 0.0, vt["tx"] * vt["gx"])
    vt["ry"] = np.where(vt["d"] < 30, 0.0, vt["ty"] * vt["gy"])
    vt["conf"] = np.where(vt["d"] < 30, 1.0, 0.8)
    fit = cal.fit_confidence(vt, (1.0, 1.0), "norm1000", alpha=0.0)
    first, last = fit["buckets"][0], fit["buckets"][-1]
    assert first["max_px"] == 0.5 and dict(zip(first["values"], first["probs"], strict=True))[1.0] == 1.0
    assert last["max_px"] is None and dict(zip(last["values"], last["probs"], strict=True))[0.8] == 1.0


def test_oneshot_fit_reads_the_frame_noise_and_taskless_share() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(200):
        tx, ty = 360.0, 220.0
        has_task = i % 4 != 0
        on_target = has_task or i % 8 == 0  # half of the task-less first calls land on the target
        cx, cy = (tx, ty) if on_target else (160.0, 220.0)
        x = (cx + rng.laplace(0, 2.0)) * 1000 / 799
        y = (cy + rng.laplace(0, 2.0)) * 1000 / 599
        rows.append(("S3", 0 if not has_task else 1, has_task, x, y, 1.0, tx, ty, 300, 200, 420, 240))
    df = pd.DataFrame(
        rows, columns=["task", "index", "has_task", "x", "y", "conf", "Tx", "Ty", "x0", "y0", "x1", "y1"]
    )
    df["W"], df["H"], df["no_tool"] = 800.0, 600.0, False
    df["err_px"] = np.hypot(df["x"] - df["Tx"], df["y"] - df["Ty"])
    df["nx"], df["ny"] = df["x"] * 799 / 1000, df["y"] * 599 / 1000
    df["err_norm"] = np.hypot(df["nx"] - df["Tx"], df["ny"] - df["Ty"])
    fit = cal.fit_oneshot(df, {"S3": "other"})
    assert fit["norm1000_share"] == 1.0
    assert 1.3 < fit["noise_px"] < 2.8
    assert fit["no_task_target"] == pytest.approx(0.5, abs=0.01)


def test_compare_trials_is_zero_for_identical_outcomes_and_sees_a_shift() -> None:
    rows = []
    for task in ("S1", "S2"):
        for start in range(1, 6):
            for rep in range(3):
                hit = (start + rep) % 2 == 0
                rows.append(
                    {
                        "model": "m",
                        "method": "dvoc",
                        "task": task,
                        "start_index": start,
                        "valid": True,
                        "status": "ok",
                        "hit_radius": hit,
                        "final_dist_px": 10.0 + start,
                        "iterations": 4 + rep,
                    }
                )
    rec = pd.DataFrame(rows)
    same = rec.assign(model="sim-m")
    out = cal.compare_trials(rec, same, n_boot=200)
    r = out.iloc[0]
    assert r["diff_pp"] == pytest.approx(0.0) and r["diff_dist"] == pytest.approx(0.0)
    assert r["diff_pp_lo"] <= 0 <= r["diff_pp_hi"] and r["rate_interval_covers_0"]
    worse = same.assign(hit_radius=False, final_dist_px=same["final_dist_px"] + 5)
    r = cal.compare_trials(rec, worse, n_boot=200).iloc[0]
    assert r["diff_pp"] == pytest.approx(-100 * rec["hit_radius"].mean())
    assert r["diff_dist"] == pytest.approx(5.0) and r["diff_dist_lo"] == pytest.approx(5.0)
    assert not r["rate_interval_covers_0"]
    table = cal.validation_table(out)
    assert list(table.columns)[:2] == ["model", "method"] and "diff pp [95% CI]" in table.columns


# ------------------------------------------------------------------------------- simulator knobs


def _offset_reply(model: SimulatedModel, scene: str, draft: tuple[int, int], text: str, seed: int = 0):
    truth = TRUTHS[scene]
    img = cal.crosshair_frame(truth.size, Point(*draft))
    req = ModelRequest(text, None, truth.size, tools_for("offset"), scene, seed, image_rgb=img)
    return req, model.respond(req)


@pytest.mark.parametrize("draft", [(194, 92), (0, 0), (799, 599), (5, 300), (12, 14), (-20, 40), (815, 300)])
def test_replayed_frames_hold_the_renderers_crosshair_alone(draft: tuple[int, int]) -> None:
    size = Size(800, 600)
    frame = cal.crosshair_frame(size, Point(*draft))
    full = draw_overlay(
        np.zeros((600, 800, 3), dtype=np.uint8),
        Point(*draft),
        mode="full",
        iteration=3,
        position_label="(1, 2)",
        style=OverlayStyle(),
    )
    red = np.all(full == (255, 0, 0), axis=-1)  # the harness's crosshair (circle and labels are not red)
    assert np.array_equal(np.all(frame == (255, 0, 0), axis=-1), red)
    assert not frame[~red].any()  # nothing else is drawn
    if 0 <= draft[0] < 800 and 0 <= draft[1] < 600:
        assert find_crosshair(frame, width=3) == Point(*draft)
    canvas = np.zeros((600, 800, 3), dtype=np.uint8)  # drawn in place on a reused canvas, then cleared
    window = cal.draw_crosshair(canvas, Point(*draft))
    assert np.array_equal(canvas, frame)
    canvas[window] = 0
    assert not canvas.any()


def test_canvas_overrides_apply_to_scenes_of_that_size_only() -> None:
    prof = SimProfile.from_mapping(
        {"frames": {"pixel": 1.0}, "canvas": [{"size": [800, 600], "frames": {"norm1000": 1.0}}]}
    )
    model = SimulatedModel("s", prof, TRUTHS.__getitem__)
    _, r = _offset_reply(model, "S1", (194, 92), "Click the CLICK ME button")
    args = json.loads(r.tool_calls[0].arguments)
    assert (args["dx"], args["dy"]) == (round(206 * 1000 / 799), round(208 * 1000 / 599))  # norm1000 here
    other = SimProfile.from_mapping(
        {"frames": {"pixel": 1.0}, "canvas": [{"size": [1280, 720], "frames": {"norm1000": 1.0}}]}
    )
    _, r = _offset_reply(
        SimulatedModel("s", other, TRUTHS.__getitem__), "S1", (194, 92), "Click the CLICK ME button"
    )
    assert json.loads(r.tool_calls[0].arguments)["dx"] == 206  # no entry for 800x600: the top level
    with pytest.raises(ValueError, match=r"sim\.canvas\.0\.size"):
        SimProfile.from_mapping({"canvas": [{"size": [800]}]})
    with pytest.raises(ValueError, match=r"sim\.canvas\.0\.nosie"):
        SimProfile.from_mapping({"canvas": [{"size": [800, 600], "nosie": {}}]})


def test_no_task_target_and_per_axis_drops() -> None:
    base = {"frames": {"pixel": 1.0}, "oneshot": {"noise_px": 0.0, "frames": {"pixel": 1.0}}}
    always = SimulatedModel("s", SimProfile.from_mapping({**base, "no_task_target": 1.0}), TRUTHS.__getitem__)
    never = SimulatedModel("s", SimProfile.from_mapping(base), TRUTHS.__getitem__)
    truth = TRUTHS["S3"]
    img = np.zeros((600, 800, 3), dtype=np.uint8)
    req = ModelRequest(
        "Find the target element.", None, truth.size, tools_for("point"), "S3", 0, image_rgb=img
    )
    a = json.loads(always.respond(req).tool_calls[0].arguments)
    b = json.loads(never.respond(req).tool_calls[0].arguments)
    assert (a["x"], a["y"]) == (360, 220)  # the target (Submit)
    assert (b["x"], b["y"]) == (160, 220)  # the first element (Cancel), as before
    drop = SimulatedModel(
        "s", SimProfile.from_mapping({**base, "axis_drop": {"p_x": 1.0, "p_y": 0.0}}), TRUTHS.__getitem__
    )
    _, r = _offset_reply(drop, "S1", (194, 92), "Click the CLICK ME button")
    args = json.loads(r.tool_calls[0].arguments)
    assert (args["dx"], args["dy"]) == (0, 208)


def test_relative_noise_grows_with_distance_and_zero_keeps_the_replies() -> None:
    base = {"frames": {"pixel": 1.0}, "noise": {"scale_px": 0.0}}
    assert SimProfile.from_mapping(
        {**base, "noise": {"scale_px": 0.0, "rel": 0.0}}
    ) == SimProfile.from_mapping(base)
    model = SimulatedModel(
        "s", SimProfile.from_mapping({**base, "noise": {"scale_px": 0.0, "rel": 0.2}}), TRUTHS.__getitem__
    )
    near, far = [], []
    for seed in range(60):
        for draft, out in (((370, 290), near), ((100, 80), far)):
            _, r = _offset_reply(model, "S1", draft, "Click the CLICK ME button", seed)
            a = json.loads(r.tool_calls[0].arguments)
            out.append(abs(a["dx"] - (400 - draft[0])))
    assert np.median(far) > 4 * np.median(near)


def test_sampled_latency_is_off_by_default_and_never_changes_the_reply() -> None:
    quiet = SimProfile.from_mapping({"latency": {"median_s": 0.01, "sigma": 0.5}})
    timed = quiet.model_copy(update={"latency": quiet.latency.model_copy(update={"scale": 1.0})})
    m1 = SimulatedModel("s", quiet, TRUTHS.__getitem__)
    m2 = SimulatedModel("s", timed, TRUTHS.__getitem__)
    req, r1 = _offset_reply(m1, "S2", (100, 100), "Click the small green button")
    assert m1.latency_for(req) == 0.0
    d = m2.latency_for(req)
    assert 0.0 < d < 0.2 and d == m2.latency_for(req)  # deterministic per request
    r2 = asyncio.run(m2.complete(req))
    assert r2.tool_calls == r1.tool_calls and r2.latency_s == pytest.approx(d)


# ------------------------------------------------------------------------------------ profiles


@pytest.mark.parametrize("name", CALIBRATED)
def test_committed_profiles_are_calibrated_and_load(name: str) -> None:
    path = CONF / f"{name}.yaml"
    text = path.read_text()
    assert "CALIBRATED" in text
    cfg = load_model_config(name, CONF)  # the loader accepts the fit: block
    assert cfg.kind == "simulator" and cfg.coord_frame == "norm1000"
    prof = load_profile(path)
    assert prof.canvas and {c.size for c in prof.canvas} == {(800, 600), (1280, 720)}
    assert prof.latency.scale == 0.0 and prof.latency_s == 0.0 and prof.latency.median_s > 0  # fast offline
    fit = yaml.safe_load(text)["fit"]
    assert fit["data"]["model"] == name.removeprefix("sim-")
    assert fit["data"]["verify_steps"] > 100 and fit["data"]["files"]
    assert fit["goodness"] and all(
        {"stat", "recorded", "simulated", "within"} <= set(g) for g in fit["goodness"]
    )
    assert build_model(cfg, TRUTHS.__getitem__).simulated


def test_the_quick_experiment_uses_the_calibrated_profiles() -> None:
    cfg, choices = compose([])
    assert choices["experiment"] == "quick"
    assert set(CALIBRATED) <= set(cfg["models"])
    for name in CALIBRATED:
        assert "CALIBRATED" in (CONF / f"{name}.yaml").read_text()


# ---------------------------------------------------------------------------------- determinism


def _run(run_dir: Path, seed: int) -> pd.DataFrame:
    setup = quick_setup(
        [
            "experiment=paper_main",
            "models=[sim-gemini-3.1-flash-lite]",
            "tasks=[S2,S3]",
            "repeats=1",
            f"seed={seed}",
            "run.quiet=true",
        ]
    )
    run_sweep(setup, run_dir)
    return load_runs(run_dir).steps


@pytest.mark.e2e
def test_same_seed_gives_an_identical_simulated_run(tmp_path: Path) -> None:
    a, b, c = _run(tmp_path / "a", 0), _run(tmp_path / "b", 0), _run(tmp_path / "c", 1)
    cols = ["trial_key", "index", "raw_dx", "raw_dy", "raw_x", "raw_y", "confidence", "next_x", "next_y"]

    def key(df: pd.DataFrame) -> pd.DataFrame:
        return df[cols].sort_values(["trial_key", "index"]).reset_index(drop=True)

    pd.testing.assert_frame_equal(key(a), key(b))
    assert len(a) > 20
    assert not key(a)[cols[2:]].equals(key(c)[cols[2:]])  # another seed, other draws


def test_point_outliers_can_be_restricted_to_other_elements() -> None:
    prof = {
        "oneshot": {"noise_px": 0.0, "outlier_p": 1.0, "frames": {"pixel": 1.0}, "wrong_element_only": True}
    }
    model = SimulatedModel("s", SimProfile.from_mapping(prof), TRUTHS.__getitem__)

    def answer(scene: str, seed: int) -> tuple[int, int]:
        truth = TRUTHS[scene]
        img = np.zeros((600, 800, 3), dtype=np.uint8)
        req = ModelRequest(
            truth.instruction, None, truth.size, tools_for("point"), scene, seed, image_rgb=img
        )
        a = json.loads(model.respond(req).tool_calls[0].arguments)
        return a["x"], a["y"]

    assert {answer("S1", s) for s in range(10)} == {(400, 300)}  # one element: no outlier is possible
    others = {
        (round(e.box.centre.x), round(e.box.centre.y)) for e in TRUTHS["S3"].elements if e.id != "submit"
    }
    assert {answer("S3", s) for s in range(10)} <= others  # always another button
    with pytest.raises(ValueError, match=r"sim\.oneshot\.wrong_element_only"):
        SimProfile.from_mapping({"oneshot": {"wrong_element_only": "yes"}})


def test_axis_drops_stop_beyond_their_reach() -> None:
    prof = {"frames": {"pixel": 1.0}, "axis_drop": {"p_x": 1.0, "p_y": 0.0, "max_px": 100}}
    model = SimulatedModel("s", SimProfile.from_mapping(prof), TRUTHS.__getitem__)
    _, far = _offset_reply(model, "S1", (194, 92), "Click the CLICK ME button")  # 292 px: beyond the reach
    _, near = _offset_reply(model, "S1", (340, 270), "Click the CLICK ME button")  # 67 px
    assert json.loads(far.tool_calls[0].arguments)["dx"] == 206
    assert json.loads(near.tool_calls[0].arguments)["dx"] == 0


def test_instance_relabels_the_random_streams_only() -> None:
    noisy = {"frames": {"pixel": 1.0}, "noise": {"scale_px": 5.0}}
    a = SimulatedModel("s", SimProfile.from_mapping(noisy), TRUTHS.__getitem__)
    b = SimulatedModel("s", SimProfile.from_mapping({**noisy, "instance": 1}), TRUTHS.__getitem__)
    got_a = [
        json.loads(
            _offset_reply(a, "S1", (194, 92), "Click the CLICK ME button", s)[1].tool_calls[0].arguments
        )
        for s in range(20)
    ]
    got_b = [
        json.loads(
            _offset_reply(b, "S1", (194, 92), "Click the CLICK ME button", s)[1].tool_calls[0].arguments
        )
        for s in range(20)
    ]
    assert got_a != got_b  # other draws
    assert abs(np.mean([g["dx"] for g in got_a]) - np.mean([g["dx"] for g in got_b])) < 6  # same model
    exact = {"frames": {"pixel": 1.0}, "noise": {"scale_px": 0.0}}
    c = SimulatedModel("s", SimProfile.from_mapping({**exact, "instance": 3}), TRUTHS.__getitem__)
    assert (
        json.loads(_offset_reply(c, "S1", (194, 92), "Click the CLICK ME button")[1].tool_calls[0].arguments)[
            "dx"
        ]
        == 206
    )


def test_axis_drops_stop_beyond_their_axis_reach() -> None:
    """``axis_drop.max_axis_px``: an axis further off than the reach is never dropped (Gemini dropped x only
    while x was at most 100 px off on 800x600)."""
    size = Size(800, 600)
    truth = cal.replay_truths(["S1"])["S1"]
    tools = [{"type": "function", "function": {"name": "report_offset", "parameters": {}}}]
    img = np.zeros((600, 800, 3), dtype=np.uint8)
    img[289:292, 200:231] = (255, 0, 0)  # crosshair at (215, 290): x is 185 px off, y 10 (a drop of x
    img[275:306, 214:217] = (255, 0, 0)  # must not leave (0, 0): that would be a zero report)

    def dropped(reach: float | None) -> int:
        sim = {"frames": {"pixel": 1}, "axis_drop": {"p": 1.0, "max_axis_px": reach}}
        model = SimulatedModel("m", SimProfile.from_mapping(sim), lambda _: truth)
        req = [
            ModelRequest("Click the CLICK ME button", None, size, tools, "S1", s, image_rgb=img)
            for s in range(20)
        ]
        return sum(json.loads(model.respond(r).tool_calls[0].arguments)["dx"] == 0 for r in req)

    assert dropped(None) == 20 and dropped(100.0) == 0


def test_check_with_a_no_fit_mode_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--check`` compares a fit with the files; ``--predictive`` / ``--repeat-check`` run without a fit, so
    the combination would check nothing and pass: one line, exit 2, before any data is read."""
    from dvoc_bench.calibrate import main

    for mode in ("--predictive", "--repeat-check"):
        assert main(["--upstream", "/nonexistent", "--check", mode]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and mode in err and "--check" in err


def test_the_predictive_interval_is_the_central_95_percent_of_the_draws_not_their_range() -> None:
    """A count among the simulated draws but outside their central 95 % is outside the interval: widening
    the interval to the draws' min-max would call it inside."""
    from dvoc_bench.calibration.predictive import _row

    counts = np.array([0.0] + [50.0] * 998 + [100.0])  # one extreme draw each side
    row = _row(0, 100, counts)
    assert (row["lo"], row["hi"]) == (50, 50) and row["inside"] is False
    assert _row(50, 100, counts)["inside"] is True
    spread = np.arange(1000, dtype=float)  # 2.5 % and 97.5 % quantiles: 24.975 and 974.025
    assert (_row(500, 1000, spread)["lo"], _row(500, 1000, spread)["hi"]) == (24, 975)
    assert _row(10, 1000, spread)["inside"] is False and _row(990, 1000, spread)["inside"] is False
