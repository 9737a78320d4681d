"""The OCR model's reading of the prompt: the instruction in every prompt kind, and the label of every
instruction in scenes/ (synthetic, web and desktop) and of the real documentation pages' tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dvoc_bench.core.geometry import Box, Frame, Offset, Point, Size
from dvoc_bench.draw.som_render import Mark
from dvoc_bench.models.ocr.labels import instruction_of, target_of
from dvoc_bench.protocol import paper, prompts
from dvoc_bench.protocol.som import som_prompt

SCENES = Path(__file__).resolve().parents[2] / "scenes"

# every instruction in scenes/ -> (label, rule, anchor). A new scene must be added here: its instruction is
# read by the rules in dvoc_bench/models/ocr/labels.py, and the label decided on purpose.
EXPECTED = {
    # the phone pages M1a-M5c (scenes/web), decided as the rules give them: some name no text their page
    # shows ("Turn" for "Turn on Bluetooth" beside a switch; "name" for "Last name": "Last" is read as an
    # ordinal; "Tick" for a checkbox's sentence) - truth-blind misses the OCR model's phone rows will show
    "Turn on Bluetooth": ("Turn", "phrase", None),
    "Open the Battery settings": ("Battery settings", "phrase", None),
    "Go back to the previous screen": ("Go back", "phrase", None),
    "Open Your Library from the bottom bar": ("Your Library", "phrase", None),
    "Go to the Search tab": ("Search", "phrase", None),
    "Pause the song that is playing": ("Pause song is playing", "phrase", None),
    "Tap the Email field": ("Email", "phrase", None),
    "Tick the box to agree to the Terms of Service": ("Tick", "phrase", None),
    "Tap the Last name field": ("name", "phrase", None),
    "Like Maya Alvarez's post": ("Like Maya Alvarez's post", "phrase", None),
    "Follow Leo Kim": ("Leo Kim", "phrase", None),
    "Start a new post": ("Start new post", "phrase", None),
    "Confirm moving the items to the trash": ("Confirm moving", "phrase", None),
    "Cancel the dialog": ("Cancel dialog", "phrase", None),
    "Tick Don't ask again": ("Tick Don't ask again", "phrase", None),
    # the real-program tasks worded as a user would, without the control's label (A26-A31): the rules'
    # phrase is what the OCR model looks for, and it names no text on the screen (a truth-blind miss, decided)
    "Pick the apt folder in the file list": ("Pick apt folder", "phrase", None),
    "Go up to the share folder": ("Go up", "phrase", None),
    "Show me my home folder instead": ("Show me my home folder instead", "phrase", None),
    "Make a new folder to save the file in": ("Make new folder", "phrase", None),
    "Don't save the file after all": ("Don't save file after all", "phrase", None),
    "Close the widget factory": ("Close widget factory", "phrase", None),
    "Click the CLICK ME button": ("CLICK ME", "phrase", None),
    "Click the small green button": (None, "none", None),
    "Click the button labeled 'Submit'": ("Submit", "quoted", None),
    "Click the button in the top-left corner": (None, "none", None),
    "Click inside the username input field": ("username", "phrase", None),
    "Click the BLUE button": (None, "none", None),
    "Click the Sign In button": ("Sign In", "phrase", None),
    "Click the Docs link in the navigation bar": ("Docs", "phrase", None),
    "Click the Beta project card": ("Beta", "phrase", None),
    "Click the Edit button in Bob Martinez's row": ("Edit", "phrase", "Bob Martinez"),
    "Click the Profile entry in the menu": ("Profile", "phrase", None),
    # desktop scenes (scenes/desktop/D1-D4.yaml)
    "Click the OK button of the Settings dialog": ("OK", "phrase", None),
    "Click the trash-can (delete) button in the editor's toolbar": ("trash-can", "phrase", None),
    "Click the output port (the small circle on the right edge) of the Threshold node": (None, "none", None),
    "Click the Open button in the row of the file report-2024-02-16.csv": (
        "Open",
        "phrase",
        "report-2024-02-16.csv",
    ),
    # real applications (scenes/apps/A01-A25): instructions as a user says them; the rules read the phrase
    # before the role word, which is often not the widget's text ("Put cursor", "Tick") - the OCR
    # baseline's limit on user wording, kept visible here rather than tuned away
    'Switch to the second page': (None, 'none', None),
    'Go to page 3 of the widget factory': (None, 'none', None),
    'Open the drop-down in the middle of the three joined ones': ('drop-down', 'phrase', None),
    'Open the main menu, the button with three lines at the top right': (None, 'none', None),
    'Tick the third checkbox from the top': ('Tick', 'phrase', None),
    'Select the second radio button in the column of radio buttons': (None, 'none', None),
    'Minimise this window': ('Minimise window', 'phrase', None),
    'Press the little refresh icon at the end of the text field': ('refresh', 'phrase', None),
    'Yes, delete the 3 files': ('Yes delete 3 files', 'phrase', None),
    "No, don't delete anything": ("No don't delete anything", 'phrase', None),
    'Click into the Email field': ('Email', 'phrase', None),
    'Put the cursor in the Name box': ('Put cursor', 'phrase', None),
    'Save the new contact': ('Save new contact', 'phrase', None),
    'Never mind, cancel the new contact': ('Never mind cancel new contact', 'phrase', None),
    'Pick Cherry from the list': ('Pick Cherry', 'phrase', None),
    'Choose Mango': ('Mango', 'phrase', None),
    'Banana, please': ('Banana please', 'phrase', None),
    'Run the selected demo': ('Run demo', 'phrase', None),
    'Select the Builder demo in the list': ('Builder demo', 'phrase', None),
    'Open the Clipboard example': ('Clipboard example', 'phrase', None),
    'Close the GTK demo window': ('Close GTK demo window', 'phrase', None),
    'Show the symbolic icons': ('Show symbolic', 'phrase', None),
    'Show me the weather icons': ('Show me weather', 'phrase', None),
    'Browse the emote icons': ('Browse emote', 'phrase', None),
    'Acknowledge that the backup finished': ('Acknowledge backup finished', 'phrase', None),
}
# the documentation pages' tasks (docs/ocr.md, tests/scenes/test_web_docs.py) and other wordings
MORE = {
    "Click the Help button": ("Help", "phrase", None),
    "Click the Settings button": ("Settings", "phrase", None),
    "Open the Buffer documentation": ("Buffer", "phrase", None),
    "Go to the next page of the manual": ("next", "phrase", None),
    "Click the link to the next section": ("next", "nav", None),
    "Go to the next chapter": ("next", "phrase", None),
    "Click the button that copies the item path": (None, "none", None),
    "Click the documentation title link": (None, "none", None),
    'Press the "Save changes" button': ("Save changes", "quoted", None),
    "Click the link named Getting Started": ("Getting Started", "named", None),
    "Tap on the Log Out entry": ("Log Out", "phrase", None),
    "Click the Edit button in the row of Alice Chen": ("Edit", "phrase", "Alice Chen"),
    "Click the Beta button": ("Beta", "phrase", None),
}


def _scene_instructions() -> dict[str, str]:
    out = {}
    for p in sorted(SCENES.glob("*/*.yaml")):
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
        out[p.stem] = doc["instruction"]
    return out


def test_every_scene_instruction_has_its_decided_label() -> None:
    found = _scene_instructions()
    assert len(found) >= 11 and {"S1", "S6", "W1", "W5"} <= set(found)
    for sid, instr in found.items():
        assert instr in EXPECTED, f"{sid}: decide the OCR label of {instr!r} in EXPECTED"
        t = target_of(f"Instruction: {instr}")
        assert (t.label, t.rule, t.anchor) == EXPECTED[instr], (sid, t)


@pytest.mark.parametrize("instr", sorted(MORE))
def test_label_rules(instr: str) -> None:
    t = target_of(f"Instruction: {instr}")
    assert (t.label, t.rule, t.anchor) == MORE[instr]


def test_the_instruction_is_found_in_every_prompt_kind() -> None:
    size, instr = Size(800, 600), "Click the button labeled 'Submit'"
    v1 = prompts.dvoc_prompt(
        instruction=instr, size=size, frame=Frame.PIXEL, overlay="full", predict="relative",
        draft=Point(100, 100), iteration=0, history=[],
    )  # fmt: skip
    one = prompts.oneshot_prompt(instruction=instr, size=size, frame=Frame.NORM1000, attempt=1, previous=None)
    h = prompts.HistoryEntry(Point(100, 100), Offset(5, 5), 0.5, Point(103, 103))
    pap = paper.dvoc_prompt(instruction=instr, overlay="none", predict="relative", history=[h])
    retry = paper.oneshot_prompt(instruction=instr, attempt=1, previous=Point(3, 4))
    som = som_prompt(
        instruction=instr, size=size, frame=Frame.PIXEL, marks=[Mark(1, Box(1, 2, 30, 40), 0.9, (255, 0, 0))]
    )
    for text in (v1, one, pap, retry, som):
        assert instruction_of(text) == instr, text
        assert target_of(text).label == "Submit"
    first = paper.oneshot_prompt(instruction=instr, attempt=0, previous=None)  # the paper's: no task at all
    assert instruction_of(first) is None and target_of(first).rule == "no-instruction"
