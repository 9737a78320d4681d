"""Issue 51, item 8: error bodies are bounded where they arrive, before LiteLLM or the OpenAI SDK read them.

Before: a 200 KB gzip error body inflated to 2.45 GB, and 30 MB error bodies cost gigabytes and minutes on
the event loop (LiteLLM's exception matching and ``traceback.format_exc`` over the whole text). Each case
runs in a child process that reports how much its peak memory grew during one call against a loopback
provider; the condition is that it grew by far less than the body (decoded) would take.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support import FAKE_KEY, ROOT

CHILD = r"""
import asyncio, gzip, json, resource, sys, threading, time, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from dvoc_bench.core.geometry import Size
from dvoc_bench.models.base import ModelCallError, ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.litellm_client import LiteLLMModel, import_litellm

kind = sys.argv[1]
if kind == "gzip":  # 256 MB of one repeated line, gzip: about 250 KB on the wire
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    line = b"<p>upstream failed, retry later</p>\n" * 1000
    BODY = b"".join(z.compress(line) for _ in range(256 * 1024 * 1024 // len(line))) + z.flush()
    HEADERS = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
else:  # a 100 MB multi-line HTML 502 (the issue had 30 MB; larger stands clear of a first call's own ~15 MB)
    BODY = b"<html><body>\n" + b"<div>bad gateway: the upstream timed out (frame 0x7f3a)</div>\n" * 1_600_000
    HEADERS = {"Content-Type": "text/html"}

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(502)
        for k, v in HEADERS.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        try:
            self.wfile.write(BODY)
        except OSError:
            pass

server = ThreadingHTTPServer(("127.0.0.1", 0), H)
threading.Thread(target=server.serve_forever, daemon=True).start()
cfg = load_model_config("local-sim", default_conf_dir() / "model")
model = LiteLLMModel(cfg.updated(api_base=f"http://127.0.0.1:{server.server_address[1]}/v1"))
import_litellm()
req = ModelRequest("Task: click OK", None, Size(100, 100), [], "S1", 1)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    asyncio.run(model.complete(req))
    cls = "none"
except ModelCallError as e:
    cls = e.error_class
growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
took = time.perf_counter() - t0
print(json.dumps({"class": cls, "growth_mb": growth, "seconds": took, "body_mb": len(BODY) / 2**20}))
"""


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["gzip", "html"])
def test_an_error_body_costs_what_its_head_costs(kind):
    r = subprocess.run(
        [sys.executable, "-c", CHILD, kind],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), "DVOC_SIM_API_KEY": FAKE_KEY},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["class"] == "server", out
    decoded_mb = 256 if kind == "gzip" else out["body_mb"]
    assert out["growth_mb"] < decoded_mb / 4, out  # the body (decoded) never held whole
