"""The default table's note on a simulated profile whose offsets are pixels while its config says 0–1000."""

from __future__ import annotations

from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.runner.summary import format_table, frame_notes, summarise

MODELS = default_conf_dir() / "model"
GEMINI = load_model_config("sim-gemini-3.1-flash-lite", MODELS)
GEMMA = load_model_config("sim-gemma-4-26b", MODELS)


def _trial(model: str, method: str, frame: str, predict: str) -> dict:
    return dict(
        model=model, method=method, coord_frame=frame, predict=predict, status="ok", hit=True,
        within_eps=True, hit_radius=True, final_dist_px=1.0, iterations=1, simulated=True,
    )  # fmt: skip


def test_the_gemini_dvoc_row_is_explained_where_the_table_is_shown():
    trials = [
        _trial(m.name, method, "norm1000", predict)
        for m in (GEMINI, GEMMA)
        for method, predict in (("dvoc", "relative"), ("oneshot", "-"))
    ]
    notes = frame_notes(trials, [GEMINI, GEMMA])
    assert len(notes) == 1 and notes[0].startswith("sim-gemini-3.1-flash-lite's dvoc rows measure a unit")
    assert "44 % of its offsets in pixels" in notes[0] and "declares 0–1000" in notes[0]
    table = format_table(summarise(trials), 30.0, notes)
    assert table.endswith("\n\nNote: " + notes[0])


def test_no_note_when_the_offsets_are_read_as_pixels_or_no_offset_was_asked():
    paper = [_trial(GEMINI.name, "dvoc", "pixel", "relative"), _trial(GEMINI.name, "oneshot", "pixel", "-")]
    assert frame_notes(paper, [GEMINI]) == []  # protocol=paper reads every answer as pixels
    assert frame_notes([_trial(GEMINI.name, "oneshot", "norm1000", "-")], [GEMINI]) == []
    assert "Note:" not in format_table(summarise(paper), 30.0)
