"""Desktop scenes: Tk applications on the run's Xvfb display, truth and hit tests from the toolkit.

A desktop task is a YAML file (``scenes/desktop/D1.yaml``)::

    id: D1                        # scene id (equal to the file stem inside scenes/desktop/)
    name: settings-dialog         # optional short name
    difficulty: easy              # optional: easy | medium | hard
    script: D1.py                 # the Tk program, relative to this YAML or absolute
    target: widget:.dlg.buttons.ok   # or canvas:.c:tagname (canvas items carrying the tag)
    instruction: Click the OK button of the Settings dialog

Bring your own Tk app: ``task=desktop_custom desktop.custom.script=app.py
desktop.custom.target=widget:.dlg.ok desktop.custom.instruction='...'`` (scene id ``desktop_custom``).

Each scene is started once per registry by :mod:`dvoc_bench.scenes.desktop.runner` on the shared display
(:class:`~dvoc_bench.scenes.desktop.display.XDisplay`, started on the first scene): when its toplevels are on
screen the whole screen is grabbed (the frame, ``desktop.size``) and the toolkit is asked for every
element's box in screen pixels (widgets: ``winfo_rootx/rooty/width/height``; canvas items:
``canvas.bbox``). The instance stays alive, withdrawn while another scene is shown, for hit tests:
:meth:`DesktopScenes.probe` asks the toolkit what is under a trial's final point (``winfo_containing``, on
a canvas the topmost ``find_overlapping`` item); that decides ``hit`` (``hit_rule: toolkit``). With
``desktop.verify_click`` a fresh instance of the scene (a click changes state: OK closes the dialog) is
shown, the X pointer moved to the point and clicked (``xdotool``), and the application reports which widget
or canvas item received the press (``clicked_element``, ``clicked_target``).

A pixel ``(x, y)`` of the frame is screen pixel ``(x, y)``; a fractional final point is hit-tested and
clicked at the pixel containing it (``floor``). A scene that cannot start (the script fails, no root, the
target is not on screen) raises :class:`SceneError`; its trials are errors and the sweep goes on.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvoc_bench.core.declare import ConfigError, check_mapping, validate
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.records import Probe
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes.desktop.display import DesktopUnavailable, XDisplay, spawn, stop
from dvoc_bench.scenes.desktop.settings import Desktop, DesktopCustom
from dvoc_bench.scenes.sources import SceneError, SceneFolder
from dvoc_bench.scenes.synthetic import DIFFICULTIES, content_hash, read_task_yaml

log = logging.getLogger(__name__)

OUTPUT_CHARS = 4000
"""Characters of a desktop app's output kept for the run's log (the last ones)."""

CUSTOM_ID = "desktop_custom"
"""Scene id of the inline bring-your-own Tk app (``desktop.custom``)."""
DEFAULT_SIZE = Size(1280, 800)
RUNNER = Path(__file__).resolve().with_name("runner.py")
TARGET_RE = re.compile(r"^(widget:\.[\w.\-]*|canvas:\.[\w.\-]+:[^\s:]+)$")
"""``widget:<Tk path>`` or ``canvas:<canvas path>:<tag or item id>``."""

_TASK_KEYS = ("id", "name", "difficulty", "script", "target", "instruction")
"""``app`` and ``app_files`` belong to the application tasks (:mod:`dvoc_bench.scenes.desktop.apps`)."""


@dataclass(frozen=True)
class DesktopTask:
    """One validated desktop task."""

    id: str
    """Scene id."""
    script: Path
    """The Tk program (resolved)."""
    target: str
    """``widget:<path>`` or ``canvas:<path>:<tag>``."""
    instruction: str
    """Task text shown to the model."""
    where: str
    """Where it was defined (file, or ``desktop.custom``), for messages."""
    name: str = ""
    difficulty: str | None = None


def check_target(value: Any, where: str) -> str:
    """A valid target string, or a one-line :class:`ConfigError`."""
    if not isinstance(value, str) or not TARGET_RE.match(value.strip()):
        raise ConfigError(
            f"{where}: target must be widget:<Tk path> (widget:.dlg.ok) or canvas:<canvas path>:<tag> "
            f"(canvas:.c:node1), got {value!r}"
        )
    return value.strip()


def task_from_mapping(raw: Any, base: Path, where: str, default_id: str) -> DesktopTask:
    """Validate one task mapping; ``script`` resolves against ``base``."""
    raw = check_mapping(where, raw, _TASK_KEYS, "a desktop task ")
    for key in ("script", "target", "instruction"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ConfigError(f"{where}.{key}: required (a non-empty string)")
    script = Path(raw["script"]).expanduser()
    script = (script if script.is_absolute() else base / script).resolve()
    if not script.is_file():
        raise ConfigError(f"{where}.script: file not found: {script}")
    difficulty = raw.get("difficulty")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise ConfigError(f"{where}.difficulty: allowed: {', '.join(DIFFICULTIES)}; got {difficulty!r}")
    return DesktopTask(
        id=str(raw.get("id") or default_id),
        script=script,
        target=check_target(raw["target"], f"{where}.target"),
        instruction=raw["instruction"].strip(),
        where=where,
        name=str(raw.get("name") or ""),
        difficulty=difficulty,
    )


def load_task(path: Path) -> DesktopTask:
    """Read one task YAML."""
    path = Path(path).resolve()
    raw = read_task_yaml(path, "desktop task")
    return task_from_mapping(raw, path.parent, str(path), path.stem)


@dataclass(frozen=True)
class DesktopOptions:
    """What the desktop source runs with: the ``desktop:`` block
    (:class:`~dvoc_bench.scenes.desktop.settings.Desktop`) with its inline app read."""

    size: Size = DEFAULT_SIZE
    """Screen (root window) size of the display; every desktop frame has this size."""
    verify_click: bool = False
    """Click each trial's final point with the real X pointer in a fresh instance of the scene."""
    timeout_s: float = 20.0
    """Bound on the display start, a scene becoming ready, and each query or click."""
    custom: DesktopTask | None = None
    """The inline bring-your-own app (id ``desktop_custom``), if ``desktop.custom.script`` is set."""
    program_env: tuple[tuple[str, str], ...] = ()
    """Environment variables of the variation axes a GTK program starts with (``GTK_THEME``,
    ``GDK_SCALE``, ``GDK_DPI_SCALE``; docs/variation.md); empty at their defaults."""

    @property
    def unit(self) -> int:
        """Screen pixels per pixel of a GTK program (its ``GDK_SCALE``; 1 unless set)."""
        return int(dict(self.program_env).get("GDK_SCALE", "1"))

    @classmethod
    def from_settings(
        cls, settings: Desktop | Mapping[str, Any] | None, cwd: Path | None = None, custom: bool = True
    ) -> DesktopOptions:
        """The options of the validated ``desktop:`` block (a mapping is validated here, once, by
        :class:`~dvoc_bench.scenes.desktop.settings.Desktop`); ``desktop.custom``'s script resolves against
        ``cwd`` (default: the CWD); ``custom=False`` leaves the inline app out (the application tasks)."""
        s = settings if isinstance(settings, Desktop) else validate(Desktop, settings, "desktop.")
        w, h = s.size or [DEFAULT_SIZE.width, DEFAULT_SIZE.height]
        inline = _custom(s.custom, cwd or Path.cwd()) if custom else None
        return cls(Size(w, h), s.verify_click, s.timeout_s, inline, tuple(sorted(s.program_env().items())))


def _custom(custom: DesktopCustom, cwd: Path) -> DesktopTask | None:
    given = {k: v for k, v in custom.model_dump().items() if v not in (None, "")}
    if not given:
        return None
    return task_from_mapping({**given, "id": CUSTOM_ID}, cwd, "desktop.custom", CUSTOM_ID)


# ------------------------------------------------------------------------------------- instances


class Instance:
    """One running Tk application (a :mod:`~dvoc_bench.scenes.desktop.runner` process) and its query pipe."""

    def __init__(self, task: DesktopTask, display: XDisplay, timeout_s: float) -> None:
        self.task = task
        self.timeout_s = timeout_s
        env = display.env()  # starts the display if needed
        self.log_path = Path(str(display.tmp)) / f"{task.id}-{time.monotonic_ns()}.log"
        with open(self.log_path, "wb") as err:
            self.proc = spawn(
                [sys.executable, "-u", str(RUNNER), str(task.script)], reaped=True,
                env=env, cwd=str(task.script.parent),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            )  # fmt: skip
        self._buf = b""
        self.screen: tuple[int, int] = (0, 0)
        try:
            ready = self._read(timeout_s)
        except BaseException:
            self.close()
            raise
        if "error" in ready or not ready.get("ready"):
            self.close()
            raise SceneError(f"{task.id}: {ready.get('error', 'the Tk app did not start')} ({task.where})")
        self.screen = tuple(ready["screen"])

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _stderr_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1][:200] if lines else ""

    def _read(self, timeout_s: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise SceneError(f"{self.task.id}: the Tk app did not answer within {timeout_s:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.proc.wait(timeout=5)
                tail = self._stderr_tail()
                raise SceneError(
                    f"{self.task.id}: the Tk app exited (code {code}){': ' + tail if tail else ''}"
                )
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, req: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one query and return its reply (an ``error`` reply raises :class:`SceneError`)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SceneError(f"{self.task.id}: the Tk app has exited") from None
        reply = self._read(self.timeout_s if timeout_s is None else timeout_s)
        if "error" in reply:
            raise SceneError(f"{self.task.id}: {reply['error']}")
        return reply

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self, limit: int = OUTPUT_CHARS) -> str:
        """What the script printed so far (stdout and stderr, one stream): the last ``limit`` characters."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text if len(text) <= limit else "…" + text[-limit:]

    def close(self) -> None:
        stop(self.proc, grace_s=1.0)
        out = self.output().rstrip()
        if out:  # the run's log keeps what the script printed (str(widget) to find a path, say)
            log.info("%s: the app printed (stdout and stderr):\n%s", self.task.id, out)
        self.log_path.unlink(missing_ok=True)


@dataclass
class DesktopScene:
    """A rendered desktop scene and its live instance (for hit tests)."""

    task: DesktopTask
    snapshot: Snapshot
    instance: Instance | None


class DesktopScenes:
    """The desktop scenes of one registry: one display, one live instance per scene, one shown at a time."""

    def __init__(self, options: DesktopOptions | None = None) -> None:
        self.options = options or DesktopOptions()
        self.display = XDisplay(self.options.size, self.options.timeout_s)
        """The run's Xvfb (started by the first scene, stopped by :meth:`close`)."""
        self._lock = threading.RLock()
        self._scenes: dict[str, DesktopScene] = {}
        self._failed: dict[str, SceneError] = {}
        self._shown: Instance | None = None
        self.extra: dict[str, Path] = {}
        if self.options.custom is not None:
            self.extra[CUSTOM_ID] = self.options.custom.script

    def source(self) -> SceneFolder:
        """This object as a registry :class:`~dvoc_bench.scenes.sources.SceneFolder` (``*.yaml`` in
        ``desktop/``)."""
        return SceneFolder(
            "*.yaml", self.limited_load, probe=self.probe, close=self.close, extra=dict(self.extra),
            backend=self, kind="desktop",
        )  # fmt: skip

    def task(self, path: Path) -> DesktopTask:
        custom = self.options.custom
        if custom is not None and Path(path) == custom.script:
            return custom
        return load_task(path)

    # ---------------------------------------------------------------------------------- rendering

    def _start(self, task: DesktopTask) -> Instance:
        """A new instance of ``task``, the only one on screen."""
        if self._shown is not None and self._shown.alive:
            self._shown.request({"op": "hide"})
        self._shown = None
        try:
            self.display.start()
        except (DesktopUnavailable, RuntimeError) as e:
            raise SceneError(f"{task.id}: {e}") from e
        inst = Instance(task, self.display, self.options.timeout_s)
        self._shown = inst
        return inst

    def _show(self, inst: Instance) -> None:
        if self._shown is inst:
            return
        if self._shown is not None and self._shown.alive:
            self._shown.request({"op": "hide"})
        self._shown = None
        inst.request({"op": "show"})
        self._shown = inst

    def load(self, path: Path) -> Snapshot:
        """Start the task's app, grab the screen, ask for the elements; keep the app for hit tests."""
        task = self.task(path)
        if task.id in self._failed:
            raise self._failed[task.id]
        try:
            return self.render(task).snapshot
        except SceneError as e:
            e.size = self.options.size
            self._failed[task.id] = e
            raise

    def limited_load(self, path: Path, max_side: int) -> Snapshot:
        """:meth:`load`, refusing a screen larger than ``scenes.max_side`` before starting anything."""
        size = self.options.size
        if max(size.width, size.height) > max_side:
            side = f"{size.width}x{size.height}"
            err = SceneError(f"{Path(path).stem}: desktop.size {side} exceeds scenes.max_side={max_side}")
            err.size = size
            raise err
        return self.load(path)

    def render(self, task: DesktopTask) -> DesktopScene:
        t0 = time.perf_counter()
        with self._lock:
            old = self._scenes.pop(task.id, None)
            if old is not None and old.instance is not None:
                old.instance.close()
            inst = self._start(task)
            try:
                image = self.display.grab()
                truth = inst.request({"op": "truth", "targets": [task.target]})
                snap = _snapshot(task, truth, image)
            except BaseException:
                inst.close()
                raise
            scene = DesktopScene(task, snap, inst)
            self._scenes[task.id] = scene
        log.info("%s: rendered in %.3f s", task.id, time.perf_counter() - t0)
        return scene

    def scene(self, scene_id: str) -> DesktopScene:
        with self._lock:
            return self._scenes[scene_id]

    # ---------------------------------------------------------------------------------- probing

    def probe(self, scene_id: str, point: Point) -> Probe:
        """The toolkit's hit test at ``point``; with ``verify_click`` also a real click (fresh instance)."""
        x, y = math.floor(point.x), math.floor(point.y)
        with self._lock:
            task = self.scene(scene_id).task
            hit = self.hit_test(scene_id, point)
            clicked_element, clicked = None, None
            if self.options.verify_click:
                fresh = self._start(task)
                try:
                    self.display.click(x, y)
                    r = fresh.request({"op": "clicks", "target": task.target, "wait_s": 2.0})
                    clicked_element, clicked = r["element"], bool(r["hit"])
                finally:
                    fresh.close()
                    self._shown = None
        return Probe(
            hit_element=hit["element"], hit=bool(hit["hit"]), clicked_target=clicked,
            clicked_element=clicked_element,
        )  # fmt: skip

    def hit_test(self, scene_id: str, point: Point) -> dict[str, Any]:
        """What the scene's live app finds at ``point`` (``element``, ``hit``); the app is shown first (and
        started again if it died)."""
        with self._lock:
            scene = self.scene(scene_id)
            if scene.instance is None or not scene.instance.alive:
                scene.instance = self._start(scene.task)
            self._show(scene.instance)
            q = {"op": "hit", "x": math.floor(point.x), "y": math.floor(point.y), "target": scene.task.target}
            return scene.instance.request(q)

    def close(self) -> None:
        """Stop every instance and the display (snapshots stay; a later probe starts them again)."""
        with self._lock:
            for scene in self._scenes.values():
                if scene.instance is not None:
                    scene.instance.close()
                    scene.instance = None
            self._shown = None
            self.display.close()

    def pids(self) -> list[int]:
        """Process ids of the display and the live instances (for tests and diagnostics)."""
        with self._lock:
            out = [s.instance.pid for s in self._scenes.values() if s.instance is not None]
            if self.display.proc is not None:
                out.append(self.display.proc.pid)
            return out


def _not_on_screen(task: DesktopTask, ids: list[str]) -> str:
    """The one line for a target the app does not show: with the nearest element ids on screen
    (:func:`difflib.get_close_matches`), else the first few, so a mistyped widget path shows the right one."""
    import difflib

    near = difflib.get_close_matches(task.target, ids, n=3, cutoff=0.6)
    if near:
        hint = f"; nearest on screen: {', '.join(near)}"
    elif ids:
        hint = f"; on screen: {', '.join(ids[:5])}{' …' if len(ids) > 5 else ''}"
    else:
        hint = "; nothing is on screen"
    return (
        f"{task.id}: target {task.target} is not on screen ({task.where}){hint} "
        "(what the app printed is in the run's log)"
    )


def _snapshot(task: DesktopTask, reply: dict[str, Any], image: Any) -> Snapshot:
    target = reply["targets"].get(task.target)
    if target is None:
        raise SceneError(_not_on_screen(task, [e["id"] for e in reply["elements"]]))
    elements = [
        Element(
            id=e["id"], label=e["label"], box=Box(*e["box"]), role=e["role"], interactive=e["interactive"]
        )
        for e in reply["elements"]
    ]
    if task.target not in {e.id for e in elements}:  # a container or a secondary tag: add it
        elements.append(Element(id=task.target, label=task.target.rsplit(":", 1)[-1], box=Box(*target)))
    h, w = image.shape[:2]
    truth = SceneTruth(
        scene_id=task.id,
        size=Size(w, h),
        instruction=task.instruction,
        target_id=task.target,
        target_box=Box(*target),
        elements=tuple(elements),
    )
    image.setflags(write=False)
    return Snapshot(truth=truth, image=image, content_hash=content_hash(image, truth))


def desktop_source(options: Desktop | Mapping[str, Any] | DesktopOptions | None = None) -> SceneFolder:
    """A fresh desktop :class:`~dvoc_bench.scenes.sources.SceneFolder` with its own display (one per
    registry)."""
    opts = options if isinstance(options, DesktopOptions) else DesktopOptions.from_settings(options)
    return DesktopScenes(opts).source()
