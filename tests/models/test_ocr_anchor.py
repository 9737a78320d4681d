"""The OCR model's anchor on D4's table: ``in the row of the file X`` picks X's row, not the first one."""

from __future__ import annotations

from dvoc_bench.core.geometry import Box
from dvoc_bench.models.ocr.labels import target_of
from dvoc_bench.models.ocr.match import best_match
from dvoc_bench.models.ocr.tesseract import Word

DATES = ["01-03", "01-08", "01-13", "01-18", "02-11", "02-16", "02-21", "02-26"]


def _table() -> list[Word]:
    """Words as Tesseract read D4's table (1280x800): each file name one word, its ``.csv`` lost, and an
    Open button at the end of every row, read on a line of its own."""
    out: list[Word] = []
    for r, d in enumerate(DATES):
        y = 96.0 + 20 * r
        out.append(Word(f"report-2024-{d}", 92.0, Box(40, y, 180, y + 10), (1, 1, r, 0), len(out)))
        out.append(Word(f"2024-{d}", 93.0, Box(400, y, 470, y + 10), (1, 1, r, 1), len(out)))
        out.append(Word("Open", 91.0, Box(761, y, 790, y + 10), (1, 2, r, 0), len(out)))
    # a tall misread of the grid that Tesseract put on the line of the file two rows up (as on D4)
    r = DATES.index("02-16")
    out.append(Word("Coe", 20.0, Box(200, 96.0 + 20 * r, 555, 96.0 + 20 * r + 178), (1, 1, r, 0), len(out)))
    return out


def test_the_open_button_in_the_row_of_the_file_is_the_one_on_that_files_row():
    t = target_of("Instruction: Click the Open button in the row of the file report-2024-02-16.csv")
    assert (t.label, t.anchor) == ("Open", "report-2024-02-16.csv")
    words = _table()
    anchor = best_match(words, t.anchor)
    assert anchor is not None and anchor.text == "report-2024-02-16"  # the exact date beats its neighbours
    m = best_match(words, t.label, t.anchor)
    assert m is not None and m.box.y0 == 96.0 + 20 * DATES.index("02-16")


def test_a_hyphenated_label_still_matches_a_run_of_words_ocr_split():
    words = [Word(x, 90.0, Box(10 * i, 0, 10 * i + 9, 10), (1, 1, 1, 1), i) for i, x in enumerate(
        ["report-2024-02-16", ".csv", "Open"])]  # fmt: skip
    m = best_match(words, "report-2024-02-16.csv")
    assert m is not None and m.text == "report-2024-02-16 .csv" and m.score == 100.0
