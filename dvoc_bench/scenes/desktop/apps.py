"""Real desktop applications as tasks (GTK, Qt): truth from the accessibility tree (AT-SPI).

An application task is a YAML file (``scenes/apps/A01.yaml``, or your own in ``desktop.app_files``)::

    id: A01                              # optional; default: the file stem
    command: gtk3-widget-factory         # a command line (shlex-split) or a list
    target: radio button:Page 2          # ROLE:NAME (AT-SPI); ROLE:NAME#N: the N-th in reading order
    wait_for: radio button:Page 1        # optional: the accessible that must be showing before the grab
    instruction: Go to the second page of the widget factory
    name: widget-factory-page-2          # optional
    difficulty: easy                     # optional
    size: [1440, 900]                    # optional: this task's screen (default desktop.size)

Inline: ``task=desktop_app desktop.app.command='zenity --question' desktop.app.target='push button:Yes'
desktop.app.instruction='...'``.

Each task runs in a session of its own (:class:`AppSession`): its own Xvfb (``desktop.size``, pinned
fonts, no window manager, :class:`~dvoc_bench.scenes.desktop.display.XDisplay`) and, under the system
Python, :mod:`dvoc_bench.scenes.desktop.atspi_runner`, which starts a private D-Bus session, the
application with the AT-SPI bridge on, and answers tree queries over a pipe. The frame is a grab of the
screen once the tree is stable; truth is the target's AT-SPI extents clipped to the screen. A trial's final
point is hit-tested by AT-SPI (``hit_rule: accessible``); with ``desktop.verify_click`` a fresh session is
clicked for real (``xdotool``) and what changed is recorded (:func:`click_effect`).

At most :data:`LIVE_SESSIONS` sessions stay alive (least recently used first out); a hit test on a closed
one starts it again. A task whose app cannot start, exits, hangs or never shows its target raises
:class:`SceneError` naming the command or the target and the 10 nearest ``role:name`` pairs it shows.
"""

from __future__ import annotations

import difflib
import json
import logging
import math
import os
import re
import select
import shlex
import shutil
import subprocess
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.core.declare import ConfigError, check_mapping, validate
from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.records import Probe
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes.desktop.display import DesktopUnavailable, XDisplay, remove_stale_folders, spawn, stop
from dvoc_bench.scenes.desktop.settings import MAX_SIDE, MIN_SIDE, Desktop
from dvoc_bench.scenes.desktop.source import DesktopOptions
from dvoc_bench.scenes.sources import SceneError, SceneFolder
from dvoc_bench.scenes.synthetic import DIFFICULTIES, content_hash, read_task_yaml

log = logging.getLogger(__name__)

INLINE_ID = "desktop_app"
"""Task id of the inline application task (``desktop.app``)."""
RUNNER = Path(__file__).resolve().with_name("atspi_runner.py")
SYSTEM_PYTHON = "/usr/bin/python3"
"""The interpreter with Debian's ``python3-pyatspi`` (the venv cannot import it)."""
PYATSPI_PACKAGE = "python3-pyatspi"
LIVE_SESSIONS = 3
"""Sessions kept alive for hit tests at once."""
NEAREST = 10
"""``role:name`` pairs listed when a target is not on screen."""
TARGET_RE = re.compile(r"^[a-z][a-z -]*:.*?(#[1-9]\d*)?$")
APP_KEYS = ("command", "target", "instruction", "wait_for")
_TASK_KEYS = ("id", "name", "difficulty", "size", *APP_KEYS)


@dataclass(frozen=True)
class AppTask:
    """One validated application task."""

    id: str
    """Task id."""
    command: tuple[str, ...]
    """The application's command line."""
    target: str
    """``ROLE:NAME`` or ``ROLE:NAME#N``."""
    instruction: str
    """Task text shown to the model."""
    where: str
    """Where it was defined (a file, or ``desktop.app``), for messages."""
    wait_for: str | None = None
    """An accessible that must be showing before the grab."""
    name: str = ""
    difficulty: str | None = None
    size: Size | None = None
    """This task's screen (its own display), when it differs from ``desktop.size``: a program whose
    window is wider than the default screen (``gtk3-widget-factory`` is 1366 px wide) shows all of it."""


def check_size(value: Any, where: str) -> Size | None:
    """``[width, height]`` within ``desktop.size``'s bounds, or ``None`` when absent; else a one-line
    :class:`ConfigError`."""
    if value is None:
        return None
    lo, hi = MIN_SIDE, MAX_SIDE
    ok = isinstance(value, list) and len(value) == 2
    if not ok or not all(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi for v in value):
        raise ConfigError(f"{where}: must be [width, height], whole pixels from {lo} to {hi}, got {value!r}")
    return Size(value[0], value[1])


def check_target(value: Any, where: str) -> str:
    """A valid ``ROLE:NAME[#N]``, or a one-line :class:`ConfigError`."""
    if not isinstance(value, str) or not TARGET_RE.match(value.strip()):
        raise ConfigError(
            f"{where}: must be ROLE:NAME as AT-SPI names it (push button:OK, radio button:Page 2#2), "
            f"got {value!r}"
        )
    return value.strip()


def task_from_mapping(raw: Any, where: str, default_id: str) -> AppTask:
    """Validate one task mapping."""
    raw = check_mapping(where, raw, _TASK_KEYS, "an application task ")
    command = raw.get("command")
    if isinstance(command, str):
        try:
            command = shlex.split(command)
        except ValueError as e:
            raise ConfigError(f"{where}.command: {e}") from None
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise ConfigError(f"{where}.command: required (a command line or a list of strings)")
    for key in ("target", "instruction"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise ConfigError(f"{where}.{key}: required (a non-empty string)")
    wait_for = raw.get("wait_for")
    if wait_for not in (None, ""):
        wait_for = check_target(wait_for, f"{where}.wait_for")
    difficulty = raw.get("difficulty")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise ConfigError(f"{where}.difficulty: allowed: {', '.join(DIFFICULTIES)}; got {difficulty!r}")
    return AppTask(
        id=str(raw.get("id") or default_id), command=tuple(command),
        target=check_target(raw["target"], f"{where}.target"), instruction=raw["instruction"].strip(),
        where=where, wait_for=wait_for or None, name=str(raw.get("name") or ""), difficulty=difficulty,
        size=check_size(raw.get("size"), f"{where}.size"),
    )  # fmt: skip


def load_task(path: Path) -> AppTask:
    path = Path(path).resolve()
    return task_from_mapping(read_task_yaml(path, "application task"), str(path), path.stem)


@dataclass(frozen=True)
class AppOptions:
    """The ``desktop:`` keys application tasks read."""

    base: DesktopOptions = field(default_factory=DesktopOptions)
    """Screen size, ``verify_click``, ``timeout_s``."""
    inline: AppTask | None = None
    """``desktop.app`` when its command is set."""
    files: tuple[Path, ...] = ()
    """``desktop.app_files``."""

    @classmethod
    def from_settings(cls, settings: Desktop | Mapping[str, Any] | None) -> AppOptions:
        """The options of the validated ``desktop:`` block (a mapping is validated here, once, by
        :class:`~dvoc_bench.scenes.desktop.settings.Desktop`); ``app_files`` resolve against the CWD."""
        s = settings if isinstance(settings, Desktop) else validate(Desktop, settings, "desktop.")
        base = DesktopOptions.from_settings(s, custom=False)
        given = {k: v for k, v in s.app.model_dump().items() if v not in (None, "")}
        inline = task_from_mapping({**given, "id": INLINE_ID}, "desktop.app", INLINE_ID) if given else None
        paths = []
        for i, f in enumerate(s.app_files):
            p = Path(f).expanduser().resolve()
            if not p.is_file():
                raise ConfigError(f"desktop.app_files[{i}]: file not found: {p}")
            paths.append(p)
        return cls(base, inline, tuple(paths))


# ------------------------------------------------------------------------------------- sessions


class AppSession:
    """One task's display, private bus and application (the runner process and its pipe)."""

    def __init__(
        self, task: AppTask, options: DesktopOptions, events: bool = False, stdout: bool = False
    ) -> None:
        self.task = task
        self.stdout_path: Path | None = None
        """With ``stdout``: the file the program's standard output goes to (in the display's folder)."""
        self.timeout_s = options.timeout_s
        if not Path(SYSTEM_PYTHON).is_file():
            raise SceneError(f"{task.id}: application tasks need {SYSTEM_PYTHON} with {PYATSPI_PACKAGE}")
        if shutil.which(task.command[0]) is None:
            raise SceneError(
                f"{task.id}: command {shlex.join(task.command)!r}: {task.command[0]} is not installed "
                f"(not found on PATH) ({task.where})"
            )
        for attempt in range(START_ATTEMPTS):
            ready = self._start(options, events, stdout)
            if "error" not in ready:
                break
            said = last_words(self.log_path) if ready.get("exited") else ""
            self.close()
            cmd = shlex.join(task.command)
            if ready.get("exited") and attempt + 1 < START_ATTEMPTS:
                log.warning("%s: %s exited at start%s; starting it once more", task.id, cmd, said)
                continue
            if ready.get("ids") is not None:
                raise SceneError(
                    f"{task.id}: command {cmd!r}: {ready['error']} ({task.where}); "
                    + nearest(task.wait_for or task.target, ready["ids"])
                )
            raise SceneError(f"{task.id}: command {cmd!r}: {ready['error']} ({task.where}){said}")
        self.start_s = float(ready.get("start_s", 0.0))
        """Seconds from starting the application to a stable tree."""

    def _start(self, options: DesktopOptions, events: bool, stdout: bool = False) -> dict[str, Any]:
        """A fresh display, the runner and the application on it; the runner's first reply (``ready`` or
        ``error``)."""
        task = self.task
        size = task.size or options.size
        self.display = XDisplay(size, options.timeout_s)
        t0 = time.perf_counter()
        try:
            env = {**self.display.env(), **dict(options.program_env)}
        except (DesktopUnavailable, RuntimeError) as e:
            self.display.close()
            raise SceneError(f"{task.id}: {e}") from e
        self.display_s = time.perf_counter() - t0
        spec = {
            "command": list(task.command), "wait_for": task.wait_for, "timeout_s": options.timeout_s,
            "screen": [size.width // options.unit, size.height // options.unit], "events": events,
        }  # fmt: skip
        self.log_path = Path(str(self.display.tmp)) / "app.log"
        if stdout:
            self.stdout_path = Path(str(self.display.tmp)) / "stdout"
            spec["stdout"] = str(self.stdout_path)
        with open(self.log_path, "wb") as err:
            self.proc = spawn(
                [SYSTEM_PYTHON, "-u", str(RUNNER), json.dumps(spec)], env=env, reaped=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            )  # fmt: skip
        self._buf = b""
        try:
            return self._read(options.timeout_s + 10)
        except BaseException:
            self.close()
            raise

    def _read(self, timeout_s: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                cmd = shlex.join(self.task.command)
                raise SceneError(f"{self.task.id}: command {cmd!r} did not answer within {timeout_s:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.proc.wait(timeout=5)
                raise SceneError(f"{self.task.id}: the accessibility runner exited (code {code})")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, req: dict[str, Any]) -> dict[str, Any]:
        """One query and its reply (an ``error`` reply raises :class:`SceneError`)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except OSError:
            raise SceneError(f"{self.task.id}: the accessibility runner has exited") from None
        reply = self._read(self.timeout_s + 10)
        if "error" in reply:
            raise SceneError(f"{self.task.id}: {reply['error']}")
        return reply

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and self.display.running

    def close(self) -> None:
        stop(self.proc, grace_s=STOP_GRACE_S)
        self.display.close()
        remove_stale_folders()  # the runner's folder, if it was killed before it removed it


STOP_GRACE_S = 5.0
"""How long a session has to end (the reaper gives the runner :data:`~.reaper.GRACE_S` to remove its
tree and folder) before it is killed."""
START_ATTEMPTS = 2
"""Starts of a task's program before its scene fails: a program that died at start (a Qt program that could
not reach the display aborts) is started once more on a fresh display, with a warning naming what it said."""


def last_words(log_path: Path, lines: int = 3, chars: int = 400) -> str:
    """``; it said: ...``: the last non-empty lines an application wrote to stderr before it exited at start
    (Qt's abort names its reason there), one line, at most ``chars``; empty when it said nothing."""
    try:
        text = log_path.read_bytes()[-8192:].decode("utf-8", "replace")
    except OSError:
        return ""
    said = " | ".join([ln.strip() for ln in text.splitlines() if ln.strip()][-lines:])
    return f"; it said: {said[-chars:]}" if said else ""


def nearest(wanted: str, ids: list[str], named_by: Mapping[str, str] | None = None) -> str:
    """``nearest on screen: ...``: the :data:`NEAREST` ``role:name`` pairs most like ``wanted``; one whose
    name is not its accessible name says which field gave it (``push button:Close (description)``)."""
    if not ids:
        return "nothing is on screen"
    pool = list(dict.fromkeys(ids))
    near = difflib.get_close_matches(wanted, pool, n=NEAREST, cutoff=0.0)
    by = named_by or {}
    return "nearest on screen: " + ", ".join(
        f"{i} ({by[i]})" if by.get(i) not in (None, "", "name") else i for i in near
    )


def click_effect(
    before: dict[str, Any], after: dict[str, Any], related: list[str] | None = None
) -> tuple[str | None, list[str]]:
    """What a real click changed: the accessible whose states changed — the first of ``related`` (the
    target, its ancestors, its descendants) that did, else one that gained focus, else one that was checked,
    pressed or selected — and every change as ``id +state`` / ``id -state`` / ``window +name`` /
    ``window -name`` / ``app exited (code N)``."""
    changes: list[str] = []
    changed: list[tuple[int, str]] = []
    b, a = before.get("states", {}), after.get("states", {})
    for eid in sorted(set(b) & set(a)):  # appearing or vanishing is not a state change of one accessible
        gained, lost = set(a[eid]) - set(b[eid]), set(b[eid]) - set(a[eid])
        changes += [f"{eid} +{s}" for s in sorted(gained)] + [f"{eid} -{s}" for s in sorted(lost)]
        if gained or lost:
            rank = 0 if "focused" in gained else 1 if gained & {"checked", "pressed", "selected"} else 2
            changed.append((rank, eid))
    wb, wa = before.get("windows", []), after.get("windows", [])
    changes += [f"window +{w}" for w in wa if w not in wb] + [f"window -{w}" for w in wb if w not in wa]
    if before.get("alive", True) and not after.get("alive", True):
        code = after.get("exit_code")
        changes.append("app exited" + (f" (code {code})" if code is not None else ""))
    names = {eid for _, eid in changed}
    for eid in related or []:
        if eid in names:
            return eid, changes
    return (min(changed)[1] if changed else None), changes


HOLD_S = 1.0
"""How long a verifying click holds the button down at most, waiting for the press's effect."""
SETTLE_S = 2.0
"""How long it waits for the release's effect at most."""


def settle(session: AppSession, target: str, since: dict[str, Any], wait_s: float) -> dict[str, Any]:
    """The states once they differ from ``since`` (the effect arrives asynchronously), or after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while True:
        time.sleep(0.05)
        now = session.request({"op": "states", "target": target})
        if click_effect(since, now)[1] or time.monotonic() > deadline:
            return now


def press_release_effect(
    before: dict[str, Any],
    pressed: dict[str, Any],
    after: dict[str, Any],
    events: list[str],
    related: list[str],
) -> tuple[str | None, list[str]]:
    """The accessible a press-then-release changed, and every change: the press's and the release's state
    changes (:func:`click_effect`) and the program's state events (``id +state``; ``... (a descendant)``
    when the event's source is inside that accessible, which counts for the target itself only). The first
    of ``related`` that changed wins, else the press's element, else the release's, else an event's."""
    pe, pc = click_effect(before, pressed, related)
    re_, rc = click_effect(pressed, after, related)
    changes = [*pc, *rc, *(f"event {e}" for e in events)]
    changed = [c.rsplit(" +", 1)[0] for c in [*pc, *rc] if " +" in c or " -" in c]
    direct = [e.rsplit(" +", 1)[0] for e in events if not e.endswith("(a descendant)")]
    inside = [e.rsplit(" +", 1)[0] for e in events if e.endswith("(a descendant)")]
    target = related[0] if related else None
    for eid in related:
        if eid in changed or eid in direct or (eid == target and eid in inside):
            return eid, changes
    return (pe or re_ or (direct[0] if direct else None)), changes


# ------------------------------------------------------------------------------------- the source


class AppScenes:
    """The application tasks of one registry."""

    def __init__(self, options: AppOptions | None = None) -> None:
        self.options = options or AppOptions()
        self._lock = threading.RLock()
        self._live: OrderedDict[str, AppSession] = OrderedDict()
        self._tasks: dict[str, AppTask] = {}
        self._failed: dict[str, SceneError] = {}
        self.timings: list[dict[str, float]] = []
        """Per started session: ``display_s``, ``start_s``, ``tree_s``, ``grab_s`` (bench desktop)."""
        self.extra: dict[str, Path] = {}
        self.last_effect: list[str] = []
        """The changes the last verifying click observed (:func:`click_effect`)."""
        for path in self.options.files:
            task = load_task(path)
            self.extra[task.id] = path
            self._tasks[str(path)] = task
        if self.options.inline is not None:
            sentinel = Path("<desktop.app>")
            self.extra[INLINE_ID] = sentinel
            self._tasks[str(sentinel)] = self.options.inline

    def source(self) -> SceneFolder:
        return SceneFolder(
            "*.yaml", self.limited_load, probe=self.probe, close=self.close, extra=dict(self.extra),
            backend=self, kind="desktop",
        )  # fmt: skip

    def task(self, path: Path) -> AppTask:
        return self._tasks.get(str(path)) or load_task(path)

    def limited_load(self, path: Path, max_side: int) -> Snapshot:
        task = self.task(path)
        size = task.size or self.options.base.size
        if max(size.width, size.height) > max_side:
            err = SceneError(f"{task.id}: desktop.size {size.width}x{size.height} exceeds scenes.max_side")
            err.size = size
            raise err
        self._tasks[task.id] = task
        if task.id in self._failed:
            raise self._failed[task.id]
        try:
            return self.render(task)
        except SceneError as e:
            e.size = size
            self._failed[task.id] = e
            raise

    def _session(self, task: AppTask, fresh: bool = False) -> AppSession:
        with self._lock:
            if not fresh:
                s = self._live.get(task.id)
                if s is not None and s.alive:
                    self._live.move_to_end(task.id)
                    return s
                if s is not None:
                    self._live.pop(task.id).close()
                while len(self._live) >= LIVE_SESSIONS:
                    self._live.popitem(last=False)[1].close()
            s = AppSession(task, self.options.base, events=fresh)
            if not fresh:
                self._live[task.id] = s
            return s

    def render(self, task: AppTask) -> Snapshot:
        with self._lock:
            s = self._session(task)
            t0 = time.perf_counter()
            image = s.display.grab()
            t1 = time.perf_counter()
            reply = s.request({"op": "truth", "targets": [task.target]})
            t2 = time.perf_counter()
            self.timings.append(
                dict(display_s=s.display_s, start_s=s.start_s, grab_s=t1 - t0, tree_s=t2 - t1)
            )
            return snapshot(task, reply, image, self.options.base.unit)

    def probe(self, task_id: str, point: Point) -> Probe:
        """AT-SPI's hit test at ``point``; with ``verify_click`` also a real click in a fresh session."""
        x, y = math.floor(point.x), math.floor(point.y)
        u = self.options.base.unit  # AT-SPI speaks the program's own pixels: GDK_SCALE device pixels each
        with self._lock:
            task = self._tasks[task_id]
            hit = self._session(task).request({"op": "hit", "x": x // u, "y": y // u, "target": task.target})
            clicked_element, clicked = None, None
            if self.options.base.verify_click:
                clicked_element, clicked = self.verify(task, x, y)
        return Probe(
            hit_element=hit["element"], hit=bool(hit["hit"]), clicked_target=clicked,
            clicked_element=clicked_element, hit_rule="accessible",
        )  # fmt: skip

    def verify(self, task: AppTask, x: int, y: int) -> tuple[str | None, bool]:
        """Click ``(x, y)`` for real in a fresh session: press, watch, release, watch; what changed (states
        polled, state events the program sent) names the clicked accessible (:func:`press_release_effect`)."""
        fresh = self._session(task, fresh=True)
        try:
            before = fresh.request({"op": "states", "target": task.target})
            fresh.request({"op": "mark"})
            fresh.display.click(x, y, "mousedown")
            pressed = settle(fresh, task.target, before, HOLD_S)
            events = fresh.request({"op": "events"})["events"]
            fresh.display.click(x, y, "mouseup")
            after = settle(fresh, task.target, pressed, SETTLE_S)
            events += fresh.request({"op": "events"})["events"]
        finally:
            fresh.close()
        related = list(dict.fromkeys([*(before.get("related") or []), *(after.get("related") or [])]))
        element, changes = press_release_effect(before, pressed, after, events, related)
        self.last_effect = changes
        log.info("%s: the click at (%d, %d) changed: %s", task.id, x, y, "; ".join(changes) or "nothing")
        return element, element is not None and element in related

    def close(self) -> None:
        with self._lock:
            while self._live:
                self._live.popitem()[1].close()


def device_box(box: Any, unit: int = 1) -> Box:
    """An AT-SPI box (the program's own pixels, edges inclusive) in screen pixels: GTK 3 under
    ``GDK_SCALE=unit`` reports application pixels, each ``unit`` x ``unit`` device pixels."""
    x0, y0, x1, y1 = (float(v) for v in box)
    if unit == 1:
        return Box(x0, y0, x1, y1)
    return Box(x0 * unit, y0 * unit, (x1 + 1) * unit - 1, (y1 + 1) * unit - 1)


def snapshot(task: AppTask, reply: dict[str, Any], image: Any, unit: int = 1) -> Snapshot:
    """The frame and its truth (boxes in screen pixels, :func:`device_box`); a target not on screen raises
    :class:`SceneError` with the nearest ids."""
    box = reply["targets"].get(task.target)
    ids = [e["id"] for e in reply["elements"]]
    if box is None:
        h, w = image.shape[:2]
        off = (reply.get("off_screen") or {}).get(task.target)
        where = (
            f"is showing but off the {w}x{h} screen, at {off} (a task's size: [w, h] gives it a bigger "
            "screen)"
            if off
            else "is not on screen"
        )
        named = {e["id"]: e.get("named_by", "") for e in reply["elements"]}
        raise SceneError(
            f"{task.id}: target {task.target!r} {where} ({task.where}); " + nearest(task.target, ids, named)
        )
    elements = tuple(
        Element(
            id=e["id"], label=e["label"], box=device_box(e["box"], unit), role=e["role"],
            interactive=e["interactive"],
        )
        for e in reply["elements"]
    )
    target_id = task.target[:-2] if task.target.endswith("#1") else task.target
    h, w = image.shape[:2]
    truth = SceneTruth(
        scene_id=task.id, size=Size(w, h), instruction=task.instruction, target_id=target_id,
        target_box=device_box(box, unit), elements=elements,
    )  # fmt: skip
    image.setflags(write=False)
    return Snapshot(truth=truth, image=image, content_hash=content_hash(image, truth))


def apps_source(options: Desktop | Mapping[str, Any] | None = None) -> SceneFolder:
    """A fresh application-task source (one per registry)."""
    return AppScenes(AppOptions.from_settings(options)).source()
