"""API keys never reach records, the cache, logs or error strings, even when a server echoes them back."""

import asyncio
import logging
import os

import pytest

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.draw.render import encode_png
from dvoc_bench.models.base import ModelCallError, ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.litellm_client import LiteLLMModel
from dvoc_bench.protocol import tools_for
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread
from tests.support import FAKE_KEY, KEYS, leaks, run_cli, tree_text


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


def sweep(tmp_path, url, key=FAKE_KEY):
    env_key = {"DVOC_SIM_API_KEY": key, "DVOC_SIM_URL": url}
    old = {k: os.environ.get(k) for k in env_key}
    os.environ.update(env_key)  # run_cli passes os.environ to the child
    try:
        return run_cli(
            "model=local-sim",
            "tasks=[S1]",
            "methods=[dvoc,oneshot]",
            "starts=random:1",
            f"cache.dir={tmp_path / 'cache'}",
            f"hydra.run.dir={tmp_path / 'run'}",
            "hydra.verbose=true",  # DEBUG logging everywhere: the worst case for leaks
        )
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.mark.e2e
@pytest.mark.parametrize("key", KEYS, ids=["sk-shaped", "local-token"])
def test_a_server_echoing_the_key_in_its_401_leaks_nothing(backend, tmp_path, key):
    with serve_in_thread(FaultOptions(required_key="the-right-key-0000"), backend) as (url, server):
        r = sweep(tmp_path, url, key)
        assert server.faults.counts["401"] >= 1  # the key was sent, rejected and echoed back
    assert r.returncode == 3, r.stderr[-2000:]  # model trials ran and none succeeded
    trials = list(read_jsonl(tmp_path / "run" / "trials.jsonl"))
    assert trials and all(t["status"] in ("error", "skipped") for t in trials)
    assert any("auth" in str(t.get("error_class")) for t in trials)
    errors = " ".join(str(t.get("error")) for t in trials)
    assert "Incorrect API key provided" in errors and "[REDACTED]" in errors  # echoed, then redacted
    everything = tree_text(tmp_path) + r.stdout + r.stderr
    assert (tmp_path / "run" / ".hydra").is_dir()
    assert leaks(everything, key) == []


@pytest.mark.e2e
def test_a_successful_run_with_a_key_leaks_nothing(backend, tmp_path):
    with serve_in_thread(FaultOptions(required_key=FAKE_KEY), backend) as (url, server):
        r = sweep(tmp_path, url)
        assert server.faults.counts["ok"] >= 2 and server.faults.counts["401"] == 0  # the key got through
    assert r.returncode == 0, r.stderr[-2000:]
    trials = list(read_jsonl(tmp_path / "run" / "trials.jsonl"))
    assert trials and all(t["status"] == "ok" for t in trials)
    assert list((tmp_path / "cache").rglob("*.json"))  # the cache was written
    assert leaks(tree_text(tmp_path) + r.stdout + r.stderr) == []


@pytest.mark.parametrize("key", KEYS, ids=["sk-shaped", "local-token"])
def test_errors_and_debug_logs_in_process_leak_nothing(backend, caplog, monkeypatch, key):
    monkeypatch.setenv("DVOC_SIM_API_KEY", key)
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
    with serve_in_thread(FaultOptions(auth_fail=True), backend) as (url, _):
        cfg = load_model_config("local-sim", default_conf_dir() / "model")
        model = LiteLLMModel(cfg.updated(api_base=url))
        with pytest.raises(ModelCallError) as e:
            asyncio.run(model.complete(req))
        logging.getLogger("dvoc_bench.test").error("call failed: %s (key was %s)", e.value, key)
    assert e.value.error_class == "auth"
    assert leaks(str(e.value), key) == [] and leaks(repr(e.value), key) == []
    assert leaks(caplog.text, key) == []  # even a careless log line through the root handlers is redacted
