"""The LiteLLM client against dvoc_bench.serve's injected faults: each failure arrives classified, once."""

import asyncio
import socket

import pytest

from dvoc_bench.draw.render import encode_png
from dvoc_bench.models.base import ModelCallError, ModelRequest, Reply
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.litellm_client import LiteLLMModel
from dvoc_bench.protocol import tools_for
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


@pytest.fixture(scope="module")
def req(backend):
    snap = backend.registry.snapshot("S4")
    return ModelRequest(
        text=f"Task: {snap.instruction}",
        image_png=encode_png(snap.image),
        image_size=snap.size,
        tools=tools_for("point"),
        scene_id="S4",
        seed=9,
    )


def client(url, model_id="openai/sim-gemma-4-26b", **raw):
    cfg = load_model_config("local-sim", default_conf_dir() / "model", check_key=False)
    return LiteLLMModel(cfg.updated(api_base=url, model_id=model_id, **raw))


def call(model, req):
    return asyncio.run(model.complete(req))


def fails(model, req) -> ModelCallError:
    with pytest.raises(ModelCallError) as e:
        call(model, req)
    return e.value


def test_ok_reply_fields(backend, req):
    with serve_in_thread(backend=backend) as (url, _):
        r = call(client(url), req)
    assert isinstance(r, Reply) and r.tool_calls[0].name == "click_at"
    assert isinstance(r.tool_calls[0].arguments, str)  # verbatim, as the provider sent it
    assert (r.tokens_in, r.tokens_out, r.cost_usd, r.cost_source) == (1100, 40, None, None)
    assert r.finish_reason == "tool_calls"
    assert r.latency_s > 0 and not r.cached


def test_rate_limit_is_classified_with_retry_after_and_not_retried(backend, req):
    with serve_in_thread(faults=FaultOptions(rpm=1, rate_window_s=30), backend=backend) as (url, server):
        m = client(url)
        call(m, req)
        err = fails(m, req)
        assert err.error_class == "rate_limit"
        assert err.retry_after is not None and 25 <= err.retry_after <= 30
        assert server.faults.counts["requests"] == 2  # no hidden SDK retries


def test_server_errors_timeouts_auth_and_connection(backend, req):
    with serve_in_thread(faults=FaultOptions(error_rate=1.0), backend=backend) as (url, server):
        assert fails(client(url), req).error_class == "server"
        assert server.faults.counts["requests"] == 1
    with serve_in_thread(faults=FaultOptions(delay_s=1.5), backend=backend) as (url, _):
        assert fails(client(url, timeout_s=0.3), req).error_class == "timeout"
    with serve_in_thread(faults=FaultOptions(auth_fail=True), backend=backend) as (url, _):
        assert fails(client(url), req).error_class == "auth"
    with serve_in_thread(backend=backend) as (url, _):
        err = fails(client(url, model_id="openai/sim-does-not-exist"), req)
        assert err.error_class == "bad_request" and "not found" in str(err)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert fails(client(f"http://127.0.0.1:{port}/v1"), req).error_class == "connection"
