"""Run one real application with its own D-Bus session and AT-SPI bus, answer accessibility queries:
``/usr/bin/python3 atspi_runner.py JSON``.

Standalone (standard library + Debian's ``python3-pyatspi``, so it runs under the system Python, not the
project's venv). ``JSON`` is ``{"command": [...], "wait_for": "ROLE:NAME" | null, "timeout_s": N}``. The
harness starts it with the display's ``DISPLAY`` and ``FONTCONFIG_FILE``; the runner then

1. makes itself the *child subreaper* of everything below it and asks for ``SIGTERM`` when the harness
   dies (``PR_SET_PDEATHSIG``, replacing the harness's ``SIGKILL``, so it can clean up);
2. starts a private ``dbus-daemon --session`` (the AT-SPI bus launcher and registry daemon are
   D-Bus-activated from it and daemonise), then the application with ``GTK_MODULES=gail:atk-bridge``,
   ``QT_ACCESSIBILITY=1``, ``QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1`` (Qt 5 exports nothing without it: its
   bridge waits for ``org.a11y.Status.IsEnabled``, false on a private bus) and that session bus;
3. waits until the application's accessible shows the ``wait_for`` accessible (or any window) and the
   showing part is stable — no change event (:data:`CHANGES`) during a read nor :data:`QUIET_S` after it
   (:meth:`Session.wait_ready`) —, says ``{"ready": ...}`` and serves JSON-line queries on stdin. What is
   showing is read by :mod:`atspi_tree` (pruned to the visible region, big containers by a binary search)
   and kept until a change event arrives.

On ``quit``, a closed pipe (the harness is gone, even after ``kill -9``), ``SIGTERM`` or an error the
runner kills every process below it (parent links in ``/proc``: as their subreaper, even a process that
cleared its environment or left the session and lost its parent is below it; the harness's tree token,
``DVOC_PROCESS_TREE``, is a second net), removes its folder, then exits. The session bus listens in that
folder (``bus/``, not ``/tmp/dbus-*``) and AT-SPI's bus under its ``XDG_RUNTIME_DIR`` (``run/at-spi/``).

Element ids: ``ROLE:NAME`` (``push button:OK``), and ``ROLE:NAME#N`` for the N-th (N >= 2) accessible
with that role and name in reading order (top to bottom, then left to right, by the clipped box). A control
with an empty accessible name is named by its description, ``labelled-by`` accessible or image
description (:func:`atspi_tree.display_name`; the element's ``named_by`` says which).

Queries (``{"op": ...}``), screen pixels:

- ``truth`` + ``targets`` (+ ``fresh``): every showing accessible with a box on screen, and each target's
  box (the last read, unless a change event came since or ``fresh`` is true);
- ``hit`` + ``x, y, target``: the deepest accessible at the point (AT-SPI's hit test,
  ``Component.getAccessibleAtPoint`` from the topmost window containing it) and whether it is the target
  or inside it;
- ``states``: role:name -> the states of interest (focused, pressed, checked, selected, expanded,
  armed) of every showing accessible, and the showing windows (for ``desktop.verify_click``);
- ``mark`` / ``events``: with ``"events": true`` in the spec the runner listens to AT-SPI's
  ``object:state-changed`` events (:data:`EVENTS`); ``mark`` forgets those so far, ``events`` lists the
  states gained since as ``id +state`` (the event's source by object path, or its nearest ancestor with
  an id) — a button is ``armed`` when pressed, an entry already focused re-announces ``focused``;
- ``inspect``: every showing accessible read fresh, with its states, value (``Value``: current, min, max)
  and text (``Text``), the showing windows, whether the program runs and its exit code (episodes);
- ``quit``.

``"stdout": PATH`` in the spec sends the program's standard output to that file (a zenity dialog prints
its answer there: an episode's verdict); else it goes to the runner's standard error (the program's log).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

if __package__:  # imported from the project (tests read its constants)
    from dvoc_bench.scenes.desktop import atspi_tree as tree
else:  # run as a script by the system Python: the sibling file
    import atspi_tree as tree  # type: ignore[no-redef]

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
TREE_ENV = "DVOC_PROCESS_TREE"
STATES = ("focused", "pressed", "checked", "selected", "expanded", "armed", "active")
"""The states ``states`` reports (what a click can change)."""
INTERACTIVE = {
    "push button", "toggle button", "check box", "radio button", "combo box", "menu item", "menu",
    "check menu item", "radio menu item", "text", "entry", "password text", "spin button", "slider",
    "table cell", "list item", "page tab", "link", "tree item", "scroll bar", "icon", "toggle",
    "table column header", "switch", "calendar",
}  # fmt: skip
INSPECTED = ("sensitive", "indeterminate", "editable")
"""States ``inspect`` reports besides :data:`STATES` (a control that can take input, a mixed checkbox)."""
WINDOW_ROLES = {"frame", "dialog", "window", "alert", "file chooser"}
TMP_PREFIX = "dvoc-atspi-"
"""The private folder's prefix, then the runner's pid (``display.remove_stale_folders`` sweeps it)."""
EVENTS = ("focused", "armed", "pressed", "checked", "selected", "expanded", "showing")
"""``object:state-changed:*`` events recorded in a verifying session (``events`` spec key)."""
CHANGES = (
    "object:children-changed", "object:state-changed:showing", "object:state-changed:visible",
    "object:property-change:accessible-name", "object:property-change:accessible-description",
)  # fmt: skip
"""Events that change what is showing or how it is named: after one the tree is read again."""
QUIET_S = 0.4
"""Ready: the showing part read with the ``wait_for`` accessible in it, and none of :data:`CHANGES` came
during that read nor for this long after it."""


def reading_key(box: list[int]) -> tuple[int, int]:
    return (box[1], box[0])


class Session:
    """The private bus, the application, its accessibility tree."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.token = os.environ.get(TREE_ENV, "")
        self.tmp = tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")  # swept when the pid is gone
        self.bus: subprocess.Popen[bytes] | None = None
        self.app: subprocess.Popen[bytes] | None = None
        self.root: Any = None
        self.pyatspi: Any = None
        self.events: list[tuple[str, Any]] = []
        self.paths: dict[str, str] = {}
        self.changed = time.monotonic()
        """When the last of :data:`CHANGES` arrived (or the walk cache was dropped)."""
        self.nodes: list[tuple[Any, str, tree.Node]] | None = None
        """The last walk, (object, id, node); ``None`` once a change event arrived."""

    # ------------------------------------------------------------------------------ processes

    def start(self) -> dict[str, Any]:
        runtime = os.path.join(self.tmp, "run")
        home = os.path.join(self.tmp, "home")
        sockets = os.path.join(self.tmp, "bus")  # the session bus's socket (its config says /tmp)
        for d in (runtime, home, sockets):
            os.makedirs(d, mode=0o700, exist_ok=True)
        os.environ.update(XDG_RUNTIME_DIR=runtime, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
        os.environ.update(GTK_MODULES="gail:atk-bridge", QT_ACCESSIBILITY="1", GDK_BACKEND="x11")
        os.environ.update(QT_LINUX_ACCESSIBILITY_ALWAYS_ON="1", GTK_A11Y="atspi")
        os.environ.pop("NO_AT_BRIDGE", None)
        os.environ.pop("AT_SPI_BUS_ADDRESS", None)
        r, w = os.pipe()
        argv = ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--print-address={w}"]
        argv.append(f"--address=unix:dir={sockets}")  # removed with the folder; AT-SPI's bus: run/at-spi/
        try:
            # the bus and the services it starts (AT-SPI's) write to their own sink, not to the program's
            # log: what a program that died at start wrote is its own last words (apps.last_words)
            quiet = subprocess.DEVNULL
            self.bus = subprocess.Popen(argv, pass_fds=(w,), stdin=quiet, stdout=quiet, stderr=quiet)
        except FileNotFoundError:
            return {"error": "dbus-daemon not found: install the Debian package dbus-daemon"}
        finally:
            os.close(w)
        ready = select.select([r], [], [], 10)[0]
        address = os.read(r, 4096).decode().strip() if ready else ""
        os.close(r)
        if not address:
            return {"error": "the private D-Bus session did not start"}
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
        try:
            import pyatspi
        except ImportError as e:
            return {"error": f"no AT-SPI bindings ({e}): install the Debian package python3-pyatspi"}
        self.pyatspi = pyatspi
        # The accessibility bus and its registry are up before the program starts: a program's bridge
        # registers once, at start (a Qt program started first never showed in 2 of 8 runs under load,
        # docs/desktop.md). Asking the registry for the desktop starts both.
        with contextlib.suppress(Exception):
            _ = pyatspi.Registry.getDesktop(0).childCount
        if self.spec.get("events"):
            for state in EVENTS:
                pyatspi.Registry.registerEventListener(self.on_event, f"object:state-changed:{state}")
        with contextlib.suppress(Exception):
            pyatspi.Registry.registerEventListener(self.on_change, *CHANGES)
        command = self.spec["command"]
        t0 = time.monotonic()
        try:
            out = open(self.spec["stdout"], "wb") if self.spec.get("stdout") else 2  # noqa: SIM115
            self.app = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, cwd=home)
        except OSError as e:
            return {"error": f"cannot start {command[0]!r}: {e.strerror} (is it installed?)"}
        return self.wait_ready(t0)

    def on_change(self, event: Any) -> None:
        self.changed = time.monotonic()
        self.nodes = None

    def pump(self) -> None:
        """Dispatch the AT-SPI events that arrived (no main loop runs here)."""
        with contextlib.suppress(Exception):
            from gi.repository import GLib

            ctx = GLib.MainContext.default()
            for _ in range(1000):
                if not ctx.iteration(False):
                    break

    def on_event(self, event: Any) -> None:
        if event.detail1 == 1:  # a state gained
            self.events.append((event.type.rsplit(":", 1)[-1], event.source))

    def mark(self) -> dict[str, Any]:
        """Forget the events so far; remember every showing accessible's object path (an event's source
        is named by its path, also after the program exited)."""
        self.refresh()
        self.events.clear()
        self.paths = {}
        for a, eid, _ in self.identified(fresh=True):
            with contextlib.suppress(Exception):
                self.paths[a.path] = eid
        return {"ok": True}

    def take_events(self) -> dict[str, Any]:
        """``id +state`` for every state an accessible gained (as events) since :meth:`mark`: the event's
        source, or the nearest ancestor of it with an id (a combo box's popup menu names the combo box)."""
        self.refresh()
        out = []
        for state, src in self.events:
            eid, a, depth = None, src, 0
            while depth < 50:
                try:
                    eid = self.paths.get(a.path)
                    if eid is not None:
                        break
                    a, depth = a.parent, depth + 1
                except Exception:
                    break
                if a is None:
                    break
            if eid is not None:
                out.append(f"{eid} +{state}" + (" (a descendant)" if depth else ""))
        self.events.clear()
        return {"events": list(dict.fromkeys(out))}

    def wait_ready(self, t0: float) -> dict[str, Any]:
        """Wait until the program shows a window (and ``wait_for``) and the showing part is stable: read
        once no change event (:data:`CHANGES`) came for :data:`QUIET_S`, ready when none came during the
        read and :data:`QUIET_S` after it. A program whose events never stop (an animation adding
        children) is ready after half the timeout when two reads in a row agree."""
        assert self.app is not None
        timeout = float(self.spec.get("timeout_s", 20))
        wait_for = self.spec.get("wait_for")
        deadline = t0 + timeout
        last: list[str] | None = None
        while time.monotonic() < deadline:
            code = self.app.poll()
            if code is not None:
                return {"error": f"{self.spec['command'][0]} exited at start (code {code})", "exited": True}
            self.pump()
            if self.root is None:
                self.root = self.find_app()
                self.changed = time.monotonic()
            now = time.monotonic()
            late = now > t0 + timeout / 2
            if self.root is not None and (now - self.changed >= QUIET_S or late):
                read_at = time.monotonic()
                ids = [eid for _, eid, _ in self.identified(fresh=True)]
                shown = bool(ids) and (not wait_for or canonical(wait_for) in ids)
                if shown:
                    time.sleep(QUIET_S)
                    self.pump()
                    if self.changed < read_at or (late and ids == last):
                        took = round(time.monotonic() - t0, 3)
                        return {"ready": True, "start_s": took, "screen": self.screen()}
                last = ids
            time.sleep(0.05)
        ids = [eid for _, eid, _ in self.identified(fresh=True)] if self.root is not None else []
        what = f"{wait_for!r} never showed" if wait_for else "no window showed"
        return {"error": f"{what} within {timeout:g} s", "timeout": True, "ids": ids}

    def find_app(self) -> Any:
        """The program's accessible: the command's own process, or one it started (a wrapper script that
        starts the program and then drives it, e.g. ``sh -c 'featherpad & xdotool ...'``)."""
        assert self.app is not None
        pids = {self.app.pid, *descendants(self.app.pid)}
        desk = self.pyatspi.Registry.getDesktop(0)
        for i in range(desk.childCount):
            a = desk.getChildAtIndex(i)
            with contextlib.suppress(Exception):
                if a is not None and a.get_process_id() in pids:
                    return a
        return None

    def cleanup(self) -> None:
        """Kill every process of the tree (the bus, the AT-SPI daemons, the app and what it started)."""
        for proc in (self.app, self.bus):
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()
        for pid in tree_pids(self.token):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        end_tree()  # by parent links: what cleared its environment is below this subreaper too
        with contextlib.suppress(OSError):
            subprocess.run(["rm", "-rf", self.tmp], check=False)

    # ------------------------------------------------------------------------------ the tree

    def screen(self) -> list[int]:
        desk = self.pyatspi.Registry.getDesktop(0)
        try:
            e = desk.queryComponent().getExtents(self.pyatspi.DESKTOP_COORDS)
            if e.width > 0 and e.height > 0:
                return [e.width, e.height]
        except Exception:
            pass
        return [int(v) for v in self.spec.get("screen", [1280, 800])]

    def windows(self) -> list[Any]:
        out = []
        for i in range(self.root.childCount if self.root is not None else 0):
            w = self.root.getChildAtIndex(i)
            with contextlib.suppress(Exception):
                if w is not None and w.getState().contains(self.pyatspi.STATE_SHOWING):
                    out.append(w)
        return out

    def identified(self, fresh: bool = False) -> list[tuple[Any, str, tree.Node]]:
        """(object, id, node) of every showing accessible in the visible region (:func:`atspi_tree.walk`),
        ids numbered in reading order. The last read is reused until a change event (:data:`CHANGES`)
        arrives, unless ``fresh``."""
        self.pump()
        if self.nodes is not None and not fresh:
            return self.nodes
        size = [int(v) for v in self.spec.get("screen", [1280, 800])]
        nodes = tree.walk(self.windows(), size, self.pyatspi, INTERACTIVE)
        self.nodes = [(n.obj, eid, n) for n, eid in zip(nodes, number(nodes), strict=True)]
        return self.nodes

    def elements(self, fresh: bool = False) -> list[dict[str, Any]]:
        return [
            dict(
                id=eid,
                label=n.name or n.role,
                role=n.role,
                interactive=n.role in INTERACTIVE,
                box=n.box,
                named_by=n.named_by,
            )
            for _, eid, n in self.identified(fresh)
        ]

    def truth(self, targets: list[str], fresh: bool = False) -> dict[str, Any]:
        """Every showing accessible in the visible region and each target's box (``off_screen``: where a
        target not on screen is laid out); ``fresh``: read the tree even if no change event came."""
        elements = self.elements(fresh)
        by_id = {e["id"]: e["box"] for e in elements}
        found = {t: by_id.get(canonical(t)) for t in targets}
        reply: dict[str, Any] = {"elements": elements, "targets": found}
        missing = [t for t in targets if by_id.get(canonical(t)) is None]
        if missing:  # where a target that is not on screen lies, if it is laid out at all
            size = [int(v) for v in self.spec.get("screen", [1280, 800])]
            everywhere = tree.walk(self.windows(), size, self.pyatspi, INTERACTIVE, on_screen=False)
            boxes = dict(zip(number(everywhere), (n.box for n in everywhere), strict=True))
            reply["off_screen"] = {t: boxes[canonical(t)] for t in missing if canonical(t) in boxes}
        return reply

    def deepest_at(self, x: int, y: int) -> Any:
        coords = self.pyatspi.DESKTOP_COORDS
        hit = None
        for w in reversed(self.windows()):  # the last window mapped is on top (no window manager)
            with contextlib.suppress(Exception):
                if w.queryComponent().contains(x, y, coords):
                    hit = w
                    break
        while hit is not None:
            try:
                child = hit.queryComponent().getAccessibleAtPoint(x, y, coords)
            except Exception:
                child = None
            if child is None or child == hit:
                return hit
            hit = child
        return None

    def hit(self, x: int, y: int, target: str) -> dict[str, Any]:
        obj = self.deepest_at(x, y)
        if obj is None:
            return {"element": None, "hit": False}
        nodes = self.identified()
        ids = {n.key: eid for _, eid, n in nodes if n.key}
        target_key = next((n.key for _, eid, n in nodes if eid == canonical(target)), None)
        element, inside, a = None, False, obj
        for _ in range(200):  # up the parents: the nearest one with an id names the point
            if a is None:
                break
            try:
                key = str(a.path)
            except Exception:
                break
            if element is None and key in ids:
                element = ids[key]
            if target_key is not None and key == target_key:
                inside = True
            try:
                a = a.parent
            except Exception:
                break
        return {"element": element, "hit": inside}

    def refresh(self) -> None:
        """Let pending AT-SPI events in and drop the client-side cache (states are cached, and the cache
        is updated only by events, which no main loop dispatches here)."""
        with contextlib.suppress(Exception):
            from gi.repository import GLib

            ctx = GLib.MainContext.default()
            for _ in range(50):
                if not ctx.iteration(False):
                    break
        with contextlib.suppress(Exception):
            from gi.repository import Atspi

            self.root.set_cache_mask(Atspi.Cache.NONE)  # states straight from the application from now on
            self.root.clear_cache()

    def states(self, target: str = "") -> dict[str, Any]:
        """The states of every showing accessible, the showing windows, whether the program runs (and its
        exit code), and ``related``: the ids of the target, its ancestors and its descendants."""
        alive = self.app is not None and self.app.poll() is None
        code = None if alive or self.app is None else self.app.returncode
        out: dict[str, list[str]] = {}
        wins: list[str] = []
        related: list[str] = []
        try:
            self.refresh()
            nodes = self.identified(fresh=True)
            for a, eid, _ in nodes:
                try:
                    st = a.getState()
                    out[eid] = [s for s in STATES if st.contains(getattr(self.pyatspi, "STATE_" + s.upper()))]
                except Exception:
                    continue
            for w in self.windows():
                with contextlib.suppress(Exception):
                    wins.append(f"{w.getRoleName()}:{w.name or ''}")
            related = self.related(nodes, canonical(target))
        except Exception:  # the program is gone (the click closed it): nothing showing
            out, wins = {}, []
        return {"states": out, "windows": wins, "alive": alive, "exit_code": code, "related": related}

    def inspect(self) -> dict[str, Any]:
        """Every showing accessible read fresh (no cache) with its states, value and text
        (:func:`atspi_tree.inspect`), the showing windows, and whether the program runs (its exit code)."""
        alive = self.app is not None and self.app.poll() is None
        code = None if alive or self.app is None else self.app.returncode
        try:
            self.refresh()
            nodes = self.identified(fresh=True)
            elements = tree.inspect(nodes, self.pyatspi, (*STATES, *INSPECTED))
            wins = [f"{w.getRoleName()}:{w.name or ''}" for w in self.windows()]
        except Exception:  # the program is gone: nothing showing
            elements, wins = [], []
        return {"elements": elements, "windows": wins, "alive": alive, "exit_code": code}

    def related(self, nodes: list[Any], target: str) -> list[str]:
        ids = {id(n[0]): n[1] for n in nodes}
        obj = next((n[0] for n in nodes if n[1] == target), None)
        if obj is None:
            return []
        out, a = [target], obj
        for _ in range(200):
            try:
                a = a.parent
            except Exception:
                break
            if a is None:
                break
            with contextlib.suppress(Exception):
                if a.getRoleName() in WINDOW_ROLES:  # a window's states change with any popup: not related
                    break
            if id(a) in ids:
                out.append(ids[id(a)])
        for n in nodes:
            b = n[0]
            for _ in range(200):
                try:
                    b = b.parent
                except Exception:
                    break
                if b is None:
                    break
                if b == obj:
                    out.append(n[1])
                    break
        return out


def number(nodes: list[tree.Node]) -> list[str]:
    """The ids of ``nodes``: ``ROLE:NAME``, then ``#2``, ``#3``... for equals in reading order (top to
    bottom, then left to right by the box)."""
    order = sorted(range(len(nodes)), key=lambda i: (reading_key(nodes[i].box), i))
    seen: dict[str, int] = {}
    ids = [""] * len(nodes)
    for i in order:
        base = f"{nodes[i].role}:{nodes[i].name}"
        seen[base] = seen.get(base, 0) + 1
        ids[i] = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return ids


def canonical(target: str) -> str:
    """``ROLE:NAME#1`` is ``ROLE:NAME``."""
    return target[:-2] if target.endswith("#1") else target


def descendants(root: int) -> list[int]:
    """The live processes below ``root`` (parent links read from ``/proc``; zombies left out)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(name))
    out, todo = [], [root]
    while todo:
        for kid in children.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def end_tree() -> None:
    """Kill everything below this process (its child subreaper: orphans come back to it) and reap it."""
    for _ in range(50):
        below = descendants(os.getpid())
        for pid in below:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        if not below:
            return
        time.sleep(0.01)


def tree_pids(token: str) -> list[int]:
    """The processes carrying the tree ``token``, but this one and its parent (the reaper above it carries
    the token too, and must outlive this runner to end what the runner leaves)."""
    if not token:
        return []
    needle = f"{TREE_ENV}={token}".encode()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (os.getpid(), os.getppid()):
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    out.append(int(name))
        except OSError:
            continue
    return out


def main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    session = Session(spec)

    def bye(*_: Any) -> None:
        session.cleanup()
        os._exit(0)

    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGHUP, bye)
    if os.getppid() != parent:
        bye()

    def send(obj: dict[str, Any]) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        ready = session.start()
        send(ready)
        if "error" in ready:
            bye()
        buf = b""
        while True:
            chunk = os.read(0, 65536)
            if not chunk:
                bye()
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                op = req.get("op")
                if op == "quit":
                    send({"ok": True})
                    bye()
                try:
                    if op == "truth":
                        reply = session.truth(list(req.get("targets", [])), bool(req.get("fresh")))
                    elif op == "hit":
                        reply = session.hit(int(req["x"]), int(req["y"]), str(req.get("target", "")))
                    elif op == "mark":
                        reply = session.mark()
                    elif op == "events":
                        reply = session.take_events()
                    elif op == "inspect":
                        reply = session.inspect()
                    elif op == "states":
                        reply = session.states(str(req.get("target", "")))
                    else:
                        reply = {"error": f"unknown op {op!r}"}
                except Exception as e:
                    reply = {"error": f"{type(e).__name__}: {e}"}
                send(reply)
    except BaseException as e:
        with contextlib.suppress(Exception):
            send({"error": f"runner failed: {type(e).__name__}: {e}"})
        bye()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
