"""The per-sample export (dvoc_bench.analysis.export, ``report --export`` / ``--import``): a round trip
reproduces the report's tables exactly, in both formats; a file written by hand in the documented schema
imports and is scored by this project's rules; a bad file is one line naming the first bad field; a run
whose calls lack tokens or cost gives null columns and a report that names those models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dvoc_bench import report
from dvoc_bench.analysis import load_runs
from dvoc_bench.analysis.export import CALL_FIELDS, FIELDS, SCHEMA_VERSION, SchemaError, export, load_export
from dvoc_bench.analysis.report import build_report
from dvoc_bench.analysis.schema import STEP_COLUMNS, TRIAL_COLUMNS
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """One simulated model, oneshot, dvoc and zoom on one scene from five start points (15 trials)."""
    out = tmp_path_factory.mktemp("export") / "run"
    setup = quick_setup(["model=sim-gemini-3.1-flash-lite", "methods=[oneshot,dvoc,zoom]", "tasks=[S5]",
                         "run.frames=none", "run.quiet=true"])  # fmt: skip
    run_sweep(setup, out)
    return out


def tables(md: str) -> list[str]:
    """The report without the lines naming its sources (a run folder, an export file) and its folder."""
    return [line for line in md.splitlines() if line and not line.startswith(("Sources: ", "Imported ("))]


def build(tmp: Path, name: str, runs: list[str] = (), imports: list[str] = ()) -> str:
    text, _ = build_report(list(runs), [], "hit", tmp / name, n_boot=50, figures=False,
                                  imports=list(imports))  # fmt: skip
    return text


def test_the_schema_is_derived_from_the_records():
    assert set(TRIAL_COLUMNS) < set(FIELDS) and FIELDS["schema_version"] and FIELDS["calls"] == "json"
    assert set(CALL_FIELDS) < set(STEP_COLUMNS) and "next_x" in CALL_FIELDS and "model" not in CALL_FIELDS
    for field in ("sample_instruction", "target_x0", "image_w", "final_x", "hit", "within_eps", "hit_radius",
                  "model_calls", "tokens_in", "cost_usd", "coord_frame", "alpha", "zoom"):  # fmt: skip
        assert field in FIELDS


@pytest.mark.e2e
@pytest.mark.parametrize("ext", ["jsonl", "parquet"])
def test_export_then_import_reproduces_the_tables(run, tmp_path, ext):
    original = build(tmp_path, "orig", runs=[str(run)])
    path = export(load_runs(run), tmp_path / f"run.{ext}")
    again = build(tmp_path, "again", imports=[str(path)])
    assert "Accuracy at a budget" in original and "Paired comparisons of methods" in original
    assert tables(again) == tables(original)
    assert f"Sources: `{path}`" in again


@pytest.mark.e2e
def test_the_cli_exports_and_imports(run, tmp_path, capsys):
    path = tmp_path / "x.jsonl"
    out = ["--no-figures", "--n-boot", "20"]
    assert report.main([str(run), "--export", str(path), "--out", str(tmp_path / "r0"), *out]) == 0
    assert (tmp_path / "r0" / "report.md").is_file()  # the report too
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(rows) == 15 and all(r["schema_version"] == SCHEMA_VERSION for r in rows)
    steps = [json.loads(x) for x in (run / "steps.jsonl").read_text().splitlines()]
    assert sum(len(r["calls"]) for r in rows) == len(steps)
    assert "exported 15 trials" in capsys.readouterr().err
    assert report.main(["--import", str(path), "--out", str(tmp_path / "rep"), *out]) == 0
    assert (tmp_path / "rep" / "report.md").is_file()
    assert (
        report.main([str(run), "--export", str(tmp_path / "x.csv"), *out]) == 2
    )  # one line, nothing written
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"report: {tmp_path / 'x.csv'}: unknown export format '.csv'; allowed: .parquet, .jsonl"


HAND = [
    # inside the box: a hit
    {"schema_version": 1, "model": "their-model", "method": "oneshot", "task": "a1", "target_x0": 10,
     "target_y0": 10, "target_x1": 50, "target_y1": 30, "final_x": 20, "final_y": 20, "scene_kind": "dataset",
     "sample_dataset": "manifest", "sample_instruction": "click OK", "image_w": 1280, "image_h": 720},
    # 5 px right of the box: a miss by `hit`, 25 px from the centre: within epsilon
    {"schema_version": 1, "model": "their-model", "method": "oneshot", "task": "a2", "target_x0": 100,
     "target_y0": 100, "target_x1": 140, "target_y1": 120, "final_x": 145, "final_y": 110,
     "hit": True,  # the other harness's own verdict: re-scored here
     "calls": [{"index": 0, "kind": "click", "next_x": 145, "next_y": 110, "tokens_in": 900, "tokens_out": 12,
                "cost_usd": 0.0004}]},
    # no answer: a miss
    {"schema_version": 1, "model": "their-model", "method": "oneshot", "task": "a3", "target_x0": 0,
     "target_y0": 0, "target_x1": 40, "target_y1": 40, "final_x": None, "final_y": None},
]  # fmt: skip


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_hand_written_file_imports_and_is_scored_by_our_rules(tmp_path):
    runs = load_export(write(tmp_path / "theirs.jsonl", HAND))
    t = runs.trials.set_index("task")
    assert list(t["hit"]) == [True, False, False]
    assert list(t["within_eps"]) == [True, True, False]  # a2 is 25 px from the centre (epsilon 30)
    assert t.loc["a2", "final_dist_px"] == pytest.approx(25.0)
    assert (t["hit_rule"] == "box").all() and (t["source"] == "import").all() and t["valid"].all()
    assert list(t["model_calls"]) == [1, 1, 1]  # a prediction without its calls counts as one call
    assert len(runs.steps) == 1 and runs.steps["tokens_in"].iloc[0] == 900
    text = build(tmp_path, "rep", imports=[str(tmp_path / "theirs.jsonl")])
    # the matched-budget table at 1 call: 1 of 3, one trial per sample, so the plain Wilson interval
    # (textbook: centre (1/3 + z²/6) / (1 + z²/3) = 0.427, half-width 0.366)
    assert "| their-model | oneshot | 33.3% [6.1, 79.2] |" in text
    # the spend: calls only, as two of the three rows lack their tokens and cost
    assert "| their-model | oneshot | 1.00 calls | 1.00 calls |" in text
    assert "Sources: " in text and "theirs.jsonl" in text


BAD = [
    ({"final_x": "20"}, "row 1: field `final_x`: expected a number, got '20'"),
    ({"final_X": 20}, "row 1: field `final_X`: not in the export schema"),
    ({"schema_version": 2}, "row 1: field `schema_version`: 2; this version reads 1"),
    ({"hit": "yes"}, "row 1: field `hit`: expected true or false"),
    ({"model_calls": 1.5}, "row 1: field `model_calls`: expected an integer"),
    ({"calls": [{"index": 0, "nxt": 1}]}, "row 1: field `calls[0].nxt`: not a field of a call"),
    (
        {"calls": [{"index": 0, "tokens_in": "many"}]},
        "row 1: field `calls[0].tokens_in`: expected an integer",
    ),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_a_bad_file_is_one_line_naming_the_first_bad_field(tmp_path, change, message):
    row = {**HAND[0], **change}
    path = write(tmp_path / "bad.jsonl", [row, HAND[1]])
    with pytest.raises(SchemaError) as e:
        load_export(path)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_missing_required_field_and_the_cli_exit_code(tmp_path, capsys):
    row = {k: v for k, v in HAND[0].items() if k != "target_x1"}
    path = write(tmp_path / "bad.jsonl", [HAND[1], row])
    assert report.main(["--import", str(path), "--no-figures"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"report: {path}: row 2: field `target_x1`: required (schema version 1)"
    path.write_text("not json\n")
    assert report.main(["--import", str(path), "--no-figures"]) == 2
    assert "line 1: not JSON" in capsys.readouterr().err


@pytest.mark.e2e
def test_a_run_without_tokens_or_cost_gives_null_columns_and_says_which_models(run, tmp_path):
    rows = [json.loads(x) for x in export(load_runs(run), tmp_path / "a.jsonl").read_text().splitlines()]
    for r in rows:  # what a provider that reports no usage leaves: no tokens, no cost
        r["tokens_in"] = r["tokens_out"] = r["cost_usd"] = None
        r["simulated"] = False
        for c in r["calls"]:
            c["tokens_in"] = c["tokens_out"] = c["cost_usd"] = None
    runs = load_export(write(tmp_path / "b.jsonl", rows))
    path = export(runs, tmp_path / "c.parquet")
    back = load_export(path)
    assert back.trials["tokens_in"].isna().all() and back.trials["cost_usd"].isna().all()
    assert back.steps["tokens_in"].isna().all() and len(back.steps) == sum(len(r["calls"]) for r in rows)
    text = build(tmp_path, "rep", imports=[str(path)])
    assert "No tokens recorded for: `sim-gemini-3.1-flash-lite`" in text
    assert "No cost recorded for: `sim-gemini-3.1-flash-lite`" in text


def test_the_example_row_of_the_docs_imports(tmp_path):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "equal-cost.md").read_text()
    block = doc.split("```json\n", 1)[1].split("```", 1)[0]
    rows = [json.loads(x) for x in block.splitlines() if x.strip()]
    runs = load_export(write(tmp_path / "doc.jsonl", rows))
    t = runs.trials
    assert len(t) == 1 and bool(t["hit"].iloc[0]) and t["sample_instruction"].iloc[0] == "click OK"
    assert f"schema version **{SCHEMA_VERSION}**" in doc
    assert runs.steps["cost_usd"].iloc[0] == pytest.approx(0.0004)
