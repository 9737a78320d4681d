"""The bridge into Inspect (dvoc_bench.inspect): conversions both ways, the same trials as a sweep, the shell
form Inspect's docs use, a real OpenAI-compatible server on loopback through Inspect's openai-api provider,
and the log read back by the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.support import HANG_S, import_or_need, served_simulator

inspect_ai = import_or_need("INSPECT", "inspect_ai", at_module_level=True)

from dvoc_bench.core.geometry import Size  # noqa: E402
from dvoc_bench.inspect import adapter  # noqa: E402
from dvoc_bench.models.base import ModelRequest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TOOL = {
    "type": "function",
    "function": {
        "name": "report_offset",
        "description": "Offset from the crosshair to the target.",
        "parameters": {
            "type": "object",
            "properties": {
                "dx": {"type": "number", "description": "right is positive"},
                "dy": {"type": "number", "description": "down is positive"},
                "confidence": {"type": "number"},
            },
            "required": ["dx", "dy", "confidence"],
        },
    },
}


def _request(**kw: Any) -> ModelRequest:
    fields: dict[str, Any] = dict(
        text="Where is the Submit button?",
        image_png=b"\x89PNG fake",
        image_size=Size(800, 600),
        tools=[TOOL],
        scene_id="S1",
        seed=7,
        tool_choice="required",
        params={"temperature": 0.0, "max_tokens": 64},
        crop=(10.0, 20.0, 410.0, 320.0),
    )
    fields.update(kw)
    return ModelRequest(**fields)


def test_request_round_trip_keeps_text_image_tools_seed_and_crop() -> None:
    req = _request()
    messages = adapter.inspect_input(req)
    tools = adapter.tool_infos(req.tools)
    config = adapter.generate_config(req, send_crop=True)
    body = adapter.openai_body("sim-ideal", messages, tools, "any", config)
    content = body["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": req.text}
    assert content[1]["image_url"]["url"] == req.data_url()
    fn = body["tools"][0]["function"]
    assert fn["name"] == "report_offset"
    assert set(fn["parameters"]["properties"]) == {"dx", "dy", "confidence"}
    assert fn["parameters"]["required"] == ["dx", "dy", "confidence"]
    assert body["tool_choice"] == "required"
    assert body["seed"] == 7 and body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert body["dvoc_crop"] == [10.0, 20.0, 410.0, 320.0]
    # a real model's config never carries the crop
    assert "extra_body" not in adapter.generate_config(req, send_crop=False).model_dump(exclude_none=True)


def test_completion_round_trip_keeps_tool_calls_text_and_usage() -> None:
    completion = {
        "model": "sim-ideal",
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "content": "moving",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "function": {"name": "report_offset", "arguments": '{"dx": -12.5, "dy": 3}'},
                        },
                        {"id": "c2", "function": {"name": "report_offset", "arguments": "{not json"}},
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 30, "total_tokens": 1030},
        "dvoc_simulator_note": "[simulator] no task recognised",
    }
    out = adapter.output_of(completion, "dvoc_simulator_note")
    reply = adapter.reply_of(out)
    assert reply.text == "moving"
    assert reply.tool_calls[0].name == "report_offset"
    assert reply.tool_calls[0].arguments == {"dx": -12.5, "dy": 3}
    # arguments Inspect could not parse reach our readers as text, not as an empty object
    assert isinstance(reply.tool_calls[1].arguments, str)
    assert (reply.tokens_in, reply.tokens_out) == (1000, 30)
    assert out.metadata == {"dvoc_simulator_note": "[simulator] no task recognised"}


def test_an_output_error_is_a_call_error_in_one_line() -> None:
    from inspect_ai.model import ModelOutput

    from dvoc_bench.models.base import ModelCallError

    out = ModelOutput.from_content("m", "", stop_reason="unknown", error="boom\nsecond line")
    with pytest.raises(ModelCallError, match=r"^inspect model error: boom$"):
        adapter.reply_of(out)


def _by_input(trials: list[dict[str, Any]]) -> dict[tuple[str, Any, int], tuple[Any, ...]]:
    return {
        (t["task"], t["start_index"], t["rep"]): (
            t["trial_key"],
            t["final_point"],
            t["hit"],
            t["model_calls"],
        )  # fmt: skip
        for t in trials
    }


def _sweep(overrides: list[str]) -> list[dict[str, Any]]:
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    with tempfile.TemporaryDirectory() as d:
        return run_sweep(quick_setup(overrides), d).trials


@pytest.mark.e2e
@pytest.mark.parametrize("method", ["dvoc", "som"])
def test_inspect_eval_runs_the_sweeps_own_trials(method: str, tmp_path: Path) -> None:
    """Per input: the same trial key, final point, verdict and calls as python -m dvoc_bench, although the
    dvoc provider is told nothing but the request (the scene is recognised from the screenshot)."""
    from inspect_ai import eval as inspect_eval

    from dvoc_bench.inspect import solvers
    from dvoc_bench.inspect.tasks import synthetic

    logs = inspect_eval(
        synthetic(tasks="S3"),
        solver=getattr(solvers, method)(),
        model="dvoc/sim-ideal",
        log_dir=str(tmp_path),
        display="none",
    )
    assert logs[0].status == "success" and len(logs[0].samples) == 5  # S3 x five start points
    ours = _by_input([s.metadata["dvoc"]["trial"] for s in logs[0].samples])
    theirs = _by_input(_sweep(["tasks=[S3]", f"methods=[{method}]", "models=[sim-ideal]"]))
    # Set-of-Mark runs once per input: its five samples of a scene are one trial
    assert len(theirs) == (1 if method == "som" else 5)
    assert ours == theirs


def _shell(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    inspect_bin = Path(sys.executable).parent / "inspect"
    return subprocess.run(
        [str(inspect_bin), *args],
        capture_output=True,
        text=True,
        timeout=HANG_S,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.e2e
def test_the_shell_form_writes_a_log_the_report_reads_with_inspects_accuracy(tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    p = _shell(
        ["eval", "dvoc_bench/synthetic", "--solver", "dvoc_bench/dvoc", "--model", "dvoc/sim-ideal",
         "-M", "scenes=synthetic", "-T", "tasks=S5", "--log-dir", str(tmp_path / "logs"),
         "--display", "plain"]
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    (log_path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_path))
    assert log.status == "success" and len(log.samples) == 5
    hit = next(s for s in log.results.scores if s.name == "hit")
    accuracy = hit.metrics["mean"].value
    per_sample = [s.scores["hit"].value for s in log.samples]
    assert accuracy == pytest.approx(sum(per_sample) / len(per_sample))

    out = tmp_path / "report"
    r = subprocess.run(
        [sys.executable, "-m", "dvoc_bench.report", "--import", str(log_path), "--out", str(out)],
        capture_output=True, text=True, timeout=HANG_S, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    text = (out / "report.md").read_text()
    assert f"| sim-ideal [SIMULATED] | dvoc | 5/5 | 0 | {100 * accuracy:.1f}%" in text


@pytest.mark.e2e
def test_a_served_simulator_through_inspects_openai_api_provider(tmp_path: Path) -> None:
    """`serve` on loopback, reached by Inspect's own openai-api provider, read with local-sim's frame
    (norm1000): the same trials as a sweep of local-sim against the same server."""
    from inspect_ai.log import read_eval_log

    with served_simulator() as (url, _server):
        env = {"DVOCSIM_BASE_URL": url, "DVOCSIM_API_KEY": "not-a-key"}
        p = _shell(
            ["eval", "dvoc_bench/synthetic", "--solver", "dvoc_bench/oneshot", "-S", "model_config=local-sim",
             "--model", "openai-api/dvocsim/sim-gemma-4-26b", "-T", "tasks=S4",
             "--log-dir", str(tmp_path), "--display", "plain"],
            env,
        )  # fmt: skip
        assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
        theirs = _by_input(_sweep(["tasks=[S4]", "methods=[oneshot]", "models=[local-sim]"]))
    (log_path,) = tmp_path.glob("*.eval")
    log = read_eval_log(str(log_path))
    assert log.status == "success"
    trials = [s.metadata["dvoc"]["trial"] for s in log.samples]
    assert {t["coord_frame"] for t in trials} == {"norm1000"}
    assert all(t["simulated"] for t in trials)
    assert _by_input(trials) == theirs
    assert "not-a-key" not in json.dumps([s.metadata for s in log.samples])


def test_a_dataset_task_carries_each_samples_screenshot_instruction_and_truth() -> None:
    """``dvoc_bench/dataset`` on CUActSpot (real screenshots): one sample per sample id asked for, its image
    the screenshot at its own size, its target the truth box the sweep scores by."""
    from tests.support import need_thirdparty

    root = need_thirdparty("phi-ground/cuactspot/data/ActSpot")
    from dvoc_bench.inspect.tasks import dataset
    from dvoc_bench.runner.compose import quick_setup

    task = dataset("cuactspot", str(root), tasks="Canvas-049e", starts="centre")
    samples = list(task.dataset)
    assert [s.metadata["task"] for s in samples] == ["Canvas-049e"]
    setup = quick_setup(["dataset=cuactspot", f"dataset.root={root}", "tasks=[Canvas-049e]"])
    snap = setup.registry.snapshot("Canvas-049e")
    box = snap.target_box
    (s,) = samples
    assert s.target == f"{box.x0},{box.y0},{box.x1},{box.y1}"
    assert (s.metadata["width"], s.metadata["height"]) == (snap.size.width, snap.size.height)
    image = s.input[0].content[1].image
    import base64
    import io

    from PIL import Image

    decoded = Image.open(io.BytesIO(base64.b64decode(image.split(",", 1)[1])))
    assert decoded.size == (snap.size.width, snap.size.height)
    assert s.input[0].content[0].text == snap.instruction


def test_a_sample_of_a_sweep_that_varies_a_knob_is_refused_not_guessed() -> None:
    """Overrides sweeping a knob plan two trials per input: the solver says so instead of running one."""
    from dvoc_bench.inspect.trials import SolverRun

    run = SolverRun(["tasks=[S1]", "methods=[dvoc]", "models=[sim-ideal]", "alphas=[decay,constant]"])
    try:
        with pytest.raises(LookupError, match=r"plan 2 trials for S1 start 1 rep 0 \(they differ in alpha\)"):
            run.spec_for("S1", 1, 0)
    finally:
        run.close()
