"""The report never pools a knob the run varied: every table of our runs that rows by model and method also
has a column for each varied knob, and a simulated row keeps its assumption markers."""

from __future__ import annotations

import re

import pytest

from dvoc_bench.analysis.report import build_report
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep

VARIED = ("protocol", "alpha", "overlay")


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    run = tmp_path_factory.mktemp("splits") / "run"
    over = ["models=[sim-gemma-4-26b]", "tasks=[S1,S3]", "methods=[dvoc,oneshot]", "starts=random:2"]
    over += ["protocols=[v1,paper]", "alphas=[decay,constant]", "overlays=[full,crosshair]", "run.quiet=true"]
    run_sweep(quick_setup(over), run)
    text, _ = build_report([str(run)], [], "hit", tmp_path_factory.mktemp("rep"), figures=False, n_boot=50)
    return text


def tables(markdown: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """``(heading, header, rows)`` of every markdown table under "Our runs"."""
    out, heading, lines = [], "", markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#"):
            heading = line
        if line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            out.append((heading, header, rows))
    return out


def test_every_model_and_method_table_has_a_column_per_varied_knob(report):
    ours = report.split("## The authors' records")[0]
    checked = 0
    for heading, header, rows in tables(ours):
        if not {"model", "method"} <= set(header) or "audit" in heading.lower():
            continue
        missing = [k for k in VARIED if k not in header]
        assert not missing, f"{heading}: pools {missing} (columns {header})"
        keys = [header.index(c) for c in ("model", "method", *VARIED)]
        combos = [tuple(r[i] for i in keys) for r in rows]
        assert len(combos) == len(set(combos)), f"{heading}: two rows of one setting"
        checked += 1
    assert checked >= 4  # the headline, the rules, the Table 4.1 layout, the cost table


def test_simulated_rows_keep_their_assumption_markers_everywhere(report):
    ours = report.split("## The authors' records")[0]
    for heading, header, rows in tables(ours):
        if "model" not in header:
            continue
        col = header.index("model")
        for r in rows:
            if "[SIMULATED" in r[col] and "crosshair" in r:  # an overlay the profile was not fitted for
                assert re.search(r"assumed\]", r[col]), f"{heading}: {r[col]}"
