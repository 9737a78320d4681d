"""``python -m dvoc_bench.serve``: the simulator behind an OpenAI-compatible HTTP server on localhost.

It lets the real path (LiteLLM -> HTTP -> JSON -> parser) run end to end without the internet:
``model=local-sim`` sends its requests here. The server needs only what a real endpoint gets, the
request, plus the scene registry for ground truth:

- ``POST /v1/chat/completions``: the ``model`` field names a simulator profile (``conf/model/<name>.yaml``
  of kind ``simulator``, e.g. ``sim-gemma-4-26b``; LiteLLM's ``openai/`` prefix is stripped by LiteLLM
  itself). The user turn's text and its ``data:image/png`` URL are the prompt and the image; ``tools``,
  ``tool_choice``, ``seed`` and a zoom round's ``dvoc_crop`` (which the client sends for simulated configs
  only) are passed to the simulator. The task is read from the prompt however it is worded: the scene's
  instruction (any spacing, case or punctuation), or words that name its target by its label and no other
  element; a prompt that asks for nothing recognised is answered by the profile's ``no_task`` rule and the
  reply carries a field ``dvoc_simulator_note`` beginning ``[simulator] no task recognised`` (never a silent
  click elsewhere). The scene is identified from the prompt (the scene whose instruction occurs in the text;
  the longest such instruction wins), failing that from the image: the sha256 of the clean screenshot's PNG,
  then the clean screenshot with the most identical pixels (the annotated frame differs from it only under
  the overlay; a downscaled image is compared with the clean screenshot downscaled the same way).
- The OCR model (``conf/model/ocr-tesseract.yaml``, ``kind: ocr``) is served too (``model=local-ocr``): it is
  truth-blind, so no scene is identified for it; it answers from the request alone.
- ``GET /v1/models``: the profiles it can serve. ``GET /health``: ``ok``.

The simulator is deterministic in (profile, seed, text, sha256 of the PNG bytes), so a request that reaches
it with the same bytes gets the same reply as the in-process simulator of the same profile.

Fault injection (for the scheduler's tests), all off by default:

- ``--rpm N`` (with ``--rate-window S``, default 60): at most N accepted requests per window; more are
  answered ``429`` with a ``Retry-After`` header (whole seconds until a slot frees);
- ``--error-rate P``: a share P of requests answered ``500`` (seeded by ``--fault-seed``);
- ``--delay S``: every reply waits S seconds (``--delay-jitter J`` adds up to J more);
- ``--auth-fail``: every request answered ``401``; ``--require-key-env VAR``: a request whose bearer token
  is not the value of ``$VAR`` is answered ``401``. Both echo the presented token in the error message, as
  careless servers do, so the client's redaction is tested against the worst case.
- ``--echo-key``: successful replies echo the bearer token too (text, tool arguments, a header);
  ``--pad-chars N``: successful replies carry N more characters (text and each tool call's arguments).

Rendering the web scenes starts a Chromium (about 18 processes); the server needs it only to render.
``--browser-idle S`` (default 60): the browser is closed after S seconds without a request (snapshots stay
cached; a request that needs a render starts it again).

Limits (``ServerLimits`` in :mod:`dvoc_bench.app.simserve.server`; docs/cost.md): a listen backlog of
1024, at most 256 connections (threads) and 8 requests inside the simulator at once (others wait, then
503 + ``Retry-After``), a connection idle for 10 s (or a request not whole after 30 s) is closed, bodies
over 64 MB are a 413. ``"stream": true`` is answered as server-sent events.

Only loopback hosts are accepted; a model name is looked up among the configs, never loaded as a path.
Library use: :func:`make_server`, :func:`serve_in_thread` (the machinery lives in
:mod:`dvoc_bench.app.simserve`; this door parses the command line).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from dvoc_bench.app.simserve.backend import BROWSER_IDLE_S, SimBackend
from dvoc_bench.app.simserve.server import (
    DEFAULT_PORT,
    MAX_BODY,
    FaultOptions,
    ServerLimits,
    make_server,
    serve_in_thread,
)
from dvoc_bench.app.simserve.wire import HTTPError

__all__ = [
    "MAX_BODY",
    "FaultOptions",
    "HTTPError",
    "ServerLimits",
    "SimBackend",
    "main",
    "make_server",
    "serve_in_thread",
]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.serve",
        description="Serve the simulator as an OpenAI-compatible chat-completions endpoint on localhost.",
    )
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 = any)")
    p.add_argument("--rpm", type=int, default=None, help="accept at most N requests per window; more get 429")
    p.add_argument("--rate-window", type=float, default=60.0, help="rate window in seconds (default 60)")
    p.add_argument("--error-rate", type=float, default=0.0, help="share of requests answered 500")
    p.add_argument("--delay", type=float, default=0.0, help="seconds added to every reply")
    p.add_argument("--delay-jitter", type=float, default=0.0, help="up to this many more seconds, uniform")
    p.add_argument("--auth-fail", action="store_true", help="answer every request 401")
    p.add_argument("--require-key-env", default=None, help="require 'Bearer $VAR' (name of the variable)")
    p.add_argument("--fault-seed", type=int, default=0, help="seed of the injected faults")
    p.add_argument("--echo-key", action="store_true", help="echo the bearer token in successful replies")
    p.add_argument("--pad-chars", type=int, default=0, help="pad successful replies with N characters")
    p.add_argument("--models-dir", type=Path, default=None, help="simulator profiles (default conf/model/)")
    p.add_argument("--scenes", type=Path, default=None, help="scenes directory (default scenes/)")
    p.add_argument(
        "--browser-idle",
        type=float,
        default=BROWSER_IDLE_S,
        help=f"close the web scenes' browser after this many idle seconds (default {BROWSER_IDLE_S:g})",
    )
    d = ServerLimits()
    p.add_argument(
        "--max-connections", type=int, default=d.max_connections,
        help=f"handler threads at most (complete requests beyond wait; default {d.max_connections})",
    )  # fmt: skip
    p.add_argument(
        "--idle-timeout", type=float, default=d.idle_timeout_s,
        help=f"close a connection silent for this many seconds (default {d.idle_timeout_s:g})",
    )  # fmt: skip
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not 0.0 <= args.error_rate <= 1.0:
        print("serve: --error-rate must be in [0, 1]", file=sys.stderr)
        return 2
    if args.rpm is not None and args.rpm < 1:
        print("serve: --rpm must be >= 1", file=sys.stderr)
        return 2
    key = None
    if args.require_key_env:
        key = os.environ.get(args.require_key_env)
        if not key:
            print(f"serve: environment variable {args.require_key_env} is not set", file=sys.stderr)
            return 2
    faults = FaultOptions(
        rpm=args.rpm,
        rate_window_s=args.rate_window,
        error_rate=args.error_rate,
        delay_s=max(0.0, args.delay),
        delay_jitter_s=max(0.0, args.delay_jitter),
        auth_fail=args.auth_fail,
        required_key=key,
        seed=args.fault_seed,
        echo_key=args.echo_key,
        pad_chars=max(0, args.pad_chars),
    )
    if not 0 <= args.port <= 65535:
        print(f"serve: --port: a port is 0-65535 (0: any free one), got {args.port}", file=sys.stderr)
        return 2
    if args.browser_idle <= 0:
        print("serve: --browser-idle must be > 0", file=sys.stderr)
        return 2
    if args.max_connections < 1 or args.idle_timeout <= 0:
        print("serve: --max-connections must be >= 1 and --idle-timeout > 0", file=sys.stderr)
        return 2
    limits = ServerLimits(max_connections=args.max_connections, idle_timeout_s=args.idle_timeout)
    try:
        backend = SimBackend(args.models_dir, args.scenes, browser_idle_s=args.browser_idle)
        server = make_server(args.host, args.port, faults, backend, limits)
    except (ValueError, OSError) as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    assert isinstance(host, str)  # a TCP address (a Unix socket's would be bytes)
    # said at once, on stderr (stdout's first line stays the serving line): rendering takes seconds
    print(
        f"serve: rendering the scenes, then serving on http://{host}:{port}/v1 ...",
        file=sys.stderr,
        flush=True,
    )
    server.backend.warm()
    profiles = ", ".join(server.backend.profiles())
    print(f"serving the simulator on http://{host}:{port}/v1 (profiles: {profiles})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        server.backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
