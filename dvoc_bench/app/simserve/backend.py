"""The simulator server's backend: a chat-completions body in, the simulator's (or the OCR model's) answer
out. No HTTP here (:mod:`dvoc_bench.app.simserve.server` has it).

A request's ``model`` names a config of the registry (``conf/model/<name>.yaml`` of kind ``simulator`` or
``ocr``, or of ``models_dir``): the name is checked to be a file stem (:func:`wire.model_name`) and looked
up among the registry's files, never taken for a path.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.app.simserve import wire
from dvoc_bench.app.simserve.wire import HTTPError, bad_request
from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.draw.render import encode_png
from dvoc_bench.models.base import CROP_FIELD, ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.simulator import SimProfile, SimulatedModel
from dvoc_bench.models.simulator.behaviour import task_given
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

log = logging.getLogger(__name__)

BROWSER_IDLE_S = 60.0
"""Seconds without a request after which the web scenes' browser is closed."""
SERVED_KINDS = ("simulator", "ocr", "parse")
"""Model kinds the server answers as: simulator profiles, the OCR model (``conf/model/ocr-*.yaml``) and the
screen parser (``conf/model/omniparser-parse.yaml``)."""
NO_TASK_NOTE = "[simulator] no task recognised"
"""How the note of a served simulated reply begins when the prompt asked for nothing the simulator
recognises."""

NOTE_FIELD = "dvoc_simulator_note"
"""The completion object's field that carries that note (clients ignore fields they do not know)."""

MIN_PIXEL_MATCH = 0.5
"""Share of identical pixels needed to take an image for a scene's (annotated) screenshot."""


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

    def model(self, name: Any) -> Any:
        """The simulator of profile ``name``, or the OCR model of a ``kind: ocr`` config (built once).
        ``name`` is looked up among the registry's files only: a path or a malformed name is a 400, an
        unknown name a 404 :class:`HTTPError`."""
        name = wire.model_name(name)
        with self._lock:
            if name in self._models:
                return self._models[name]
            cfg = None
            path = self.models_dir / f"{name}.yaml"
            if path.is_file() and path.resolve().parent == self.models_dir.resolve():
                try:
                    cfg = load_model_config(name, self.models_dir, check_key=False)
                except ConfigError:
                    cfg = None
            if cfg is not None and cfg.kind in ("ocr", "parse"):  # truth-blind: needs no scene (nor registry)
                from dvoc_bench.models.ocr.model import ocr_model_from_config
                from dvoc_bench.models.ocr.parser import parse_model_from_config

                try:
                    self._models[name] = (
                        ocr_model_from_config(cfg.name, cfg.ocr)
                        if cfg.kind == "ocr"
                        else parse_model_from_config(cfg.name, cfg.parse)
                    )
                except ConfigError as e:
                    raise HTTPError(500, str(e), "server_error") from None
                return self._models[name]
            if cfg is None or cfg.kind != "simulator" or cfg.sim is None:
                raise HTTPError(
                    404,
                    f"model {wire.shown(name)} not found; available: {', '.join(self.profiles())}",
                    "invalid_request_error",
                )
            m = SimulatedModel(cfg.name, SimProfile.from_mapping(cfg.sim), self.registry.truth)
            self._models[name] = m
            return m

    # scenes
    def _scene_index(self) -> tuple[dict[str, str], dict[str, str]]:
        with self._lock:
            if self._index is None:
                from dvoc_bench.scenes.desktop.gtk_source import is_desktop_episode

                instr, clean = {}, {}
                for sid in self.registry.ids():
                    if self.registry.kind(sid) == "miniwob" or is_desktop_episode(self.registry, sid):
                        continue  # an episode's screens change with each step: no one screen to index
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
        raise bad_request("cannot tell which scene this request shows")

    # requests
    def chat(self, body: Any) -> dict[str, Any]:
        """The OpenAI chat-completion object answering ``body``."""
        with self._busy():
            return self._chat(body)

    def _chat(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request("the body must be a JSON object")
        model = self.model(body.get("model"))
        text, png = wire.user_turn(body.get("messages"))
        image = wire.decode(png) if png is not None else None
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
            raise bad_request("'tools' must be a list")
        seed = body.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise bad_request("'seed' must be an integer")
        tc = body.get("tool_choice")
        req = ModelRequest(
            text=text,
            image_png=png,
            image_size=size,
            tools=tools,
            scene_id=sid,
            seed=seed,
            tool_choice=tc if isinstance(tc, str) else None,
            image_rgb=image,
            crop=wire.crop(body.get(CROP_FIELD)),
        )
        reply = model.respond(req)
        out = wire.completion(model.name, reply, req.sha(model.name))
        if model.simulated and sid and not task_given(self.registry.snapshot(sid).truth, text):
            # never a silent click elsewhere: the reply says the prompt asked for nothing it recognised, in a
            # field of its own (the answer itself stays the in-process simulator's, byte for byte)
            out[NOTE_FIELD] = (
                f"{NO_TASK_NOTE} (neither scene {sid}'s instruction nor its target's label is in the "
                "prompt): this answer follows the profile's no_task rule, not the target."
            )
        return out
