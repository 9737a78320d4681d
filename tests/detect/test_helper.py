"""The helper protocol: parsing, our server in process and as a real process, and the client's life cycle
(start-up, round trip, crash and restart, ERR, protocol errors, time-outs, idle exit, resident restart)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from dvoc_bench.core.geometry import Box
from dvoc_bench.detect.helper import serve
from dvoc_bench.detect.helper_client import HelperDetector, HelperError
from dvoc_bench.detect.helper_protocol import (
    ProtocolError,
    encode_request,
    error_line,
    format_ok,
    parse_box,
    parse_ok,
    parse_ready,
)
from dvoc_bench.detect.service import own_helper_command
from dvoc_bench.detect.types import Detection, DetectionRun, TimedDetector
from tests.support import HANG_S, import_or_need

# ------------------------------------------------------------------------------------------ protocol


def test_request_bytes_are_little_endian_rgb888():
    img = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)  # h=2, w=3
    req = encode_request(img)
    assert req[:9] == b"D" + (3).to_bytes(4, "little") + (2).to_bytes(4, "little")
    assert req[9:] == img.tobytes() and len(req) == 9 + 18


def test_reply_lines_parse_and_reject_garbage():
    assert parse_ready("READY 960 960") == (960, 960)
    ok = parse_ok("OK 2 12.5")
    assert (ok.count, ok.inference_ms) == (2, 12.5)
    d = parse_box("958.00 215.00 978.00 241.00 0.95000")
    assert d.box.as_list() == [958.0, 215.0, 978.0, 241.0] and d.score == 0.95
    for bad, fn in [
        ("READY 960", parse_ready),
        ("READY a b", parse_ready),
        ("OK two 1", parse_ok),
        ("OK 1 nan", parse_ok),
        ("OK -1 3", parse_ok),
        ("1 2 3 4", parse_box),
        ("1 2 3 4 x", parse_box),
        ("5 2 3 4 0.5", parse_box),
    ]:
        with pytest.raises(ProtocolError):
            fn(bad)
    text = format_ok([Detection(Box(1, 2, 3.25, 4), 0.5)], 7.0)
    assert text == "OK 1 7.0\n1.00 2.00 3.25 4.00 0.50000\n"
    assert error_line("bad\nthing  here") == "ERR bad thing here\n"


class _Fixed(TimedDetector):
    backend = "fixed"

    def _detect(self, image):
        h, w = image.shape[:2]
        return [Detection(Box(0, 0, w, h), 0.5)], 3.0


def _serve(data: bytes, max_side: int = 16384) -> tuple[int, str]:
    out = io.BytesIO()
    rc = serve(_Fixed(), io.BytesIO(data), out, max_side=max_side)
    return rc, out.getvalue().decode()


def test_server_loop_in_process():
    img = np.zeros((2, 3, 3), dtype=np.uint8)
    rc, out = _serve(encode_request(img) + encode_request(img) + b"Q" + encode_request(img))
    assert rc == 0 and out == "OK 1 3.0\n0.00 0.00 3.00 2.00 0.50000\n" * 2  # nothing after Q
    assert _serve(b"")[0] == 0  # end of input: a clean exit
    rc, out = _serve(b"X")
    assert rc == 1 and out == "ERR unknown request byte 0x58\n"
    rc, out = _serve(encode_request(img)[:-1])
    assert rc == 1 and out.startswith("ERR input ended after 17 of 18 bytes")
    rc, out = _serve(encode_request(np.zeros((2, 600, 3), dtype=np.uint8)), max_side=512)
    assert rc == 1 and out == "ERR image size 600x2 outside 1..512\n"


# ------------------------------------------------------------------------------- real processes

onnx = import_or_need("ONNX", "onnx", "the onnx package builds the test model", at_module_level=True)
import_or_need("ONNX", "onnxruntime", "our helper server's onnx backend runs on it", at_module_level=True)

from dvoc_bench.detect.onnx_backend import OnnxDetector  # noqa: E402
from dvoc_bench.detect.synth_models import plant_box, planted_model  # noqa: E402
from dvoc_bench.detect.yolo import DEFAULT_ANCHORS, PostConfig  # noqa: E402

PLANTS = [
    plant_box(484, 324, 10, 13, level=0, anchor=0, obj=0.95),
    plant_box(300, 600, 139.5, 45, level=1, anchor=1, obj=0.8),
]
IMG = np.zeros((1080, 1920, 3), dtype=np.uint8)
SMALL = np.zeros((300, 400, 3), dtype=np.uint8)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return planted_model(tmp_path_factory.mktemp("helper") / "planted.onnx", PLANTS)


def _script(tmp_path, body: str) -> list[str]:
    """A stand-in helper process (plain Python, starts in a few ms)."""
    path = tmp_path / "fake_helper.py"
    path.write_text("import sys, struct, time\nout = sys.stdout\n" + textwrap.dedent(body))
    return [sys.executable, str(path)]


def _wait_until(cond, timeout=10.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return True
        time.sleep(0.02)
    return False


def test_round_trip_matches_in_process_and_survives_a_crash(model):
    ref = OnnxDetector(
        model, np.asarray(DEFAULT_ANCHORS).reshape(3, 3, 2), threads=1, post=PostConfig(0.3, 0.6)
    )
    expected = [d.box.as_list() for d in ref.detect(IMG)]
    with HelperDetector(own_helper_command("onnx", str(model), "yolov5-default"), startup_timeout_s=60) as h:
        assert h.pid is None and h.starts == 0  # on demand: nothing runs before the first request
        run = h.run(IMG)
        assert isinstance(run, DetectionRun) and run.backend == "helper"
        assert (
            [d.box.as_list() for d in run.detections]
            == expected
            == [
                [958.0, 215.0, 978.0, 241.0],
                [460.5, 735.0, 739.5, 825.0],
            ]
        )
        assert [d.score for d in run.detections] == [0.95, 0.8]  # 5 decimals on the wire
        assert h.model_size == (960, 960) and h.starts == 1
        assert run.inference_ms is not None and run.wall_ms >= run.inference_ms
        first = h.pid
        os.kill(first, signal.SIGKILL)  # a crash between two requests
        assert _wait_until(lambda: not h.running)
        again = h.run(SMALL)
        assert h.starts == 2 and h.pid not in (None, first)
        assert len(again.detections) == 2
    assert h.pid is None


def test_err_reply_stops_the_helper_and_the_next_request_restarts_it(model):
    cmd = own_helper_command("onnx", str(model), "yolov5-default") + ["--max-side", "512"]
    with HelperDetector(cmd) as h:
        with pytest.raises(
            HelperError, match=r"helper reported an error: image size 1920x1080 outside 1\.\.512"
        ):
            h.run(IMG)
        assert not h.running and h.starts == 1
        assert len(h.run(SMALL).detections) == 2  # 400 x 300 is within the limit
        assert h.starts == 2


def test_helper_start_up_failures_are_clear(model, tmp_path):
    missing = own_helper_command("onnx", str(tmp_path / "nope.onnx"), "yolov5-default")
    with pytest.raises(
        HelperError, match="helper failed to start: cannot load the model: onnx model not found"
    ):
        HelperDetector(missing).run(SMALL)
    rknn = own_helper_command("rknn", str(model), "yolov5-default")
    if not os.uname().machine.startswith("aarch64"):
        with pytest.raises(HelperError, match="rknn-toolkit-lite2"):
            HelperDetector(rknn).run(SMALL)
    dies = _script(tmp_path, "print('boom: no NPU', file=sys.stderr)\nsys.exit(3)\n")
    with pytest.raises(HelperError, match=r"exited during start-up \(exit code 3; stderr: boom: no NPU\)"):
        HelperDetector(dies).run(SMALL)
    silent = _script(tmp_path, "time.sleep(30)\n")
    t0 = time.monotonic()
    h = HelperDetector(silent, startup_timeout_s=0.5)
    with pytest.raises(HelperError, match=r"no READY within 0\.5 s"):
        h.run(SMALL)
    assert time.monotonic() - t0 < 10 and not h.running
    with pytest.raises(HelperError, match="cannot start helper"):
        HelperDetector([str(tmp_path / "no-such-binary")]).run(SMALL)


@pytest.mark.e2e
def test_bad_start_up_arguments_answer_err_and_anchors_are_required(model):
    """Issue #18: a bad start-up argument is one ``ERR`` line on stdout (exit 2), not argparse's usage text;
    without ``--anchors`` the helper refuses to guess (``--anchors yolov5-default`` says it)."""
    base = [sys.executable, "-m", "dvoc_bench.detect.helper", "--backend", "onnx", "--model", str(model)]
    for extra, says in [
        ([], "the following arguments are required: --anchors"),
        (["--anchors", "yolov5-default", "--confidence", "2"], "--confidence: must be between 0 and 1"),
        (["--anchors", "yolov5-default", "--threads", "0"], "--threads: must be at least 1"),
        (["--anchors", "yolov5-default", "--colour", "red"], "unrecognized arguments: --colour red"),
    ]:
        r = subprocess.run(base + extra, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert r.returncode == 2 and r.stdout.startswith("ERR bad arguments: "), r.stdout
        assert says in r.stdout and len(r.stdout.splitlines()) == 1
    with pytest.raises(HelperError, match="helper failed to start: bad arguments: .*--anchors"):
        HelperDetector(base).run(SMALL)


@pytest.mark.e2e
def test_self_test_prints_one_reply(model):
    cmd = own_helper_command("onnx", str(model), "yolov5-default") + ["--self-test"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=HANG_S)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[0].startswith("OK 2 ")
    assert [parse_box(x).box.as_list() for x in lines[1:]] == [  # 800 x 600 blank page: x / 1.2
        pytest.approx([479 / 1.2, 197.5 / 1.2, 489 / 1.2, 210.5 / 1.2], abs=0.01),
        pytest.approx([230.25 / 1.2, 457.5 / 1.2, 369.75 / 1.2, 502.5 / 1.2], abs=0.01),
    ]


# A stand-in helper whose behaviour per request is scripted: "ok" answers one box, "crash" exits
# without answering, "garbage" breaks the protocol, "noise" prints a log line before its answer.
SCRIPTED = """
import os
plan = sys.argv[1].split(",")
state = sys.argv[2]
n = int(open(state).read()) if os.path.exists(state) else 0
print("I RKNN: runtime version 2.5.0 (log noise before READY)", flush=True)
print("READY 960 960", flush=True)
stdin = sys.stdin.buffer
while True:
    cmd = stdin.read(1)
    if cmd in (b"", b"Q"):
        sys.exit(0)
    w, h = struct.unpack("<II", stdin.read(8))
    stdin.read(w * h * 3)
    what = plan[min(n, len(plan) - 1)]
    n += 1
    open(state, "w").write(str(n))
    if what == "crash":
        os._exit(7)
    if what == "garbage":
        print("OK 1 2.0\\nthis is not a box", flush=True)
        continue
    if what == "noise":
        print("W RKNN: slow", flush=True)
    print(f"OK 1 2.5\\n0 0 {w} {h} 0.9", flush=True)
"""


def test_crash_during_a_request_is_retried_once_on_a_fresh_process(tmp_path):
    script = _script(tmp_path, SCRIPTED)
    with HelperDetector([*script, "crash,ok", str(tmp_path / "n1")]) as h:
        run = h.run(SMALL)  # the first process dies mid-request; the retry on a new one answers
        assert [d.box.as_list() for d in run.detections] == [[0.0, 0.0, 400.0, 300.0]]
        assert run.inference_ms == 2.5 and h.starts == 2
    with HelperDetector([*script, "crash", str(tmp_path / "n2")]) as h:
        with pytest.raises(HelperError, match=r"crashed during a request \(exit code 7"):
            h.run(SMALL)
        assert h.starts == 2 and not h.running


def test_protocol_error_and_noise(tmp_path):
    script = _script(tmp_path, SCRIPTED)
    with HelperDetector([*script, "noise,garbage,ok", str(tmp_path / "n")]) as h:
        assert len(h.run(SMALL).detections) == 1  # a log line before OK is skipped
        with pytest.raises(HelperError, match="protocol error"):
            h.run(SMALL)
        assert not h.running
        assert len(h.run(SMALL).detections) == 1 and h.starts == 2


def test_request_timeout_kills_the_helper(tmp_path):
    hang = _script(tmp_path, "print('READY 960 960', flush=True)\ntime.sleep(30)\n")
    with HelperDetector(hang, request_timeout_s=0.5) as h:
        with pytest.raises(HelperError, match=r"no complete reply within 0\.5 s"):
            h.run(SMALL)
        assert not h.running


def test_on_demand_helper_exits_when_idle_and_comes_back(tmp_path):
    script = _script(tmp_path, SCRIPTED)
    with HelperDetector([*script, "ok", str(tmp_path / "n")], idle_exit_s=0.3) as h:
        h.run(SMALL)
        proc = h._proc
        assert proc is not None
        assert _wait_until(lambda: h.idle_exits == 1)
        assert proc.popen.wait(timeout=5) == 0  # it was asked to quit (Q), not killed
        h.run(SMALL)
        assert h.starts == 2


def test_resident_helper_starts_at_once_and_restarts_in_the_background(tmp_path):
    script = _script(tmp_path, SCRIPTED)
    with HelperDetector([*script, "garbage,ok", str(tmp_path / "n")], on_demand=False, idle_exit_s=0.1) as h:
        assert h.running and h.starts == 1  # loaded before the first request
        with pytest.raises(HelperError):
            h.run(SMALL)
        assert _wait_until(lambda: h.running and h.starts == 2)  # no request needed
        time.sleep(0.3)
        assert h.running and h.idle_exits == 0  # resident: no idle exit
        assert len(h.run(SMALL).detections) == 1
