"""Instruction wordings made by rules from hand-built layouts (issue 55): each wording fits the target alone,
an ambiguous candidate is discarded and counted, a scene without one says why."""

from __future__ import annotations

import numpy as np
import pytest

from dvoc_bench.core.geometry import Box, Size
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes.wording import (
    WordingUnavailable,
    colour_name,
    element_colour,
    paraphrase,
    relational,
    reword,
    visual,
    worded_snapshot,
)

WHITE, GREEN, BLUE, GREY = (255, 255, 255), (30, 160, 60), (40, 90, 220), (200, 200, 200)


def el(i: str, label: str, box: tuple[int, int, int, int], role: str = "button") -> Element:
    return Element(id=i, label=label, box=Box(*box), role=role)


def canvas(fills: list[tuple[tuple[int, int, int, int], tuple[int, int, int]]]) -> np.ndarray:
    img = np.full((200, 400, 3), WHITE, dtype=np.uint8)
    for (x0, y0, x1, y1), c in fills:
        img[y0 : y1 + 1, x0 : x1 + 1] = c
    return img


# a dialog's button row: Cancel | OK, and a Help button below Cancel
CANCEL, OK, HELP = el("cancel", "Cancel", (100, 150, 180, 180)), el("ok", "OK", (200, 150, 280, 180)), el(
    "help", "Help", (100, 190, 180, 199)
)


def test_relational_names_the_target_by_an_anchor_and_fits_it_alone():
    got = relational([CANCEL, OK, HELP], OK)
    assert got.text == "Click the button to the right of the “Cancel” button"
    assert got.discarded == 0


def test_a_relational_candidate_that_fits_two_elements_is_discarded_and_counted():
    third = el("apply", "Apply", (300, 150, 380, 180))  # right of Cancel now: OK and Apply
    got = relational([CANCEL, OK, third], OK)
    # "right of Cancel" fits OK and Apply, "left of Apply" fits Cancel and OK: both discarded, counted;
    # "immediately", the nearest on that side, fits OK alone
    assert got.text == "Click the button immediately to the right of the “Cancel” button"
    assert got.discarded == 2


def test_rows_tell_apart_elements_that_share_a_label():
    edits = [el(f"e{i}", "Edit", (300, 20 + 40 * i, 350, 40 + 40 * i)) for i in range(3)]
    names = [el(f"n{i}", f"User {i}", (20, 20 + 40 * i, 120, 40 + 40 * i), role="text") for i in range(3)]
    got = relational([*names, *edits], edits[1])
    assert got.text == "Click the “Edit” button in the second row"


def test_without_anchors_the_part_of_the_screen_names_the_target_or_nothing_does():
    lone = el("a", "", (10, 10, 60, 40))
    assert relational([lone], lone, Size(400, 200)).text == "Click the button in the top left of the screen"
    twin = el("b", "", (70, 10, 120, 40))  # same region, no labels: nothing fits one alone
    got = relational([lone, twin], lone, Size(400, 200))
    assert got.text is None and got.discarded >= 1 and "no relational wording" in got.reason


def test_colour_names_follow_hue_saturation_and_value():
    assert [colour_name(c) for c in (GREEN, BLUE, WHITE, GREY, (0, 0, 0), (220, 30, 30))] == [
        "green", "blue", "white", "grey", "black", "red",
    ]  # fmt: skip


def test_an_elements_colour_is_its_fill_or_its_text_on_the_background():
    img = canvas([((10, 10, 60, 40), GREEN)])
    assert element_colour(img, Box(10, 10, 60, 40)) == "green"
    img[20:24, 100:140] = BLUE  # a blue text link on the white page: the box is mostly white
    assert element_colour(img, Box(95, 15, 145, 30)) == "blue"


def test_visual_wording_fits_the_target_alone_or_adds_a_position():
    a, b = el("a", "A", (10, 10, 60, 40)), el("b", "B", (100, 10, 150, 40))
    img = canvas([((10, 10, 60, 40), GREEN), ((100, 10, 150, 40), BLUE)])
    assert visual([a, b], b, img).text == "Click the blue button"
    img2 = canvas([((10, 10, 60, 40), GREEN), ((100, 10, 150, 40), GREEN)])
    got = visual([a, b], b, img2)  # two green buttons: the colour alone is discarded
    # the colour alone, then nearest the top, bottom (both tie) and left (the other one): 4 discarded
    assert got.text == "Click the green button nearest the right" and got.discarded == 4


def test_visual_wording_gives_up_when_nothing_singles_the_target_out():
    cells = [el(f"c{i}", "", (10 + 60 * (i % 3), 10 + 50 * (i // 3), 50 + 60 * (i % 3), 40 + 50 * (i // 3)))
             for i in range(9)]  # fmt: skip
    img = canvas([((e.box.x0, e.box.y0, e.box.x1, e.box.y1), GREEN) for e in cells])  # type: ignore[misc]
    got = visual(cells, cells[4], img)  # the middle of a 3x3 grid of green buttons
    assert got.text == "Click the second green button from the left in the second row"
    same_spot = [*cells, el("d", "", (70, 60, 110, 90))]  # a second button on top of the middle one
    assert visual(same_spot, cells[4], img).text is None


def test_paraphrase_rewrites_the_verb_and_the_noun_phrase_or_says_it_cannot():
    assert paraphrase("Click the Sign In button") == "Press the button “Sign In”"
    assert paraphrase("Select the second radio button") == "Choose the second radio button"
    assert paraphrase("Yes, delete the 3 files") is None


def truth(instruction: str = "Click the OK button") -> SceneTruth:
    return SceneTruth(scene_id="T", size=Size(400, 200), instruction=instruction, target_id="ok",
                      target_box=OK.box, elements=(CANCEL, OK, HELP))  # fmt: skip


def test_a_worded_snapshot_changes_the_instruction_and_the_hash_and_keeps_the_truth():
    img = canvas([])
    img.setflags(write=False)
    snap = Snapshot(truth=truth(), image=img, content_hash="h")
    out = worded_snapshot(snap, "relational")
    assert out.instruction == "Click the button to the right of the “Cancel” button"
    assert out.target_box == snap.target_box and out.content_hash != "h"
    assert worded_snapshot(snap, "given") is snap


def test_no_wording_is_a_skip_with_the_reason_not_an_error():
    img = canvas([])
    snap = Snapshot(truth=truth("Yes, delete the 3 files"), image=img, content_hash="h")
    with pytest.raises(WordingUnavailable, match="no paraphrase rule applies") as e:
        worded_snapshot(snap, "paraphrase")
    assert e.value.skip_class == "wording" and e.value.error_class == "scene"
    assert reword(snap.truth, img, "given").text == "Yes, delete the 3 files"
