"""Oracle planners for MiniWoB's widget tasks: a date picker, menus, an autocomplete list, a sortable list
(drag) and scrolled areas. Like every planner (:mod:`dvoc_bench.scenes.miniwob.planners`) each reads only
``#query`` and the DOM, never a grounding answer, and is asked again after every step on the page as the
grounded actions left it.
"""

from __future__ import annotations

import math
import re

from dvoc_bench.scenes.miniwob.dom import Dom, DomElement
from dvoc_bench.scenes.miniwob.driver import TASK_CSS, WHEEL_NOTCH_CSS
from dvoc_bench.scenes.miniwob.planners import (
    Drop,
    Expect,
    PlanError,
    PlannedStep,
    _click,
    _fill,
    _focused,
    _inside,
    _submit,
    _value_is,
    planner,
    quoted,
)

MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

MENU_SETTLE_MS = 450
"""jQuery UI's menu opens a submenu 300 ms after the pointer enters its item."""

LIST_SETTLE_MS = 600
"""jQuery UI's autocomplete searches 300 ms after the last key."""

PICKER_SETTLE_MS = 500
"""jQuery UI's date picker fades in (400 ms)."""


def _shown(dom: Dom, e: DomElement, within: DomElement | None = None) -> bool:
    """``e`` lies inside the screenshot (the task area) and, given ``within``, inside that box too."""
    x0, y0, x1, y1 = e.box
    if x0 < 0 or y0 < 0 or x1 > TASK_CSS[0] or y1 > TASK_CSS[1]:
        return False
    if within is not None:
        return within.box[1] - 0.5 <= y0 and y1 <= within.box[3] + 0.5
    return True


# ------------------------------------------------------------------------------------------------- date


@planner("choose-date", family="date")
def _choose_date(dom: Dom, done: int) -> PlannedStep | None:
    m = re.search(r"Select (\d\d)/(\d\d)/(\d{4}) as the date", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    want = f"{m.group(1)}/{m.group(2)}/{m.group(3)}"
    month, day, year = int(m.group(1)), int(m.group(2)), int(m.group(3))
    field = dom.one(id="datepicker")
    if field.value == want:
        return None if dom.done else _submit(dom)
    shown = dom.find(cls="ui-datepicker-month")
    if not shown:

        def opened(before: Dom, after: Dom) -> bool:
            return bool(after.find(cls="ui-datepicker-month"))

        return PlannedStep(
            "click", "Click the date field", target=field.idx, expect=opened, settle_ms=PICKER_SETTLE_MS
        )
    now = MONTHS.index(shown[0].text) + 1 + 12 * int(dom.one(cls="ui-datepicker-year").text)
    away = month + 12 * year - now
    if away:
        key = "PageDown" if away > 0 else "PageUp"

        def there(before: Dom, after: Dom) -> bool:
            got = after.find(cls="ui-datepicker-month")
            return bool(got) and got[0].text == MONTHS[month - 1]

        what = "next" if away > 0 else "previous"
        return PlannedStep(
            "key",
            f"Press {key} {abs(away)} times (the {what} month)",
            text=key,
            times=abs(away),
            expect=there,
        )
    cal = dom.one(cls="ui-datepicker-calendar")
    cell = next(
        (
            e
            for e in dom.find(tag="a", own=str(day))
            if e.has_class("ui-state-default") and _inside(dom, e, cal)
        ),
        None,
    )
    if cell is None:
        raise PlanError(f"no day {day} in the calendar")
    return _click(cell, f'the day "{day}" in the calendar', _value_is(field.idx, want))


# ------------------------------------------------------------------------------------------------ menus


def _menu_item(dom: Dom, label: str, under: DomElement | None = None) -> DomElement:
    """The ``li.ui-menu-item`` whose own label (its first ``div``'s text) is ``label``."""
    for li in dom.find(tag="li", cls="ui-menu-item", visible=False):
        if under is not None and li.parent != under.idx:
            continue
        head = next((c for c in dom.children(li) if c.tag == "div"), None)
        if head is not None and head.own == label:
            return li
    raise PlanError(f"no menu item {label!r}")


def _head(dom: Dom, li: DomElement) -> DomElement:
    return next(c for c in dom.children(li) if c.tag == "div")


def _submenu(dom: Dom, li: DomElement) -> DomElement | None:
    return next((c for c in dom.children(li) if c.tag == "ul"), None)


def _menu_path(dom: Dom, path: list[str], root: DomElement) -> PlannedStep:
    """Hover each closed parent of ``path`` in turn, then click its last item."""
    ul: DomElement = root
    for depth, label in enumerate(path):
        li = _menu_item(dom, label, ul)
        head = _head(dom, li)
        if depth == len(path) - 1:
            if not head.visible:
                raise PlanError(f"menu item {label!r} is not showing")
            return _click(head, f'the menu item "{label}"', _ended_ok)
        sub = _submenu(dom, li)
        if sub is None:
            raise PlanError(f"menu item {label!r} has no submenu")
        if not sub.visible:
            return PlannedStep(
                "hover",
                f'Point at the menu item "{label}" to open its submenu',
                target=head.idx,
                expect=_shows(sub.idx),
                settle_ms=MENU_SETTLE_MS,
            )
        ul = sub
    raise PlanError("empty menu path")


def _shows(idx: int) -> Expect:
    def ok(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        return e is not None and e.visible

    return ok


def _ended_ok(before: Dom, after: Dom) -> bool:
    return after.done


@planner("click-menu", family="menu")
def _click_menu(dom: Dom, done: int) -> PlannedStep | None:
    if dom.done:
        return None
    m = re.match(r"Select (.+)$", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    return _menu_path(dom, m.group(1).split(">"), dom.one(id="menu"))


@planner("click-menu-2", family="menu")
def _click_menu_2(dom: Dom, done: int) -> PlannedStep | None:
    if dom.done:
        return None
    menu = dom.find(id="menu", visible=False)[0]
    m = re.search(r'item labeled "(.+)"', dom.query)
    if m is not None:
        label = m.group(1)
    else:  # the item with the icon drawn in the task: the menu item carrying the same icon class
        q = dom.one(id="query")
        icon = next((e for e in dom.elements if e.has_class("ui-icon") and e.parent == q.idx), None)
        if icon is None:
            raise PlanError(f"cannot read the task {dom.query!r}")
        name = next(c for c in icon.cls.split() if c.startswith("ui-icon-"))
        owner = next(
            (e for e in dom.elements if e.has_class(name) and e.parent != q.idx and _inside(dom, e, menu)),
            None,
        )
        if owner is None:
            raise PlanError(f"no menu item with the icon {name}")
        label = dom.by_idx(owner.parent).own  # type: ignore[union-attr]
    if not menu.visible:
        mid = menu.idx

        def opened(before: Dom, after: Dom) -> bool:
            e = after.by_idx(mid)
            return e is not None and e.visible

        return _click(dom.one(id="open-menu"), 'the "Menu" button', opened)
    top = _menu_item(dom, label, menu) if _has_item(dom, label, menu) else None
    if top is not None:
        return _menu_path(dom, [label], menu)
    for li in dom.find(tag="li", cls="ui-menu-item"):
        sub = _submenu(dom, li)
        if li.parent == menu.idx and sub is not None and _has_item(dom, label, sub):
            return _menu_path(dom, [_head(dom, li).own, label], menu)
    raise PlanError(f"no menu item {label!r}")


def _has_item(dom: Dom, label: str, ul: DomElement) -> bool:
    try:
        _menu_item(dom, label, ul)
    except PlanError:
        return False
    return True


# ----------------------------------------------------------------------------------------- autocomplete


@planner("use-autocomplete", family="autocomplete")
def _use_autocomplete(dom: Dom, done: int) -> PlannedStep | None:
    start = quoted(dom.query, 0)
    end = quoted(dom.query, 1) if "ends with" in dom.query else ""
    field = dom.one(id="tags")
    value = field.value or ""
    if value.startswith(start) and value.endswith(end) and len(value) > len(start):
        return None if dom.done else _submit(dom)
    if not value:
        if not field.focused:
            return _click(field, "the text field", _focused(field.idx))
        return PlannedStep(
            "type",
            f'Type "{start}"',
            text=start,
            expect=_value_is(field.idx, start),
            settle_ms=LIST_SETTLE_MS,
        )
    items = [
        e for e in dom.find(tag="li", cls="ui-menu-item") if e.text.startswith(start) and e.text.endswith(end)
    ]
    if not items:
        raise PlanError(f"no suggestion starting with {start!r} and ending with {end!r}")
    item = items[0]
    if _shown(dom, item):
        return _click(item, f'the suggestion "{item.text}"', _value_is(field.idx, item.text))
    if not item.text.startswith(value) or len(value) >= len(item.text):
        raise PlanError(f"the suggestion {item.text!r} is off the screen")
    more = item.text[len(value)]  # one more letter narrows the list
    return PlannedStep(
        "type",
        f'Type "{more}"',
        text=more,
        expect=_value_is(field.idx, value + more),
        settle_ms=LIST_SETTLE_MS,
    )


# ------------------------------------------------------------------------------------------ drag a list


_GOALS = re.compile(
    r"Drag (.+?) (to the top|to the bottom|down by one position|up by one position"
    r"|to the (\d)\w\w position)\."
)


def _drag_goal(query: str, at: dict[str, int], n: int) -> tuple[str, int]:
    """``(item, 1-based target position)`` of ``Drag NAME to the top.`` and its variants (``at``: each
    item's position now)."""
    m = _GOALS.match(query)
    if m is None:
        raise PlanError(f"cannot read the task {query!r}")
    name, how = m.group(1), m.group(2)
    if name not in at:
        raise PlanError(f"no item {name!r} in the list")
    if m.group(3) is not None:
        return name, int(m.group(3))
    moves = {"to the top": 1, "to the bottom": n}
    return name, moves.get(how, at[name] + (1 if how.startswith("down") else -1))


@planner("drag-items", family="drag")
def _drag_items(dom: Dom, done: int) -> PlannedStep | None:
    if dom.done or done:
        return None
    rows = [e for e in dom.find(tag="li") if e.parent == dom.one(id="sortable").idx]
    names = [next(c for c in dom.children(r) if c.tag == "div").own for r in rows]
    name, goal = _drag_goal(dom.query, {x: i + 1 for i, x in enumerate(names)}, len(rows))
    src, dst = rows[names.index(name)], rows[goal - 1]

    def box(d: Dom, grab: tuple[float, float]) -> tuple[float, float, float, float]:
        # jQuery UI's sortable follows the pointer: an item moving down takes the place of the row whose
        # lower half the pointer is over, one moving up that of the row whose upper half it is over
        x0, y0, x1, y1 = dst.box
        h = y1 - y0
        if dst.box[1] > src.box[1]:
            return (x0 + 4, y0 + 0.6 * h, x1 - 4, y1 - 2)
        return (x0 + 4, y0 + 2, x1 - 4, y0 + 0.4 * h)

    def moved(before: Dom, after: Dom) -> bool:
        return after.done

    ends = {1: "the top of the list", len(rows): "the bottom of the list"}
    drop = Drop(f'{ends.get(goal, f"position {goal} of the list")} (onto "{names[goal - 1]}")', box)
    return PlannedStep("drag", f'Drag the item "{name}"', target=src.idx, drop=drop, expect=moved)


# ----------------------------------------------------------------------------------------------- scroll


def _notches(px: float) -> int:
    """Wheel notches that scroll at least ``px`` CSS pixels (one more: the end clamps)."""
    return max(1, math.ceil(abs(px) / WHEEL_NOTCH_CSS) + 1)


def _scroll_to(area: DomElement, where: str, what: str) -> PlannedStep:
    assert area.scroll is not None
    top, height, view = area.scroll
    gap = (height - view - top) if where == "bottom" else top
    idx = area.idx

    def there(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        if e is None or e.scroll is None:
            return False
        t, h, v = e.scroll
        return (h - v - t) <= 1 if where == "bottom" else t <= 1

    direction = "down" if where == "bottom" else "up"
    return PlannedStep(
        "scroll", f"Scroll {what} {direction} to its {where}", target=idx, text=direction,
        times=_notches(gap), expect=there,
    )  # fmt: skip


def _at(area: DomElement, where: str) -> bool:
    if area.scroll is None:
        return True
    t, h, v = area.scroll
    return (h - v - t) <= 1 if where == "bottom" else t <= 1


@planner("scroll-text", family="scroll")
def _scroll_text(dom: Dom, done: int) -> PlannedStep | None:
    area = dom.one(id="text-area")
    if not _at(area, "bottom"):
        return _scroll_to(area, "bottom", "the text area")
    words = (area.value or area.text).split()
    if not words:
        raise PlanError("the text area is empty")
    last = re.sub(r"[^A-Za-z0-9]", "", words[-1])
    field = dom.one(id="answer-input")
    if field.value != last:
        return _fill(dom, field, last, "text field below the text area")
    return None if dom.done else _submit(dom)


@planner("scroll-text-2", family="scroll")
def _scroll_text_2(dom: Dom, done: int) -> PlannedStep | None:
    m = re.search(r"Scroll the textarea to the (top|bottom)", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    area = dom.one(id="text-area")
    if not _at(area, m.group(1)):
        return _scroll_to(area, m.group(1), "the text area")
    return None if dom.done else _submit(dom)


def _showing_in(idx: int, box: int) -> Expect:
    def ok(before: Dom, after: Dom) -> bool:
        e, b = after.by_idx(idx), after.by_idx(box)
        return e is not None and b is not None and _shown(after, e, b)

    return ok


def _selected_is(idx: int, state: bool) -> Expect:
    def ok(before: Dom, after: Dom) -> bool:
        e = after.by_idx(idx)
        return e is not None and e.checked is state

    return ok


@planner("click-scroll-list", family="scroll")
def _click_scroll_list(dom: Dom, done: int) -> PlannedStep | None:
    m = re.match(r"Select (.*) from the scroll list and click Submit\.", dom.query)
    if m is None:
        raise PlanError(f"cannot read the task {dom.query!r}")
    wanted = [w.strip() for w in m.group(1).split(", ")]
    box = dom.one(id="options")
    options = {e.text: e for e in dom.find(tag="option", visible=False) if e.parent == box.idx}
    chosen = {t for t, e in options.items() if e.checked}
    if chosen == set(wanted):
        return None if dom.done else _submit(dom)
    for n, name in enumerate(wanted):
        opt = options.get(name)
        if opt is None:
            raise PlanError(f"no option {name!r}")
        if opt.checked and (n or chosen <= set(wanted)):
            continue
        if not _shown(dom, opt, box):
            where = "bottom" if opt.box[1] > box.box[3] - 1 else "top"
            px = opt.box[3] - box.box[3] if where == "bottom" else box.box[1] - opt.box[1]
            direction = "down" if where == "bottom" else "up"
            return PlannedStep(
                "scroll", f"Scroll the list {direction}", target=box.idx, text=direction,
                times=_notches(px), expect=_showing_in(opt.idx, box.idx),
            )  # fmt: skip
        hold = "Control" if n else None  # the first a plain click (clears the rest), the next added
        verb = f'Hold Control and click the option "{name}"' if hold else f'Click the option "{name}"'
        return PlannedStep("click", verb, target=opt.idx, hold=hold, expect=_selected_is(opt.idx, True))
    return None if dom.done else _submit(dom)
