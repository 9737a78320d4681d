"""The headline table (README.md, docs/paper.md, the report's coordinate-frame audit) against an independent
count from the authors' raw record files (``tests/analysis/records_count.py``, json only), and the README
and docs/paper.md show exactly what :func:`dvoc_bench.analysis.headline.headline_block` renders."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from dvoc_bench.analysis import discover_upstream, headline, load_upstream
from tests.analysis import records_count
from tests.support import RECORDS, UPSTREAM, need_upstream

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sources():
    need_upstream()
    roles = discover_upstream(UPSTREAM)
    return (
        load_upstream(roles["tree"]),
        load_upstream(roles["predict"]),
        load_upstream(roles["alpha"]),
    )


def test_the_independent_count_imports_nothing_of_the_project():
    tree = ast.parse(Path(records_count.__file__).read_text(encoding="utf-8"))
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods <= {"__future__", "json", "math", "statistics", "pathlib"}, mods


def test_every_point_cell_matches_the_independent_count(sources):
    main, predict, _ = sources
    table = headline.point_table(main, predict)
    want = records_count.point_cells(UPSTREAM / RECORDS)
    got = {(r["model"], r["answers"], r["slice"]): r for r in table.to_dict("records")}
    assert set(got) == set(want)
    assert len(got) == 4 * 3 + 1  # four models x three slices, and the absolute-mode answers
    for key, cell in want.items():
        row = got[key]
        for col, v in cell.items():
            assert row[col] == pytest.approx(v, abs=1e-6), (key, col, row[col], v)


def test_an_aggregate_file_is_refused():
    """The aggregate keeps only the last answer of a successful one-shot trial: counting it would be wrong."""
    need_upstream()
    aggregate = load_upstream(discover_upstream(UPSTREAM)["complete_results"])
    with pytest.raises(ValueError, match="per-trial tree, not an aggregate"):
        headline.point_table(aggregate)


def test_the_headline_figures(sources):
    """The numbers the README's sentences quote, by slice and rule."""
    main, predict, _ = sources
    t = headline.point_table(main, predict).set_index(["model", "answers", "slice"])
    one = t.xs("one-shot", level="answers")
    three = ["gemini-3.1-flash-lite", "gemma-4-26b", "gemma-4-31b"]
    retries = one.xs("retries (task)", level="slice").loc[three]
    assert ((retries["norm_radius"] / retries["n"]).between(0.95, 1.0)).all()
    every = one.xs("all answers", level="slice").loc[three]
    assert (every["norm_radius"] / every["n"]).round(2).tolist() == [0.93, 0.90, 0.86]
    assert (every["norm_box"] / every["n"]).round(2).tolist() == [0.88, 0.82, 0.80]
    first = one.xs("first call (no task)", level="slice").loc[three]
    assert (first["norm_radius"] / first["n"]).between(0.57, 0.70).all()
    ab = t.loc[("gemini-3.1-flash-lite", "DVOC absolute mode", "all answers")]
    assert ab["n"] == 90 and ab["norm_box"] == 90 and ab["pixel_radius"] == 15


def test_offsets_gains_and_alpha_match_the_independent_count(sources):
    main, _, alpha = sources
    off = headline.offset_table(main).set_index("model")
    want = records_count.offset_cells(UPSTREAM / RECORDS)
    assert set(off.index) == set(want)
    for model, cell in want.items():
        assert off.loc[model].to_dict() == cell, model
    gem = off.loc["gemini-3.1-flash-lite"]
    assert 0.40 < gem["pixel"] / gem["n"] < 0.50  # about half of Gemini's offsets are pixel-like
    assert all(off.loc[m, "pixel"] / off.loc[m, "n"] < 0.15 for m in ("gemma-4-26b", "gemma-4-31b"))
    g = headline.gains_800x600(main).set_index("model")
    for model, (gx, gy, n) in records_count.gains(UPSTREAM / RECORDS).items():
        assert g.loc[model, "n"] == n
        assert g.loc[model, "gain0_x"] == pytest.approx(
            gx, abs=2e-3
        )  # drafts rounded to 0.1 px in the history
        assert g.loc[model, "gain0_y"] == pytest.approx(gy, abs=2e-3)
    a = headline.alpha_counts(alpha).set_index("alpha")
    assert (
        {k: (int(a.loc[k, "radius"]), int(a.loc[k, "n"])) for k in a.index}
        == records_count.alpha_cells(UPSTREAM / RECORDS)
        == {"decay": (26, 30), "constant": (29, 30), "undamped": (29, 30)}
    )


def test_readme_paper_and_report_show_the_generated_headline():
    need_upstream()
    block = headline.headline_block(UPSTREAM)
    for doc in ("README.md", "docs/paper.md"):
        assert block in (ROOT / doc).read_text(encoding="utf-8"), (
            f"{doc} out of date; paste `python -m dvoc_bench.bench readme` (headline):\n{block}"
        )
