"""Every answer form the families really write, read by the reader of the family's config: the
forms as their own code, model cards and evaluation scripts show them, a refusal recorded as a refusal,
and the frame taken from the config, never from the syntax."""

from __future__ import annotations

import json

import pytest

from dvoc_bench.coords import screen_point
from dvoc_bench.core.frames import FORMS, PROMPT_STYLES, FrameRule
from dvoc_bench.core.geometry import Size
from dvoc_bench.core.records import PARSE_STATUSES
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol.native import parse_native, point_parser
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, make_spec, run_method

REG = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))

PX = FrameRule(units="pixel")
K = FrameRule(units="norm1000")

# The ScreenSpot-Pro evaluator's Qwen2.5-VL adapter (models/qwen2_5vl.py) primes the reply with
# '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [' and cuts the
# decoded text after its last '}', so its raw_response ends without the closing tag.
QWEN_TOOL = (
    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [467, 109]}}'
)

CASES = [
    # Qwen2.5-VL / Qwen3-VL: their computer_use tool call, whatever the prompt asked
    ("qwen25vl", QWEN_TOOL, PX, (467, 109)),
    ("qwen25vl", QWEN_TOOL + "\n</tool_call>", PX, (467, 109)),
    ("qwen25vl", '<tool_call>\n{"name": "left_click", "arguments": {"coordinate": [12, 34]}}\n</tool_call>',
     PX, (12, 34)),
    ("qwen25vl", '<tool_call>{"name": "computer_use", "arguments": {"action": "left_click", '
                 '"coordinate": [100, 200, 140, 260]}}</tool_call>', PX, (120, 230)),  # a box: its centre
    ("qwen3vl", '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": '
                '[506, 702]}}\n</tool_call>', K, (506, 702)),
    ("qwen3vl", 'Here you go: {"point_2d": [506, 702], "label": "highlights"}', K, (506, 702)),
    # Qwen2-VL / OS-Atlas box tokens, also as the decoder writes them with special tokens skipped
    ("osatlas", "<|object_ref_start|>Save<|object_ref_end|><|box_start|>(10,20),(30,40)<|box_end|>", K,
     (20, 30)),
    ("osatlas", "Save(10,20),(30,40)", K, (20, 30)),
    ("osatlas", "(10,20)", K, (10, 20)),
    # Aguvis, OpenCUA (and UI-TARS when it writes code): pyautogui
    ("pyautogui", "Action: pyautogui.click(x=0.4922, y=0.4036)", FrameRule(units="norm1"), (0.4922, 0.4036)),
    ("pyautogui", "pyautogui.click(1027, 584)", PX, (1027, 584)),
    ("uitars15", "Thought: the save icon.\nAction: pyautogui.click(x=322, y=182)", PX, (322, 182)),
    ("uitars15", "Action: click(start_box='<|box_start|>(197,525)<|box_end|>')", PX, (197, 525)),
    # UI-TARS-1.5's newer action space (CUActSpot's UI-TARS grounding prompt): point='<point>x y</point>'
    ("uitars15", "Action: click(point='<point>197 525</point>')", PX, (197, 525)),
    # MAI-UI: the grounding answer, or its navigation tool call
    ("maiui", '<grounding_think>…</grounding_think><answer>{"coordinate": [500, 250]}</answer>', K,
     (500, 250)),
    ("maiui", '<tool_call>{"name": "mobile_use", "arguments": {"action": "click", "coordinate": [310, 77]}}'
              "</tool_call>", K, (310, 77)),
    # free text: GPT-4o, SeeClick
    ("free_text", "The Save icon is at (512, 304) in the 0-1000 grid.", K, (512, 304)),
    ("free_text", "x=512, y=304", K, (512, 304)),
    ("free_text", "Click [250, 750].", K, (250, 750)),
    ("free_text", "On the 0-1000 grid (0-1000 on each axis), the icon is at (512, 304).", K, (512, 304)),
    ("seeclick", "(0.49,0.40)", FrameRule(units="norm1"), (0.49, 0.40)),
]  # fmt: skip


@pytest.mark.parametrize(("style", "text", "rule", "want"), CASES)
def test_every_real_form_is_read(style, text, rule, want):
    p = parse_native(Reply(text=text), style, rule)
    assert p.status == "ok", p
    assert p.values is not None
    assert (p.values["x"], p.values["y"]) == pytest.approx(want)


def test_a_tool_call_the_server_parsed_is_read_like_one_in_the_text():
    # vLLM with a tool-call parser moves the <tool_call> out of the text into tool_calls
    call = ToolCall(
        name="computer_use", arguments=json.dumps({"action": "left_click", "coordinate": [467, 109]})
    )
    p = parse_native(Reply(text=None, tool_calls=[call]), "qwen25vl", PX)
    assert p.status == "ok" and p.values == {"x": 467.0, "y": 109.0}


REFUSALS = [
    "I'm unable to identify that element in the screenshot.",
    "I'm sorry, but I can't help with locating that.",
    "I cannot determine where the element is.",
    "Sorry, I couldn't find it.",
]


@pytest.mark.parametrize("text", REFUSALS)
@pytest.mark.parametrize("style", ["free_text", "qwen25vl", "osatlas", "tool_call"])
def test_a_refusal_is_recorded_as_a_refusal_not_a_parse_error(style, text):
    p = point_parser(style, K)(Reply(text=text))
    assert p.status == "refusal" and p.values is None, p
    assert p.detail == f"refusal:{style}"


def test_an_answer_beside_an_apology_is_still_read():
    p = parse_native(Reply(text="Sorry for the wait: the button is at (500, 250)."), "free_text", K)
    assert p.status == "ok" and p.values == {"x": 500.0, "y": 250.0}


def test_a_refusing_model_fails_its_one_shot_trial_with_refusals_not_parse_errors():
    assert "refusal" in PARSE_STATUSES
    model = ScriptedModel(Reply("I'm unable to locate that element."))
    env = TrialEnv(
        snapshot=REG.snapshot("S1"),
        model=model,
        model_identity="m@",
        save_shot=ShotSink(),
        frame_rule=K,
        prompt_style="free_text",
    )
    res = run_method(make_spec("S1", "oneshot", frame="norm1000", max_attempts=2), env)
    assert res.final_point is None and res.model_calls == 2
    assert [s.parse_status for s in res.steps] == ["refusal", "refusal"]
    assert res.parse_errors == 0


def test_every_prompt_style_names_the_forms_it_reads():
    assert set(FORMS) == set(PROMPT_STYLES)
    assert all(FORMS[s] for s in PROMPT_STYLES)


def test_the_frame_belongs_to_the_config_not_to_the_syntax():
    # the same box tokens: 0-1000 for OS-Atlas, pixels of the downscaled image for TianXi-Action
    answer = "<|box_start|>(1805,1016),(1845,1037)<|box_end|>"
    size = Size(3840, 2160)
    _, atlas = screen_point("vllm-os-atlas-7b", size, answer)
    assert atlas is None  # 1825 is out of 0-1000's frame
    lines, tianxi = screen_point("vllm-tianxi-action-7b", size, answer)
    # by hand: 3840x2160 downscaled to <= 7,494,400 px is 3650x2053; 1825*3840/3650 = 1920, 1026.5*2160/2053
    assert tianxi is not None and (tianxi.x, tianxi.y) == pytest.approx((1920.0, 1080.0))
    assert any("3650x2053" in line for line in lines)
    _, atlas = screen_point("vllm-os-atlas-7b", size, "<|box_start|>(450,200),(550,300)<|box_end|>")
    assert atlas is not None and (atlas.x, atlas.y) == pytest.approx((1920.0, 540.0))  # 500*3840/1000
