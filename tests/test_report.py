"""``python -m dvoc_bench.report`` on real runs of the session (tests/support.py), not only smoke runs:
it exits 0, writes report.md and its figures, splits a sweep by its knob, and every figure it draws passes
the readability checks of tests/analysis/test_plot_layout.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dvoc_bench import report
from dvoc_bench.analysis import plots
from dvoc_bench.analysis import report as analysis_report
from tests.support import RUNS, problems

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[1]
PNG = b"\x89PNG\r\n\x1a\n"


def report_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dvoc_bench.report", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize("run_name", RUNS)
def test_report_exits_0_and_writes_its_figures(run_name, request):
    run = request.getfixturevalue(run_name)
    p = report_cli(str(run))  # default --out, default resamples: as a researcher types it
    assert p.returncode == 0, p.stderr[-3000:]
    out = run / "report"
    md = (out / "report.md").read_text()
    assert md.strip() in p.stdout and f"report written to {out / 'report.md'}" in p.stderr
    pngs = sorted((out / "figures").glob("*.png"))
    linked = [line for line in md.splitlines() if line.startswith("![")]
    assert pngs and len(linked) == len(pngs)
    assert all(f.read_bytes()[:8] == PNG for f in pngs)
    names = {f.name.split("_", 1)[1] for f in pngs}
    assert {"success.png", "distance_cdf.png", "heatmap.png", "distance_vs_iteration.png"} <= names
    assert "[SIMULATED]" in md and "Wilson 95 %" in md
    if run_name == "alpha_multirun":
        assert "Success by model and method and alpha" in md
        assert "Ablation: `alpha`" in md
        # the two settings compared once per model, paired on the same samples, in the one paired section
        rows = [line for line in md.splitlines() if "| dvoc alpha=adaptive | dvoc alpha=decay |" in line]
        models = [line.split("|")[1].strip() for line in rows]
        assert rows and len(models) == len(set(models))
        assert "150 trials are the same trial" in md  # one-shot and centre ran in both jobs
    if run_name == "web_run":
        assert "| W1 | " in md and "| W2 | " in md  # the per-task table
    if run_name == "one_trial_run":
        assert "1 trials (1 valid" in md


@pytest.mark.parametrize("run_name", RUNS)
def test_every_report_figure_is_readable(run_name, request, tmp_path, monkeypatch):
    run = request.getfixturevalue(run_name)
    drawn = []
    save = plots.save

    def keep(fig, path, *a, **kw):
        drawn.append((Path(path).name, fig))
        return save(fig, path, *a, **kw)

    monkeypatch.setattr(plots, "save", keep)
    analysis_report.build_report([str(run)], [], out=tmp_path / "rep", n_boot=50)
    assert drawn
    found = {name: problems(fig) for name, fig in drawn}
    assert not any(found.values()), {k: v for k, v in found.items() if v}
    sims = [plots.title_of(fig) for _, fig in drawn]
    assert all("SIMULATED" in t for t in sims)


def test_several_runs_report_beside_them_not_into_the_first(alpha_multirun):
    a, b = alpha_multirun / "0", alpha_multirun / "1"
    assert analysis_report.default_out([str(a), str(b)]) == alpha_multirun / "report-0+1"
    p = report_cli(str(a), str(b), "--no-figures", "--n-boot", "50")
    assert p.returncode == 0, p.stderr[-3000:]
    assert (alpha_multirun / "report-0+1" / "report.md").is_file()
    assert not (a / "report").exists()  # the first run's own report is not overwritten
    many = [str(alpha_multirun / n) for n in ("x", "y", "z", "w", "v")]
    assert analysis_report.default_out(many) == alpha_multirun / "report-x+y+z+2-more"
    assert analysis_report.default_out([str(a)]) == a / "report"


def test_a_report_replaces_the_figures_of_the_previous_one(one_trial_run, tmp_path):
    out = tmp_path / "rep"
    stale = out / "figures" / "07_upstream_heatmap.png"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(PNG)
    keep = out / "figures" / "notes.txt"
    keep.write_text("mine")
    analysis_report.build_report([str(one_trial_run)], [], out=out, n_boot=20)
    md = (out / "report.md").read_text()
    pngs = sorted(p.name for p in (out / "figures").glob("*.png"))
    assert pngs and not stale.exists() and keep.read_text() == "mine"  # only the report's own PNGs go
    assert all(f"figures/{name}" in md for name in pngs)


def test_the_authors_repository_at_any_depth_gives_the_same_tables(tmp_path):
    """Their clone, its artifacts/previous_runs folder and the per-trial tree: the same complete answer,
    every published number beside the rebuilt one, the differences named."""
    from dvoc_bench.analysis.report import build_report
    from tests.support import UPSTREAM, need_upstream

    need_upstream()
    records = UPSTREAM / "artifacts" / "previous_runs"
    texts = []
    for i, path in enumerate([UPSTREAM, records, records / "artifacts"]):
        text, _ = build_report([], [str(path)], "hit", tmp_path / f"r{i}", figures=False, n_boot=20)
        texts.append("\n".join(ln for ln in text.splitlines() if not ln.startswith("Found: ")))
    assert texts[0] == texts[1] == texts[2]
    counts = re.findall(r"Published numbers reproduced: \*\*(\d+) of (\d+)\*\*", texts[0])
    expected = [("64", "64"), ("66", "66"), ("9", "9"), ("10", "21"), ("8", "8"), ("7", "9"), ("9", "9")]
    assert counts == expected  # Tables 4.1, 4.2, 4.4, 4.5, 5.1, 5.2, 5.3
    assert "6 of method `dvoc_full_relative_default`" in texts[0]  # the tree's trials no aggregate lists
    assert "follow from no rule tried" in texts[0]  # Table 5.2's two medians, explained
    from dvoc_bench.analysis.headline import headline_block

    audit = texts[0].split("### Coordinate-frame audit", 1)[1]
    assert audit.startswith("\n\nThe headline") and headline_block(UPSTREAM) in audit  # README's table


def test_a_doubled_run_is_one_line_and_exit_2(one_trial_run, tmp_path, capsys):
    """A trials.jsonl with a key twice: the report says so in one line, naming the doctor; no traceback."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(one_trial_run, run)
    line = (run / "trials.jsonl").read_text(encoding="utf-8").splitlines()[0]
    with (run / "trials.jsonl").open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    assert report.main([str(run), "--no-figures"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "appear more than once" in err[0] and "dvoc_bench.doctor" in err[0]
