"""Issue 32, item 1: a provider answering HTTP 500 with a 30 MB error body stalled the sweep.

Before: LiteLLM's secret-redaction regex ran over the whole error text on the event loop (1 MB 0.8 s,
3 MB 4.3 s; a 7 s smoke run did not finish in 400 s), then our own redactor ran over it again. Now
LiteLLM's scan is off and the client reads only the first kilobytes of an error (``redact_head``).
"""

import asyncio
import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.redaction import REDACTED, redact_head
from dvoc_bench.models.base import ModelCallError, ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.litellm_client import ERROR_MAX_CHARS, LiteLLMModel
from tests.support import FAKE_KEY, leaks

BODY_BYTES = 30_000_000
LIMIT_S = 60.0
"""Generous: the call takes about 2 s now (most of it importing LiteLLM); it took minutes before."""


class _HugeError(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""

    def log_message(self, format, *args):  # quiet
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)


def _body(key: str) -> bytes:
    """A 30 MB OpenAI-style error whose message echoes the key (plain and base64) and then pads."""
    echo = f"bad key {key} ({base64.b64encode(key.encode()).decode()}) "
    pad = "internal error at frame 0x7f3a; " * (BODY_BYTES // 32)
    return ('{"error": {"message": "' + echo + pad + '", "type": "server_error", "code": 500}}').encode()


@pytest.mark.e2e
def test_a_30mb_error_body_fails_as_a_server_fault_promptly_and_bounded(monkeypatch):
    monkeypatch.setenv("DVOC_SIM_API_KEY", FAKE_KEY)
    handler = type("H", (_HugeError,), {"body": _body(FAKE_KEY)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    cfg = load_model_config("local-sim", default_conf_dir() / "model")
    model = LiteLLMModel(cfg.updated(api_base=url))
    req = ModelRequest("Task: click OK", None, Size(100, 100), [], "S1", 1)
    out: list[BaseException] = []

    def call() -> None:
        try:
            asyncio.run(model.complete(req))
        except BaseException as e:  # the outcome is checked below
            out.append(e)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(LIMIT_S)
    server.shutdown()
    assert not worker.is_alive(), f"one call on a 30 MB error body still running after {LIMIT_S:.0f} s"
    assert len(out) == 1 and isinstance(out[0], ModelCallError), out
    err = out[0]
    assert err.error_class == "server"
    assert 0 < len(str(err)) <= ERROR_MAX_CHARS and "internal error" in str(err)
    assert REDACTED in str(err) and leaks(str(err)) == []


def test_a_key_cut_where_the_head_ends_leaves_no_piece():
    key = "dvocLocalVllmToken7c41b9e2a0d3f6"
    forms = [key, key.encode().hex(), base64.b64encode(key.encode()).decode(), " ".join(key)]
    limit = 200
    for form in forms:
        for at in range(limit - len(form) - 4, limit + 4):
            text = "!" * at + form + "#" * 5000  # neither mark is a character of any form
            out = redact_head(text, limit, {key})
            assert len(out) <= limit
            rest = out.replace(REDACTED, "")
            assert set(rest) <= {"!", "#"} or REDACTED.startswith(rest.lstrip("!#")), (form, at, out[-60:])
