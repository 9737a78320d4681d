"""The virtual display of a run: Xvfb, pinned fonts, screen grab, real pointer clicks.

One :class:`XDisplay` per scene source (so one per run): Xvfb picks a free display number itself and
writes it to a pipe (``-displayfd``: no guessing, no races between parallel runs); the root window has the
fixed size ``desktop.size`` and no window manager runs, so a Tk toplevel lands exactly where it asks and
has no decorations. :meth:`XDisplay.close` stops it (also registered for interpreter exit).

Children die with the harness. ``kill -9`` of the harness sends its children nothing, so every child
(Xvfb, each Tk runner, xdotool) is started with ``PR_SET_PDEATHSIG = SIGKILL``. That signal fires when the
*thread* that forked the child ends, not the process, so all children are forked from one dedicated thread
that lives as long as the process (:func:`spawn`); a child whose parent already died before the ``prctl``
took effect exits at once. The Tk runner also exits when its command pipe closes.

Fonts: a ``FONTCONFIG_FILE`` that lists only the folder of the project's font (matplotlib's DejaVu files,
:func:`dvoc_bench.draw.render.dejavu_path`), so Tk's Xft renderer finds the same fonts on every machine and no
system font can take part in the layout.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Size
from dvoc_bench.scenes.desktop.runner import descendants

PR_SET_PDEATHSIG = 1
"""``prctl`` option: the signal a child receives when the thread that forked it ends (linux/prctl.h)."""

XVFB_PACKAGE = "xvfb"
XDOTOOL_PACKAGE = "xdotool"
TK_PACKAGE = "python3-tk"


class DesktopUnavailable(RuntimeError):
    """Something desktop scenes need is missing; the message is one line naming the Debian package."""


def missing(what: str, package: str) -> DesktopUnavailable:
    return DesktopUnavailable(
        f"desktop scenes need {what}: install the Debian package {package} (apt-get install {package})"
    )


def check_tk() -> None:
    """Raise :class:`DesktopUnavailable` naming ``python3-tk`` when this Python has no Tk."""
    try:
        import _tkinter  # noqa: F401
    except ImportError:
        raise missing("Tk for Python (tkinter)", TK_PACKAGE) from None


# ------------------------------------------------------------------------------------ child processes

_prctl: Any = None
with contextlib.suppress(OSError, AttributeError):  # non-Linux: no PDEATHSIG (the pipe watchdog stays)
    _prctl = ctypes.CDLL(None, use_errno=True).prctl


def _die_with_parent(parent: int) -> Callable[[], None]:
    """``preexec_fn`` of every child: SIGKILL when the forking thread ends; exit if the parent is gone."""

    def setup() -> None:
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the harness died between fork and prctl
            os._exit(1)

    return setup


class _Spawner:
    """A thread that lives as long as the process and forks every child (see the module docstring)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name="dvoc-desktop-spawner", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            fn, fut = self._jobs.get()
            try:
                fut.set_result(fn())
            except BaseException as e:
                fut.set_exception(e)

    def call(self, fn: Callable[[], Any]) -> Any:
        fut: Future[Any] = Future()
        self._jobs.put((fn, fut))
        return fut.result()


_spawner: _Spawner | None = None
_spawner_lock = threading.Lock()


TREE_ENV = "DVOC_PROCESS_TREE"
"""Environment variable naming the process tree a spawned child belongs to: every descendant inherits it
(also one that starts a session of its own or daemonises), so :func:`stop` finds and ends them all."""

_TREES: dict[int, str] = {}
"""Child pid -> its tree token."""
REAPER = Path(__file__).resolve().with_name("reaper.py")
"""The keeper of a reaped child's tree (:mod:`dvoc_bench.scenes.desktop.reaper`)."""
_WATCH: dict[int, int] = {}
"""Reaper pid -> the write end of its watch pipe (held here, never written: it closes when we die)."""


def spawn(argv: Sequence[str], reaped: bool = False, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **kwargs)`` forked from the spawner thread, dying with this process; the
    child and everything it starts carry a tree token (:data:`TREE_ENV`) that :func:`stop` ends them by.
    ``reaped``: the child runs under a reaper (:mod:`~dvoc_bench.scenes.desktop.reaper`, the returned
    process) that ends its whole tree when this process dies (its watch pipe closes, also on ``kill -9``),
    when it is stopped, or when the child exits however it exits."""
    global _spawner
    with _spawner_lock:
        if _spawner is None or not _spawner._thread.is_alive():
            _spawner = _Spawner()
        spawner = _spawner
    pre = _die_with_parent(os.getpid())
    token = uuid.uuid4().hex
    kwargs["env"] = {**(kwargs.get("env") or os.environ), TREE_ENV: token}
    watch = os.pipe() if reaped else None
    if watch is not None:
        argv = [sys.executable, "-I", "-S", str(REAPER), str(watch[0]), *argv]
        kwargs["pass_fds"] = (*kwargs.get("pass_fds", ()), watch[0])
    try:
        proc = spawner.call(lambda: subprocess.Popen(list(argv), preexec_fn=pre, **kwargs))  # noqa: PLW1509
    except BaseException:
        if watch is not None:
            os.close(watch[1])
        raise
    finally:
        if watch is not None:
            os.close(watch[0])
    if watch is not None:
        _WATCH[proc.pid] = watch[1]
    _TREES[proc.pid] = token
    return proc


def tree_pids(token: str) -> list[int]:
    """The live processes (not this one) whose environment carries the tree ``token`` (Linux ``/proc``;
    a process that cleared its environment is not found)."""
    needle = f"{TREE_ENV}={token}".encode()
    out = []
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                out.append(int(entry.name))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return out


def stop(proc: subprocess.Popen[bytes], grace_s: float = 2.0) -> None:
    """Terminate ``proc`` (SIGTERM, then SIGKILL after ``grace_s``), reap it, and kill what it started:
    every process below it when it was asked to stop (parent links in ``/proc``, whatever their
    environment; the runners also end their own trees as child subreapers) and every process carrying its
    tree token (:func:`tree_pids`: one that left the tree while its environment was kept); idempotent."""
    below = descendants(proc.pid) if proc.poll() is None else []
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                proc.kill()
            proc.wait(timeout=grace_s)
    watch = _WATCH.pop(proc.pid, None)
    if watch is not None:  # a reaper still running reads end-of-file: it ends its tree
        with contextlib.suppress(OSError):
            os.close(watch)
    token = _TREES.pop(proc.pid, None)
    for pid in [*below, *(tree_pids(token) if token else [])]:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


TMP_PREFIX = "dvoc-desktop-"
"""Prefix of a display's temporary folder, followed by the pid of the process that made it."""
TMP_PREFIXES = (TMP_PREFIX, "dvoc-atspi-")
"""Swept prefixes: the displays' folders and the AT-SPI runners' (``atspi_runner``, its private ``HOME``)."""


def remove_stale_folders(root: Path | None = None) -> list[Path]:
    """Remove the temporary folders of displays and AT-SPI runners whose process is gone (a harness killed
    with ``kill -9`` cannot clean up after itself); returns what was removed."""
    removed = []
    folders = [f for prefix in TMP_PREFIXES for f in Path(root or tempfile.gettempdir()).glob(f"{prefix}*-*")]
    for folder in folders:
        prefix = next(p for p in TMP_PREFIXES if folder.name.startswith(p))
        pid = folder.name[len(prefix) :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or Path(f"/proc/{pid}").exists():
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


# ------------------------------------------------------------------------------------------- fonts


def font_folder() -> Path:
    """The folder of the project's font files (matplotlib's DejaVu family)."""
    from dvoc_bench.draw.render import dejavu_path

    return Path(dejavu_path()).parent


def write_fontconfig(where: Path) -> Path:
    """A ``fonts.conf`` in ``where`` naming only the project's font folder (and a private cache)."""
    conf = where / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f"  <dir>{font_folder()}</dir>\n  <cachedir>{where / 'fontcache'}</cachedir>\n"
        "  <config><rescan><int>0</int></rescan></config>\n</fontconfig>\n",
        encoding="utf-8",
    )
    return conf


def foreign_qt(key: str, value: str) -> bool:
    """True for a ``QT_*`` variable that points into a Python package's own Qt: opencv-python sets
    ``QT_QPA_PLATFORM_PLUGIN_PATH`` and ``QT_QPA_FONTDIR`` to ``.../site-packages/cv2/qt/...`` when it is
    imported (the OCR and detector code import it), and a system Qt program started with them aborts at
    start ("Could not load the Qt platform plugin xcb ... even though it was found")."""
    parts = value.replace("\\", "/").split("/")
    return key.startswith("QT_") and "cv2" in parts and bool({"site-packages", "dist-packages"} & set(parts))


# ----------------------------------------------------------------------------------------- display


class XDisplay:
    """One Xvfb server (started by :meth:`start`, stopped by :meth:`close`). Thread-safe."""

    def __init__(self, size: Size | None = None, timeout_s: float = 20.0) -> None:
        self.size = size or Size(1280, 800)
        """The root window (screen) size, pixels."""
        self.timeout_s = timeout_s
        """Bound on the server start and each click."""
        self.name: str | None = None
        """``:N`` while running."""
        self.proc: subprocess.Popen[bytes] | None = None
        """The Xvfb process while running."""
        self.starts = 0
        """How many times a server was started by this object."""
        self.tmp: Path | None = None
        """Private folder (fontconfig file and cache) while running."""
        self._lock = threading.RLock()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> str:
        """Start Xvfb if it is not running; return the display name ``:N``."""
        with self._lock:
            if self.running:
                assert self.name is not None
                return self.name
            self.close()
            xvfb = shutil.which("Xvfb")
            if xvfb is None:
                raise missing("Xvfb", XVFB_PACKAGE)
            check_tk()
            remove_stale_folders()
            self.tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
            write_fontconfig(self.tmp)
            r, w = os.pipe()
            w_, h_ = self.size.width, self.size.height
            argv = [xvfb, "-displayfd", str(w), "-screen", "0", f"{w_}x{h_}x24", "-dpi", "96"]
            argv += ["-nolisten", "tcp", "-noreset", "-nocursor"]
            log_path = self.tmp / "xvfb.log"
            try:
                with open(log_path, "wb") as log_file:
                    self.proc = spawn(
                        argv, pass_fds=(w,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        stderr=log_file,
                    )  # fmt: skip
            finally:
                os.close(w)
            try:
                number = _read_display(r, self.proc, self.timeout_s, log_path)
            finally:
                os.close(r)
            self.name = f":{number}"
            self.starts += 1
            atexit.register(self.close)
            return self.name

    def env(self) -> dict[str, str]:
        """The environment of a client of this display: ``DISPLAY`` and the pinned ``FONTCONFIG_FILE``;
        without the Qt paths of a bundled OpenCV (:func:`foreign_qt`)."""
        name = self.start()
        assert self.tmp is not None
        env = {
            k: v for k, v in os.environ.items()
            if k not in ("XAUTHORITY", "WAYLAND_DISPLAY") and not foreign_qt(k, v)
        }  # fmt: skip
        env.update(DISPLAY=name, FONTCONFIG_FILE=str(self.tmp / "fonts.conf"), LC_ALL="C.UTF-8")
        return env

    def grab(self) -> np.ndarray:
        """The whole screen as ``HxWx3`` uint8 (an X11 ``GetImage`` of the root window)."""
        from PIL import ImageGrab

        name = self.start()
        img = ImageGrab.grab(xdisplay=name).convert("RGB")
        return np.asarray(img, dtype=np.uint8)

    def click(self, x: int, y: int, action: str = "click") -> None:
        """Move the X pointer to pixel ``(x, y)`` and click button 1 there (XTest, via ``xdotool``);
        ``action="mousedown"`` only presses it, ``"mouseup"`` releases it."""
        argv = ["mousemove", "--sync", str(x), str(y), action, "1"]
        if action == "mouseup":  # the pointer is there already (``--sync`` would wait for a move)
            argv = ["mouseup", "1"]
        self.xdo(argv, "desktop.verify_click")

    def xdo(self, args: Sequence[str], needed_for: str = "desktop episodes") -> None:
        """Run ``xdotool ARGS`` on this display (real input through XTest: ``mousemove``, ``mousedown``,
        ``type``, ``key``, ``sleep`` ...); a failure or a hang raises ``RuntimeError`` in one line."""
        tool = shutil.which("xdotool")
        if tool is None:
            raise missing(f"xdotool for {needed_for}", XDOTOOL_PACKAGE)
        proc = spawn([tool, *args], env=self.env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            _, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            stop(proc)
            raise RuntimeError(f"xdotool did not return within {self.timeout_s:g} s") from None
        if proc.returncode != 0:
            raise RuntimeError(f"xdotool failed: {err.decode(errors='replace').strip()[:200]}")

    def close(self) -> None:
        """Stop the server and remove its folder (idempotent; a later :meth:`start` starts a new one)."""
        with self._lock:
            proc, self.proc, self.name = self.proc, None, None
            if proc is not None:
                stop(proc)
            if self.tmp is not None:
                shutil.rmtree(self.tmp, ignore_errors=True)
                self.tmp = None
        atexit.unregister(self.close)


def _read_display(fd: int, proc: subprocess.Popen[bytes], timeout_s: float, log_path: Path) -> int:
    """The display number Xvfb writes to its ``-displayfd`` pipe once it accepts connections."""
    data = b""
    deadline = time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        ready = select.select([fd], [], [], max(left, 0))[0] if left > 0 else []
        chunk = os.read(fd, 64) if ready else b""
        if not chunk:
            if not ready or proc.poll() is None:
                stop(proc)
            err = log_path.read_text(errors="replace") if log_path.is_file() else ""
            last = err.strip().splitlines()[-1:] or ["no output"]
            why = "timed out" if not ready else f"exited with code {proc.returncode}"
            raise RuntimeError(f"Xvfb did not start ({why}): {last[0][:200]}")
        data += chunk
    return int(data.strip())
