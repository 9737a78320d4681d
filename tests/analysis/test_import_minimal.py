"""``report --import`` of a file written to the documented minimum (#52 item 4): rows with only the required
fields (no ``protocol``, no image size) make a full report, DVOC vs one-shot paired; the report of an import
goes to a folder of its own and says where, never over a run's ``report/``; tokens and cost stated per call
count in the main table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dvoc_bench import report
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

BOX = {"target_x0": 0, "target_y0": 0, "target_x1": 10, "target_y1": 10}


def row(method: str, task: str, x: float | None, **more: object) -> dict:
    return {"schema_version": 1, "model": "their-model", "method": method, "task": task, **BOX, "final_x": x,
            "final_y": None if x is None else 5, **more}  # fmt: skip


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def main_row(text: str, method: str) -> list[str]:
    """The cells of the main table's row of ``their-model`` / ``method``."""
    head = text.split("### Success by model and method", 1)[1].split("###", 1)[0]
    line = next(x for x in head.splitlines() if x.startswith(f"| their-model | {method} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_required_fields_only_make_a_report_with_the_pairs(tmp_path, capsys):
    path = write(tmp_path / "theirs.jsonl", [row("dvoc", "t1", 5), row("oneshot", "t1", 50),
                                               row("dvoc", "t2", 5), row("oneshot", "t2", None)])  # fmt: skip
    assert report.main(["--import", str(path), "--no-figures", "--n-boot", "20"]) == 0
    text = capsys.readouterr().out
    paired = text.split("### Paired comparisons of methods on the same samples", 1)[1].split("###", 1)[0]
    assert "| their-model | dvoc | oneshot | 2 | 2 | 100.0% | 0.0% | 100.0% |" in paired
    assert "4 model calls" in text  # a prediction without its calls is one call


def test_tokens_and_cost_of_the_calls_count_in_the_main_table(tmp_path, capsys):
    call = {"index": 0, "kind": "click", "tokens_in": 900, "tokens_out": 12, "cost_usd": 0.0004}
    two = [call, dict(call, index=1)]
    rows = [row("oneshot", "t1", 5, calls=[call]), row("oneshot", "t2", 50, calls=two)]
    path = write(tmp_path / "theirs.jsonl", rows)
    assert report.main(["--import", str(path), "--no-figures", "--n-boot", "20"]) == 0
    cells = main_row(capsys.readouterr().out, "oneshot")
    assert cells[-4:] == ["3", "2700/36", "$0.0012", "$0.0012"]  # calls, tokens in/out, cost, cost per hit
    # a trial's own figures win over its calls'
    rows[0]["tokens_in"], rows[0]["cost_usd"] = 100, 0.01
    write(path, rows)
    assert report.main(["--import", str(path), "--no-figures", "--n-boot", "20"]) == 0
    assert main_row(capsys.readouterr().out, "oneshot")[-3:] == ["1900/36", "$0.0108", "$0.0108"]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("minimal") / "run"
    setup = quick_setup(["model=sim-gemini-3.1-flash-lite", "methods=[oneshot]", "tasks=[S5]",
                         "run.frames=none", "run.quiet=true"])  # fmt: skip
    run_sweep(setup, out)
    return out


def test_the_report_of_an_import_has_its_own_folder_and_says_where(run, tmp_path, capsys):
    own = run / "report"
    own.mkdir(exist_ok=True)
    (own / "report.md").write_text("the run's own report\n")
    path = write(tmp_path / "theirs.jsonl", [row("oneshot", "t1", 5)])
    assert report.main([str(run), "--import", str(path), "--no-figures", "--n-boot", "20"]) == 0
    out = capsys.readouterr()
    where = run.parent / f"report-{run.name}+theirs"
    assert (own / "report.md").read_text() == "the run's own report\n"
    assert (where / "report.md").is_file() and f"report written to {where / 'report.md'}" in out.err
    assert f"This report is written to `{where}`, a folder of its own" in out.out
