"""Reading an AT-SPI tree (``atspi_tree``, what the accessibility runner reads) on fake accessibles that count
the calls a real application would answer over D-Bus: only the showing part in the visible region is read,
big containers by a binary search, unnamed controls named as users see them (issue 53)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.scenes.desktop import atspi_tree as tree
from dvoc_bench.scenes.desktop.apps import nearest, task_from_mapping
from dvoc_bench.scenes.desktop.atspi_runner import number

SHOWING, MANAGES, LABELLED_BY = "showing", "manages", "labelled-by"
ATSPI = SimpleNamespace(
    DESKTOP_COORDS=0,
    STATE_SHOWING=SHOWING,
    STATE_MANAGES_DESCENDANTS=MANAGES,
    RELATION_LABELLED_BY=LABELLED_BY,
)
SCREEN = [1280, 800]


@dataclass
class Calls:
    n: int = 0


@dataclass
class Fake:
    """An accessible; every method a real one answers over D-Bus counts one call."""

    role: str
    box: tuple[int, int, int, int] | None = None  # x, y, w, h (None: not laid out)
    name: str = ""
    description: str = ""
    states: set[str] = field(default_factory=lambda: {SHOWING})
    kids: list[Fake] = field(default_factory=list)
    labelled_by: Fake | None = None
    image: str = ""
    calls: Calls = field(default_factory=Calls)
    path: str = ""

    def getState(self) -> Any:
        self.calls.n += 1
        return SimpleNamespace(contains=lambda s: s in self.states)

    def getRoleName(self) -> str:
        return self.role

    @property
    def childCount(self) -> int:
        return len(self.kids)

    def getChildAtIndex(self, i: int) -> Fake:
        self.calls.n += 1
        return self.kids[i]

    def get_extents(self, coords: int) -> Any:
        self.calls.n += 1
        x, y, w, h = self.box or (tree.HIDDEN, tree.HIDDEN, 1, 1)
        return SimpleNamespace(x=x, y=y, width=w, height=h)

    def getRelationSet(self) -> list[Any]:
        if self.labelled_by is None:
            return []
        target = self.labelled_by
        rel = SimpleNamespace(
            getRelationType=lambda: LABELLED_BY, getNTargets=lambda: 1, getTarget=lambda i: target
        )
        return [rel]

    def queryImage(self) -> Any:
        if not self.image:
            raise NotImplementedError
        return SimpleNamespace(imageDescription=self.image)


def file_list(calls: Calls, rows: int, first_visible: int, visible: int) -> Fake:
    """A GTK-like tree view: 4 column headers, then ``rows`` rows of 2 cells, every cell ``SHOWING``; rows
    run top to bottom, 20 px each; the view (y 100-699) shows rows ``first_visible`` .. +``visible``; rows
    outside it are laid out above or below, or (past ``visible`` rows below) not laid out at all."""
    heads = [Fake("table column header", (0, 80, 100, 20), name=f"h{i}", calls=calls) for i in range(4)]
    cells = []
    for r in range(rows):
        y = 100 + 20 * (r - first_visible)
        laid_out = r < first_visible + visible + 5
        for c in range(2):
            box = (100 * c, y, 100, 20) if laid_out else None
            cells.append(Fake("table cell", box, name=f"row{r}.{c}", calls=calls))
    table = Fake("table", (0, 80, 400, 620), kids=heads + cells, states={SHOWING, MANAGES}, calls=calls)
    return Fake(
        "frame", (0, 0, 1280, 800), kids=[Fake("scroll pane", (0, 80, 400, 620), kids=[table], calls=calls)]
    )


def test_a_big_list_is_read_by_its_visible_rows_not_cell_by_cell():
    calls = Calls()
    win = file_list(calls, rows=3400, first_visible=0, visible=30)
    nodes = tree.walk([win], SCREEN, ATSPI, set())
    cells = [n for n in nodes if n.role == "table cell"]
    assert [n.name for n in cells][:2] == ["row0.0", "row0.1"]
    assert len(cells) == 2 * 30 and cells[-1].name == "row29.1"
    assert {n.name for n in nodes if n.role == "table column header"} == {"h0", "h1", "h2", "h3"}
    # 6,804 children: a walk child by child makes >= 13,600 calls; the visible rows, the search and the
    # rows read past the view until the scan stops cost a few hundred
    assert calls.n < 600, calls.n


def test_a_scrolled_list_is_found_by_binary_search_and_clipped_to_its_view():
    calls = Calls()
    win = file_list(calls, rows=3400, first_visible=2000, visible=30)
    nodes = tree.walk([win], SCREEN, ATSPI, set())
    cells = [n for n in nodes if n.role == "table cell"]
    # the row just above the view lies under the column headers (inside the table's box): it is read too
    assert cells[0].name == "row1999.0" and cells[2].name == "row2000.0" and cells[-1].name == "row2029.1"
    assert all(n.box[1] >= 80 and n.box[3] <= 699 for n in cells)
    # rows 0..1999 are laid out above the view: a binary search over them, not a scan
    assert calls.n < 200 + 4 * math.ceil(math.log2(6804)) + 6 * 30 + 4 * tree.MISSES, calls.n


def test_what_is_not_showing_or_lies_outside_the_visible_region_is_pruned_with_its_subtree():
    calls = Calls()
    hidden_kid = Fake("push button", (10, 10, 20, 20), name="inside hidden", calls=Calls())
    hidden = Fake("panel", (0, 0, 100, 100), states=set(), kids=[hidden_kid], calls=calls)
    below_kid = Fake("push button", (10, 910, 20, 20), name="in a panel below the view", calls=calls)
    below = Fake("panel", (0, 900, 100, 100), kids=[below_kid], calls=calls)
    half = Fake("push button", (50, 550, 100, 100), name="half in", calls=calls)
    pane = Fake("scroll pane", (0, 0, 400, 600), kids=[below, half], calls=calls)
    off = Fake("push button", (1300, 10, 30, 30), name="Close", calls=calls)
    win = Fake("frame", (0, 0, 1400, 800), kids=[hidden, pane, off], calls=calls)
    nodes = tree.walk([win], SCREEN, ATSPI, set())
    assert [n.name for n in nodes if n.role == "push button"] == ["half in"]
    assert next(n.box for n in nodes if n.name == "half in") == [50, 550, 149, 599]  # clipped to the pane
    assert hidden_kid.calls.n == 0  # below a node that is not showing: never asked anything
    assert next(n.box for n in nodes if n.role == "frame") == [0, 0, 1279, 799]  # clipped to the screen
    # not bounded by the screen: where the off-screen Close lies
    everywhere = tree.walk([win], SCREEN, ATSPI, set(), on_screen=False)
    assert next(n.box for n in everywhere if n.name == "Close") == [1300, 10, 1329, 39]


def test_an_unnamed_control_is_named_by_description_label_or_image_and_says_which():
    label = Fake("label", (0, 0, 50, 20), name="Volume")
    kids = [
        Fake("push button", (0, 0, 30, 30), name="OK", description="Accept"),
        Fake("push button", (40, 0, 30, 30), description="Close"),
        Fake("slider", (80, 0, 30, 30), labelled_by=label),
        Fake("push button", (120, 0, 30, 30), image="Refresh"),
        Fake("push button", (160, 0, 30, 30)),
        Fake("label", (200, 0, 30, 30), description="not a control: no fallback"),
    ]
    nodes = tree.walk([Fake("frame", (0, 0, 300, 100), kids=kids)], SCREEN, ATSPI, {"push button", "slider"})
    got = [(n.role, n.name, n.named_by) for n in nodes[1:]]
    assert got == [
        ("push button", "OK", "name"), ("push button", "Close", "description"),
        ("slider", "Volume", "labelled-by"), ("push button", "Refresh", "image"), ("push button", "", ""),
        ("label", "", ""),
    ]  # fmt: skip
    ids = number(nodes)
    assert "push button:Close" in ids and "push button:" in ids
    named = {i: n.named_by for i, n in zip(ids, nodes, strict=True)}
    hint = nearest("push button:Clos", ids, named)
    assert hint.startswith("nearest on screen: push button:Close (description)")
    assert "push button:OK," in hint or hint.endswith("push button:OK")  # named by its name: no field said


def test_equal_names_are_numbered_in_reading_order():
    kids = [Fake("check box", (10, y, 20, 20), name="x") for y in (300, 100, 200)]
    nodes = tree.walk([Fake("frame", (0, 0, 300, 400), kids=kids)], SCREEN, ATSPI, set())
    assert number(nodes)[1:] == ["check box:x#3", "check box:x", "check box:x#2"]


def test_a_task_size_is_checked_like_desktop_size():
    base = {"command": "zenity --info", "target": "push button:OK", "instruction": "OK"}
    assert task_from_mapping({**base, "size": [1440, 900]}, "t.yaml", "t").size == Size(1440, 900)
    assert task_from_mapping(base, "t.yaml", "t").size is None
    for bad in ([1440], [100, 900], "1440x900", [1440.5, 900], [True, 900]):
        with pytest.raises(ConfigError, match=r"^t\.yaml\.size: must be \[width, height\]"):
            task_from_mapping({**base, "size": bad}, "t.yaml", "t")
