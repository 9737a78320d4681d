"""The response cache: content-addressed keys, one folder per model, marked replies, free re-runs."""

import asyncio
import json

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.models.base import ModelCallError, ModelRequest, Reply, ToolCall
from dvoc_bench.models.cache import CachedModel, ResponseCache, request_key
from dvoc_bench.models.factory import build_model
from dvoc_bench.models.options import CacheOptions
from dvoc_bench.protocol import tools_for
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.runner.setup import model_options
from dvoc_bench.runner.sweep import plan, run_sweep


def req(**kw):
    base = dict(
        text="Task: press OK",
        image_png=b"\x89PNG fake bytes",
        image_size=Size(800, 600),
        tools=tools_for("point"),
        scene_id="S1",
        seed=1,
    )
    return ModelRequest(**{**base, **kw})


class Scripted:
    """A model that counts its calls and can be told to fail."""

    simulated = False

    def __init__(self, name="scripted", fail=False):
        self.name, self.calls, self.fail = name, 0, fail

    def cache_fingerprint(self):
        return {"params": {"temperature": 0}}

    async def complete(self, request):
        self.calls += 1
        if self.fail:
            raise ModelCallError("server", "boom")
        return Reply(
            text=None,
            tool_calls=[ToolCall("click_at", '{"x": 1, "y": 2}')],
            tokens_in=10,
            tokens_out=5,
            cost_usd=0.002,
            cost_source="litellm",
            latency_s=1.5,
        )


def test_key_covers_everything_that_changes_the_reply():
    k = request_key("m@", req())
    assert k == request_key("m@", req())
    variants = [
        request_key("m@http://other", req()),  # api base
        request_key("other@", req()),  # model
        request_key("m@", req(text="Task: press Cancel")),
        request_key("m@", req(image_png=b"\x89PNG other bytes")),
        request_key("m@", req(tools=tools_for("offset"))),
        request_key("m@", req(tool_choice="required")),
        request_key("m@", req(params={"temperature": 0.5})),
        request_key("m@", req(seed=2)),
        request_key("m@", req(), {"max_side": 512}),
    ]
    assert len({k, *variants}) == len(variants) + 1
    # metadata the model never sees does not split the cache
    assert request_key("m@", req(scene_id="S9")) == k


def test_hits_are_marked_free_and_two_models_never_share(tmp_path):
    cache = ResponseCache(tmp_path)
    a, b = Scripted("a"), Scripted("b")
    ma, mb = CachedModel(a, cache, "model-a@"), CachedModel(b, cache, "model-b@")
    first = asyncio.run(ma.complete(req()))
    again = asyncio.run(ma.complete(req()))
    assert a.calls == 1 and not first.cached and again.cached
    assert again.tool_calls == first.tool_calls and (again.tokens_in, again.tokens_out) == (10, 5)
    assert (again.cost_usd, again.cost_source) == (0.0, "cache")
    assert again.latency_s < 1.0  # the lookup, not the original call
    asyncio.run(mb.complete(req()))
    assert b.calls == 1  # same request, other model: its own call
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert len(folders) == 2
    (entry,) = (tmp_path / folders[0]).rglob("*.json")
    stored = json.loads(entry.read_text())
    assert stored["cost_usd"] in (0.002,) and stored["identity"] in ("model-a@", "model-b@")
    assert "PNG" not in entry.read_text()  # the image is hashed, never stored


def test_errors_are_not_cached_and_corrupt_entries_are_ignored(tmp_path):
    cache = ResponseCache(tmp_path)
    bad = CachedModel(Scripted(fail=True), cache, "m@")
    with pytest.raises(ModelCallError):
        asyncio.run(bad.complete(req()))
    assert not list(tmp_path.rglob("*.json"))
    good = Scripted()
    m = CachedModel(good, cache, "m@")
    asyncio.run(m.complete(req()))
    (entry,) = tmp_path.rglob("*.json")
    entry.write_text("{truncated")
    r = asyncio.run(m.complete(req()))
    assert not r.cached and good.calls == 2  # asked again, and the entry is repaired
    assert asyncio.run(m.complete(req())).cached


def test_cache_options_from_config():
    opts = model_options(load_settings({"cache": {"enabled": True, "dir": "x/y"}}))
    assert opts["cache"] == CacheOptions(enabled=True, dir="x/y")
    with pytest.raises(ConfigError, match="^cache.enable: unknown key; allowed: enabled, dir"):
        model_options(load_settings({"cache": {"enable": True}}))


def test_rerun_of_a_sweep_is_served_from_the_cache(sim_url, tmp_path):
    url, server = sim_url
    overrides = ["model=local-sim", "tasks=[S2]", "methods=[dvoc,oneshot]", "starts=random:2"]
    setup = quick_setup(overrides)
    kw = model_options(load_settings({"cache": {"enabled": True, "dir": str(tmp_path / "cache")}}))
    specs = plan(setup)

    def run(d):
        run_sweep(
            setup, d, lambda m, gate: build_model(m, setup.registry.truth, wrap=gate, **kw), specs=specs
        )
        return list(read_jsonl(d / "trials.jsonl")), list(read_jsonl(d / "steps.jsonl"))

    n0 = server.faults.counts["requests"]
    t1, s1 = run(tmp_path / "one")
    n1 = server.faults.counts["requests"]
    t2, s2 = run(tmp_path / "two")
    assert n1 - n0 == len(s1) > 0 and server.faults.counts["requests"] == n1  # the re-run sent nothing
    assert not any(s["cached"] for s in s1) and all(s["cached"] for s in s2)
    calls = lambda steps: {(s["trial_key"], s["index"]): s["reply_tool_calls"] for s in steps}  # noqa: E731
    assert calls(s1) == calls(s2)
    key = lambda t: t["trial_key"]  # noqa: E731
    for a, b in zip(sorted(t1, key=key), sorted(t2, key=key), strict=True):
        assert (a["final_point"], a["stop_reason"], a["hit"]) == (
            b["final_point"],
            b["stop_reason"],
            b["hit"],
        )
    entries = list((tmp_path / "cache").rglob("*.json"))
    assert len(entries) == len(s1)
    assert {p.parent.parent.name for p in entries} == {p.parent.parent.name for p in entries[:1]}  # one model
