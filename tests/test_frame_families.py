"""Each family of grounding models, in its own frame, through the real path: a sweep of one-shot trials on
screenshots of known size (1280x720, 1920x1080, 3840x2160) -> LiteLLM -> HTTP on loopback -> a scripted
OpenAI-compatible endpoint that answers in the family's documented format. The family's config is the one in
``conf/model/`` (its ``coord_frame`` and ``prompt_style``; only the endpoint is replaced).

Every expected screen pixel below is worked BY HAND from the family's published rule, not by the harness:

- Qwen2.5-VL, UI-TARS-1.5: pixels of the smart_resize'd image (factor 28); UI-TARS' coordinate tutorial
  maps back as ``x * W / W'``. Sizes: 1280x720 -> 1288x728, 1920x1080 -> 1932x1092, 3840x2160 -> 3836x2156
  (vLLM's max 16384*28^2); under Ollama's max 2<<20 = 2097152, 1920x1080 and 3840x2160 -> 1904x1064
  (beta = sqrt(W*H / 2097152), each side floored to a multiple of 28).
- Qwen3-VL, Gemini (``[y, x]``, boxes ``[ymin, xmin, ymax, xmax]``): 0-1000 of the image, ``x * W / 1000``.
- GLM: thousandths 0-999, ``x * W / 1000``.
- Claude: pixels of the image after the server's cap (long edge <= 1568, about 1.15 MP):
  1920x1080 and 3840x2160 -> 1429x804 (``sqrt(1.15e6 / (W*H))``, floored), 1280x720 as it is.
- SeeClick, ShowUI, Aguvis: 0-1 of the image, ``x * W``.
- OpenAI computer use: pixels of the declared display, here the screenshot downscaled to at most 1920x1080
  (3840x2160 -> 1920x1080, ``x * 2``).
- Holo1.5: pixels of the smart_resize'd image, factor 28, max 2560*1440 = 3686400: 1280x720 -> 1288x728,
  1920x1080 -> 1932x1092 (2.1 MP, under the cap), 3840x2160 -> beta = sqrt(8294400 / 3686400) = 1.5,
  2560 -> 91*28 = 2548, 1440 -> 51*28 = 1428.
- OpenCUA (qwen25 mode): pixels of the smart_resize'd image, factor 28, as Qwen2.5-VL's.
- Holo2, Holo3, OS-Atlas, UI-TARS v1, Qwen2-VL: 0-1000, ``x * W / 1000``; MAI-UI: thousandths 0-999
  (its agent: ``x / 999 * W``), GLM-4.5V likewise, ``x * W / 1000`` within the step.
- Claude Opus 4.7: pixels of the image after its caps (long edge <= 2576, 3.75 MP).

- TianXi-Action: box tokens in pixels of the image downscaled to at most 7,494,400 px (then padded to a
  multiple of 28, which moves nothing): 1280x720 and 1920x1080 as they are; 3840x2160 -> s = sqrt(7494400 /
  8294400) = 0.95055, 3650x2053 (floored): 1825*3840/3650 = 1920, 1026.5*2160/2053 = 1080.
- GPT-4o asked for 0-1000 in free text: ``x * W / 1000``.

A family whose own code maps a normalised answer as ``u * W / top`` declares ``mapping: edge`` and must land
on that pixel exactly (:data:`EDGE`). The others are read by the harness's ``u * (W - 1) / top``
(docs/frames.md), which differs from ``u * W / top`` by ``u / top`` px; their answers are chosen where both
fit within half a step (0.5 * W / 1000). Pixel frames: half the resize's step, ``0.5 * W / W'``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.draw.render import encode_png
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.support import ROOT, Answer, chat_completion, fake_openai

SIZES = ((1280, 720), (1920, 1080), (3840, 2160))

# family config -> screen size -> (reply text or tool call, expected screen pixel, size the model saw, step)
SCRIPT: dict[str, dict[tuple[int, int], tuple[Any, tuple[float, float], tuple[int, int]]]] = {
    # 644*1280/1288 = 640, 364*720/728 = 360; 966*1920/1932 = 960; 1918*3840/3836 = 1920
    "vllm-qwen2.5-vl-7b": {
        (1280, 720): ('{"point_2d": [644, 364], "label": "OK"}', (640.0, 360.0), (1288, 728)),
        (1920, 1080): (
            '```json\n[{"bbox_2d": [956, 536, 976, 556], "label": "OK"}]\n```',
            (960.0, 540.0),
            (1932, 1092),
        ),  # fmt: skip
        (3840, 2160): ("<|box_start|>(1918,1078)<|box_end|>", (1920.0, 1080.0), (3836, 2156)),
    },
    # 322*1280/1288 = 320; 952*1920/1904 = 960, 532*1080/1064 = 540; 476*3840/1904 = 960
    "ollama-qwen2.5vl-7b": {
        (1280, 720): ('{"point_2d": [322, 182]}', (320.0, 180.0), (1288, 728)),
        (1920, 1080): ('{"point_2d": [952, 532]}', (960.0, 540.0), (1904, 1064)),
        (3840, 2160): ('{"point_2d": [476, 266]}', (960.0, 540.0), (1904, 1064)),
    },
    # 322*1280/1288 = 320; 483*1920/1932 = 480, 273*1080/1092 = 270; 959*3840/3836 = 960
    "vllm-ui-tars-1.5-7b": {
        (1280, 720): (
            "Thought: the button.\nAction: click(start_box='(322,182)')",
            (320.0, 180.0),
            (1288, 728),
        ),
        (1920, 1080): (
            "Action: click(start_box='<|box_start|>(483,273)<|box_end|>')",
            (480.0, 270.0),
            (1932, 1092),
        ),  # fmt: skip
        (3840, 2160): ("Action: click(start_box='(959,539)')", (960.0, 540.0), (3836, 2156)),
    },
    "vllm-qwen3-vl-8b": {  # 400*1280/1000 = 512, 250*720/1000 = 180; 250*1920/1000 = 480, 300*1080/1000 = 324
        (1280, 720): ('{"point_2d": [400, 250], "label": "OK"}', (512.0, 180.0), (1280, 704)),
        (1920, 1080): ('{"point_2d": [250, 300]}', (480.0, 324.0), (1920, 1088)),
        (3840, 2160): ('{"point_2d": [250, 500]}', (960.0, 1080.0), (3840, 2176)),
    },
    # [y, x]: x = 400*1280/1000 = 512, y = 250*720/1000 = 180; the box's centre (x 250, y 324)
    "gemini-2.5-flash-point": {
        (1280, 720): ('```json\n[{"point": [250, 400], "label": "OK"}]\n```', (512.0, 180.0), (1280, 720)),
        (1920, 1080): ('[{"box_2d": [300, 200, 348, 300], "label": "OK"}]', (480.0, 349.92), (1920, 1080)),
        (3840, 2160): ('[{"point": [500, 250], "label": "OK"}]', (960.0, 1080.0), (3840, 2160)),
    },
    "vllm-glm-4.1v-9b": {  # 500*1280/1000 = 640, 250*720/1000 = 180; box centre (250, 324) -> 480, 349.92
        (1280, 720): ("The button.<|begin_of_box|>[500, 250]<|end_of_box|>", (640.0, 180.0), (1280, 720)),
        (1920, 1080): ("<|begin_of_box|>[200, 300, 300, 348]<|end_of_box|>", (480.0, 349.92), (1920, 1080)),
        (3840, 2160): ("<|begin_of_box|>[[250, 500]]<|end_of_box|>", (960.0, 1080.0), (3840, 2160)),
    },
    "claude-sonnet-4-6-text": {  # 714.5*1920/1429 = 960, 402*1080/804 = 540; 357.25*3840/1429 = 960
        (1280, 720): ("pyautogui.click(x=640, y=360)", (640.0, 360.0), (1280, 720)),
        (1920, 1080): ("```python\npyautogui.click(x=714.5, y=402)\n```", (960.0, 540.0), (1429, 804)),
        (3840, 2160): ("pyautogui.click(x=357.25, y=201)", (960.0, 540.0), (1429, 804)),
    },
    "claude-sonnet-4-6": {  # the generic tool call, in the same capped frame
        (1280, 720): ({"x": 640, "y": 360}, (640.0, 360.0), (1280, 720)),
        (1920, 1080): ({"x": 714.5, "y": 402}, (960.0, 540.0), (1429, 804)),
        (3840, 2160): ({"x": 1071.75, "y": 603}, (2880.0, 1620.0), (1429, 804)),  # 1071.75*3840/1429 = 2880
    },
    # the families added after the first eight; each line's pixel worked by hand beside it
    "vllm-seeclick": {  # 0.5*1280 = 640, 0.25*720 = 180; 0.25*1920 = 480, 0.5*1080 = 540; 0.75*3840 = 2880
        (1280, 720): ("(0.50,0.25)", (640.0, 180.0), (1280, 720)),
        (1920, 1080): ("[0.25, 0.5]", (480.0, 540.0), (1920, 1080)),
        (3840, 2160): ("The element is at [0.75, 0.75].", (2880.0, 1620.0), (3840, 2160)),
    },
    "vllm-showui-2b": {  # 0.25*1280 = 320, 0.5*720 = 360; 0.5*1920 = 960; 0.25*3840 = 960, 0.25*2160 = 540
        (1280, 720): ("[0.25, 0.5]", (320.0, 360.0), (1280, 720)),
        (1920, 1080): ("[0.5,0.5]", (960.0, 540.0), (1920, 1080)),
        (3840, 2160): ("[[0.25, 0.25]]", (960.0, 540.0), (3840, 2160)),
    },
    "vllm-aguvis-7b": {  # 0-1 of the screen whatever the resize: 0.5*1280 = 640; 0.25*3840 = 960, 0.75*2160
        (1280, 720): ("pyautogui.click(x=0.5, y=0.25)", (640.0, 180.0), (1288, 728)),
        (1920, 1080): ("Action: pyautogui.click(x=0.5, y=0.5)", (960.0, 540.0), (1932, 1092)),
        (3840, 2160): ("```python\npyautogui.click(x=0.25, y=0.75)\n```", (960.0, 1620.0), (3836, 2156)),
    },
    "openai-computer-use": {  # the display is the image sent: 960*3840/1920 = 1920, 540*2160/1080 = 1080
        (1280, 720): ('{"type": "click", "button": "left", "x": 640, "y": 360}', (640.0, 360.0), (1280, 720)),
        (1920, 1080): ('computer_call {"type": "click", "x": 480, "y": 270}', (480.0, 270.0), (1920, 1080)),
        (3840, 2160): (
            '{"type": "click", "button": "left", "x": 960, "y": 540}',
            (1920.0, 1080.0),
            (1920, 1080),
        ),
    },  # fmt: skip
    # 644*1280/1288 = 640, 364*720/728 = 360; 966*1920/1932 = 960, 546*1080/1092 = 540;
    # 1274*3840/2548 = 1920, 714*2160/1428 = 1080
    "vllm-holo1.5-7b": {
        (1280, 720): ('{"x": 644, "y": 364}', (640.0, 360.0), (1288, 728)),
        (1920, 1080): ('{"x": 966, "y": 546}', (960.0, 540.0), (1932, 1092)),
        (3840, 2160): ('{"x": 1274, "y": 714}', (1920.0, 1080.0), (2548, 1428)),
    },
    "vllm-holo2-8b": {  # 500*1280/1000 = 640, 250*720/1000 = 180; 250*1920/1000 = 480; 750*3840/1000 = 2880
        (1280, 720): ('{"x": 500, "y": 250}', (640.0, 180.0), (1280, 704)),
        (1920, 1080): ('{"x": 250, "y": 500}', (480.0, 540.0), (1920, 1088)),
        (3840, 2160): ('```json\n{"x": 750, "y": 250}\n```', (2880.0, 540.0), (3840, 2176)),
    },
    # 322*1280/1288 = 320, 182*720/728 = 180; 1449*1920/1932 = 1440, 819*1080/1092 = 810;
    # 959*3840/3836 = 960.0, 539*2160/2156 = 540.0
    "vllm-opencua-7b": {
        (1280, 720): ("pyautogui.click(x=322, y=182)", (320.0, 180.0), (1288, 728)),
        (1920, 1080): ("```python\npyautogui.click(x=1449, y=819)\n```", (1440.0, 810.0), (1932, 1092)),
        (3840, 2160): ("pyautogui.click(x=959, y=539)", (960.0, 540.0), (3836, 2156)),
    },
    # MAI-UI's <answer> JSON in thousandths (their agent: x / 999 * W; the answer tag wins over a
    # coordinate in the reasoning): 999*1280/999 = 1280 is the right edge; 333*720/999 = 240;
    # 333*1920/999 = 640, 666*1080/999 = 720; the box's centre (249.75, 249.75) -> 960, 540
    "vllm-mai-ui-8b": {
        (1280, 720): (
            '<grounding_think>"coordinate": [9, 9]</grounding_think>'
            '<answer>{"coordinate": [999,333]}</answer>',
            (1279.0, 240.0),  # 1280 is past the last pixel: the final point is clamped to 1279
            (1280, 720),
        ),
        (1920, 1080): ('<answer>{"coordinate": [333, 666]}</answer>', (640.0, 720.0), (1920, 1080)),
        (3840, 2160): (
            '<answer>{"coordinate": [199.8, 199.8, 299.7, 299.7]}</answer>',
            (960.0, 540.0),
            (3840, 2160),
        ),
    },
    # box centres (500, 250) -> 640, 180; (250, 500) -> 480, 540; (750, 250) -> 2880, 540
    "vllm-os-atlas-7b": {
        (1280, 720): ("<|box_start|>(450,200),(550,300)<|box_end|>", (640.0, 180.0), (1288, 728)),
        (1920, 1080): (
            "<|object_ref_start|>OK<|object_ref_end|><|box_start|>(200,450),(300,550)<|box_end|>",
            (480.0, 540.0),
            (1932, 1092),
        ),  # fmt: skip
        (3840, 2160): ("<|box_start|>(700,200),(800,300)<|box_end|>", (2880.0, 540.0), (3836, 2156)),
    },
    "vllm-ui-tars-7b-dpo": {  # 500*1280/1000 = 640, 250*720/1000 = 180; 250*1920/1000 = 480; 750*2160/1000
        (1280, 720): ("Action: click(start_box='(500,250)')", (640.0, 180.0), (1288, 728)),
        (1920, 1080): (
            "Action: click(start_box='<|box_start|>(250,500)<|box_end|>')",
            (480.0, 540.0),
            (1932, 1092),
        ),  # fmt: skip
        (3840, 2160): (
            "Thought: the OK button.\nAction: click(start_box='(250,750)')",
            (960.0, 1620.0),
            (3836, 2156),
        ),
    },
    # Opus 4.7's caps (long edge 2576, 3.75 MP): 1280x720 and 1920x1080 (2.07 MP) reach it as they are;
    # 3840x2160 -> long edge 2576 (2576/3840 = 0.67083 < sqrt(3.75e6 / 8294400) = 0.67239), 2160 * 2576 /
    # 3840 = 1449: 1288*3840/2576 = 1920, 724.5*2160/1449 = 1080
    "claude-opus-4-7": {
        (1280, 720): ({"x": 320, "y": 180}, (320.0, 180.0), (1280, 720)),
        (1920, 1080): ({"x": 1440, "y": 810}, (1440.0, 810.0), (1920, 1080)),
        (3840, 2160): ({"x": 1288, "y": 724.5}, (1920.0, 1080.0), (2576, 1449)),
    },
    # Qwen2-VL: box centres in 0-1000 of the image, x * W / 1000; (250, 500) -> 320, 360; (500, 500) ->
    # 960, 540; (250, 250) -> 960, 540
    "vllm-qwen2-vl-7b": {
        (1280, 720): ("<|box_start|>(200,450),(300,550)<|box_end|>", (320.0, 360.0), (1288, 728)),
        (1920, 1080): ("<|box_start|>(450,450),(550,550)<|box_end|>", (960.0, 540.0), (1932, 1092)),
        (3840, 2160): ("<|box_start|>(200,200),(300,300)<|box_end|>", (960.0, 540.0), (3836, 2156)),
    },
    "vllm-holo3-35b-a3b": {  # 250*1280/1000 = 320, 500*720/1000 = 360; 750*1920/1000 = 1440; 500*3840 = 1920
        (1280, 720): ('{"x": 250, "y": 500}', (320.0, 360.0), (1280, 704)),
        (1920, 1080): ('{"x": 750, "y": 250}', (1440.0, 270.0), (1920, 1088)),
        (3840, 2160): ('{"x": 500, "y": 500}', (1920.0, 1080.0), (3840, 2176)),
    },
    "vllm-glm-4.5v": {  # 250*1280/1000 = 320, 500*720/1000 = 360; box centre (750, 250) -> 1440, 270
        (1280, 720): ("<|begin_of_box|>[250, 500]<|end_of_box|>", (320.0, 360.0), (1280, 720)),
        (1920, 1080): ("<|begin_of_box|>[700, 200, 800, 300]<|end_of_box|>", (1440.0, 270.0), (1920, 1080)),
        (3840, 2160): ("<|begin_of_box|>[500, 500]<|end_of_box|>", (1920.0, 1080.0), (3840, 2160)),
    },
    # pixels of the downscaled image (see the module's notes); a box's centre
    "vllm-tianxi-action-7b": {
        (1280, 720): ("<|box_start|>(600,340),(680,380)<|box_end|>", (640.0, 360.0), (1280, 720)),
        (1920, 1080): (
            "<|object_ref_start|>OK<|object_ref_end|><|box_start|>(470,260),(490,280)<|box_end|>",
            (480.0, 270.0),
            (1920, 1080),
        ),  # fmt: skip
        (3840, 2160): ("<|box_start|>(1805,1016),(1845,1037)<|box_end|>", (1920.0, 1080.0), (3650, 2053)),
    },
    "gpt-4o-text1000": {  # 500*1280/1000 = 640, 250*720/1000 = 180; 250*1920/1000 = 480; 750*3840/1000 = 2880
        (1280, 720): ("The OK button is at (500, 250).", (640.0, 180.0), (1280, 720)),
        (1920, 1080): ("Click at x=250, y=500 to press it.", (480.0, 540.0), (1920, 1080)),
        (3840, 2160): ("[750, 250]", (2880.0, 540.0), (3840, 2160)),
    },
}
EDGE = {
    "vllm-qwen2-vl-7b",
    "vllm-holo3-35b-a3b",
    "vllm-qwen3-vl-8b",
    "gemini-2.5-flash-point",
    "vllm-seeclick",
    "vllm-showui-2b",
    "vllm-aguvis-7b",
    "vllm-holo2-8b",
    "vllm-mai-ui-8b",
    "vllm-os-atlas-7b",
    "vllm-ui-tars-7b-dpo",
    "gpt-4o-text1000",
}
"""Families whose own code maps a normalised answer as ``u * W / top``: their pixel is exact."""
NORMALISED = {
    "gpt-4o-text1000",
    "vllm-qwen2-vl-7b",
    "vllm-holo3-35b-a3b",
    "vllm-glm-4.5v",
    "vllm-qwen3-vl-8b",
    "gemini-2.5-flash-point",
    "vllm-glm-4.1v-9b",
    "vllm-seeclick",
    "vllm-showui-2b",
    "vllm-aguvis-7b",
    "vllm-holo2-8b",
    "vllm-mai-ui-8b",
    "vllm-os-atlas-7b",
    "vllm-ui-tars-7b-dpo",
}


def png_size(data_url: str) -> tuple[int, int]:
    """Width and height from a PNG's IHDR (read here, not by the harness)."""
    raw = base64.b64decode(data_url.split(",", 1)[1])
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", raw[16:24])


def _call(body: dict[str, Any]) -> dict[str, Any]:
    """What a request sent: the model, the image's size (from its PNG), the tools and the text."""
    content = body["messages"][0]["content"]
    url = next(c["image_url"]["url"] for c in content if c["type"] == "image_url")
    text = next(c["text"] for c in content if c["type"] == "text")
    return {"model": body["model"], "size": png_size(url), "tools": body.get("tools"), "text": text}


@contextlib.contextmanager
def scripted(script: dict) -> Iterator[tuple[str, Any]]:
    """An OpenAI chat-completions endpoint answering from ``script`` by model name and the screen the task's
    instruction names (two screens may share a size); yields ``(url, server)``, ``calls(server)`` the
    requests as :func:`_call` reads them."""

    def answer(body: dict[str, Any], headers: Any) -> Answer:
        call = _call(body)
        screen = next(s for s in script[call["model"]] if f"screen-{s[0]}x{s[1]}" in call["text"])
        reply = script[call["model"]][screen][0]
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        if isinstance(reply, dict):
            return 200, chat_completion(call["model"], tool=("click_at", json.dumps(reply)), usage=usage), {}
        return 200, chat_completion(call["model"], content=reply, usage=usage), {}

    with fake_openai(answer) as served:
        yield served


def write_screens(root: Path) -> None:
    """Three screenshots of known size, one task each (a manifest dataset)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for w, h in SIZES:
        image = np.full((h, w, 3), 235, np.uint8)
        image[h // 2 - 20 : h // 2 + 20, w // 2 - 60 : w // 2 + 60] = (40, 90, 200)
        (root / f"s{w}.png").write_bytes(encode_png(image))
        box = [w // 2 - 60, h // 2 - 20, w // 2 + 60, h // 2 + 20]
        lines.append(
            {
                "image": f"s{w}.png",
                "bbox_xyxy": box,
                "instruction": f"click OK on screen-{w}x{h}",
                "id": f"s{w}",
            }
        )
    (root / "manifest.jsonl").write_text("".join(json.dumps(li) + "\n" for li in lines), encoding="utf-8")


def family_configs(models: Path, url: str, names: list[str]) -> None:
    """The families' own configs from conf/model/, pointed at the scripted endpoint."""
    models.mkdir(parents=True, exist_ok=True)
    for name in names:
        doc = yaml.safe_load((ROOT / "conf" / "model" / f"{name}.yaml").read_text(encoding="utf-8"))
        doc.update(model_id=f"openai/{name}", provider="local-sim", api_base=url, limits=None)
        doc.pop("pricing", None)
        (models / f"{name}.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")


def sweep(tmp_path: Path, script: dict) -> tuple[list[dict], list[dict], list[dict]]:
    data = tmp_path / "screens"
    write_screens(data)
    with scripted(script) as (url, server):
        models = tmp_path / "model"
        family_configs(models, url, list(script))
        setup = quick_setup(
            [
                f"models=[{','.join(script)}]",
                f"paths.models={models}",
                "dataset=manifest",
                f"dataset.root={data}",
                "methods=[oneshot]",
                "oneshot.max_attempts=1",
                "cache.enabled=false",
                "retry.transient_retries=0",
                "run.frames=none",
            ]
        )
        run_dir = tmp_path / "run"
        summary = run_sweep(setup, run_dir)
        seen = [_call(body) for body in server.seen]
    return summary.trials, list(read_jsonl(run_dir / "steps.jsonl")), seen


@pytest.mark.e2e
def test_every_family_lands_on_the_pixel_its_published_rule_gives(tmp_path):
    trials, steps, seen = sweep(tmp_path, SCRIPT)
    assert len(trials) == len(SCRIPT) * len(SIZES)
    by_key = {s["trial_key"]: s for s in steps}
    for t in trials:
        name, (w, h) = t["model"], next(s for s in SIZES if f"s{s[0]}" == t["task"])
        _, (ex, ey), (sw, sh) = SCRIPT[name][(w, h)]
        tol = 1e-6 if name in EDGE else 0.5 * w / 1000 if name in NORMALISED else 0.5 * max(w / sw, 1.0)
        assert t["status"] == "ok" and t["final_point"] is not None, (name, w, t)
        fx, fy = t["final_point"]
        assert math.dist((fx, fy), (ex, ey)) <= tol, (name, (w, h), (fx, fy), (ex, ey), tol)
        step = by_key[t["trial_key"]]
        assert step["seen_size"] == [sw, sh], (name, step["seen_size"])
        assert step["prompt_style"] == yaml.safe_load(
            (ROOT / "conf" / "model" / f"{name}.yaml").read_text(encoding="utf-8")
        ).get("prompt_style", "tool_call")
        assert step["frame_rule"] and step["parse_status"] == "ok", step
    # the endpoint got every image at the size the model sees; native styles sent no tool
    for call in seen:
        name = call["model"]
        assert call["size"] in {v[2] for v in SCRIPT[name].values()}, call["size"]
        style = yaml.safe_load((ROOT / "conf" / "model" / f"{name}.yaml").read_text(encoding="utf-8"))
        assert (call["tools"] is None) == (style.get("prompt_style", "tool_call") != "tool_call"), name


@pytest.mark.e2e
def test_an_answer_outside_its_frame_is_out_of_frame_never_clamped(tmp_path):
    script = {
        "vllm-qwen3-vl-8b": {s: ('{"point_2d": [1200, 300]}', None, seen) for s, seen in
                             zip(SIZES, ((1280, 704), (1920, 1088), (3840, 2176)), strict=True)},
        "claude-sonnet-4-6-text": {s: ("pyautogui.click(x=1500, y=300)", None, seen) for s, seen in
                                   zip(SIZES, ((1280, 720), (1429, 804), (1429, 804)), strict=True)},
    }  # fmt: skip
    trials, steps, _ = sweep(tmp_path, script)
    for t in trials:
        assert t["final_point"] is None, t  # not clamped to the edge: no usable answer at all
    assert steps and all(s["parse_status"] == "out_of_frame" for s in steps), [
        s["parse_status"] for s in steps
    ]
    assert all(s["values_raw"]["x"] in (1200, 1500) for s in steps)
