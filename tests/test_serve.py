"""dvoc_bench.serve: the simulator behind OpenAI-compatible HTTP, its scene lookup and its injected faults."""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.draw.render import OverlayStyle, draw_overlay, encode_png
from dvoc_bench.models.base import ModelRequest
from dvoc_bench.protocol import tools_for
from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import FaultOptions, HTTPError, SimBackend, make_server, serve_in_thread
from tests.support import ROOT, body_for


@pytest.fixture(scope="module")
def backend():
    b = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"])))
    b.warm()
    return b


@pytest.fixture(scope="module")
def registry(backend):
    return backend.registry


def post(url, body, headers=None, raw=None):
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(
        url + "/chat/completions", data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def test_completion_has_the_openai_shape_and_the_simulators_answer(backend, registry):
    with serve_in_thread(backend=backend) as (url, _):
        status, _, out = post(url, body_for(registry, "S2", seed=11))
        assert status == 200
        msg = out["choices"][0]["message"]
        assert out["object"] == "chat.completion" and out["choices"][0]["finish_reason"] == "tool_calls"
        (call,) = msg["tool_calls"]
        assert call["type"] == "function" and call["function"]["name"] == "click_at"
        args = json.loads(call["function"]["arguments"])
        # the same request to the in-process simulator of that profile gives the same numbers
        snap = registry.snapshot("S2")
        direct = backend.model("sim-gemma-4-26b").respond(
            ModelRequest(
                text=f"Task: {snap.instruction}",
                image_png=encode_png(snap.image),
                image_size=snap.size,
                tools=tools_for("point"),
                scene_id="S2",
                seed=11,
            )
        )
        assert json.loads(direct.tool_calls[0].arguments) == args
        assert out["usage"] == {"prompt_tokens": 1100, "completion_tokens": 40, "total_tokens": 1140}
        with urllib.request.urlopen(url + "/models", timeout=5) as r:
            ids = [m["id"] for m in json.loads(r.read())["data"]]
        assert "sim-gemma-4-26b" in ids and "sim-ideal" in ids and "local-sim" not in ids


def test_scene_is_found_by_instruction_clean_image_or_pixels(backend, registry):
    snap = registry.snapshot("S3")
    clean = encode_png(snap.image)
    # by the instruction in the text
    assert backend.identify_scene(f"do this: {snap.instruction}", None, None) == "S3"
    # no instruction (the paper's task-less first one-shot prompt): the clean screenshot's hash
    assert backend.identify_scene("click the target element", clean, snap.image) == "S3"
    # an annotated frame and no instruction: the scene with the most identical pixels
    drawn = draw_overlay(
        snap.image,
        Point(200, 150),
        mode="full",
        iteration=0,
        position_label="(200, 150) px",
        style=OverlayStyle(),
    )
    assert backend.identify_scene("where is it?", encode_png(drawn), drawn) == "S3"
    # a downscaled copy (image.max_side) is compared with the clean scene downscaled the same way
    from PIL import Image

    small = np.asarray(Image.fromarray(snap.image).resize((400, 300), Image.Resampling.LANCZOS))
    assert backend.identify_scene("where is it?", encode_png(small), small) == "S3"
    # an image of nothing we know
    noise = np.random.default_rng(0).integers(0, 255, (300, 400, 3), dtype=np.uint8)
    with pytest.raises(HTTPError) as e:
        backend.identify_scene("where is it?", encode_png(noise), noise)
    assert e.value.status == 400


def test_bad_requests_get_clear_4xx_errors(backend, registry):
    with serve_in_thread(backend=backend) as (url, server):
        status, _, out = post(url, body_for(registry, model="no-such-model"))
        assert status == 404 and "no-such-model" in out["error"]["message"]
        assert "sim-gemma-4-26b" in out["error"]["message"]  # names what is available
        assert post(url, None, raw=b"{not json")[0] == 400
        bad = body_for(registry)
        bad["messages"][0]["content"][1]["image_url"]["url"] = "https://example.com/x.png"
        status, _, out = post(url, bad)
        assert status == 400 and "data URL" in out["error"]["message"]
        bad["messages"][0]["content"][1]["image_url"]["url"] = "data:image/png;base64,AAAA"
        assert post(url, bad)[0] == 400
        assert post(url, {"model": "sim-ideal", "messages": []})[0] == 400
        assert server.faults.counts["ok"] == 0


def test_rate_limit_answers_429_with_retry_after_then_recovers(backend, registry):
    faults = FaultOptions(rpm=3, rate_window_s=1.0)
    with serve_in_thread(faults=faults, backend=backend) as (url, server):
        body = body_for(registry)
        codes = [post(url, body) for _ in range(5)]
        assert [c[0] for c in codes] == [200, 200, 200, 429, 429]
        assert codes[3][1]["Retry-After"] == "1"
        assert codes[3][2]["error"]["type"] == "rate_limit_exceeded"
        time.sleep(1.05)
        assert post(url, body)[0] == 200
        assert server.faults.counts["429"] == 2


def test_error_rate_delay_and_auth_faults(backend, registry):
    body = body_for(registry)
    with serve_in_thread(faults=FaultOptions(error_rate=0.5, seed=1), backend=backend) as (url, _):
        codes = [post(url, body)[0] for _ in range(40)]
    assert set(codes) == {200, 500} and 8 <= codes.count(500) <= 32
    with serve_in_thread(faults=FaultOptions(delay_s=0.3), backend=backend) as (url, _):
        t0 = time.perf_counter()
        assert post(url, body)[0] == 200
        assert time.perf_counter() - t0 >= 0.3
    with serve_in_thread(faults=FaultOptions(required_key="right-key-123"), backend=backend) as (url, _):
        assert post(url, body, {"Authorization": "Bearer right-key-123"})[0] == 200
        status, _, out = post(url, body, {"Authorization": "Bearer wrong-key-456"})
        assert status == 401 and "wrong-key-456" in out["error"]["message"]  # it echoes, on purpose
    with serve_in_thread(faults=FaultOptions(auth_fail=True), backend=backend) as (url, _):
        assert post(url, body, {"Authorization": "Bearer right-key-123"})[0] == 401


def test_only_loopback_hosts(backend):
    with pytest.raises(ValueError, match="loopback"):
        make_server("0.0.0.0", 0, backend=backend)


@pytest.mark.e2e
def test_command_line_server_answers_and_stops(tmp_path, registry):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    _copy_s1(tmp_path / "scenes")  # a scenes folder holding only S1 keeps start-up fast
    proc = subprocess.Popen(
        [sys.executable, "-m", "dvoc_bench.serve", "--port", "0", "--scenes", str(tmp_path / "scenes")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("serving the simulator on http://127.0.0.1:"), line + proc.stderr.read()
        url = line.split()[4]
        status, _, out = post(url, body_for(registry, "S1", seed=5))
        assert status == 200 and out["choices"][0]["message"]["tool_calls"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    bad = subprocess.run(
        [sys.executable, "-m", "dvoc_bench.serve", "--host", "10.1.2.3", "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "loopback" in bad.stderr


def _copy_s1(dest):
    (dest / "synthetic").mkdir(parents=True)
    src = default_scenes_dir() / "synthetic" / "S1.yaml"
    (dest / "synthetic" / "S1.yaml").write_text(src.read_text())


def test_a_zoom_crop_in_the_body_reaches_the_simulator(backend, registry):
    """``dvoc_crop`` (what the LiteLLM client adds for simulated configs): the server maps its truth through
    the crop as the in-process simulator does; a malformed crop is a 400 naming the field."""
    snap = registry.snapshot("S1")
    crop = (300.0, 200.0, 700.0, 500.0)  # a quarter with S1's button (centre 400, 300) off its centre
    part = np.ascontiguousarray(snap.image[200:500, 300:700])
    png = encode_png(part)
    body = body_for(registry, "S1", png=png, seed=5)
    with serve_in_thread(backend=backend) as (url, _):
        status, _, out = post(url, {**body, "dvoc_crop": list(crop)})
        assert status == 200
        args = json.loads(out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
        direct = backend.model("sim-gemma-4-26b").respond(
            ModelRequest(
                text=f"Task: {snap.instruction}",
                image_png=png,
                image_size=Size(400, 300),
                tools=tools_for("point"),
                scene_id="S1",
                seed=5,
                crop=crop,
            )
        )
        assert json.loads(direct.tool_calls[0].arguments) == args
        status, _, whole = post(url, body)  # the same image taken for a whole screen: another answer
        assert json.loads(whole["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) != args
        for bad in ([1, 2, 3], [10, 10, 5, 20], "x", [0, 0, True, 5], [0, 0, float("inf"), 5]):
            status, _, err = post(url, {**body, "dvoc_crop": bad})
            assert status == 400 and "dvoc_crop" in err["error"]["message"], bad


def test_the_task_is_read_however_it_is_worded_and_a_prompt_without_one_is_said(backend, registry):
    """Issue 52, item 5: S3's instruction is "Click the button labeled 'Submit'"; a prompt that words it
    otherwise but names the target ("Find the button labeled 'Submit'") is answered on Submit, not on
    Cancel (the first element); a prompt that names no target says so in the reply, never a silent click."""
    snap = registry.snapshot("S3")
    submit = next(e for e in snap.truth.elements if e.id == "submit").box
    cancel = next(e for e in snap.truth.elements if e.id == "cancel").box
    with serve_in_thread(backend=backend) as (url, _):
        for text in ("Find the button labeled 'Submit' and click it.", "click the BUTTON labeled submit"):
            status, _, out = post(url, body_for(registry, "S3", text=text, model="sim-ideal"))
            assert status == 200
            msg = out["choices"][0]["message"]
            args = json.loads(msg["tool_calls"][0]["function"]["arguments"])
            assert submit.contains(Point(args["x"], args["y"])), (text, args)
            assert "dvoc_simulator_note" not in out
        for text in ("Click on the element.", "Click Submit or Cancel"):  # no target, or two named
            status, _, out = post(url, body_for(registry, "S3", text=text, model="sim-ideal"))
            msg = out["choices"][0]["message"]
            assert out["dvoc_simulator_note"].startswith("[simulator] no task recognised"), text
            args = json.loads(msg["tool_calls"][0]["function"]["arguments"])
            assert cancel.contains(Point(args["x"], args["y"]))  # the profile's no_task pick, said above
