"""Oracle planners: one per MiniWoB task family. A planner reads the task from the page (the ``#query``
text and the DOM, :class:`~dvoc_bench.scenes.miniwob.dom.Dom`), never a grounding answer, and gives the
next step: its action, its instruction in words and its target element (whose DOM box is the step's truth).

A planner is called again after every step on the page as it now is, so it plans from the state the
grounded actions really left (a checkbox the previous click missed is planned again, up to the episode's
step cap). It returns ``None`` when it has nothing left to do (the page should have given its verdict).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from dvoc_bench.scenes.miniwob.dom import Dom, DomElement

Action = Literal["click", "hover", "type", "select", "drag", "scroll", "key"]
"""What a step does: ``click`` a grounded point; ``hover``: move the mouse onto a grounded point (a
menu's item whose submenu opens on hover); ``type`` text into the focused element; ``select`` an
option of the ``<select>`` under a grounded point; ``drag`` from one grounded point to another; ``scroll``
turn the mouse wheel over a grounded point (``text``: the direction, ``times`` notches); ``key`` press a
key (``ArrowRight``)."""

ACTIONS: tuple[str, ...] = ("click", "hover", "type", "select", "drag", "scroll", "key")
GROUNDED: frozenset[str] = frozenset({"click", "hover", "select", "drag", "scroll"})
"""Actions whose target is grounded by the method (``type`` and ``key`` go to the focused element)."""

Expect = Callable[[Dom, Dom], bool]
"""Whether a step's intended state change happened: ``expect(before, after)``."""


@dataclass(frozen=True)
class Drop:
    """Where a drag's second point must land, given where its first point grabbed the element."""

    instruction: str
    """What the method is asked to point at for the drop."""
    box: Callable[[Dom, tuple[float, float]], tuple[float, float, float, float]]
    """The drop region in CSS pixels ``[left, top, right, bottom)``, from the page and the grab point
    (CSS) the first grounding gave (the grab's offset inside the dragged element moves the region)."""


@dataclass(frozen=True)
class PlannedStep:
    """One step of an oracle plan."""

    action: Action
    """What the step does."""
    instruction: str
    """The step in words, as the grounding method is asked it."""
    target: int | None = None
    """Index of the target element (``data-dvoc-idx``) for grounded actions; ``None`` for ``type``/``key``."""
    text: str | None = None
    """``type``: the text; ``select``: the option's label; ``key``: the key's name; ``scroll``: the
    direction (``up | down | left | right``)."""
    drop: Drop | None = None
    """``drag``: where the second point must land."""
    times: int = 1
    """``key``: how many times the key is pressed (one step: a slider moved by its arrow key);
    ``scroll``: how many wheel notches (:data:`~dvoc_bench.scenes.miniwob.driver.WHEEL_NOTCH_CSS` each)."""
    expect: Expect | None = None
    """The intended state change (``None``: anything a step may change changed, :meth:`Dom.changed`)."""
    call: str | None = None
    """A model-planned step: the model's call as one line (``None``: the oracle planned it)."""
    hold: str | None = None
    """``click``: a key held down during the click (``Control``: add an option to a multiple list)."""
    settle_ms: int = 0
    """Milliseconds the page is given after the action before it is read (a menu or an autocomplete list
    opens after its own delay)."""


Planner = Callable[[Dom, int], "PlannedStep | None"]
"""``planner(page, steps_done)`` -> the next step, or ``None`` when the plan is over."""

PLANNERS: dict[str, Planner] = {}
"""Task name (``click-checkboxes``) -> its planner."""

FAMILIES: dict[str, str] = {}
"""Task name -> its family (``click``, ``type``, ``select``, ``tabs``, ``slider``, ``drag``, ...)."""


def planner(*names: str, family: str) -> Callable[[Planner], Planner]:
    """Register a planner for the task ``names`` of ``family``."""

    def register(fn: Planner) -> Planner:
        for n in names:
            PLANNERS[n] = fn
            FAMILIES[n] = family
        return fn

    return register


class PlanError(LookupError):
    """The planner cannot read its task from the page (a page it does not know how to read)."""


def quoted(query: str, n: int = 0) -> str:
    """The ``n``-th double-quoted string of the task text."""
    found = re.findall(r'"([^"]*)"', query)
    if len(found) <= n:
        raise PlanError(f"no quoted text #{n + 1} in the task {query!r}")
    return found[n]


def _click(e: DomElement, what: str, expect: Expect | None = None) -> PlannedStep:
    return PlannedStep("click", f"Click {what}", target=e.idx, expect=expect)


def _ended(before: Dom, after: Dom) -> bool:
    return after.done


def _submit(dom: Dom, label: str = "Submit") -> PlannedStep:
    btn = next((e for e in dom.find(tag="button") if e.text.lower() == label.lower()), None)
    if btn is None:
        raise PlanError(f"no {label!r} button")
    return _click(btn, f'the "{btn.text}" button', _ended)


def _received(idx: int) -> Expect:
    """The element got the click (the page marks a click's target)."""

    def ok(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        return e is not None and e.clicked

    return ok


def _focused(idx: int) -> Expect:
    def ok(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        return e is not None and e.focused

    return ok


def _value_is(idx: int, value: str) -> Expect:
    def ok(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        return e is not None and e.value == value

    return ok


def _checked_is(idx: int, state: bool) -> Expect:
    def ok(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        return e is not None and e.checked is state

    return ok


def _fill(dom: Dom, field: DomElement, text: str, name: str) -> PlannedStep:
    """Focus ``field`` (a grounded click), then type ``text`` into it."""
    if field.value == text:
        raise PlanError("filled already")
    if not field.focused:
        return _click(field, f"the {name}", _focused(field.idx))
    return PlannedStep("type", f'Type "{text}"', text=text, expect=_value_is(field.idx, text))


# ------------------------------------------------------------------------------------------ single clicks


@planner("click-test", family="click")
def _click_test(dom: Dom, done: int) -> PlannedStep | None:
    return None if done else _click(dom.one(id="subbtn"), 'the "Click Me!" button', _ended)


@planner("click-test-2", family="click")
def _click_test_2(dom: Dom, done: int) -> PlannedStep | None:
    return None if done else _click(dom.one(tag="button", text="ONE"), 'the button "ONE"', _ended)


@planner("click-button", "unicode-test", family="click")
def _click_button(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    label = quoted(dom.query)
    return _click(dom.one(tag="button", text=label), f'the "{label}" button', _ended)


@planner("click-button-sequence", family="click")
def _click_button_sequence(dom: Dom, done: int) -> PlannedStep | None:
    if done >= 2:
        return None
    label = ("ONE", "TWO")[done]
    btn = dom.one(tag="button", text=label)
    return _click(btn, f'the button "{label}"', _ended if done else _received(btn.idx))


@planner("click-link", family="click")
def _click_link(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    word = quoted(dom.query)
    return _click(dom.one(cls="alink", text=word), f'the link "{word}"', _ended)


@planner("click-dialog", family="dialog")
def _click_dialog(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    close = dom.one(cls="ui-dialog-titlebar-close")
    return _click(close, 'the "x" that closes the dialog box', _ended)


@planner("click-dialog-2", family="dialog")
def _click_dialog_2(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    label = quoted(dom.query)
    if label == "x":
        return _click(dom.one(cls="ui-dialog-titlebar-close"), 'the "x" of the dialog box', _ended)
    pane = dom.one(cls="ui-dialog-buttonset")
    btn = next(e for e in dom.find(tag="button") if e.text == label and e.parent == pane.idx)
    return _click(btn, f'the "{label}" button of the dialog box', _ended)


@planner("click-widget", family="click")
def _click_widget(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    kind = quoted(dom.query)
    tags = {
        "radio": ("input", "radio"),
        "checkbox": ("input", "checkbox"),
        "text": ("input", "text"),
        "textarea": ("textarea", "textarea"),
        "button": ("button", "submit"),
    }
    tag, typ = tags[kind]
    e = dom.find(tag=tag, type=typ)
    if not e:
        raise PlanError(f"no {kind} widget")
    return _click(e[0], f"the {kind} widget" if kind != "text" else "the text input widget", _ended)


@planner("focus-text", family="type")
def _focus_text(dom: Dom, done: int) -> PlannedStep | None:
    return None if done else _click(dom.one(id="tt"), "the text box", _ended)


@planner("focus-text-2", family="type")
def _focus_text_2(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    nth = {"1st": 0, "2nd": 1, "3rd": 2}[re.search(r"(1st|2nd|3rd)", dom.query).group(1)]  # type: ignore[union-attr]
    boxes = dom.find(tag="input")
    return _click(boxes[nth], f"the {('first', 'second', 'third')[nth]} text box", _ended)


# ---------------------------------------------------------------------------------------- choices, forms


def _label_box(dom: Dom, name: str, kind: str) -> DomElement:
    """The ``kind`` input inside the label whose own text is ``name``."""
    for lab in dom.find(tag="label", own=name):
        for e in dom.children(lab):
            if e.tag == "input" and e.type == kind:
                return e
    raise PlanError(f"no {kind} labelled {name!r}")


@planner("click-checkboxes", family="checkbox")
def _click_checkboxes(dom: Dom, done: int) -> PlannedStep | None:
    m = re.match(r"Select (.*) and click Submit\.", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    wanted = set() if m.group(1) == "nothing" else {w.strip() for w in m.group(1).split(",")}
    for lab in dom.find(tag="label"):
        box = next((e for e in dom.children(lab) if e.type == "checkbox"), None)
        if box is not None and bool(box.checked) != (lab.own in wanted):
            verb = "Check" if lab.own in wanted else "Uncheck"
            return PlannedStep(
                "click",
                f'{verb} the checkbox labelled "{lab.own}"',
                target=box.idx,
                expect=_checked_is(box.idx, lab.own in wanted),
            )
    return None if dom.done else _submit(dom)


@planner("click-option", family="checkbox")
def _click_option(dom: Dom, done: int) -> PlannedStep | None:
    m = re.match(r"Select (.*) and click Submit\.", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    radio = _label_box(dom, m.group(1), "radio")
    if not radio.checked:
        return PlannedStep(
            "click",
            f'Select the radio button labelled "{m.group(1)}"',
            target=radio.idx,
            expect=_checked_is(radio.idx, True),
        )
    return None if dom.done else _submit(dom)


@planner("choose-list", family="select")
def _choose_list(dom: Dom, done: int) -> PlannedStep | None:
    m = re.match(r"Select (.*) from the list and click Submit\.", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    item = m.group(1)
    sel = dom.one(tag="select")
    if sel.value != item:
        return PlannedStep(
            "select",
            f'Choose "{item}" in the drop-down list',
            target=sel.idx,
            text=item,
            expect=_value_is(sel.idx, item),
        )
    return None if dom.done else _submit(dom)


@planner("enter-text", family="type")
def _enter_text(dom: Dom, done: int) -> PlannedStep | None:
    text = quoted(dom.query)
    field = dom.one(id="tt")
    if field.value != text:
        return _fill(dom, field, text, "text field")
    return None if dom.done else _submit(dom)


@planner("enter-text-2", family="type")
def _enter_text_2(dom: Dom, done: int) -> PlannedStep | None:
    shown = quoted(dom.query)
    text = shown.upper() if "upper case" in dom.query else shown.lower()
    field = dom.one(id="tt")
    if field.value != text:
        return _fill(dom, field, text, "text input")
    return None if dom.done else _submit(dom)


@planner("enter-password", family="type")
def _enter_password(dom: Dom, done: int) -> PlannedStep | None:
    pw = quoted(dom.query)
    for fid, name in (("password", "password field"), ("verify", "verify password field")):
        field = dom.one(id=fid)
        if field.value != pw:
            return _fill(dom, field, pw, name)
    return None if dom.done else _submit(dom)


@planner("simple-arithmetic", family="type")
def _simple_arithmetic(dom: Dom, done: int) -> PlannedStep | None:
    m = re.match(r"(\d+) ([-+x]) (\d+) =", dom.one(id="math-problem").text)
    if m is None:
        raise PlanError("cannot read the math problem")
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    answer = str(a + b if op == "+" else a - b if op == "-" else a * b)
    field = dom.one(id="math-answer")
    if field.value != answer:
        return _fill(dom, field, answer, "answer text box")
    return None if dom.done else _submit(dom)


@planner("login-user", family="type")
def _login_user(dom: Dom, done: int) -> PlannedStep | None:
    user, pw = quoted(dom.query, 0), quoted(dom.query, 1)
    for fid, text in (("username", user), ("password", pw)):
        field = dom.one(id=fid)
        if field.value != text:
            return _fill(dom, field, text, f"{fid} field")
    return None if dom.done else _submit(dom, "Login")


# ------------------------------------------------------------------------------------ tabs, collapsibles


def _tab(dom: Dom, n: int) -> DomElement:
    return dom.one(tag="a", text=f"Tab #{n}")


@planner("click-tab", family="tabs")
def _click_tab(dom: Dom, done: int) -> PlannedStep | None:
    if done:
        return None
    n = int(re.search(r"Tab #(\d)", dom.query).group(1))  # type: ignore[union-attr]
    return _click(_tab(dom, n), f'the tab "Tab #{n}"', _ended)


@planner("click-tab-2", family="tabs")
def _click_tab_2(dom: Dom, done: int) -> PlannedStep | None:
    word = quoted(dom.query)
    links = dom.find(cls="alink", text=word)
    if links:
        return _click(links[0], f'the link "{word}"', _ended)
    if dom.done:
        return None
    hidden = [e for e in dom.find(cls="alink", text=word, visible=False)]
    if not hidden:
        raise PlanError(f"no link {word!r} in any tab")
    panel = next(p for p in dom.elements if p.id.startswith("tabs-") and _inside(dom, hidden[0], p))
    n = int(panel.id.split("-")[1])

    def shown(before: Dom, after: Dom) -> bool:
        return bool(after.find(cls="alink", text=word))

    return PlannedStep("click", f'Click the tab "Tab #{n}"', target=_tab(dom, n).idx, expect=shown)


def _inside(dom: Dom, e: DomElement, ancestor: DomElement) -> bool:
    by = {x.idx: x for x in dom.elements}
    cur: DomElement | None = e
    while cur is not None:
        if cur.idx == ancestor.idx:
            return True
        cur = by.get(cur.parent)
    return False


@planner("click-collapsible", family="tabs")
def _click_collapsible(dom: Dom, done: int) -> PlannedStep | None:
    header = dom.one(tag="h3")
    if header.expanded != "true":

        def opened(before: Dom, after: Dom) -> bool:
            e = after.by_idx(header.idx)
            return e is not None and e.expanded == "true"

        return PlannedStep(
            "click", f'Click the section header "{header.text}"', target=header.idx, expect=opened
        )
    return None if dom.done else _submit(dom)


# ------------------------------------------------------------------------------------------- slider, drag


@planner("use-slider", family="slider")
def _use_slider(dom: Dom, done: int) -> PlannedStep | None:
    want = int(re.search(r"Select (-?\d+) with the slider", dom.query).group(1))  # type: ignore[union-attr]
    handle = dom.one(cls="ui-slider-handle")
    now = int(dom.one(id="val").text)
    vertical = bool(dom.find(cls="ui-slider-vertical"))
    if now != want:
        if not handle.focused:
            return _click(handle, "the slider's handle", _focused(handle.idx))
        key = (
            ("ArrowUp" if vertical else "ArrowRight")
            if want > now
            else ("ArrowDown" if vertical else "ArrowLeft")
        )

        def there(before: Dom, after: Dom) -> bool:
            return after.one(id="val").text == str(want)

        n = abs(want - now)
        return PlannedStep("key", f"Press {key} {n} times", text=key, times=n, expect=there)
    return None if dom.done else _submit(dom)


@planner("use-spinner", family="slider")
def _use_spinner(dom: Dom, done: int) -> PlannedStep | None:
    want = int(re.search(r"Select (-?\d+) with the spinner", dom.query).group(1))  # type: ignore[union-attr]
    field = dom.one(id="spinner")
    now = int(field.value or 0)
    if now != want:
        up = want > now
        arrow = dom.one(cls="ui-spinner-up" if up else "ui-spinner-down")
        return PlannedStep(
            "click",
            f"Click the spinner's {'up' if up else 'down'} arrow",
            target=arrow.idx,
            expect=_value_is(field.idx, str(now + (1 if up else -1))),
        )
    return None if dom.done else _submit(dom)


def _inside_large(dom: Dom, grab: tuple[float, float]) -> tuple[float, float, float, float]:
    """Where the grab point must be dropped for the small box to lie inside the large one: the page
    wants the small box's top-left 1..29 CSS px right of and below the large box's."""
    small, large = dom.one(id="draggableSmall"), dom.one(id="draggableLarge")
    ox, oy = grab[0] - small.box[0], grab[1] - small.box[1]
    x0, y0 = large.box[0] + ox, large.box[1] + oy
    return (x0 + 2, y0 + 2, x0 + 29, y0 + 29)


@planner("drag-box", family="drag")
def _drag_box(dom: Dom, done: int) -> PlannedStep | None:
    small, large = dom.one(id="draggableSmall"), dom.one(id="draggableLarge")
    inside = all(large.box[i] < small.box[i] for i in (0, 1)) and all(
        small.box[i] < large.box[i] for i in (2, 3)
    )
    if not inside and done < 4:

        def moved(before: Dom, after: Dom) -> bool:
            return after.one(id="draggableSmall").box != before.one(id="draggableSmall").box

        drop = Drop('the middle of the larger box "L"', _inside_large)
        return PlannedStep("drag", 'Drag the smaller box "s"', target=small.idx, drop=drop, expect=moved)
    return None if dom.done else _submit(dom)


def family_of(task: str) -> str:
    """The family a task's planner belongs to (``-`` for a task without one)."""
    return FAMILIES.get(task, "-")
