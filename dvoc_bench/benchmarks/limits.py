"""``python -m dvoc_bench.bench limits NAME``: the cost of the guards every input passes. Figures, not
assertions (docs/benchmarks.md).

- ``redact``: :func:`dvoc_bench.core.redaction.redact` on a 1.3 KB DVOC prompt (the step prompt with a
  history, cut to 1,300 characters) with two registered keys (an ``sk-`` key of 51 characters and a local
  token), as every reply and record passes it on the event loop: median and p90 microseconds per call, and
  the same for a prompt that holds the key spread out (every character apart), which takes the slow path.
- ``serve``: ``python -m dvoc_bench.serve`` (its own process, default limits) on loopback while ``--slow``
  slowloris clients (each sends its request line and then one header byte every ``--drip`` seconds) hold
  connections: the latency of normal ``GET /health`` requests made meanwhile (median and max, seconds),
  and how many of the slow connections are still open at the end.
- ``mark``: ``python -m dvoc_bench.mark`` (its own process) on a valid 12000x12000 PNG of about 420 KB (a
  decompression bomb: 144 million pixels): exit code, wall seconds and the child's peak RSS (MB).
- ``error-body``: one LiteLLM call against a loopback provider answering 502 with a 30 MB HTML body, then
  with a 200 KB gzip body that inflates to 200 MB (each in its own process): the error class, seconds and
  how much the process's peak RSS grew during the call (MB).
- ``import``: ``report --import``'s reader (:func:`dvoc_bench.analysis.export.load_export`, its own process
  each) on a ``.jsonl`` of one valid row and one holding a 50 MB string (refused before it is parsed), then
  on each ``--rows`` count of valid one-call rows (default 100,000 and 1,000,000): what it said, wall
  seconds, the child's peak RSS (MB), the bytes per row of the trials' and the steps' frames, and the RSS of
  the same child before it reads anything (interpreter, pandas, the analysis modules); with ``--report``,
  also the whole report on each count of rows (``report --import FILE --no-figures``, its own process; with
  ``--figures``, the figures drawn too): exit code, wall seconds, peak RSS (MB).
"""

from __future__ import annotations

import argparse
import statistics
import time

PROMPT_CHARS = 1300


def bench_prompt() -> str:
    """A DVOC step prompt with three earlier steps, cut to :data:`PROMPT_CHARS` characters."""
    from dvoc_bench.core.geometry import Frame, Offset, Point, Size
    from dvoc_bench.protocol.prompts import HistoryEntry, dvoc_prompt

    history = [
        HistoryEntry(Point(400 + 40 * i, 300), Offset(-40, 12), 0.6, Point(440 + 40 * i, 300))
        for i in range(3)
    ]
    text = dvoc_prompt(
        instruction="Click the green Submit button below the shipping address form",
        size=Size(1280, 720),
        frame=Frame.PIXEL,
        overlay="full",
        predict="relative",
        draft=Point(640, 360),
        iteration=3,
        history=history,
    )
    while len(text) < PROMPT_CHARS:
        text += "\n" + text
    return text[:PROMPT_CHARS]


def bench_redact(n: int = 3000) -> dict[str, float]:
    from dvoc_bench.core.redaction import redact

    key = "sk-dvoc-bench-" + "0123456789abcdefghijklmnopqrstuvwxyzABC"[: 51 - 14]
    keys = frozenset({key, "local-token-0123456789"})
    plain = bench_prompt()
    spread = plain[:600] + " ".join(key) + plain[600 + 2 * len(key) :]
    out: dict[str, float] = {"prompt_chars": float(len(plain))}
    for name, text in (("plain", plain), ("spread", spread)):
        redact(text, keys)  # the pattern is compiled once per set of keys
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            redact(text, keys)
            times.append(1e6 * (time.perf_counter() - t0))
        times.sort()
        out[f"{name}_median_us"] = statistics.median(times)
        out[f"{name}_p90_us"] = times[int(0.9 * len(times))]
    return out


def bench_serve(n_slow: int = 400, drip: float = 2.0, n_normal: int = 20) -> dict[str, float]:
    import contextlib
    import re
    import socket
    import subprocess
    import sys
    import threading

    proc = subprocess.Popen(  # the server as users start it: its own process, default limits
        [sys.executable, "-m", "dvoc_bench.serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        found = re.search(r"http://[^:]+:(\d+)/", line)
        if found is None:
            raise RuntimeError(f"serve did not say where it serves: {line!r}")
        port = int(found[1])
        slow: list[socket.socket] = []
        for _ in range(n_slow):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n")
            s.setblocking(False)
            slow.append(s)
        stop = threading.Event()

        def dribble() -> None:
            while not stop.wait(drip):
                for s in slow:
                    with contextlib.suppress(OSError):
                        s.send(b"X")

        thread = threading.Thread(target=dribble, daemon=True)
        thread.start()
        time.sleep(drip)  # every slow client has started its headers and sent a byte since
        lat = []
        try:
            for _ in range(n_normal):
                t0 = time.perf_counter()
                with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
                    c.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                    answer = b""
                    while chunk := c.recv(65536):
                        answer += chunk
                lat.append(time.perf_counter() - t0)
                if not answer.startswith(b"HTTP/1.1 200"):
                    raise RuntimeError(f"a normal request was answered {answer[:40]!r}")
            still = 0
            for s in slow:
                try:
                    s.recv(1, socket.MSG_PEEK)
                except BlockingIOError:
                    still += 1
                except OSError:
                    pass
        finally:
            stop.set()
            thread.join(5)
            for s in slow:
                s.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return {
        "slow_clients": float(n_slow),
        "normal_median_s": statistics.median(lat),
        "normal_max_s": max(lat),
        "slow_still_open": float(still),
    }


def _bomb_png(path: str, side: int = 12000) -> None:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    z = zlib.compressobj(9)
    row = b"\x00" * (1 + 3 * side)
    idat = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))


def bench_mark() -> dict[str, float]:
    import os
    import resource
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bomb.png")
        _bomb_png(path)
        t0 = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "dvoc_bench.mark", path, "--detector", "cv"],
            capture_output=True,
            check=False,
        )
        wall = time.perf_counter() - t0
        size = os.path.getsize(path)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"png_kb": size / 1024, "exit": float(r.returncode), "wall_s": wall, "child_peak_rss_mb": peak}


_ERROR_CHILD = r"""
import asyncio, json, resource, sys, threading, time, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from dvoc_bench.core.geometry import Size
from dvoc_bench.models.base import ModelCallError, ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.litellm_client import LiteLLMModel, import_litellm

if sys.argv[1].startswith("gzip"):
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    line = b"<p>upstream failed, retry later</p>\n" * 1000
    BODY = b"".join(z.compress(line) for _ in range(200 * 2**20 // len(line))) + z.flush()
    HEADERS = {"Content-Type": "text/html", "Content-Encoding": "gzip"}
else:
    BODY = b"<html><body>\n" + b"<div>bad gateway: the upstream timed out (frame 0x7f3a)</div>\n" * 480_000
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
took = time.perf_counter() - t0
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps({"class": cls, "s": took, "rss_growth_mb": grew, "wire_kb": len(BODY) / 1024}))
"""


def bench_error_body() -> dict[str, float]:
    import json
    import os
    import subprocess
    import sys

    out: dict[str, float] = {}
    env = {**os.environ, "DVOC_SIM_API_KEY": os.environ.get("DVOC_SIM_API_KEY", "sk-bench-0000000000")}
    for kind in ("html30mb", "gzip200mb"):
        r = subprocess.run(
            [sys.executable, "-c", _ERROR_CHILD, kind], capture_output=True, text=True, env=env
        )
        got = json.loads(r.stdout.strip().splitlines()[-1])
        if got["class"] != "server":
            raise RuntimeError(f"{kind}: the call ended as {got['class']!r}, not a server error")
        out.update(
            {
                f"{kind}_wire_kb": got["wire_kb"],
                f"{kind}_s": got["s"],
                f"{kind}_rss_growth_mb": got["rss_growth_mb"],
            }
        )
    return out


_IMPORT_CHILD = r"""
import json, resource, sys, time
from dvoc_bench.analysis.export import SchemaError, load_export
from dvoc_bench.analysis.schema import held_bytes
t0 = time.perf_counter()
try:
    runs = load_export(sys.argv[1])
    n = len(runs.trials)
    said = f"{n} trials"
    per_row = {f"{k}_b_per_row": held_bytes(f) / n
               for k, f in (("trials", runs.trials), ("steps", runs.steps))}
except SchemaError as e:
    said, per_row = str(e).rsplit(": ", 1)[-1], {}
took = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"said": said, "s": took, "peak_mb": peak, **per_row}))
"""
_REPORT_CHILD = r"""
import json, resource, sys, time
from dvoc_bench.report import main
t0 = time.perf_counter()
code = main(["--import", sys.argv[1], "--out", sys.argv[2], *sys.argv[3:]])
took = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"exit": code, "s": took, "peak_mb": peak}))
"""
"""``report --import FILE [--no-figures]`` in a child of its own: the whole report on the rows (every table,
its bootstraps at the default 2,000 resamples; the figures unless ``--no-figures`` follows)."""
_BASE_CHILD = (
    "import resource, pandas, dvoc_bench.analysis.export; print(resource.getrusage(0).ru_maxrss / 1024)"
)
"""The same child without the file: the interpreter, pandas and the analysis modules (MB)."""


def _import_row(i: int, **more: object) -> str:
    import json

    row = {"schema_version": 1, "model": "their-model", "method": "oneshot", "task": f"s{i}", "target_x0": 10,
           "target_y0": 10, "target_x1": 50, "target_y1": 30, "final_x": 10 + i % 60, "final_y": 20,
           "calls": [{"index": 0, "kind": "click", "tokens_in": 900, "tokens_out": 12, "cost_usd": 0.0004}],
           **more}  # fmt: skip
    return json.dumps(row) + "\n"


def bench_import(
    rows: tuple[int, ...] = (100_000, 1_000_000), report: bool = False, figures: bool = False
) -> dict[str, float]:
    """The 50 MB row, then each count of ``rows`` valid one-call rows, each file read in a child of its
    own: wall seconds, the child's peak RSS, what the frames hold per row (the schema's columns, texts
    counted as references), and the child's RSS before reading anything; with ``report``, also the whole
    report on each count of rows (``report --import FILE --no-figures``, a child of its own; with
    ``figures``, the figures drawn too): exit code, wall seconds, peak RSS."""
    import json
    import os
    import subprocess
    import sys
    import tempfile

    base = subprocess.run([sys.executable, "-c", _BASE_CHILD], capture_output=True, text=True, check=True)
    out: dict[str, float] = {"baseline_rss_mb": float(base.stdout.strip())}
    with tempfile.TemporaryDirectory() as d:
        for kind in ("row50mb", *(f"rows{n}" for n in rows)):
            path = os.path.join(d, f"{kind}.jsonl")
            with open(path, "w", encoding="utf-8") as f:
                if kind == "row50mb":
                    f.write(_import_row(0) + _import_row(1, sample_instruction="x" * (50 * 2**20)))
                else:
                    for i in range(int(kind[4:])):
                        f.write(_import_row(i))
            r = subprocess.run([sys.executable, "-c", _IMPORT_CHILD, path], capture_output=True, text=True)
            got = json.loads(r.stdout.strip().splitlines()[-1])
            print(f"{kind}: {got.pop('said')}", file=sys.stderr)
            out.update({f"{kind}_file_mb": os.path.getsize(path) / 2**20, f"{kind}_s": got.pop("s"),
                        f"{kind}_peak_rss_mb": got.pop("peak_mb")})  # fmt: skip
            out.update({f"{kind}_{k}": v for k, v in got.items()})
            if report and kind != "row50mb":
                child = [sys.executable, "-c", _REPORT_CHILD, path, os.path.join(d, "report")]
                child += [] if figures else ["--no-figures"]
                r = subprocess.run(child, capture_output=True, text=True)
                got = json.loads(r.stdout.strip().splitlines()[-1])
                out.update({f"{kind}_report_exit": float(got["exit"]), f"{kind}_report_s": got["s"],
                            f"{kind}_report_peak_rss_mb": got["peak_mb"]})  # fmt: skip
            mine = " ".join(f"{k}={v:.4g}" for k, v in out.items() if k.startswith(f"{kind}_"))
            print(mine, file=sys.stderr)  # as it is measured: a long run stopped keeps what it measured
            os.unlink(path)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m dvoc_bench.bench limits", description=__doc__)
    ap.add_argument("which", choices=["redact", "serve", "mark", "error-body", "import"])
    ap.add_argument("-n", type=int, default=3000, help="calls to time (redact)")
    ap.add_argument("--slow", type=int, default=400, help="slowloris clients (serve)")
    ap.add_argument("--drip", type=float, default=2.0, help="seconds between a slow client's bytes (serve)")
    ap.add_argument(
        "--rows", default="100000,1000000", help="valid rows of the long imports, comma-separated (import)"
    )
    ap.add_argument(
        "--report", action="store_true", help="also the whole report on each count of rows (import)"
    )
    ap.add_argument("--figures", action="store_true", help="the report draws its figures too (import)")
    args = ap.parse_args(argv)
    fns = {
        "redact": lambda: bench_redact(args.n),
        "serve": lambda: bench_serve(args.slow, args.drip),
        "mark": bench_mark,
        "error-body": bench_error_body,
        "import": lambda: bench_import(
            tuple(int(n) for n in args.rows.split(",")), args.report, args.figures
        ),
    }
    r = fns[args.which]()
    print(" ".join(f"{k}={v:.4g}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
