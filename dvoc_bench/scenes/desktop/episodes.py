"""A real GTK program driven as an episode (docs/episodes.md, "Desktop episodes"): one session per episode
(its own Xvfb, private D-Bus and AT-SPI bus, the program), real input through XTest (``xdotool``: click,
type, key, drag as press + moves + release), the screen grabbed again after each step, and the program's
state read through AT-SPI (:class:`View`: every showing accessible with its states, value and text, the
windows, whether the program still runs and what it printed).

Nothing here decides what a step is or whether a task is done: the task's planner and verdict
(:mod:`dvoc_bench.scenes.desktop.gtk_tasks`) read the :class:`View`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.scenes.desktop.apps import AppSession, AppTask
from dvoc_bench.scenes.desktop.source import DesktopOptions

MAX_STDOUT = 4000
"""Characters of the program's standard output a view keeps."""
SETTLE_S = 0.25
"""Seconds after an action before the program is read (its reaction to XTest input is asynchronous)."""
EXIT_WAIT_S = 3.0
"""Seconds a read waits for a program that is closing (its windows gone) to exit."""
DRAG_MOVES = 12
"""Pointer moves between a drag's press and its release (GTK follows moves made without ``--sync``)."""


@dataclass(frozen=True)
class Widget:
    """One showing accessible as an episode reads it."""

    id: str
    """``ROLE:NAME`` or ``ROLE:NAME#N`` (:mod:`dvoc_bench.scenes.desktop.atspi_runner`)."""
    role: str
    name: str
    box: tuple[int, int, int, int]
    """Screen pixels, inclusive, clipped to the visible region."""
    states: frozenset[str] = frozenset()
    """Of focused, pressed, checked, selected, expanded, armed, active."""
    value: tuple[float, float, float] | None = None
    """``(current, minimum, maximum)`` of AT-SPI's ``Value`` (sliders, spin buttons)."""
    text: str | None = None
    """AT-SPI's ``Text`` of an entry."""


@dataclass(frozen=True)
class View:
    """The program's state after a step, read through AT-SPI (and its standard output)."""

    widgets: tuple[Widget, ...]
    windows: tuple[str, ...]
    """``role:name`` of every showing window."""
    alive: bool
    exit_code: int | None = None
    stdout: str = ""
    """What the program printed so far (a zenity dialog's answer)."""
    by_id: dict[str, Widget] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.by_id.update({w.id: w for w in self.widgets})

    def get(self, wid: str) -> Widget | None:
        return self.by_id.get(wid)

    def find(self, role: str, name: str | None = None) -> list[Widget]:
        """The widgets of ``role`` (named ``name`` when given), in reading order."""
        out = [w for w in self.widgets if w.role == role and (name is None or w.name == name)]
        return sorted(out, key=lambda w: (w.box[1], w.box[0]))

    def state_key(self) -> tuple[Any, ...]:
        """What a step can change: states, values, texts, windows, the program's life."""
        return (
            tuple((w.id, tuple(sorted(w.states)), w.value, w.text) for w in self.widgets),
            self.windows,
            self.alive,
            self.stdout,
        )


def view_from(reply: dict[str, Any], stdout: str = "") -> View:
    widgets = tuple(
        Widget(
            id=e["id"],
            role=e["role"],
            name=e.get("name", ""),
            box=tuple(e["box"]),
            states=frozenset(e.get("states") or ()),
            value=tuple(e["value"]) if e.get("value") is not None else None,
            text=e.get("text"),
        )
        for e in reply.get("elements", [])
    )
    return View(
        widgets, tuple(reply.get("windows", [])), bool(reply.get("alive")), reply.get("exit_code"), stdout
    )


class ProgramGone(RuntimeError):
    """The program's session (its runner or its display) ended under the episode."""


class DesktopPage:
    """One episode's program on its own display (see the module docstring); :meth:`close` ends it all."""

    def __init__(self, task: AppTask, options: DesktopOptions) -> None:
        self.task = task
        self.session = AppSession(task, options, stdout=True)
        size = task.size or options.size
        self.size = Size(size.width, size.height)
        """The screen (every screenshot's size)."""

    def stdout(self) -> str:
        path = self.session.stdout_path
        try:
            return path.read_text(errors="replace")[:MAX_STDOUT] if path is not None else ""
        except OSError:
            return ""

    def read(self, settle_s: float = SETTLE_S) -> View:
        """The program's state now (after ``settle_s``); a program closing its last window is waited for
        (up to :data:`EXIT_WAIT_S`) so that its exit code and output are in the view."""
        if settle_s:
            time.sleep(settle_s)
        if not self.session.alive:
            raise ProgramGone(f"{self.task.id}: the program's session ended (its display or runner died)")
        view = view_from(self.session.request({"op": "inspect"}), self.stdout())
        deadline = time.monotonic() + EXIT_WAIT_S
        while view.alive and not view.windows and time.monotonic() < deadline:
            time.sleep(0.1)
            view = view_from(self.session.request({"op": "inspect"}), self.stdout())
        return view

    def capture(self) -> Any:
        """The whole screen (``HxWx3`` uint8)."""
        return self.session.display.grab()

    def hit(self, point: Point, target: str) -> tuple[str | None, bool]:
        """AT-SPI's hit test at ``point``: the accessible under it, and whether it is ``target`` or in it."""
        x, y = math.floor(point.x), math.floor(point.y)
        reply = self.session.request({"op": "hit", "x": x, "y": y, "target": target})
        return reply.get("element"), bool(reply.get("hit"))

    def click(self, point: Point) -> None:
        x, y = math.floor(point.x), math.floor(point.y)
        self.session.display.xdo(["mousemove", "--sync", str(x), str(y), "click", "1"])

    def type(self, text: str) -> None:
        """Type ``text`` into whatever has the keyboard focus."""
        self.session.display.xdo(["type", "--delay", "12", "--", text])

    def key(self, names: str, times: int = 1) -> None:
        """Press the keys ``names`` (X keysyms separated by spaces: ``Right``, ``ctrl+a BackSpace``) in turn,
        ``times`` times."""
        self.session.display.xdo(["key", "--delay", "20", *(names.split() * max(times, 1))])

    def drag(self, start: Point, end: Point) -> None:
        """Press button 1 at ``start``, move in :data:`DRAG_MOVES` steps to ``end``, release there."""
        x0, y0, x1, y1 = (math.floor(v) for v in (start.x, start.y, end.x, end.y))
        args = ["mousemove", "--sync", str(x0), str(y0), "mousedown", "1", "sleep", "0.1"]
        for i in range(1, DRAG_MOVES + 1):
            x, y = x0 + (x1 - x0) * i // DRAG_MOVES, y0 + (y1 - y0) * i // DRAG_MOVES
            args += ["mousemove", str(x), str(y), "sleep", "0.02"]
        args += ["sleep", "0.1", "mouseup", "1"]
        self.session.display.xdo(args)

    def close(self) -> None:
        self.session.close()
