"""``python -m dvoc_bench.serve``: the simulator behind an OpenAI-compatible HTTP server on localhost.

It lets the real path (LiteLLM -> HTTP -> JSON -> parser) run end to end without the internet:
``model=local-sim`` sends its requests here. The server needs only what a real endpoint gets, the
request, plus the scene registry for ground truth:

- ``POST /v1/chat/completions``: the ``model`` field names a simulator profile (``conf/model/<name>.yaml``
  of kind ``simulator``, e.g. ``sim-gemma-4-26b``; LiteLLM's ``openai/`` prefix is stripped by LiteLLM
  itself). The user turn's text and its ``data:image/png`` URL are the prompt and the image; ``tools``,
  ``tool_choice``, ``seed`` and a zoom round's ``dvoc_crop`` (which the client sends for simulated configs
  only) are passed to the simulator. The scene is identified from the prompt (the
  scene whose instruction occurs in the text; the longest such instruction wins), failing that from the
  image: the sha256 of the clean screenshot's PNG, then the clean screenshot with the most identical pixels
  (the annotated frame differs from it only under the overlay; a downscaled image is compared with the
  clean screenshot downscaled the same way).
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

Only loopback hosts are accepted. Library use: :func:`make_server`, :func:`serve_in_thread`.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import hashlib
import io
import ipaddress
import json
import logging
import math
import os
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.draw.render import encode_png
from dvoc_bench.models.base import CROP_FIELD, ModelRequest, Reply
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.simulator import SimProfile, SimulatedModel
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

log = logging.getLogger(__name__)

__all__ = ["FaultOptions", "HTTPError", "SimBackend", "main", "make_server", "serve_in_thread"]

DEFAULT_PORT = 8765
BROWSER_IDLE_S = 60.0
"""Seconds without a request after which the web scenes' browser is closed."""
MAX_BODY = 64 * 1024 * 1024
"""Largest request body accepted (bytes)."""
SERVED_KINDS = ("simulator", "ocr")
"""Model kinds the server answers as: simulator profiles and the OCR model (``conf/model/ocr-*.yaml``)."""
MIN_PIXEL_MATCH = 0.5
"""Share of identical pixels needed to take an image for a scene's (annotated) screenshot."""


class HTTPError(Exception):
    """An error answered as an OpenAI-style JSON error body."""

    def __init__(self, status: int, message: str, kind: str, headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        """HTTP status code."""
        self.kind = kind
        """OpenAI-style ``error.type``."""
        self.headers = dict(headers or {})
        """Extra response headers (``Retry-After``)."""


@dataclass(frozen=True)
class FaultOptions:
    """Faults the server injects (all off by default)."""

    rpm: int | None = None
    """Accepted requests per ``rate_window_s``; more get 429 + Retry-After. ``None``: no limit."""
    rate_window_s: float = 60.0
    """Length of the rate window, seconds."""
    error_rate: float = 0.0
    """Share of requests answered 500."""
    delay_s: float = 0.0
    """Added latency of every reply, seconds."""
    delay_jitter_s: float = 0.0
    """Up to this much more latency, uniform."""
    auth_fail: bool = False
    """Answer every request 401."""
    required_key: str | None = None
    """When set, a request must carry ``Authorization: Bearer <this>``."""
    seed: int = 0
    """Seed of the fault generator (500s, jitter)."""
    pad_chars: int = 0
    """Pad every successful reply with this many characters: appended to the text, and as a ``pad`` field
    inside every tool call's arguments (huge replies; the client must keep its records bounded)."""
    echo_key: bool = False
    """Echo the presented bearer token in every successful reply: in the text, in a ``note`` field of the
    tool calls' arguments and in an ``X-Echo-Authorization`` header (a careless server at its worst)."""


# ------------------------------------------------------------------------------------------- backend


class SimBackend:
    """Turns an OpenAI chat-completions body into a simulator reply (no HTTP here)."""

    def __init__(
        self,
        models_dir: Path | None = None,
        scenes_dir: Path | None = None,
        registry: SceneRegistry | None = None,
        browser_idle_s: float | None = BROWSER_IDLE_S,
    ):
        self.models_dir = Path(models_dir or default_conf_dir() / "model")
        """Where the simulator profiles are (``<name>.yaml`` of kind ``simulator``)."""
        self.registry = registry or SceneRegistry(scenes_dir or default_scenes_dir())
        """Ground truth by scene id (every scene is rendered once, at the first request or :meth:`warm`)."""
        self.browser_idle_s = browser_idle_s
        """Idle seconds after which the registry's live resources (the browser) close; ``None``: never."""
        self.browser_closes = 0
        """Times the browser was closed for being idle."""
        self._models: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._index: tuple[dict[str, str], dict[str, str]] | None = None
        self._resized: dict[tuple[str, int, int], np.ndarray] = {}
        self._activity = threading.Condition()
        self._active = 0
        self._last = time.monotonic()
        self._live = False  # the registry may hold a browser
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # idle browser
    @contextlib.contextmanager
    def _busy(self) -> Iterator[None]:
        """Mark a request (or the warm-up) in progress: the browser is not closed under it."""
        with self._activity:
            self._active += 1
            self._live = True
            if self.browser_idle_s is not None and self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="dvoc-sim-idle", daemon=True)
                self._watcher.start()
        try:
            yield
        finally:
            with self._activity:
                self._active -= 1
                self._last = time.monotonic()
                self._activity.notify_all()

    def _watch(self) -> None:
        idle = float(self.browser_idle_s or 0.0)
        while not self._stop.is_set():
            with self._activity:
                wait = idle - (time.monotonic() - self._last)
                if self._active == 0 and self._live and wait <= 0:
                    self._live = False
                    close = True
                else:
                    close = False
            if close:
                self.registry.close()  # snapshots stay cached; a later render starts a browser again
                self.browser_closes += 1
                log.info("no request for %g s: closed the browser of the web scenes", idle)
                continue
            self._stop.wait(min(max(wait, 0.05), 5.0) if self._live else min(max(idle, 0.05), 5.0))

    def close(self) -> None:
        """Stop the idle watcher and release the registry's live resources (the browser)."""
        self._stop.set()
        self.registry.close()

    # profiles
    def profiles(self) -> list[str]:
        """Names of the simulator profiles this server can answer as."""
        out = []
        for p in sorted(self.models_dir.glob("*.yaml")):
            try:
                if load_model_config(p.stem, self.models_dir, check_key=False).kind in SERVED_KINDS:
                    out.append(p.stem)
            except ConfigError:
                continue
        return out

    def model(self, name: str) -> Any:
        """The simulator of profile ``name``, or the OCR model of a ``kind: ocr`` config (built once).
        Unknown names raise a 404 :class:`HTTPError`."""
        name = name.split("/")[-1] if name.startswith(("openai/", "sim/")) else name
        with self._lock:
            if name in self._models:
                return self._models[name]
            try:
                cfg = load_model_config(name, self.models_dir, check_key=False)
            except ConfigError:
                cfg = None
            if cfg is not None and cfg.kind == "ocr":  # truth-blind: needs no scene (nor the registry)
                from dvoc_bench.models.ocr.model import ocr_model_from_config

                try:
                    self._models[name] = ocr_model_from_config(cfg.name, cfg.ocr)
                except ConfigError as e:
                    raise HTTPError(500, str(e), "server_error") from None
                return self._models[name]
            if cfg is None or cfg.kind != "simulator" or cfg.sim is None:
                raise HTTPError(
                    404,
                    f"model {name!r} not found; available: {', '.join(self.profiles())}",
                    "invalid_request_error",
                )
            m = SimulatedModel(cfg.name, SimProfile.from_mapping(cfg.sim), self.registry.truth)
            self._models[name] = m
            return m

    # scenes
    def _scene_index(self) -> tuple[dict[str, str], dict[str, str]]:
        with self._lock:
            if self._index is None:
                instr, clean = {}, {}
                for sid in self.registry.ids():
                    try:
                        snap = self.registry.snapshot(sid)
                    except ConfigError as e:  # a scene this machine cannot render (no Chromium, no Xvfb)
                        log.warning("scene %s left out of the simulator's index: %s", sid, e)
                        continue
                    if snap.instruction:
                        instr[sid] = snap.instruction
                    clean[hashlib.sha256(encode_png(snap.image)).hexdigest()] = sid
                self._index = (instr, clean)
            return self._index

    def warm(self) -> None:
        """Render every scene and index it now rather than at the first request."""
        with self._busy():
            self._scene_index()

    def _clean_at(self, sid: str, size: Size) -> np.ndarray | None:
        snap = self.registry.snapshot(sid)
        if snap.size == size:
            return snap.image
        if abs(snap.size.width / snap.size.height - size.width / size.height) > 0.02:
            return None
        key = (sid, size.width, size.height)
        with self._lock:
            if key not in self._resized:
                from PIL import Image

                img = Image.fromarray(snap.image).resize((size.width, size.height), Image.Resampling.LANCZOS)
                self._resized[key] = np.asarray(img, dtype=np.uint8)
            return self._resized[key]

    def identify_scene(self, text: str, png: bytes | None, image: np.ndarray | None) -> str:
        """The scene a request shows: by instruction in the text, else by the clean image, else by pixels."""
        instr, clean = self._scene_index()
        found = [sid for sid, ins in instr.items() if ins in text]
        if found:
            longest = max(len(instr[s]) for s in found)
            found = [s for s in found if len(instr[s]) == longest]
            if len(found) == 1:
                return found[0]
        pool = found or self.registry.ids()
        if png is not None:
            sid = clean.get(hashlib.sha256(png).hexdigest())
            if sid in pool:
                return sid
        if image is not None:
            size = Size(image.shape[1], image.shape[0])
            best, best_share = None, 0.0
            for sid in pool:
                ref = self._clean_at(sid, size)
                if ref is None:
                    continue
                share = float(np.mean(np.all(ref == image, axis=-1)))
                if share > best_share:
                    best, best_share = sid, share
            if best is not None and best_share >= MIN_PIXEL_MATCH:
                return best
        if len(pool) == 1:
            return pool[0]
        raise HTTPError(400, "cannot tell which scene this request shows", "invalid_request_error")

    # requests
    def chat(self, body: Any) -> dict[str, Any]:
        """The OpenAI chat-completion object answering ``body``."""
        with self._busy():
            return self._chat(body)

    def _chat(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise HTTPError(400, "the body must be a JSON object", "invalid_request_error")
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise HTTPError(400, "missing 'model'", "invalid_request_error")
        model = self.model(name)
        text, png = _user_turn(body.get("messages"))
        image = _decode(png) if png is not None else None
        if not model.simulated and image is not None:  # the OCR model: the scene is none of its business
            sid, size = "", Size(image.shape[1], image.shape[0])
        else:
            sid = self.identify_scene(text, png, image)
            size = (
                Size(image.shape[1], image.shape[0])
                if image is not None
                else self.registry.snapshot(sid).size
            )
        tools = body.get("tools") or []
        if not isinstance(tools, list):
            raise HTTPError(400, "'tools' must be a list", "invalid_request_error")
        seed = body.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise HTTPError(400, "'seed' must be an integer", "invalid_request_error")
        tc = body.get("tool_choice")
        crop = _crop(body.get(CROP_FIELD))
        req = ModelRequest(
            text=text,
            image_png=png,
            image_size=size,
            tools=tools,
            scene_id=sid,
            seed=seed,
            tool_choice=tc if isinstance(tc, str) else None,
            image_rgb=image,
            crop=crop,
        )
        return _completion(model.name, model.respond(req), req.sha(model.name))


def _crop(v: Any) -> tuple[float, float, float, float] | None:
    """The zoom crop the client sent (``dvoc_crop``: ``[x0, y0, x1, y1]``, finite screenshot px), or a 400."""
    nums = isinstance(v, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in v
    )
    if v is not None and not (nums and len(v) == 4 and v[0] < v[2] and v[1] < v[3]):
        msg = f"'{CROP_FIELD}' must be [x0, y0, x1, y1] with x0 < x1 and y0 < y1"
        raise HTTPError(400, msg, "invalid_request_error")
    return None if v is None else (float(v[0]), float(v[1]), float(v[2]), float(v[3]))


def _user_turn(messages: Any) -> tuple[str, bytes | None]:
    """Text and PNG bytes of the last user turn."""
    if not isinstance(messages, list) or not messages:
        raise HTTPError(400, "'messages' must be a non-empty list", "invalid_request_error")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise HTTPError(400, "no user message", "invalid_request_error")
    content = users[-1].get("content")
    if isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        raise HTTPError(400, "user content must be a string or a list of parts", "invalid_request_error")
    texts, png = [], None
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part.get("type") == "image_url":
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            png = _data_url_bytes(url)
    return "\n".join(texts), png


def _data_url_bytes(url: Any) -> bytes:
    if not isinstance(url, str) or not url.startswith("data:image/") or ";base64," not in url:
        raise HTTPError(400, "images must be base64 data URLs", "invalid_request_error")
    try:
        return base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        raise HTTPError(400, "the image data URL is not valid base64", "invalid_request_error") from None


def _decode(png: bytes) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(png)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, ValueError):
        raise HTTPError(400, "the image cannot be decoded", "invalid_request_error") from None


def _completion(model: str, reply: Reply, sha: str) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{sha[:12]}_{i}",
            "type": "function",
            "function": {
                "name": c.name,
                "arguments": c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments),
            },
        }
        for i, c in enumerate(reply.tool_calls)
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    if calls:
        message["tool_calls"] = calls
    tin, tout = reply.tokens_in or 0, reply.tokens_out or 0
    return {
        "id": f"chatcmpl-{sha[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": tin, "completion_tokens": tout, "total_tokens": tin + tout},
    }


# -------------------------------------------------------------------------------------------- server


class _Faults:
    """Mutable fault state shared by the handler threads."""

    def __init__(self, opts: FaultOptions):
        self.opts = opts
        self.lock = threading.Lock()
        self.accepted: deque[float] = deque()
        self.rng = random.Random(opts.seed)
        self.counts = {"requests": 0, "ok": 0, "429": 0, "500": 0, "401": 0, "400": 0, "404": 0}
        """Requests seen and answers given, per status (read by tests and the scheduler's benchmarks)."""

    def check(self, auth_header: str | None) -> float:
        """Raise the injected error for this request, else return the delay to add."""
        o = self.opts
        token = (auth_header or "").removeprefix("Bearer ").strip()
        with self.lock:
            self.counts["requests"] += 1
            if o.auth_fail or (o.required_key is not None and token != o.required_key):
                raise HTTPError(401, f"Incorrect API key provided: {token or '<none>'}", "invalid_api_key")
            if o.rpm is not None:
                now = time.monotonic()
                while self.accepted and self.accepted[0] <= now - o.rate_window_s:
                    self.accepted.popleft()
                if len(self.accepted) >= o.rpm:
                    wait = max(1, math.ceil(self.accepted[0] + o.rate_window_s - now))
                    raise HTTPError(
                        429,
                        f"Rate limit reached: {o.rpm} requests per {o.rate_window_s:g} s. Retry in {wait} s.",
                        "rate_limit_exceeded",
                        {"Retry-After": str(wait)},
                    )
                self.accepted.append(now)
            if o.error_rate > 0 and self.rng.random() < o.error_rate:
                raise HTTPError(500, "The server had an error while processing your request.", "server_error")
            return o.delay_s + (self.rng.uniform(0, o.delay_jitter_s) if o.delay_jitter_s > 0 else 0.0)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    backend: SimBackend
    faults: _Faults


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: without this, +40 ms per reply

    def log_message(self, format: str, *args: Any) -> None:  # no headers, never to stderr
        log.debug("%s %s", self.address_string(), format % args)

    def _send(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, e: HTTPError) -> None:
        key = str(e.status)
        with self.server.faults.lock:
            if key in self.server.faults.counts:
                self.server.faults.counts[key] += 1
        body = {"error": {"message": str(e), "type": e.kind, "param": None, "code": e.status}}
        self._send(e.status, body, e.headers)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        elif path in ("/v1/models", "/models"):
            data = [
                {"id": n, "object": "model", "owned_by": "dvoc-bench-simulator"} for n in self._profiles()
            ]
            self._send(200, {"object": "list", "data": data})
        else:
            self._error(HTTPError(404, f"no route {path}", "invalid_request_error"))

    def _profiles(self) -> list[str]:
        return self.server.backend.profiles()

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        try:
            n = int(self.headers.get("Content-Length") or 0)
            if n <= 0 or n > MAX_BODY:
                raise HTTPError(400, "missing or oversized body", "invalid_request_error")
            raw = self.rfile.read(n)
            if path not in ("/v1/chat/completions", "/chat/completions"):
                raise HTTPError(404, f"no route {path}", "invalid_request_error")
            delay = self.server.faults.check(self.headers.get("Authorization"))
            try:
                body = json.loads(raw)
            except ValueError:
                raise HTTPError(400, "the body is not JSON", "invalid_request_error") from None
            answer = self.server.backend.chat(body)
            if delay > 0:
                time.sleep(delay)
        except HTTPError as e:
            self._error(e)
            return
        except Exception as e:  # a simulator bug answers 500 instead of killing the connection
            log.exception("simulator failed on a request")
            self._error(HTTPError(500, f"simulator error: {type(e).__name__}", "server_error"))
            return
        with self.server.faults.lock:
            self.server.faults.counts["ok"] += 1
        headers = _careless(answer, self.server.faults.opts, self.headers.get("Authorization"))
        self._send(200, answer, headers)


def _careless(answer: dict[str, Any], o: FaultOptions, auth: str | None) -> dict[str, str]:
    """Apply ``echo_key`` and ``pad_chars`` to a successful answer (in place); returns extra headers."""
    if not (o.echo_key or o.pad_chars):
        return {}
    token = (auth or "").removeprefix("Bearer ").strip()
    msg = answer["choices"][0]["message"]
    extra = {"note": f"answered for {token}"} if o.echo_key else {}
    if o.pad_chars:
        extra["pad"] = "x" * o.pad_chars
    text = msg.get("content") or ""
    if o.echo_key:
        text += f" (your key: {token})"
    msg["content"] = text + ("y" * o.pad_chars if o.pad_chars else "")
    for call in msg.get("tool_calls") or []:
        fn = call["function"]
        try:
            args = json.loads(fn["arguments"])
        except (TypeError, ValueError):
            continue
        if isinstance(args, dict):
            fn["arguments"] = json.dumps({**args, **extra})
    return {"X-Echo-Authorization": f"Bearer {token}"} if o.echo_key else {}


def _check_host(host: str) -> None:
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host == "localhost"
    if not ok:
        raise ValueError(f"host {host!r} is not a loopback address; the simulator serves localhost only")


def make_server(
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    faults: FaultOptions | None = None,
    backend: SimBackend | None = None,
) -> _Server:
    """A bound (not yet serving) server; ``port=0`` picks a free port (``server.server_address[1]``)."""
    _check_host(host)
    server = _Server((host, port), _Handler)
    server.backend = backend or SimBackend()
    server.faults = _Faults(faults or FaultOptions())
    return server


@contextlib.contextmanager
def serve_in_thread(
    faults: FaultOptions | None = None,
    backend: SimBackend | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
) -> Iterator[tuple[str, _Server]]:
    """Serve in a background thread; yields ``(base_url ending in /v1, server)`` and shuts down on exit."""
    server = make_server(host, port, faults, backend)
    thread = threading.Thread(target=server.serve_forever, name="dvoc-sim-server", daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/v1", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


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
    if args.browser_idle <= 0:
        print("serve: --browser-idle must be > 0", file=sys.stderr)
        return 2
    try:
        backend = SimBackend(args.models_dir, args.scenes, browser_idle_s=args.browser_idle)
        server = make_server(args.host, args.port, faults, backend)
    except (ValueError, OSError) as e:
        print(f"serve: {e}", file=sys.stderr)
        return 2
    server.backend.warm()
    host, port = server.server_address[:2]
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
