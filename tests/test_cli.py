"""The command line as a user meets it: default sweep, records on disk, bad overrides, resume."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from dvoc_bench.core.rundir import read_jsonl
from tests.support import HANG_S, ROOT, run_cli

pytestmark = pytest.mark.e2e


def test_smoke_sweep_writes_complete_records(tmp_path):
    r = run_cli("smoke=true", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    assert f"run dir: {tmp_path}" in r.stdout
    assert "[SIMULATED]" in r.stdout and "paper-radius" in r.stdout
    plan = list(read_jsonl(tmp_path / "plan.jsonl"))
    trials = list(read_jsonl(tmp_path / "trials.jsonl"))
    steps = list(read_jsonl(tmp_path / "steps.jsonl"))
    assert sorted(p["trial_key"] for p in plan) == sorted(t["trial_key"] for t in trials)
    assert len(list((tmp_path / ".hydra").glob("*/config.yaml"))) == 1  # one folder per invocation
    # every model call has its frame on disk, and every model trial's calls are all there
    frames = {p.stem for p in (tmp_path / "frames").iterdir()}
    assert steps and all(s["frame_sha"] in frames for s in steps)
    calls = {}
    for s in steps:
        calls[s["trial_key"]] = calls.get(s["trial_key"], 0) + 1
    for t in trials:
        assert t["model_calls"] == calls.get(t["trial_key"], 0)
        for field in (
            "trial_key",
            "model",
            "provider",
            "simulated",
            "task",
            "scene_hash",
            "method",
            "protocol",
            "alpha",
            "overlay",
            "predict",
            "coord_frame",
            "seed",
            "rep",
            "start",
            "target_box",
            "final_point",
            "final_dist_px",
            "hit",
            "within_eps",
            "hit_radius",
            "radius_px",
            "stop_reason",
            "status",
            "error_class",
            "error",
            "iterations",
            "model_calls",
            "tokens_in",
            "tokens_out",
            "cost_usd",
            "wall_s",
        ):
            assert field in t, field
        if t["model"].startswith("sim-"):
            assert t["simulated"] is True


def test_same_seed_gives_identical_trials(tmp_path):
    outs = []
    for name in ("a", "b"):
        r = run_cli("smoke=true", "models=[sim-gemma-4-31b]", f"hydra.run.dir={tmp_path / name}")
        assert r.returncode == 0, r.stderr
        rows = sorted(read_jsonl(tmp_path / name / "trials.jsonl"), key=lambda t: t["trial_key"])
        for t in rows:
            t.pop("wall_s"), t.pop("finished_at")
        outs.append(rows)
    assert outs[0] == outs[1]
    r = run_cli("smoke=true", "models=[sim-gemma-4-31b]", "seed=1", f"hydra.run.dir={tmp_path / 'c'}")
    other = sorted(read_jsonl(tmp_path / "c" / "trials.jsonl"), key=lambda t: t["trial_key"])
    assert [t["trial_key"] for t in other] != [t["trial_key"] for t in outs[0]]


def test_bad_override_fails_in_one_line_naming_the_key(tmp_path):
    r = run_cli("methods=[dvoc,teleport]", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert lines[0].startswith(
        "config error: methods: unknown value 'teleport'; allowed: dvoc, oneshot, centre"
    )
    r = run_cli("model=not-a-model", f"hydra.run.dir={tmp_path}")
    assert r.returncode != 0 and "not-a-model" in r.stderr
    r = run_cli("starts=sometimes", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 2 and "starts" in r.stderr


def test_model_and_task_shorthands(tmp_path):
    r = run_cli("model=sim-ideal", "task=S4", "methods=[dvoc]", f"hydra.run.dir={tmp_path}")
    assert r.returncode == 0, r.stderr
    trials = list(read_jsonl(tmp_path / "trials.jsonl"))
    assert {(t["model"], t["task"], t["method"]) for t in trials} == {("sim-ideal", "S4", "dvoc")}
    assert len(trials) == 5  # the paper's five start points


def test_help_does_not_import_litellm():
    code = (
        "import sys, runpy\nsys.argv=['dvoc_bench','--help']\n"
        "try:\n    runpy.run_module('dvoc_bench', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "bad=[m for m in ('litellm','pandas','matplotlib.pyplot') if m in sys.modules]\n"
        "print('HEAVY', bad)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert "HEAVY []" in r.stdout, r.stdout + r.stderr
    assert "models" in r.stdout  # hydra's help shows the config


def _slow_models_dir(tmp_path):
    """A copy of the ideal simulator profile with 40 ms latency per call, so a sweep can be killed."""
    d = tmp_path / "models"
    d.mkdir()
    cfg = yaml.safe_load((ROOT / "conf" / "model" / "sim-ideal.yaml").read_text())
    cfg["name"] = "sim-slow"
    cfg["sim"]["latency_s"] = 0.04
    (d / "sim-slow.yaml").write_text(yaml.safe_dump(cfg))
    return d


def test_killed_sweep_resumes_without_duplicates_or_losses(tmp_path):
    models = _slow_models_dir(tmp_path)
    run_dir = tmp_path / "run"
    args = [
        sys.executable,
        "-m",
        "dvoc_bench",
        "models=[sim-slow]",
        "methods=[dvoc,oneshot]",
        "run.max_in_flight=4",
        f"paths.models={models}",
        f"hydra.run.dir={run_dir}",
        "run.quiet=true",
    ]
    p = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trials = run_dir / "trials.jsonl"
    deadline = time.time() + 60
    while time.time() < deadline:
        if trials.exists() and sum(1 for _ in trials.open()) >= 8:
            break
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    done_before = sum(1 for _ in read_jsonl(trials))
    planned = {json.loads(line)["trial_key"] for line in (run_dir / "plan.jsonl").open()}
    assert 8 <= done_before < len(planned), "the kill should land mid-sweep"
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr
    keys = [json.loads(line)["trial_key"] for line in trials.open()]  # every line parses
    assert sorted(keys) == sorted(planned)
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").open()]
    pairs = [(s["trial_key"], s["index"]) for s in steps]
    assert len(pairs) == len(set(pairs)), "no step is duplicated by the resume"
    by_trial = {}
    for s in steps:
        by_trial[s["trial_key"]] = by_trial.get(s["trial_key"], 0) + 1
    for t in read_jsonl(trials):
        assert by_trial.get(t["trial_key"], 0) == t["model_calls"]


@pytest.mark.parametrize(
    ("overrides", "line"),
    [
        # unknown group options (Hydra composition errors)
        (["model=gpt-9"], "model: unknown value 'gpt-9'; allowed: claude-opus-4-7, claude-sonnet-4-6, "),
        (
            ["detector=yolo"],
            "detector: unknown value 'yolo'; allowed: cv, helper, omniparser, onnx, oracle, rknn",
        ),
        (["experiment=nope"], "experiment: unknown value 'nope'; allowed: ablation_alpha, "),
        # unknown keys
        (["loop.eps=3"], "loop.eps: unknown key; allowed: epsilon, threshold, window, max_iterations"),
        (["+foo=1"], "foo: unknown key; allowed: models, model, tasks"),
        (["detector=cv", "detector.gap=3"], "detector.gap: unknown key; allowed: edge_threshold, gap_x"),
        # ranges, types, allowed values
        (["loop.epsilon=nan"], "loop.epsilon: must be a finite number, got nan"),
        (["loop.epsilon=-5"], "loop.epsilon: must be greater than 0, got -5"),
        (["seed=abc"], "seed: must be a whole number, got 'abc'"),
        (["repeats=0"], "repeats: must be greater than or equal to 1, got 0"),
        (["alphas=[fast]"], "alphas: unknown value 'fast'; allowed: decay, constant, undamped, adaptive"),
        (["methods=[dvoc"], "override: cannot parse"),
    ],
)
def test_every_bad_input_is_one_line_and_exit_code_2(tmp_path, overrides, line):
    r = run_cli(*overrides, f"hydra.run.dir={tmp_path / 'run'}", "run.quiet=true")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"config error: {line}"), lines[0]
    assert not (tmp_path / "run" / "trials.jsonl").exists() and not (tmp_path / "run" / "plan.jsonl").exists()


def test_hydra_full_error_still_shows_the_trace(tmp_path):
    r = run_cli("model=gpt-9", f"hydra.run.dir={tmp_path}", env_extra={"HYDRA_FULL_ERROR": "1"})
    assert r.returncode != 0 and "Traceback" in r.stderr and "MissingConfigException" in r.stderr


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("temprature", 0.2, "model bad: temprature: unknown key; allowed: name, kind, model_id"),
        ("timeout_s", -1, "model bad: timeout_s: must be greater than 0, got -1"),
        ("coord_frame", "norm100", "model bad: coord_frame: unknown value 'norm100'; allowed: pixel"),
        ("limits", {"rpm": 0}, "model bad: limits.rpm: must be greater than 0, got 0"),
        ("sim", {"nosie": {}}, "model bad: sim.nosie: unknown key; allowed: "),  # before any trial runs
    ],
)
def test_a_bad_model_file_is_one_line_and_exit_code_2(tmp_path, key, value, line):
    """Model configs are validated like the settings: one line naming the file's key, nothing run."""
    models = tmp_path / "conf" / "model"
    models.mkdir(parents=True)
    good = yaml.safe_load((ROOT / "conf" / "model" / "sim-ideal.yaml").read_text(encoding="utf-8"))
    (models / "bad.yaml").write_text(yaml.safe_dump({**good, "name": "bad", key: value}), encoding="utf-8")
    run_dir = f"hydra.run.dir={tmp_path / 'run'}"
    r = run_cli("models=[bad]", f"paths.models={models}", run_dir, "run.quiet=true")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"config error: {line}"), lines[0]
    assert not (tmp_path / "run" / "trials.jsonl").exists() and not (tmp_path / "run" / "plan.jsonl").exists()
