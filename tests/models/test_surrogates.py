"""Text that cannot be encoded (issue 51, item 1): a provider reply holding a lone surrogate (valid JSON, no
valid UTF-8) is made safe where it enters, through the real path (LiteLLM -> HTTP on loopback -> a fake
provider): every trial ends as its reply deserves, with the cache on and off, the records stay valid UTF-8
JSON, and a resume finishes. A cache entry of the wrong shape is a miss, never a failed trial."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dvoc_bench.core.text import REPLACEMENT, safe_text, safe_value
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.support import Answer, chat_completion, fake_openai

MODEL = """\
name: lone
kind: litellm
model_id: openai/lone-vlm
provider: local-sim
api_base: {url}
coord_frame: pixel
params: {{}}
pricing: {{input_per_mtok: 1.0, output_per_mtok: 1.0, per_image: 0.0}}
"""


def answer(body: dict[str, Any], headers: Any) -> Answer:
    """A click at (5, 5) whose text and arguments hold lone surrogates (JSON's ``\\ud800``, ``\\udfff``)."""
    tool = ("click_at", '{"x": 5, "y": 5, "why": "\ud800"}')
    return 200, chat_completion("lone-vlm", content="the point \udfff is here", tool=tool), {}


def sweep(tmp: Path, url: str, cache: bool) -> list[dict[str, Any]]:
    models = tmp / "model"
    models.mkdir(exist_ok=True)
    (models / "lone.yaml").write_text(MODEL.format(url=url), encoding="utf-8")
    over = ["models=[lone]", "tasks=[S1,S2]", "methods=[oneshot,dvoc]", "starts=random:1"]
    over += [f"paths.models={models}", f"cache.enabled={str(cache).lower()}", f"cache.dir={tmp / 'cache'}"]
    run_sweep(quick_setup([*over, "run.quiet=true"]), tmp / "run")
    raw = (tmp / "run" / "trials.jsonl").read_bytes().decode("utf-8")  # strict: valid UTF-8 throughout
    return [json.loads(line) for line in raw.splitlines()]


@pytest.mark.parametrize("cache", [True, False])
def test_a_reply_with_lone_surrogates_is_read_and_recorded(tmp_path, cache):
    with fake_openai(answer) as (url, _):
        trials = sweep(tmp_path, url, cache)
        assert len(trials) == 4
        assert {t["status"] for t in trials} == {"ok"}, [t.get("error") for t in trials]
        assert all(t["model_calls"] >= 1 for t in trials)
        raw = (tmp_path / "run" / "steps.jsonl").read_bytes().decode("utf-8")
        steps = [json.loads(x) for x in raw.splitlines()]
        clicks = [s for s in steps if s["kind"] == "click"]  # one-shot reads its click; DVOC, asked for an
        assert clicks and all(s["parse_status"] == "ok" for s in clicks)  # offset, gets what a click earns
        assert all(s["parse_status"] != "call_error" for s in steps)
        assert all(REPLACEMENT in (s["reply_text"] or "") for s in steps)
        if cache:  # the cache stored valid UTF-8
            for entry in (tmp_path / "cache").rglob("*.json"):
                entry.read_bytes().decode("utf-8")
        # a resume of the finished run has nothing left to do and does not fail
        again = sweep(tmp_path, url, cache)
    assert [t["trial_key"] for t in again] == [t["trial_key"] for t in trials]


def test_safe_text_replaces_each_lone_surrogate_and_keeps_everything_else():
    assert safe_text("a\ud800b\udfffc") == f"a{REPLACEMENT}b{REPLACEMENT}c"
    assert safe_text("naïve 😀 ok") == "naïve 😀 ok"
    nested = {"k\ud800": ["x\udc00", {"y": 1.5}], "n": None}
    assert safe_value(nested) == {f"k{REPLACEMENT}": [f"x{REPLACEMENT}", {"y": 1.5}], "n": None}
    json.dumps(safe_value(nested), ensure_ascii=False).encode("utf-8")


def test_a_cache_entry_nested_too_deep_or_of_the_wrong_shape_is_a_miss(tmp_path):
    with fake_openai(answer) as (url, server):
        models = tmp_path / "model"
        models.mkdir()
        (models / "lone.yaml").write_text(MODEL.format(url=url), encoding="utf-8")
        over = ["models=[lone]", "tasks=[S1]", "methods=[oneshot]", "starts=random:1", "run.quiet=true"]
        over += [f"paths.models={models}", f"cache.dir={tmp_path / 'cache'}"]
        run_sweep(quick_setup(over), tmp_path / "first")
        entries = sorted((tmp_path / "cache").rglob("*.json"))
        assert entries
        entries[0].write_text("[" * 100_000 + "]" * 100_000)  # json.loads: RecursionError
        for e in entries[1:]:
            body = json.loads(e.read_text())
            body["tool_calls"] = ["not a call"]  # the right key, the wrong shape
            e.write_text(json.dumps(body))
        asked = server.requests
        run_sweep(quick_setup(over), tmp_path / "second")
        assert server.requests > asked  # asked the model again: each bad entry was a miss
    trials = [json.loads(x) for x in (tmp_path / "second" / "trials.jsonl").read_text().splitlines()]
    assert [t["status"] for t in trials] == ["ok"]
