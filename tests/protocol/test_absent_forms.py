"""Every reader form of the "not present" answer (issue 55, absent targets), with the answer strings each
family writes, and the methods ending the trial on it with no click.

The family forms: Qwen2.5-VL / Qwen3-VL's ``computer_use`` ``terminate`` action with ``status: failure``
(the text form inside ``<tool_call>`` and the call a server parsed), UI-TARS's ``call_user()``, the word
``NOT_PRESENT`` for families without a documented form, a ``[-1, -1]`` point; the harness's ``not_present``
tool; Set-of-Mark's ``none`` mark (id 0). Each is read only when offered: the same reply without the offer
reads as before.
"""

from __future__ import annotations

import pytest

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.models.base import Reply, ToolCall
from dvoc_bench.protocol import absent, parse_reply
from dvoc_bench.protocol.native import native_text, point_parser
from dvoc_bench.protocol.som import parse_select
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from tests.support import ScriptedModel, ShotSink, click, make_spec, offset, run_method, tool

REG = SceneRegistry(default_scenes_dir())

QWEN_TERMINATE = (
    "I checked every control on the screen; there is no Export button.\n<tool_call>\n"
    '{"name": "computer_use", "arguments": {"action": "terminate", "status": "failure"}}\n</tool_call>'
)
QWEN_DONE = QWEN_TERMINATE.replace('"failure"', '"success"')
UITARS_CALL_USER = (
    "Thought: The instruction asks for the Export button, but no such button is visible on this page, so "
    "I should hand the task back to the user.\nAction: call_user()"
)

NATIVE = [
    # (style, units, reply, detail)
    ("qwen25vl", "pixel", Reply(QWEN_TERMINATE), "qwen25vl:terminate_failure"),
    ("qwen3vl", "norm1000", Reply(QWEN_TERMINATE), "qwen3vl:terminate_failure"),
    (  # the same action, parsed by the server into a tool call (vLLM's hermes parser)
        "qwen3vl",
        "norm1000",
        Reply(None, [ToolCall("computer_use", '{"action": "terminate", "status": "failure"}')]),
        "qwen3vl:terminate_failure",
    ),
    ("uitars15", "pixel", Reply(UITARS_CALL_USER), "uitars15:call_user"),
    ("claude", "pixel", Reply("NOT_PRESENT"), "claude:token"),
    (
        "openai_cua",
        "pixel",
        Reply("The Export button is not on this screen.\nNOT_PRESENT"),
        "openai_cua:token",
    ),
    ("seeclick", "norm1", Reply("[-1, -1]"), "seeclick:minus_one"),
    ("holo", "norm1000", Reply('{"x": -1, "y": -1}'), "holo:minus_one"),
]


def _native(style: str, units: str, offered: bool):
    rule = FrameRule(units=units)
    inner = point_parser(style, rule)
    return absent.native_reader(style, inner, native_text) if offered else inner


@pytest.mark.parametrize(("style", "units", "reply", "detail"), NATIVE)
def test_each_family_form_reads_as_not_present_when_offered(style, units, reply, detail):
    got = _native(style, units, True)(reply)
    assert (got.status, got.detail, got.values) == ("not_present", f"not_present:{detail}", None)
    plain = _native(style, units, False)(reply)  # not offered: read exactly as before
    assert plain.status != "not_present"


@pytest.mark.parametrize(
    ("style", "reply"),
    [
        ("qwen25vl", QWEN_DONE),  # terminate with success is no refusal
        ("uitars15", "Thought: done.\nAction: finished(content='ok')"),
        ("claude", "I'm unable to see that element."),  # a decline names no absence: still a refusal
        ("qwen25vl", '{"point_2d": [412, 300], "label": "Export"}'),
    ],
)
def test_other_answers_are_not_read_as_not_present(style, reply):
    got = _native(style, "pixel", True)(Reply(reply))
    assert got.status != "not_present"


def test_a_point_beside_the_token_is_the_answer():
    got = _native("claude", "pixel", True)(Reply("pyautogui.click(x=10, y=20)  # not NOT_PRESENT"))
    assert got.status == "ok" and got.values == {"x": 10.0, "y": 20.0}


def test_the_harness_tool_reads_as_not_present_only_when_offered():
    reply = tool("not_present", reason="no Export button on the screenshot")
    read = absent.tool_reader(lambda r: parse_reply(r, "point"))
    assert read(reply).status == "not_present"
    assert parse_reply(reply, "point").status == "parse_error"
    both = Reply(None, [click(5, 6).tool_calls[0], reply.tool_calls[0]])  # a click first: the click stands
    assert read(both).status == "ok" and read(both).values == {"x": 5.0, "y": 6.0}
    assert read(Reply("not_present(reason='no such button')")).status == "not_present"
    offset_read = absent.tool_reader(lambda r: parse_reply(r, "offset"))
    assert offset_read(reply).status == "not_present"
    assert offset_read(offset(3, 4)).values == {"dx": 3.0, "dy": 4.0}


def test_the_none_mark_reads_as_not_present():
    reply = tool("select_element", id=0, confidence=0.9)
    read = absent.som_reader(lambda r: parse_select(r, {0, 1, 2}))
    assert read(reply).status == "not_present" and read(reply).detail == "not_present:none_mark"
    assert parse_select(reply, {1, 2}).status == "parse_error"  # not offered: an unknown id, as before
    assert read(tool("select_element", id=2)).values == {"id": 2.0}


def _env(model, style="tool_call", task="S3"):
    return TrialEnv(snapshot=REG.snapshot(task), model=model, model_identity="m@", save_shot=ShotSink(),
                    prompt_style=style)  # fmt: skip


@pytest.mark.parametrize("method", ["oneshot", "dvoc", "zoom"])
def test_a_not_present_answer_ends_the_trial_with_no_click(method):
    model = ScriptedModel(tool("not_present", reason="none"))
    extra = {"start": [400.0, 300.0], "alpha": "decay", "overlay": "full", "predict": "relative"}
    spec = make_spec(task="S3", method=method, offer_absent=True, zoom="2/2/256",
                     **(extra if method == "dvoc" else {}))  # fmt: skip
    res = run_method(spec, _env(model))
    assert (res.status, res.stop_reason, res.final_point, res.refused) == ("ok", "not_present", None, True)
    assert len(model.requests) == 1 and res.steps[0].parse_status == "not_present"
    req = model.requests[0]
    assert [t["function"]["name"] for t in req.tools][-1] == "not_present"
    assert absent.TOOL_SENTENCE in req.text


def test_without_the_offer_the_same_reply_is_unusable_and_asked_again():
    model = ScriptedModel(tool("not_present", reason="none"))
    res = run_method(make_spec(task="S3", method="oneshot", max_attempts=3), _env(model))
    assert res.stop_reason == "attempts_exhausted" and not res.refused and len(model.requests) == 3
    assert all(len(r.tools) == 1 and absent.TOOL_SENTENCE not in r.text for r in model.requests)


def test_a_native_one_shot_ends_on_the_family_form():
    model = ScriptedModel(Reply(UITARS_CALL_USER))
    res = run_method(make_spec(task="S3", method="oneshot", offer_absent=True), _env(model, "uitars15"))
    assert (res.stop_reason, res.final_point, res.refused) == ("not_present", None, True)
    assert "call_user()" in model.requests[0].text and model.requests[0].tools == []
