"""The desktop episode tasks: Debian GTK programs (zenity, gtk3-widget-factory), each with its oracle
planner and its verdict (docs/episodes.md, "Desktop episodes").

A task is seeded: :meth:`GtkTask.setup` makes the program's command line and the goal from the episode's
seed (which word to type, which item to choose, which value to set). The **planner** reads the program's
state through AT-SPI (:class:`~dvoc_bench.scenes.desktop.episodes.View`, never a grounding answer) and
gives the next step: its action, its instruction in words and its target (an accessible's id, whose
AT-SPI box is the step's truth, or a box computed from one: a slider's knob). It is asked again after
every step on the state the real input left, so a missed click is planned again. The **verdict** is the
program's own: what a zenity dialog printed on its standard output when it closed (its answer), or the
state gtk3-widget-factory reports through AT-SPI (a box checked, an entry's text, a spin button's value, a
dialog showing), compared with the goal.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.scenes.desktop.episodes import View, Widget

Action = Literal["click", "type", "key", "drag"]
"""``click`` a grounded point; ``type`` text into the focus; ``key`` press a key (``times`` times);
``drag`` press at one grounded point, move to a second, release."""
GROUNDED = frozenset({"click", "drag"})

Expect = Callable[[View, View], bool]
"""Whether a step's intended state change happened: ``expect(before, after)``."""


@dataclass(frozen=True)
class Drop:
    """Where a drag's second point must land, given where its first point grabbed."""

    instruction: str
    box: Callable[[View, Point], Box]
    """The drop region (screen pixels) from the state and the grab point."""


@dataclass(frozen=True)
class Step:
    """One step of a desktop oracle plan."""

    action: Action
    instruction: str
    target: str | None = None
    """The target accessible (``ROLE:NAME#N``); ``None`` for ``type`` and ``key``."""
    box: Box | None = None
    """The target's box when it is not the accessible's own (a slider's knob); else the accessible's."""
    text: str | None = None
    """``type``: the text; ``key``: the keys (X keysyms, ``Right``, ``ctrl+a BackSpace``: pressed in turn)."""
    times: int = 1
    drop: Drop | None = None
    expect: Expect | None = None
    """The intended state change (``None``: anything a step can change changed)."""


@dataclass(frozen=True)
class Setup:
    """One seeded episode of a task: the command line, what to wait for, the goal."""

    command: tuple[str, ...]
    query: str
    """The task in words (recorded as the episode's ``query``)."""
    goal: Any
    wait_for: str | None = None
    size: Size | None = None


Planner = Callable[[View, int, Any], Step | None]
Verdict = Callable[[View, Any], tuple[bool, str]]
"""``(success, why)`` from the program's state at the end (and the goal)."""


@dataclass(frozen=True)
class GtkTask:
    """A desktop episode task (see the module docstring)."""

    name: str
    family: str
    setup: Callable[[int], Setup]
    plan: Planner
    verdict: Verdict
    exits: bool
    """The program ends the task by exiting (a zenity dialog's OK): its exit is the verdict's moment. A
    program that is not expected to exit and does fails its episode (``error_class=scene``)."""


TASKS: dict[str, GtkTask] = {}


def task(name: str, family: str, setup: Callable[[int], Setup], verdict: Verdict, *, exits: bool) -> Callable:
    def register(plan: Planner) -> Planner:
        TASKS[name] = GtkTask(name, family, setup, plan, verdict, exits)
        return plan

    return register


# ----------------------------------------------------------------------------------------- helpers

WORDS = (
    "amber",
    "basil",
    "cedar",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kestrel",
    "lagoon",
    "maple",
    "nectar",
    "orchid",
    "pepper",
    "quartz",
    "raven",
    "saffron",
    "tundra",
)
FRUITS = ("Apple", "Banana", "Cherry", "Mango", "Peach")
CITIES = ("Lisbon", "Oslo", "Quito", "Nairobi", "Hanoi")
SIZES = ("Small", "Medium", "Large", "Huge")


def box_of(w: Widget) -> Box:
    return Box(*(float(v) for v in w.box))


def centre(w: Widget) -> Point:
    return box_of(w).centre


def one(view: View, role: str, name: str | None = None, last: bool = False) -> Widget:
    """The (first, or ``last``) widget of ``role`` named ``name``; ``LookupError`` naming it."""
    found = view.find(role, name)
    if not found:
        raise LookupError(f"no {role}:{name or ''} showing")
    return found[-1] if last else found[0]


def clicked_ok(view: View) -> Step:
    ok = one(view, "push button", "OK")
    return Step("click", "Click OK to confirm", ok.id, expect=lambda b, a: not a.alive or not a.windows)


def answer(view: View) -> str:
    """What the program printed (its last line), when it exited with code 0."""
    lines = view.stdout.strip().splitlines()
    return lines[-1] if lines else ""


def printed(expected: Callable[[Any], str]) -> Verdict:
    """The verdict of a zenity dialog: exited with 0 and printed ``expected(goal)``."""

    def verdict(view: View, goal: Any) -> tuple[bool, str]:
        if view.alive:
            return False, "the dialog is still open"
        if view.exit_code != 0:
            return False, f"the dialog exited with code {view.exit_code} (cancelled)"
        got, want = answer(view), expected(goal)
        return got == want, f"it printed {got!r}" + ("" if got == want else f", not {want!r}")

    return verdict


def states_changed(wid: str, state: str, on: bool = True) -> Expect:
    def expect(before: View, after: View) -> bool:
        w = after.get(wid)
        return w is not None and (state in w.states) == on

    return expect


# ------------------------------------------------------------------------------ zenity: a form typed


def _form_setup(seed: int) -> Setup:
    r = random.Random(seed)
    name, word = r.choice(WORDS).capitalize(), r.choice(WORDS)
    goal = (name, f"{word}@example.org")
    cmd = (
        "zenity",
        "--forms",
        "--title=New contact",
        "--text=New contact",
        "--add-entry=Name",
        "--add-entry=Email",
    )
    return Setup(cmd, f"Enter the name {goal[0]} and the email {goal[1]}, then OK", goal, "push button:OK")


def fill(view: View, field: Widget, want: str, what: str) -> Step:
    """The next step filling an entry with ``want``: focus it, clear it, type."""
    if "focused" not in field.states:
        return Step(
            "click", f"Click into the {what} field", field.id, expect=states_changed(field.id, "focused")
        )
    if field.text:
        return Step(
            "key", f"Clear the {what} field", text="ctrl+a BackSpace",
            expect=lambda b, a: not (a.get(field.id) or field).text,
        )  # fmt: skip
    return Step(
        "type", f"Type {want!r}", text=want, expect=lambda b, a: (a.get(field.id) or field).text == want
    )


@task("zenity-form", "type", _form_setup, printed(lambda g: f"{g[0]}|{g[1]}"), exits=True)
def _form(view: View, k: int, goal: tuple[str, str]) -> Step | None:
    if not view.alive:
        return None
    fields = view.find("text")
    if len(fields) < 2:
        raise LookupError(f"the form shows {len(fields)} entries, not 2")
    for field, want, what in ((fields[0], goal[0], "Name"), (fields[1], goal[1], "Email")):
        if field.text != want:
            return fill(view, field, want, what)
    return clicked_ok(view)


# --------------------------------------------------------------------------- zenity: a combo chosen


def _combo_setup(seed: int) -> Setup:
    goal = random.Random(seed).choice(SIZES[1:])  # Small is shown first: choosing it would change nothing
    cmd = (
        "zenity",
        "--forms",
        "--title=Order",
        "--text=Order",
        "--add-combo=Size",
        f"--combo-values={'|'.join(SIZES)}",
    )
    return Setup(cmd, f"Choose the size {goal}, then OK", goal, "push button:OK")


@task("zenity-combo", "combo", _combo_setup, printed(lambda g: g), exits=True)
def _combo(view: View, k: int, goal: str) -> Step | None:
    if not view.alive:
        return None
    popup = [w for w in view.find("menu item", goal)]
    if any(w.startswith("window:") for w in view.windows) and popup:
        item = popup[-1]  # the copy in the pop-up window (the combo's own tree lists it too)
        return Step(
            "click",
            f"Choose {goal} in the open list",
            item.id,
            expect=lambda b, a: bool(a.find("combo box", goal)),
        )
    combo = one(view, "combo box")
    if combo.name != goal:
        return Step(
            "click",
            "Open the Size drop-down",
            combo.id,
            expect=lambda b, a: any(w.startswith("window:") for w in a.windows),
        )
    return clicked_ok(view)


# ----------------------------------------------------------------------- zenity: checkboxes ticked


def _checklist_setup(seed: int) -> Setup:
    goal = tuple(sorted(random.Random(seed).sample(FRUITS, 2), key=FRUITS.index))
    cmd = (
        "zenity",
        "--list",
        "--checklist",
        "--title=Fruit",
        "--height=320",
        "--column=Pick",
        "--column=Fruit",
        *(v for f in FRUITS for v in ("FALSE", f)),
    )
    return Setup(cmd, f"Tick {goal[0]} and {goal[1]}, then OK", goal, "push button:OK")


def _tick_of(view: View, label: Widget) -> Widget:
    """The check cell in the row of ``label`` (the cell to its left on the same row)."""
    row = [w for w in view.find("table cell") if w.box[1] == label.box[1] and w.box[2] < label.box[0]]
    if not row:
        raise LookupError(f"no check cell in the row of {label.id}")
    return row[-1]


@task("zenity-checklist", "checkbox", _checklist_setup, printed(lambda g: "|".join(g)), exits=True)
def _checklist(view: View, k: int, goal: tuple[str, ...]) -> Step | None:
    if not view.alive:
        return None
    for fruit in FRUITS:
        tick = _tick_of(view, one(view, "table cell", fruit))
        if ("checked" in tick.states) != (fruit in goal):
            verb = "Tick" if fruit in goal else "Untick"
            return Step(
                "click",
                f"{verb} the checkbox of {fruit}",
                tick.id,
                expect=states_changed(tick.id, "checked", fruit in goal),
            )
    return clicked_ok(view)


# -------------------------------------------------------------------------- zenity: a row selected


def _list_setup(seed: int) -> Setup:
    goal = random.Random(seed).choice(CITIES)
    cmd = ("zenity", "--list", "--title=Trip", "--height=320", "--column=City", *CITIES)
    return Setup(cmd, f"Pick {goal} from the list, then OK", goal, "push button:OK")


@task("zenity-list", "select", _list_setup, printed(lambda g: g), exits=True)
def _list(view: View, k: int, goal: str) -> Step | None:
    if not view.alive:
        return None
    row = one(view, "table cell", goal)
    if "selected" not in row.states:
        return Step("click", f"Select {goal} in the list", row.id, expect=states_changed(row.id, "selected"))
    return clicked_ok(view)


# ------------------------------------------------------------------ zenity: a scale set by its keys


def _scale_setup(seed: int) -> Setup:
    r = random.Random(seed)
    start, goal = r.sample(range(5, 96, 5), 2)
    cmd = (
        "zenity",
        "--scale",
        "--title=Volume",
        "--text=Volume",
        "--min-value=0",
        "--max-value=100",
        f"--value={start}",
        "--hide-value",
    )
    return Setup(cmd, f"Set the volume to {goal}, then OK", goal, "push button:OK")


def slider_value(view: View) -> int:
    w = one(view, "slider")
    if w.value is None:
        raise LookupError(f"{w.id} has no value")
    return round(w.value[0])


def value_is(goal: int) -> Expect:
    return lambda b, a: bool(a.find("slider")) and slider_value(a) == goal


@task("zenity-scale", "slider", _scale_setup, printed(lambda g: str(g)), exits=True)
def _scale(view: View, k: int, goal: int) -> Step | None:
    if not view.alive:
        return None
    slider = one(view, "slider")
    now = slider_value(view)
    if now == goal:
        return clicked_ok(view)
    if "focused" not in slider.states:
        return Step(
            "click", "Click the volume slider", slider.id, expect=states_changed(slider.id, "focused")
        )
    key = "Right" if goal > now else "Left"
    return Step(
        "key", f"Press {key} {abs(goal - now)} times", text=key, times=abs(goal - now), expect=value_is(goal)
    )


# --------------------------------------------------------------------- zenity: a scale's knob dragged

KNOB_INSET = 12.5
"""Pixels from a GtkScale's edge (Adwaita, ``--hide-value``) to its knob's centre at either end: the knob's
centre runs from ``x0 + 12.5`` at the minimum to ``x1 - 12.5`` at the maximum (measured on zenity 3.44)."""
KNOB_HALF = 9.0
"""Half the knob's width (18 px)."""


def knob_x(slider: Widget, value: float) -> float:
    lo, hi = (slider.value[1], slider.value[2]) if slider.value is not None else (0.0, 1.0)
    x0, x1 = slider.box[0] + KNOB_INSET, slider.box[2] - KNOB_INSET
    return x0 + (value - lo) / ((hi - lo) or 1.0) * (x1 - x0)


def knob_box(slider: Widget) -> Box:
    assert slider.value is not None
    cx, cy = knob_x(slider, slider.value[0]), (slider.box[1] + slider.box[3]) / 2
    return Box(cx - KNOB_HALF, cy - KNOB_HALF, cx + KNOB_HALF, cy + KNOB_HALF)


def _drag_setup(seed: int) -> Setup:
    start, goal = random.Random(seed).sample(range(0, 11), 2)
    cmd = (
        "zenity",
        "--scale",
        "--title=Level",
        "--text=Level",
        "--min-value=0",
        "--max-value=10",
        f"--value={start}",
        "--hide-value",
    )
    return Setup(cmd, f"Drag the level's knob to {goal} (of 0 to 10), then OK", goal, "push button:OK")


def _drop_for(goal: int) -> Callable[[View, Point], Box]:
    """Where the pointer must be released for the knob to stop on ``goal``: the knob keeps the grab's
    offset from its centre, and the value is rounded to whole steps, so the centre may end within 0.4 of a
    step of the goal's position (a margin of 0.1 step kept from the rounding edge)."""

    def box(view: View, grab: Point) -> Box:
        slider = one(view, "slider")
        kb = knob_box(slider)
        off = grab.x - kb.centre.x
        step = (slider.box[2] - slider.box[0] - 2 * KNOB_INSET) / 10
        cx = knob_x(slider, goal) + off
        return Box(cx - 0.4 * step, float(slider.box[1]), cx + 0.4 * step, float(slider.box[3]))

    return box


@task("zenity-scale-drag", "drag", _drag_setup, printed(lambda g: str(g)), exits=True)
def _scale_drag(view: View, k: int, goal: int) -> Step | None:
    if not view.alive:
        return None
    slider = one(view, "slider")
    if slider_value(view) == goal:
        return clicked_ok(view)
    return Step(
        "drag",
        "Grab the level slider's round knob",
        slider.id,
        box=knob_box(slider),
        drop=Drop(
            f"the position of {goal} on the level slider (0 at the left end, 10 at the right)",
            _drop_for(goal),
        ),
        expect=value_is(goal),
    )


# ------------------------------------------------------------------------ gtk3-widget-factory tasks

FACTORY = ("gtk3-widget-factory",)
FACTORY_SIZE = Size(1440, 900)
"""The widget factory's window is 1366 px wide (docs/desktop.md): a screen it fits on."""
FACTORY_READY = "radio button:Page 1"
ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")
START = (True, False)
"""The first two checkbuttons of page 1 as the widget factory starts (the only two that are sensitive and not
mixed: the third is ``indeterminate``, the last three are insensitive)."""
GOALS = ((True, True), (False, True), (False, False))
"""The states an episode asks for (every pair but the start)."""


def _word(on: bool) -> str:
    return "ticked" if on else "unticked"


def _check_setup(seed: int) -> Setup:
    goal = random.Random(seed).choice(GOALS)
    q = f"Leave the first checkbox {_word(goal[0])} and the second {_word(goal[1])}"
    return Setup(FACTORY, q, goal, FACTORY_READY, FACTORY_SIZE)


def _boxes(view: View) -> list[Widget]:
    boxes = [w for w in view.find("check box") if w.name == "checkbutton"]
    if len(boxes) != 6:
        raise LookupError(f"{len(boxes)} checkbuttons showing, not 6")
    return boxes


def _check_verdict(view: View, goal: tuple[bool, bool]) -> tuple[bool, str]:
    boxes = _boxes(view)
    got = tuple("checked" in w.states for w in boxes[:2])
    return got == goal, f"the first two are {', '.join(_word(v) for v in got)}"


@task("factory-check", "checkbox", _check_setup, _check_verdict, exits=False)
def _factory_check(view: View, k: int, goal: tuple[bool, bool]) -> Step | None:
    for i, (box, on) in enumerate(zip(_boxes(view)[:2], goal, strict=True)):
        if ("checked" in box.states) != on:
            verb = "Tick" if on else "Untick"
            return Step(
                "click", f"{verb} the {ORDINALS[i]} checkbox from the top", box.id,
                expect=states_changed(box.id, "checked", on),
            )  # fmt: skip
    return None


def _entry_setup(seed: int) -> Setup:
    word = random.Random(seed).choice(WORDS)
    return Setup(FACTORY, f"Type {word!r} into the empty text field", word, FACTORY_READY, FACTORY_SIZE)


def _entry(view: View) -> Widget:
    """The factory's third entry (empty at start, with the refresh icon)."""
    fields = view.find("text")
    if len(fields) < 3:
        raise LookupError("the widget factory shows fewer than 3 entries")
    return fields[2]


def _entry_verdict(view: View, goal: str) -> tuple[bool, str]:
    text = _entry(view).text
    return text == goal, f"the entry holds {text!r}"


@task("factory-entry", "type", _entry_setup, _entry_verdict, exits=False)
def _factory_entry(view: View, k: int, goal: str) -> Step | None:
    field = _entry(view)
    return None if field.text == goal else fill(view, field, goal, "empty text")


def _spin_setup(seed: int) -> Setup:
    n = random.Random(seed).randrange(2, 1000)
    if n == 50:
        n = 51
    return Setup(FACTORY, f"Set the number box to {n}", n, FACTORY_READY, FACTORY_SIZE)


def _spin(view: View) -> Widget:
    return one(view, "spin button")


def _spin_verdict(view: View, goal: int) -> tuple[bool, str]:
    v = _spin(view).value
    got = None if v is None else v[0]
    return got == goal, f"the spin button's value is {got}"


@task("factory-spin", "type", _spin_setup, _spin_verdict, exits=False)
def _factory_spin(view: View, k: int, goal: int) -> Step | None:
    spin = _spin(view)
    if spin.value is not None and spin.value[0] == goal:
        return None
    if spin.text == str(goal):  # typed, not yet taken: Return makes the spin button read its text
        return Step(
            "key", "Press Return", text="Return", expect=lambda b, a: (_spin(a).value or (0, 0, 0))[0] == goal
        )
    return fill(view, spin, str(goal), "number")


def _about_setup(seed: int) -> Setup:
    return Setup(
        FACTORY,
        "Open the About dialog from the main menu and show its credits",
        None,
        FACTORY_READY,
        FACTORY_SIZE,
    )


ABOUT = "dialog:About GTK Widget Factory"


def _about_verdict(view: View, goal: Any) -> tuple[bool, str]:
    if ABOUT not in view.windows:
        return False, "the About dialog is not showing"
    credits = view.find("toggle button", "Credits")
    ok = bool(credits) and "checked" in credits[-1].states
    return ok, "the About dialog shows its credits" if ok else "the About dialog does not show its credits"


@task("factory-about", "menu", _about_setup, _about_verdict, exits=False)
def _factory_about(view: View, k: int, goal: Any) -> Step | None:
    if ABOUT in view.windows:
        credits = one(view, "toggle button", "Credits", last=True)
        if "checked" in credits.states:
            return None
        return Step(
            "click",
            "Show the credits in the About dialog",
            credits.id,
            expect=states_changed(credits.id, "checked"),
        )
    about = view.find("push button", "About Widget Factory")
    if about:
        return Step(
            "click",
            "Choose About Widget Factory in the menu",
            about[0].id,
            expect=lambda b, a: ABOUT in a.windows,
        )
    menu = one(view, "toggle button", "Menu")
    return Step(
        "click",
        "Open the main menu (the button with three lines at the top right)",
        menu.id,
        expect=lambda b, a: bool(a.find("push button", "About Widget Factory")),
    )


def family_of(name: str) -> str:
    t = TASKS.get(name)
    return t.family if t is not None else "?"
