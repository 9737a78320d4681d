"""The LiteLLM client without a server: request building, error classes, redaction, keys, cost (resizing is
the harness's: tests/test_sending.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError, validate
from dvoc_bench.core.geometry import Size
from dvoc_bench.core.redaction import redact, register_secret
from dvoc_bench.draw.render import encode_png
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.litellm_client import (
    LiteLLMModel,
    classify_exception,
    import_litellm,
    parse_retry_after,
)
from dvoc_bench.models.options import ImageOptions
from dvoc_bench.protocol import tools_for
from tests.support import ROOT

GOOGLE_LIKE = "AIza" + "SyFAKEFAKEFAKEFAKE12345"  # split so no scanner mistakes it for a key


MODELS = default_conf_dir() / "model"


@pytest.fixture
def png():
    img = np.zeros((600, 800, 3), dtype=np.uint8)
    img[100:200, 300:500] = (0, 200, 0)
    return encode_png(img)


def request(png, **kw):
    base = dict(
        text="Task: press the green button",
        image_png=png,
        image_size=Size(800, 600),
        tools=tools_for("offset"),
        scene_id="S1",
        seed=1234,
    )
    return ModelRequest(**{**base, **kw})


def sim_cfg(**raw):
    cfg = load_model_config("local-sim", MODELS, check_key=False)
    return cfg.updated(**raw)


def test_request_carries_text_image_tools_params_seed_and_no_key(png, monkeypatch):
    monkeypatch.setenv("DVOC_SIM_API_KEY", "sk-test-not-in-kwargs-0000")
    m = LiteLLMModel(sim_cfg(params={"temperature": 0.2, "max_tokens": 64}, tool_choice="required"))
    kw = m.request_kwargs(request(png, params={"temperature": 0.7}))
    (msg,) = kw["messages"]
    assert msg["role"] == "user"
    text, image = msg["content"]
    assert text == {"type": "text", "text": "Task: press the green button"}
    assert image["image_url"]["url"] == request(png).data_url()  # the very bytes, as a data URL
    assert kw["tools"] == tools_for("offset") and kw["tool_choice"] == "required"
    assert kw["temperature"] == 0.7 and kw["max_tokens"] == 64  # the sweep's sampling wins over the config
    assert kw["seed"] == 1234 and kw["timeout"] == 30.0  # the provider's default timeout
    assert kw["num_retries"] == 0 and kw["max_retries"] == 0  # retries are the scheduler's job
    assert kw["model"] == "openai/sim-gemma-4-26b"
    assert "api_key" not in kw and "sk-test" not in json.dumps(kw)
    kw2 = LiteLLMModel(sim_cfg(send_seed=False, timeout_s=5)).request_kwargs(request(png, tool_choice="auto"))
    assert "seed" not in kw2 and kw2["timeout"] == 5.0 and kw2["tool_choice"] == "auto"
    assert "LiteLLMModel('local-sim'" in repr(m) and "sk-" not in repr(m)


def test_the_client_sends_the_harness_image_as_it_is(png):
    """The harness resized already: the client never resizes again, whatever its limits."""
    m = LiteLLMModel(sim_cfg(image={"max_side": 200}), ImageOptions(max_side=400))
    kw = m.request_kwargs(request(png))
    assert kw["messages"][0]["content"][1]["image_url"]["url"] == request(png).data_url()
    assert m.settings.image.max_side == 200  # a model config's own image block wins over the global one
    assert m.cache_fingerprint()["max_side"] == 200 and "max_pixels" not in m.cache_fingerprint()


def test_a_crop_is_sent_to_the_local_simulator_only(png):
    """``dvoc_crop`` rides in the body (LiteLLM's ``extra_body``) for ``simulated: true`` configs; a real
    provider never sees it (it is metadata for the simulator's truth, not for a model)."""
    crop = (100.0, 50.0, 500.0, 350.0)
    kw = LiteLLMModel(sim_cfg()).request_kwargs(request(png, crop=crop))
    assert kw["extra_body"] == {"dvoc_crop": [100.0, 50.0, 500.0, 350.0]}
    assert "extra_body" not in LiteLLMModel(sim_cfg()).request_kwargs(request(png))
    merged = LiteLLMModel(sim_cfg(params={"extra_body": {"top_k": 5}})).request_kwargs(
        request(png, crop=crop)
    )
    assert merged["extra_body"] == {
        "top_k": 5,
        "dvoc_crop": [100.0, 50.0, 500.0, 350.0],
    }  # merged, not replaced
    real = sim_cfg(simulated=False)
    assert not LiteLLMModel(real).simulated
    assert "extra_body" not in LiteLLMModel(real).request_kwargs(request(png, crop=crop))


def test_image_options_are_validated():
    assert validate(ImageOptions, None) == ImageOptions()
    with pytest.raises(ConfigError, match="^image.max_side: must be greater than or equal to 16"):
        validate(ImageOptions, {"max_side": 4}, "image.")
    with pytest.raises(ConfigError, match="^image.max_pixels: must be greater than or equal to 256"):
        validate(ImageOptions, {"max_pixels": 10}, "image.")
    with pytest.raises(ConfigError, match="^image.pixel_answers: unknown key"):  # gone: the harness resizes
        validate(ImageOptions, {"pixel_answers": "sent"}, "image.")
    with pytest.raises(ConfigError, match="^image.maxside: unknown key"):
        validate(ImageOptions, {"maxside": 512}, "image.")
    bad = "^model local-sim: tool_choice: unknown value 'always'; allowed: auto"
    with pytest.raises(ConfigError, match=bad):
        sim_cfg(tool_choice="always")


def _resp(code, headers=None):
    return httpx.Response(code, headers=headers or {}, request=httpx.Request("POST", "http://127.0.0.1/v1"))


def test_litellm_exceptions_map_to_error_classes():
    litellm = import_litellm()
    cases = [
        (
            litellm.RateLimitError("slow down", "openai", "m", response=_resp(429, {"retry-after": "7"})),
            "rate_limit",
        ),
        (
            litellm.RateLimitError("You exceeded your current quota, insufficient_quota", "openai", "m"),
            "quota",
        ),
        (litellm.RateLimitError("Quota exceeded for quota metric ... PerDay", "gemini", "m"), "quota"),
        (litellm.Timeout("Connection timed out after 30 seconds.", "m", "openai"), "timeout"),
        (litellm.APIConnectionError("Connection refused", "openai", "m"), "connection"),
        (litellm.AuthenticationError("Missing Authentication header", "openrouter", "m"), "auth"),
        (litellm.PermissionDeniedError("denied", "openai", "m", response=_resp(403)), "auth"),
        (litellm.BadRequestError("API key not valid. Please pass a valid API key.", "m", "gemini"), "auth"),
        (litellm.InternalServerError("boom", "openai", "m"), "server"),
        (litellm.ServiceUnavailableError("The model is overloaded", "gemini", "m"), "server"),
        (litellm.BadRequestError("Invalid schema", "m", "openai"), "bad_request"),
        (litellm.NotFoundError("model not found", "m", "openai"), "bad_request"),
        (ValueError("something else"), "unknown"),
    ]
    for exc, cls in cases:
        err = classify_exception(exc)
        assert err.error_class == cls, (exc, err)
        assert len(str(err)) <= 300
    assert classify_exception(cases[0][0]).retry_after == 7.0
    assert classify_exception(cases[3][0]).retry_after is None


def test_retry_after_from_header_date_or_message():
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: go now
    assert parse_retry_after(None, "Resource exhausted. Please retry in 23.5s.") == 23.5
    assert parse_retry_after(None, '"retryDelay": "41s"') == 41.0
    assert parse_retry_after(None, "try again in 250ms") == 0.25
    assert parse_retry_after("soon", "no hint") is None


def test_redaction_removes_registered_keys_fragments_and_key_shapes():
    key = "zz-secret-Q8v1PpL0w9Xr"
    register_secret(key)
    text = (
        f"401: Incorrect API key provided: {key}. Also Bearer abc.def-123 and "
        f"https://h/v1?key={GOOGLE_LIKE}&alt=json; partial {key[:12]}...; "
        "sk-proj-abcdefghijkl and api_key='hunter22hunter22'"
    )
    out = redact(text)
    for leak in (key, key[:12], "abc.def-123", "AIzaSyFAKE", "sk-proj-abcdefghijkl", "hunter22"):
        assert leak not in out, (leak, out)
    assert "Incorrect API key provided" in out and "alt=json" in out  # the rest of the message survives


def test_missing_key_fails_at_config_load_naming_the_variable(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ConfigError) as e:
        load_model_config("gemini-3.1-flash-lite", MODELS)
    msg = str(e.value)
    assert "GEMINI_API_KEY" in msg and "\n" not in msg
    cfg = load_model_config("gemini-3.1-flash-lite", MODELS, check_key=False)
    with pytest.raises(ConfigError, match="GEMINI_API_KEY"):
        LiteLLMModel(cfg)
    monkeypatch.setenv("GEMINI_API_KEY", "fake-key-for-a-test-0001")
    m = LiteLLMModel(load_model_config("gemini-3.1-flash-lite", MODELS))
    assert m.settings.model_id == "gemini/gemini-3.1-flash-lite" and m.coord_frame == "norm1000"


@pytest.mark.e2e
def test_cli_without_a_key_prints_one_line_and_exits_2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}
    r = subprocess.run(
        [sys.executable, "-m", "dvoc_bench", "model=gemini-3.1-flash-lite", f"hydra.run.dir={tmp_path}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [
        "config error: model gemini-3.1-flash-lite: provider gemini needs an API key in the environment "
        "variable GEMINI_API_KEY, which is not set"
    ]
    assert "Traceback" not in r.stdout + r.stderr


def test_every_real_model_config_loads_with_its_key(monkeypatch):
    for var in ("GEMINI_API_KEY", "OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(var, "fake-key-for-config-check")
    # ocr-*: kind ocr; omniparser-parse: kind parse
    real = [p.stem for p in MODELS.glob("*.yaml") if not p.stem.startswith(("sim-", "ocr-", "omniparser-"))]
    assert {"gemini-3.1-flash-lite", "gemini-2.5-flash-lite", "gemma-4-26b", "gemma-4-31b"} <= set(real)
    assert {"gemma-4-26b-via-or", "gemma-4-31b-via-or", "local-sim"} <= set(real)
    for name in real:
        cfg = load_model_config(name, MODELS)
        assert cfg.kind == "litellm" and cfg.provider_config is not None, name
        LiteLLMModel(cfg)  # settings validate
        if name.startswith(("gemini", "gemma")):
            assert cfg.coord_frame == "norm1000", name
    assert load_model_config("gemma-4-26b", MODELS).model_id == "gemini/gemma-4-26b-a4b-it"
    assert load_model_config("gemma-4-31b-via-or", MODELS).model_id == "openrouter/google/gemma-4-31b-it:free"
    assert load_model_config("gemma-4-26b", MODELS).gate_limits["rpm"] == 15


def test_local_sim_base_url_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("DVOC_SIM_URL", raising=False)
    assert load_model_config("local-sim", MODELS).api_base == "http://127.0.0.1:8765/v1"
    monkeypatch.setenv("DVOC_SIM_URL", "http://127.0.0.1:9999/v1")
    cfg = load_model_config("local-sim", MODELS)
    assert cfg.api_base == "http://127.0.0.1:9999/v1" and cfg.identity.endswith("@http://127.0.0.1:9999/v1")
    assert cfg.simulated


def test_cost_is_litellms_or_unknown():
    litellm = import_litellm()
    m = LiteLLMModel(sim_cfg())

    class Resp:
        _hidden_params = {"response_cost": 0.00123}

    assert m._cost(litellm, Resp()) == (0.00123, "litellm")
    Resp._hidden_params = {}
    assert m._cost(litellm, Resp()) == (None, None)  # unknown: never a guess
    priced = litellm.ModelResponse(
        model="gemini-2.5-flash-lite",
        usage={"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100},
    )
    m2 = LiteLLMModel(sim_cfg(cost_model="gemini/gemini-2.5-flash-lite"))
    cost, source = m2._cost(litellm, priced)
    assert source == "litellm_price_map:gemini/gemini-2.5-flash-lite"
    assert cost == pytest.approx(1000 * 1e-7 + 100 * 4e-7)


@pytest.mark.e2e
def test_help_does_not_import_litellm_and_the_client_imports_it_offline():
    code = (
        "import os, sys, runpy\n"
        "sys.argv = ['dvoc_bench', '--help']\n"
        "try:\n    runpy.run_module('dvoc_bench', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "import dvoc_bench.models.factory, dvoc_bench.serve, dvoc_bench.runner.probe\n"
        "import dvoc_bench.models.cache\n"
        "print('LITELLM', 'litellm' in sys.modules)\n"
        "from dvoc_bench.models.litellm_client import import_litellm\n"
        "import_litellm()\n"
        "print('MAP', os.environ.get('LITELLM_LOCAL_MODEL_COST_MAP'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )
    assert "LITELLM False" in r.stdout, r.stdout[-500:] + r.stderr[-500:]
    assert "MAP True" in r.stdout
    assert "Failed to fetch remote model cost map" not in r.stderr  # it never tried the network


def test_provider_files_declare_keys_by_name_only():
    for p in (Path(default_conf_dir()) / "provider").glob("*.yaml"):
        text = p.read_text()
        assert "key_env:" in text and "sk-" not in text and "AIza" not in text, p.name
