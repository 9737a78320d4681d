"""``python -m dvoc_bench.coords``: for every config in conf/model/, the screen pixel it prints for an answer
is the final point a one-shot sweep records for the same answer (the config's frame, resize, image limits
and prompt style, with the endpoint replaced by a scripted one on loopback)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import yaml

from dvoc_bench.coords import main, screen_point
from dvoc_bench.core.geometry import Size
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.support import ROOT
from tests.test_frame_families import scripted, write_screens

MODELS = ROOT / "conf" / "model"
SCREEN = (1920, 1080)


def _numbers(units: str) -> tuple[float, float]:
    return {"pixel": (700.0, 400.0), "norm1": (0.3, 0.6)}.get(units, (300.0, 600.0))


def answer_for(doc: dict) -> tuple[str, object]:
    """An answer in the config's own format: (text for the door, what the endpoint replies)."""
    frame = doc.get("coord_frame")
    units = frame.get("units", "pixel") if isinstance(frame, dict) else frame
    yx = isinstance(frame, dict) and frame.get("axes") == "yx"
    x, y = _numbers(units)
    a, b = (y, x) if yx else (x, y)
    text = {
        "tool_call": json.dumps({"x": x, "y": y}),
        "qwen25vl": f'{{"point_2d": [{a}, {b}]}}',
        "qwen3vl": f'{{"point_2d": [{a}, {b}]}}',
        "uitars15": f"click(start_box='({a},{b})')",
        "gemini_point": f'[{{"point": [{a}, {b}], "label": "OK"}}]',
        "claude": f"pyautogui.click(x={x}, y={y})",
        "glm": f"<|begin_of_box|>[{a}, {b}]<|end_of_box|>",
        "seeclick": f"({a},{b})",
        "showui": f"[{a}, {b}]",
        "pyautogui": f"pyautogui.click(x={x}, y={y})",
        "openai_cua": json.dumps({"type": "click", "button": "left", "x": x, "y": y}),
        "holo": json.dumps({"x": x, "y": y}),
        "osatlas": f"<|box_start|>({a},{b}),({a},{b})<|box_end|>",
        "maiui": f'<answer>{{"coordinate": [{a}, {b}]}}</answer>',
        "free_text": f"The element is at ({a}, {b}).",
    }[doc.get("prompt_style", "tool_call")]
    reply = {"x": x, "y": y} if doc.get("prompt_style", "tool_call") == "tool_call" else text
    return text, reply


def as_scripted(doc: dict, name: str, url: str) -> dict:
    """The config as a model behind the scripted endpoint: its frame, limits and style kept."""
    keep = ("coord_frame", "prompt_style", "image", "params", "send_seed", "tool_choice")
    out = {k: doc[k] for k in keep if k in doc}
    out.update(name=name, kind="litellm", model_id=f"openai/{name}", provider="local-sim", api_base=url)
    return out


@pytest.mark.e2e
def test_the_door_gives_the_sweeps_final_point_for_every_model_config(tmp_path):
    docs = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted(MODELS.glob("*.yaml"))}
    assert len(docs) >= 20
    answers = {name: answer_for(doc) for name, doc in docs.items()}
    script = {name: {SCREEN: (reply, None, None)} for name, (_, reply) in answers.items()}
    data = tmp_path / "screens"
    write_screens(data)
    with scripted(script) as (url, _):
        models = tmp_path / "model"
        models.mkdir()
        for name, doc in docs.items():
            (models / f"{name}.yaml").write_text(
                yaml.safe_dump(as_scripted(doc, name, url)), encoding="utf-8"
            )
        setup = quick_setup(
            [
                f"models=[{','.join(docs)}]",
                f"paths.models={models}",
                "dataset=manifest",
                f"dataset.root={data}",
                "tasks=[s1920]",
                "methods=[oneshot]",
                "oneshot.max_attempts=1",
                "cache.enabled=false",
                "retry.transient_retries=0",
                "run.frames=none",
            ]
        )
        trials = run_sweep(setup, tmp_path / "run").trials
    assert {t["model"] for t in trials} == set(docs)
    for t in trials:
        lines, point = screen_point(t["model"], Size(*SCREEN), answers[t["model"]][0])
        assert point is not None and t["final_point"] is not None, (t["model"], t.get("error"), lines)
        assert math.dist(t["final_point"], (point.x, point.y)) < 1e-3, (t["model"], t["final_point"], lines)
        x, y = (float(v) for v in lines[-1].split(", "))  # the last line, as `x, y`
        assert math.dist((x, y), (point.x, point.y)) < 1e-3, lines


def test_the_door_prints_the_rule_and_the_pixel_last(capsys):
    # Qwen2.5-VL under vLLM sees 1280x720 at 1288x728: (644 * 1280/1288, 364 * 720/728) = (640, 360)
    code = main(["vllm-qwen2.5-vl-7b", "--image-size", "1280", "720", "--answer", '{"point_2d": [644, 364]}'])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and out[-1] == "640, 360", out
    assert any("smart_resize(factor=28" in li for li in out) and any("1288x728" in li for li in out)


def test_an_answer_out_of_its_frame_is_reported_not_clamped(capsys):
    code = main(
        ["gemini-2.5-flash-point", "--image-size", "1920", "1080", "--answer", '[{"point": [1200, 10]}]']
    )
    out = capsys.readouterr().out
    assert code == 1 and "out_of_frame" in out and "1200" in out


@pytest.mark.e2e
def test_a_bad_model_is_one_line_and_exit_code_2():
    r = subprocess.run(
        [sys.executable, "-m", "dvoc_bench.coords", "gpt-9", "--image-size", "10", "10", "--answer", "x"],
        capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, cwd=ROOT,
        timeout=60,
    )  # fmt: skip
    lines = [li for li in r.stderr.splitlines() if li.strip()]
    assert (
        r.returncode == 2 and len(lines) == 1 and lines[0].startswith("config error: models: unknown model")
    )
