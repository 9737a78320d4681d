"""Issue 14, failures 4 and 5: huge replies and keys echoed in successful replies.

Before: a server answering 30 MB per reply grew steps.jsonl (and the response cache) to about 1.5 GB for
10 trials with a peak RSS of about 3 GB; a server repeating the bearer token in a 200 reply put the key
into steps.jsonl and every cache file (only error replies were redacted).
"""

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.draw.render import encode_png
from dvoc_bench.models.base import MAX_REPLY_CHARS, ModelRequest, Reply, ToolCall, bound_reply, reply_digest
from dvoc_bench.models.cache import CachedModel, ResponseCache
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.factory import build_model
from dvoc_bench.models.litellm_client import LiteLLMModel
from dvoc_bench.protocol import tools_for
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.runner.setup import model_options
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread
from tests.support import FAKE_KEY, ROOT, leaks, tree_text

PAD = 15_000_000
"""Characters added to the text and to each tool call's arguments: a reply body of about 30 MB."""


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


def sweep(
    tmp_path: Path, url: str, *extra: str, key: str | None = None
) -> tuple[subprocess.CompletedProcess, int]:
    """A local-sim sweep in a child process; returns it and the child's peak RSS in kB."""
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "DVOC_SIM_URL": url}
    if key:
        env["DVOC_SIM_API_KEY"] = key
    wrapper = (
        "import resource, subprocess, sys\n"
        "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
        "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(r.returncode)\n"
    )
    args = [
        "model=local-sim",
        "tasks=[S1,S2]",
        "methods=[oneshot]",
        "starts=random:5",
        "run.quiet=true",
        f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={tmp_path / 'run'}",
        *extra,
    ]
    r = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "dvoc_bench", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    rss = int(r.stdout.rsplit("MAXRSS_KB", 1)[1].split()[0]) if "MAXRSS_KB" in r.stdout else -1
    return r, rss


@pytest.mark.e2e
def test_a_30mb_reply_keeps_records_and_cache_small_and_memory_bounded(backend, tmp_path):
    with serve_in_thread(FaultOptions(pad_chars=PAD), backend) as (url, server):
        r, rss_kb = sweep(tmp_path, url, "run.max_in_flight=2", "oneshot.max_attempts=2")
        served = server.faults.counts["ok"]
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "run"
    trials = list(read_jsonl(run / "trials.jsonl"))
    steps = list(read_jsonl(run / "steps.jsonl"))
    assert len(trials) == 10 and len(steps) == served
    size = (run / "steps.jsonl").stat().st_size
    cache = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*.json"))
    print(
        f"\n30 MB replies: {served} calls, steps.jsonl {size} B, cache {cache} B, "
        f"peak RSS {rss_kb // 1024} MB"
    )
    assert size < served * 3 * MAX_REPLY_CHARS  # text and arguments: at most 64k characters each
    assert cache < served * 3 * MAX_REPLY_CHARS
    assert rss_kb < 1_000_000  # was about 3 GB
    for s in steps:
        assert len(s["reply_text"]) <= MAX_REPLY_CHARS
        assert all(len(c["arguments"]) <= MAX_REPLY_CHARS for c in s["reply_tool_calls"])
        calls = len(s["reply_tool_calls"])  # the simulator sometimes answers in text only
        assert s["reply_chars"] >= (1 + calls) * PAD and len(s["reply_sha256"]) == 64
        assert s["reply_truncated"]["text"]["chars"] >= PAD
        if calls:
            assert s["reply_truncated"]["tool_calls[0].arguments"]["chars"] > PAD
    assert any(s["reply_tool_calls"] for s in steps)


@pytest.mark.e2e
def test_run_max_reply_chars_is_threaded_through_the_config(backend, tmp_path):
    with serve_in_thread(FaultOptions(pad_chars=50_000), backend) as (url, _):
        r, _ = sweep(tmp_path, url, "run.max_reply_chars=1000", "starts=random:1", "tasks=[S1]")
    assert r.returncode == 0, r.stderr[-2000:]
    steps = list(read_jsonl(tmp_path / "run" / "steps.jsonl"))
    assert steps and all(len(s["reply_text"]) == 1000 for s in steps)
    assert model_options(load_settings({"run": {"max_reply_chars": 500}}))["max_reply_chars"] == 500
    assert model_options(load_settings({}))["max_reply_chars"] == MAX_REPLY_CHARS
    with pytest.raises(ConfigError, match="run.max_reply_chars"):
        model_options(load_settings({"run": {"max_reply_chars": 0}}))


def test_bound_reply_keeps_the_head_and_records_length_and_hash_of_the_original():
    text = "é" * 10 + "z" * 100
    args = json.dumps({"x": 1, "y": 2, "pad": "p" * 200})
    reply = Reply(text=text, tool_calls=[ToolCall("click_at", args), ToolCall("click_at", {"x": 3})])
    full = reply_digest(reply)
    out = bound_reply(reply, 50)
    assert out.text == text[:50] and out.tool_calls[0].arguments == args[:50]
    assert out.tool_calls[1].arguments == {"x": 3}  # small objects stay objects
    assert out.full_chars == len(text) + len(args) + len(json.dumps({"x": 3}))
    assert out.full_sha256 == full
    assert out.truncated == {
        "text": {"chars": len(text), "sha256": hashlib.sha256(text.encode()).hexdigest()},
        "tool_calls[0].arguments": {"chars": len(args), "sha256": hashlib.sha256(args.encode()).hexdigest()},
    }
    small = bound_reply(Reply(text="ok"), 50)
    assert small.text == "ok" and small.truncated is None and small.full_chars == 2


@pytest.mark.e2e
def test_a_key_echoed_in_a_successful_reply_reaches_no_file_and_no_log(backend, tmp_path):
    opts = FaultOptions(required_key=FAKE_KEY, echo_key=True)
    with serve_in_thread(opts, backend) as (url, server):
        r, _ = sweep(
            tmp_path, url, "hydra.verbose=true", "methods=[dvoc,oneshot]", "starts=random:1", key=FAKE_KEY
        )
        assert server.faults.counts["ok"] >= 2 and server.faults.counts["401"] == 0
    assert r.returncode == 0, r.stderr[-2000:]
    steps = list(read_jsonl(tmp_path / "run" / "steps.jsonl"))
    assert steps and all("[REDACTED]" in (s["reply_text"] or "") for s in steps)  # echoed, then redacted
    assert any("[REDACTED]" in c["arguments"] for s in steps for c in s["reply_tool_calls"])
    assert list((tmp_path / "cache").rglob("*.json"))
    everything = tree_text(tmp_path) + r.stdout + r.stderr
    assert leaks(everything) == []


@pytest.mark.e2e
def test_in_process_replies_logs_and_a_stale_cache_entry_are_redacted(backend, tmp_path, caplog, monkeypatch):
    import logging

    monkeypatch.setenv("DVOC_SIM_API_KEY", FAKE_KEY)
    caplog.set_level(logging.DEBUG)
    snap = backend.registry.snapshot("S1")
    req = ModelRequest(
        text=f"Task: {snap.instruction}",
        image_png=encode_png(snap.image),
        image_size=snap.size,
        tools=tools_for("point"),
        scene_id="S1",
        seed=1,
    )
    with serve_in_thread(FaultOptions(required_key=FAKE_KEY, echo_key=True), backend) as (url, _):
        cfg = load_model_config("local-sim", default_conf_dir() / "model")
        model = LiteLLMModel(cfg.updated(api_base=url))
        reply = asyncio.run(model.complete(req))
        logging.getLogger("dvoc_bench.test").info("reply: %s", reply)
    assert "[REDACTED]" in reply.text and leaks(reply.text) == []
    assert leaks(json.dumps([c.arguments for c in reply.tool_calls])) == []
    assert leaks(caplog.text) == []
    # an entry written by an older version (unbounded, unredacted) is cleaned when read
    cache = ResponseCache(tmp_path)
    cached = CachedModel(model, cache, "id@")
    key = cached.key(req)
    old = {"identity": "id@", "key": key, "text": f"k={FAKE_KEY} " + "w" * 100_000, "tool_calls": []}
    path = cache._path("id@", key)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    hit = asyncio.run(cached.complete(req))
    assert hit.cached and leaks(hit.text) == [] and len(hit.text) <= MAX_REPLY_CHARS


def test_build_model_passes_the_bound_to_every_kind(tmp_path):
    from dvoc_bench.scenes import SceneRegistry

    reg = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    sim = build_model(
        load_model_config("sim-ideal", default_conf_dir() / "model"), reg.truth, max_reply_chars=77
    )
    assert sim.max_reply_chars == 77
    cfg = load_model_config("local-sim", default_conf_dir() / "model", check_key=False)
    llm = build_model(cfg, reg.truth, max_reply_chars=88)
    assert llm.max_reply_chars == 88
    snap = reg.snapshot("S1")
    req = ModelRequest("t", encode_png(snap.image), Size(800, 600), tools_for("point"), "S1", 1)
    rep = asyncio.run(sim.complete(req))
    assert rep.full_sha256 is not None and rep.full_chars is not None
