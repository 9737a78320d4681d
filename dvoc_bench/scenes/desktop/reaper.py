"""The keeper of one desktop child's process tree: ``python reaper.py WATCH_FD COMMAND...``.

Standalone (standard library only; run with ``-I -S``). The harness starts every scene runner under one of
these (:func:`dvoc_bench.scenes.desktop.display.spawn` with ``reaped=True``). The reaper

1. makes itself the *child subreaper* of everything below it, so an orphan anywhere in the tree (a daemon
   that forked and called ``setsid``, a child whose parent died) comes back to it, never to init;
2. starts ``COMMAND`` with its own standard streams (the runner's pipe to the harness passes through) and
   lets go of them;
3. ends the whole tree (:func:`end_tree`: every process below it by the parent links in ``/proc``, killed
   until none is left) when the harness is gone — ``WATCH_FD`` is the read end of a pipe only the harness
   holds the other end of, so it reads end-of-file when the harness dies, also by ``kill -9`` — when it
   is asked to (``SIGTERM``: the command gets ``SIGTERM`` and :data:`GRACE_S` to clean up first), or when
   the command exits, however it exits (a Tk runner whose X server vanished dies inside Xlib, before its
   own clean-up could run: what it had started is still ended here). It then exits with the command's code.

It uses no display and no bus, so nothing the application depends on can take it down first.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 3.0
"""How long the command has to end its own tree after ``SIGTERM`` before everything is killed."""
POLL_S = 0.2
"""How often the command's exit is checked while the pipe is quiet."""


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
    """Kill everything below this process and reap it, until nothing is left (orphans of the killed come
    back to this subreaper and are killed in the next round)."""
    for _ in range(500):
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


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        sys.stderr.write("usage: reaper.py WATCH_FD COMMAND...\n")
        return 2
    watch = int(argv[0])
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)  # a second way to hear of the harness's end
    asked: list[int] = []
    signal.signal(signal.SIGTERM, lambda *_: asked.append(1))
    signal.signal(signal.SIGHUP, lambda *_: asked.append(1))
    try:
        child = subprocess.Popen(argv[1:])
    except OSError as e:
        sys.stderr.write(f"reaper: cannot start {argv[1]!r}: {e}\n")
        return 127
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the command holds the harness's pipes now: their ends close when it exits
    os.dup2(null, 1)
    while child.poll() is None and not asked:
        try:
            ready = select.select([watch], [], [], POLL_S)[0]
            if ready and not os.read(watch, 64):
                break  # the harness is gone
        except InterruptedError:
            continue
        except OSError:
            break
    if child.poll() is None:
        with contextlib.suppress(OSError):
            child.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(GRACE_S)
    end_tree()
    code = child.poll()
    return code if code is not None and code >= 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
