"""``python -m dvoc_bench.bench throughput``: the harness at ScreenSpot-Pro size, against an instant model
over HTTP. Figures, not assertions (docs/benchmarks.md).

Builds a ScreenSpot-Pro-format fixture of ``--samples`` samples (default 1,581, the real set's size) of
3840x2160 screenshots (:mod:`dvoc_bench.scenes.dataset_fixture`: 17 rendered screens with 3 targets each,
written as many times as needed), starts an OpenAI-compatible server on loopback in its own process that
answers every request at once (``report_offset`` (200, 0) for DVOC, which stops after three reports on
oscillation), and runs ``methods=[dvoc] starts=centre`` through the whole client path (LiteLLM, the gate,
no response cache, ``image.max_side: 1568``, ``run.frames=sent``) at each ``run.max_in_flight`` of
``--in-flight`` (16, 64, 256), each sweep in a child process pinned to ``--cpus`` cores (1 and 2).

Per sweep: samples/s, model calls/s, harness CPU per call (user + system of the child, ms), peak RSS
(``ru_maxrss``), bytes written per sample (frames and records); and the server's CPU per call (it shares
the machine). The clock starts after the imports (LiteLLM's takes seconds) and includes the plan, which
decodes every screenshot once for its content hash. The answers are simulated: the figures
are the harness's, never a model's. Target (docs/benchmarks.md): >= 20 calls/s at 64 in flight on two
cores; peak RSS growing by at most 200 MB from 158 to 1,581 samples.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SCREENS, PER_SCREEN = 17, 3
"""Rendered screens and targets per screen of the fixture (51 distinct samples, copied up to size)."""

MODEL = """\
name: instant-http
kind: litellm
simulated: true
model_id: openai/instant
provider: local-sim
api_base: http://127.0.0.1:{port}/v1
coord_frame: pixel
description: An OpenAI-compatible loopback server answering at once (benchmark; simulated answers).
image: {{max_side: 1568}}
params: {{}}
tool_choice: null
timeout_s: 120
"""

_OFFSET = {"name": "report_offset", "arguments": '{"dx": 200, "dy": 0, "confidence": 1}'}
_CLICK = {"name": "click_at", "arguments": '{"x": 100, "y": 100, "confidence": 1}'}


def _reply(tool: dict) -> bytes:
    return json.dumps({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "instant",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [{"id": "call_0", "type": "function", "function": tool}]}}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
    }).encode()  # fmt: skip


class _Instant(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    offset, click = _reply(_OFFSET), _reply(_CLICK)

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        data = self.offset if b'"report_offset"' in body else self.click
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def serve(port: int) -> None:
    """Answer on ``127.0.0.1:port`` until killed."""
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 1024
    ThreadingHTTPServer(("127.0.0.1", port), _Instant).serve_forever()


def child(root: str, models: str, run_dir: str, in_flight: int, samples: int) -> dict:
    """One sweep in this process (``samples`` of the fixture, a stratified draw when it has more): its
    figures."""
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    overrides = ["dataset=screenspot_pro", f"dataset.root={root}", "models=[instant-http]",
                 f"paths.models={models}", "methods=[dvoc]", "starts=centre", "run.frames=sent",
                 "cache.enabled=false", "run.quiet=true", f"run.max_in_flight={in_flight}"]  # fmt: skip
    with open(Path(root) / "SIZE") as f:
        if samples < int(f.read()):
            overrides.append(f"dataset.limit={samples}")
    setup = quick_setup(overrides)
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    res = run_sweep(setup, run_dir)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    calls = sum(g.stats.sent for g in res.gates.values())
    samples = len({t["task"] for t in res.trials})
    written = sum(p.stat().st_size for p in Path(run_dir).rglob("*") if p.is_file())
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return {
        "in_flight": in_flight, "cpus": len(os.sched_getaffinity(0)), "samples": samples,
        "trials": len(res.trials), "ok": sum(t["status"] == "ok" for t in res.trials), "calls": calls,
        "wall_s": round(wall, 1), "samples_per_s": round(samples / wall, 2),
        "calls_per_s": round(calls / wall, 2),
        "cpu_ms_per_call": round(1000 * cpu / max(calls, 1), 1),
        "peak_rss_mb": round(r1.ru_maxrss / 1024, 1),
        "bytes_per_sample": round(written / max(samples, 1)),
    }  # fmt: skip


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_throughput(
    samples: int, in_flight: list[int], cpus: list[int], keep: str | None = None
) -> list[dict]:
    """Build the fixture, start the server, run one child sweep per (cpus, in_flight); their figures."""
    from dvoc_bench.scenes.dataset_fixture import write_fixture

    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="dvoc-bench-throughput-") as tmp:
        d = Path(keep) if keep else Path(tmp)
        root = d / f"ScreenSpot-Pro-{samples}"
        t0 = time.perf_counter()
        copies = -(-samples // (SCREENS * PER_SCREEN))
        if not (root / "annotations").is_dir():
            write_fixture(root, "screenspot_pro", (3840, 2160), screens=SCREENS, per_screen=PER_SCREEN,
                          copies=copies)  # fmt: skip
            (root / "SIZE").write_text(str(SCREENS * PER_SCREEN * copies))
        size = SCREENS * PER_SCREEN * copies
        print(f"fixture: {size} samples at 3840x2160 in {time.perf_counter() - t0:.1f} s", flush=True)
        port = _free_port()
        models = d / "models"
        models.mkdir(parents=True, exist_ok=True)
        (models / "instant-http.yaml").write_text(MODEL.format(port=port), encoding="utf-8")
        me = "dvoc_bench.benchmarks.throughput"
        server = subprocess.Popen([sys.executable, "-m", me, "--serve", str(port)])
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.05)
            for n_cpu in cpus:
                for k in in_flight:
                    run = d / f"run-{samples}-{n_cpu}cpu-{k}"
                    shutil.rmtree(run, ignore_errors=True)  # a fresh sweep each time (never a resume)
                    cmd = ["taskset", "-c", ",".join(str(c) for c in range(n_cpu)), sys.executable, "-m",
                           "dvoc_bench.benchmarks.throughput", "--child", str(root), str(models), str(run),
                           str(k), str(samples)]  # fmt: skip
                    c0 = _cpu_s(server.pid)
                    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
                    if r.returncode != 0:
                        raise RuntimeError(f"the sweep at {k} in flight failed: {r.stderr[-2000:]}")
                    fig = json.loads(r.stdout.strip().splitlines()[-1])
                    served = _cpu_s(server.pid) - c0
                    fig["server_cpu_ms_per_call"] = round(1000 * served / max(fig["calls"], 1), 1)
                    print(json.dumps(fig), flush=True)
                    rows.append(fig)
        finally:
            server.kill()
            server.wait()
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dvoc_bench.bench throughput", description="throughput")
    p.add_argument("--samples", type=int, default=1581, help="fixture size (default 1581)")
    p.add_argument("--in-flight", type=int, nargs="+", default=[16, 64, 256], help="run.max_in_flight values")
    p.add_argument("--cpus", type=int, nargs="+", default=[1, 2], help="cores the harness is pinned to")
    p.add_argument("--keep", help="a folder to keep the fixture and the runs in (reused when present)")
    a = p.parse_args(argv)
    rows = bench_throughput(a.samples, a.in_flight, a.cpus, a.keep)
    best = {(r["cpus"], r["in_flight"]): r["calls_per_s"] for r in rows}
    print(" ".join(f"calls_per_s_{c}cpu_{k}={v}" for (c, k), v in best.items()))
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--serve":
        serve(int(sys.argv[2]))
    elif len(sys.argv) >= 7 and sys.argv[1] == "--child":
        _, _, root, models, run_dir, k, n = sys.argv[:7]
        import litellm  # noqa: F401  (imports before the clock starts: a one-off of seconds)

        from dvoc_bench.runner.compose import quick_setup  # noqa: F401

        fig = child(root, models, run_dir, int(k), int(n))
        print(json.dumps(fig))
    else:
        sys.exit(main())
