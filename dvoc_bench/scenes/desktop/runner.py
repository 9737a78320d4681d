"""Run one Tk application under the harness and answer its questions: ``python runner.py SCRIPT``.

Standalone (standard library only; the harness starts it with the display's ``DISPLAY`` and
``FONTCONFIG_FILE``). It runs ``SCRIPT`` as ``__main__`` with ``mainloop`` hooked: when the script enters
its main loop (``root.mainloop()`` or ``tkinter.mainloop()``; a script that only builds widgets gets one
after it returns) the runner waits until every toplevel is on screen, says ``{"ready": ...}`` and serves
JSON-line queries read from its stdin inside the Tk event loop. Replies go to the original stdout; the
script's own prints go to stderr. When the pipe closes (the harness ended, even by ``kill -9``) the
runner exits. Everything the script starts ends with the runner: it is their child subreaper and kills
every process below it (parent links in ``/proc``, not an environment mark: a child started with an empty
environment or in a session of its own is found too) on ``quit``, a closed pipe, ``SIGTERM`` (which the
harness's death sends it) or exit.

Queries (``{"op": ...}``), all in screen pixels:

- ``truth`` + ``targets``: every visible widget (``widget:<path>``, box from ``winfo_rootx/rooty/width/
  height``) and every tagged canvas item (``canvas:<canvas path>:<first tag>``, box from
  ``canvas.bbox``), and the box of each target;
- ``hit`` + ``x, y, target``: what the toolkit finds at the point (``winfo_containing``; on a canvas the
  topmost item of ``find_overlapping`` within the canvas's ``closeenough`` halo, the rule Tk itself uses
  to pick the item a click goes to) and whether it is the target or inside it;
- ``clicks`` + ``target, wait_s``: the button presses the application received (the widget, on a canvas
  the ``current`` item), waiting up to ``wait_s`` for the first;
- ``hide`` / ``show``: withdraw / map again the toplevels (one scene on screen at a time); ``quit``.

Targets: ``widget:.dlg.ok`` (a widget path; the widget or anything inside it) or ``canvas:.c:tag`` (the
canvas items carrying ``tag``; a number is an item id).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import runpy
import signal
import sys
import time
import traceback
from typing import Any

ROLES = {
    "Button": "button", "TButton": "button", "Checkbutton": "button", "TCheckbutton": "button",
    "Radiobutton": "button", "TRadiobutton": "button", "Menubutton": "button", "TMenubutton": "button",
    "Entry": "input", "TEntry": "input", "Spinbox": "input", "TSpinbox": "input", "TCombobox": "input",
    "Text": "input", "Listbox": "input", "Scale": "input", "TScale": "input",
    "Label": "text", "TLabel": "text", "Message": "text",
    "Labelframe": "panel", "TLabelframe": "panel", "Scrollbar": "panel", "TScrollbar": "panel",
    "Treeview": "panel", "TNotebook": "panel",
}  # fmt: skip
"""Widget classes that are elements, and their role; other classes (frames, toplevels) are containers."""

PROBE_TAG = "DvocProbe"
"""Bind tag put first on every widget: records button presses before the widget's own bindings run."""


def _walk(w: Any) -> Any:
    yield w
    for c in w.winfo_children():
        yield from _walk(c)


def _item_id(canvas: Any, item: int) -> str:
    tags = [t for t in canvas.gettags(item) if t != "current"]
    return f"canvas:{canvas}:{tags[0] if tags else '#' + str(item)}"


def _clip(box: list[float], sw: int, sh: int) -> list[int] | None:
    x0, y0 = max(0, int(box[0])), max(0, int(box[1]))
    x1, y1 = min(sw - 1, int(box[2])), min(sh - 1, int(box[3]))
    return [x0, y0, x1, y1] if x1 >= x0 and y1 >= y0 else None


class Server:
    """The runner's state: the root, the recorded presses, the query loop."""

    def __init__(self, cmd_fd: int, out: Any) -> None:
        self.cmd_fd = cmd_fd
        self.out = out
        self.root: Any = None
        self.served = False
        self.clicks: list[dict[str, Any]] = []
        self.click_refs: list[tuple[Any, int | None]] = []
        self.mapped: list[Any] = []
        self._buf = b""

    # ----------------------------------------------------------------------------------- geometry

    def widget_box(self, w: Any) -> list[int] | None:
        x, y = w.winfo_rootx(), w.winfo_rooty()
        return self._screen_clip([x, y, x + w.winfo_width() - 1, y + w.winfo_height() - 1])

    def item_box(self, canvas: Any, tag: str) -> list[int] | None:
        bb = canvas.bbox(tag)
        if not bb:
            return None
        ox = canvas.winfo_rootx() - canvas.canvasx(0)
        oy = canvas.winfo_rooty() - canvas.canvasy(0)
        box = [bb[0] + ox, bb[1] + oy, bb[2] - 1 + ox, bb[3] - 1 + oy]
        visible = self.widget_box(canvas)
        if visible is None:
            return None
        box = [
            max(box[0], visible[0]),
            max(box[1], visible[1]),
            min(box[2], visible[2]),
            min(box[3], visible[3]),
        ]
        return self._screen_clip(box)

    def _screen_clip(self, box: list[float]) -> list[int] | None:
        return _clip(box, self.root.winfo_screenwidth(), self.root.winfo_screenheight())

    def target_box(self, target: str) -> list[int] | None:
        kind, _, rest = target.partition(":")
        if kind == "widget":
            w = self.widget(rest)
            return self.widget_box(w) if w is not None and w.winfo_viewable() else None
        path, _, tag = rest.partition(":")
        canvas = self.widget(path)
        if canvas is None or canvas.winfo_class() != "Canvas" or not canvas.find_withtag(tag):
            return None
        return self.item_box(canvas, tag)

    def widget(self, path: str) -> Any:
        try:
            return self.root.nametowidget(path)
        except (KeyError, Exception):
            return None

    def truth(self, targets: list[str]) -> dict[str, Any]:
        elements = []
        for w in _walk(self.root):
            if not w.winfo_viewable():
                continue
            cls = w.winfo_class()
            if cls == "Canvas":
                seen: set[str] = set()
                for item in w.find_all():
                    eid = _item_id(w, item)
                    tag = eid.rsplit(":", 1)[1]
                    if tag.startswith("#") or tag in seen or w.itemcget(item, "state") == "hidden":
                        continue
                    seen.add(tag)
                    box = self.item_box(w, tag)
                    if box is None:
                        continue
                    text = w.itemcget(item, "text") if w.type(item) == "text" else ""
                    role: str | None = "text" if w.type(item) == "text" else "button"
                    elements.append(
                        dict(id=eid, label=text or tag, role=role, interactive=role != "text", box=box)
                    )
                continue
            role = ROLES.get(cls)
            box = self.widget_box(w) if role else None
            if box is None:
                continue
            try:
                text = str(w.cget("text"))
            except Exception:
                text = ""
            label = text or str(w).rsplit(".", 1)[-1]
            elements.append(
                dict(id=f"widget:{w}", label=label, role=role, interactive=role != "text", box=box)
            )
        screen = [self.root.winfo_screenwidth(), self.root.winfo_screenheight()]
        return {"elements": elements, "targets": {t: self.target_box(t) for t in targets}, "screen": screen}

    # ----------------------------------------------------------------------------------- hit tests

    def matches(self, target: str, widget: Any, item: int | None) -> bool:
        kind, _, rest = target.partition(":")
        path = str(widget)
        if kind == "widget":
            return rest == "." or path == rest or path.startswith(rest + ".")
        cpath, _, tag = rest.partition(":")
        return path == cpath and item is not None and item in widget.find_withtag(tag)

    def hit(self, x: int, y: int, target: str) -> dict[str, Any]:
        w = self.root.winfo_containing(x, y)
        deadline = time.monotonic() + 1.0
        while w is None and time.monotonic() < deadline:
            # a window of another client may still lie over ours (the fresh instance a verified click
            # started, closed a moment ago; the X server unmaps it later under load): ask again briefly
            time.sleep(0.02)
            self.root.update()
            w = self.root.winfo_containing(x, y)
        if w is None:
            return {"element": None, "hit": False}
        item = None
        if w.winfo_class() == "Canvas":
            cx = w.canvasx(x - w.winfo_rootx())
            cy = w.canvasy(y - w.winfo_rooty())
            ce = float(w.cget("closeenough"))  # Tk picks the item under the pointer with this halo
            under = w.find_overlapping(cx - ce, cy - ce, cx + ce, cy + ce)
            item = under[-1] if under else None
        eid = _item_id(w, item) if item is not None else f"widget:{w}"
        return {"element": eid, "hit": self.matches(target, w, item)}

    def on_press(self, event: Any) -> None:
        w = event.widget
        item = None
        if hasattr(w, "winfo_class") and w.winfo_class() == "Canvas":
            current = w.find_withtag("current")
            item = current[0] if current else None
        eid = _item_id(w, item) if item is not None else f"widget:{w}"
        self.clicks.append(
            {"element": eid, "widget": str(w), "item": item, "x": event.x_root, "y": event.y_root}
        )
        self.click_refs.append((w, item))

    def clicks_reply(self, target: str, wait_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + wait_s
        while not self.clicks and time.monotonic() < deadline and self.alive():
            self.root.update()
            time.sleep(0.005)
        hit = None
        if self.clicks:
            w, item = self.click_refs[0]
            try:
                hit = self.matches(target, w, item)
            except Exception:  # the widget went away (the click closed it): compare paths
                hit = self.matches_path(target, self.clicks[0])
        first = self.clicks[0]["element"] if self.clicks else None
        return {"clicks": [dict(c, item=None) for c in self.clicks], "element": first, "hit": hit}

    def matches_path(self, target: str, click: dict[str, Any]) -> bool:
        kind, _, rest = target.partition(":")
        if kind == "widget":
            p = click["widget"]
            return rest == "." or p == rest or p.startswith(rest + ".")
        return click["element"] == target

    def alive(self) -> bool:
        try:
            return bool(self.root.winfo_exists())
        except Exception:
            return False

    # ----------------------------------------------------------------------------------- showing

    def toplevels(self) -> list[Any]:
        return [w for w in _walk(self.root) if w.winfo_class() == "Toplevel" or w is self.root]

    def park_pointer(self) -> None:
        """Move the X pointer to the screen's bottom-right pixel, so no widget shows its hover state."""
        sw, sh = self.root.winfo_screenwidth(), self.root.winfo_screenheight()
        x, y = sw - 1 - self.root.winfo_rootx(), sh - 1 - self.root.winfo_rooty()
        self.root.event_generate("<Motion>", warp=True, x=x, y=y)

    def settle(self, timeout_s: float = 10.0, draw: bool = True) -> None:
        """Wait until the toplevels are mapped, park the pointer, stack the dialogs; with ``draw`` also let
        the drawing finish (before a grab; a hit test needs only the windows in place)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.root.update()
            tops = [t for t in self.toplevels() if t.wm_state() != "withdrawn"]
            if all(t.winfo_viewable() for t in tops) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.park_pointer()
        for t in self.toplevels()[1:]:  # no window manager: put dialogs above the root, in creation order
            if t.winfo_viewable():
                t.lift()
        self.root.update()
        for _ in range(
            3 if draw else 0
        ):  # drawing happens at idle time: let it run, then let the server catch up
            self.root.update_idletasks()
            self.root.update()
            time.sleep(0.02)

    def show(self) -> None:
        for t in self.mapped:
            t.deiconify()
        self.settle(draw=False)

    def hide(self) -> None:
        for t in self.mapped:
            t.withdraw()
        self.root.update()

    # ----------------------------------------------------------------------------------- serving

    def send(self, obj: dict[str, Any]) -> None:
        self.out.write(json.dumps(obj) + "\n")
        self.out.flush()

    def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        op = req.get("op")
        if op == "clicks":
            return self.clicks_reply(req.get("target", ""), float(req.get("wait_s", 2.0)))
        if not self.alive():
            return {"error": "the application has closed"}
        if op == "truth":
            return self.truth(list(req.get("targets", [])))
        if op == "hit":
            return self.hit(int(req["x"]), int(req["y"]), req.get("target", ""))
        if op == "show":
            self.show()
            return {"ok": True}
        if op == "hide":
            self.hide()
            return {"ok": True}
        return {"error": f"unknown op {op!r}"}

    def on_readable(self, *_: Any) -> None:
        chunk = os.read(self.cmd_fd, 65536)
        if not chunk:  # the harness is gone
            end_tree()
            os._exit(0)
        self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            req = json.loads(line)
            if req.get("op") == "quit":
                self.send({"ok": True})
                end_tree()
                os._exit(0)
            try:
                reply = self.handle(req)
            except Exception as e:
                reply = {"error": f"{type(e).__name__}: {e}"}
            self.send(reply)

    def serve(self, root: Any, real_mainloop: Any, n: int = 0) -> None:
        import tkinter

        if self.served:
            real_mainloop(root, n)
            return
        self.served = True
        self.root = root
        self.settle()
        self.mapped = [t for t in self.toplevels() if t.winfo_viewable()]
        root.bind_class(PROBE_TAG, "<ButtonPress>", self.on_press)
        for w in _walk(root):
            w.bindtags((PROBE_TAG, *w.bindtags()))
        root.tk.createfilehandler(self.cmd_fd, tkinter.READABLE, self.on_readable)
        self.send({"ready": True, "screen": [root.winfo_screenwidth(), root.winfo_screenheight()]})
        real_mainloop(root, n)

    def after_close(self) -> None:
        """The application closed its main loop: answer from what was recorded until the pipe closes."""
        while True:
            chunk = os.read(self.cmd_fd, 65536)
            if not chunk:
                return
            self._buf += chunk
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                req = json.loads(line)
                if req.get("op") == "quit":
                    self.send({"ok": True})
                    return
                if req.get("op") == "clicks":
                    first = self.clicks[0] if self.clicks else None
                    hit = self.matches_path(req.get("target", ""), first) if first else None
                    clicks = [dict(c, item=None) for c in self.clicks]
                    self.send({"clicks": clicks, "element": first and first["element"], "hit": hit})
                else:
                    self.send({"error": "the application has closed"})


# ------------------------------------------------------------------------------------ the process tree

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def descendants(root: int) -> list[int]:
    """The live processes below ``root`` (parent links read from ``/proc``; zombies left out), whatever
    their environment or session."""
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
    """Kill everything below this process and reap it. As the child subreaper (:func:`adopt_orphans`)
    every descendant stays below it, also one that cleared its environment or started a session of its
    own and whose parent exited; the loop repeats as the killed processes' orphans come back to it."""
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


def adopt_orphans() -> None:
    """Become the child subreaper of everything the application starts, and have ``SIGTERM`` (instead of
    the harness's ``SIGKILL``) when the harness dies, so the whole tree is ended on every way out."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)

    def bye(*_: Any) -> None:
        end_tree()
        os._exit(0)

    signal.signal(signal.SIGTERM, bye)
    signal.signal(signal.SIGHUP, bye)
    atexit.register(end_tree)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: runner.py SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    adopt_orphans()
    script = os.path.abspath(argv[0])
    cmd_fd = os.dup(0)
    out = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # the script's prints go to stderr, never into the replies
    server = Server(cmd_fd, out)
    try:
        import tkinter
    except ImportError as e:
        server.send({"error": f"no Tk for Python ({e}): install the Debian package python3-tk"})
        return 1
    real = tkinter.Misc.mainloop
    roots: list[Any] = []
    real_init = tkinter.Tk.__init__

    def init(self: Any, *a: Any, **k: Any) -> None:
        real_init(self, *a, **k)
        roots.append(self)

    def hooked(self: Any, n: int = 0) -> None:
        server.serve(self._root(), real, n)

    def hooked_module(n: int = 0) -> None:
        # tkinter's own default-root lookup (private, so typeshed does not declare it)
        root = roots[0] if roots else tkinter._get_default_root("run the main loop")  # type: ignore[attr-defined]
        server.serve(root, real, n)

    # the harness hooks Tk on purpose: every root is remembered, every main loop serves the pipe
    tkinter.Tk.__init__ = init  # type: ignore[method-assign]
    tkinter.Misc.mainloop = hooked  # type: ignore[method-assign]
    tkinter.mainloop = hooked_module
    sys.argv = [script, *argv[1:]]
    sys.path.insert(0, os.path.dirname(script))
    try:
        runpy.run_path(script, run_name="__main__")
        if not server.served:
            if not roots:
                server.send({"error": f"{os.path.basename(script)} created no Tk root window"})
                return 1
            server.serve(roots[0], real)
    except SystemExit as e:
        if not server.served:
            server.send({"error": f"{os.path.basename(script)} exited ({e.code}) before its main loop"})
            return 1
    except BaseException as e:
        if not server.served:
            last = traceback.format_exception_only(type(e), e)[-1].strip()
            server.send({"error": f"{os.path.basename(script)} failed: {last}"[:400]})
            return 1
        raise
    server.after_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
