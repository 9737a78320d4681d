"""The end-of-run lines keep what to do: a scene error of a page with blocked local files says the
setting first, and a shortened message is cut between clauses, never inside the first."""

from __future__ import annotations

from pathlib import Path

from dvoc_bench.runner.summary import run_report, shorten
from dvoc_bench.scenes.web.source import CUSTOM_ID, task_from_mapping, with_blocked_hint


def _task(tmp_path: Path):
    site = tmp_path / "a-rather-long-folder-name-for-the-documentation-site" / "html"
    page = site / "std" / "vec" / "struct.Vec.html"
    page.parent.mkdir(parents=True)
    page.write_text("<button id=b>B</button>")
    raw = {"id": CUSTOM_ID, "page": str(page), "selector": "#copy-path", "instruction": "Click it"}
    return task_from_mapping(raw, base=tmp_path, where="web.custom"), site


def test_the_setting_comes_first_and_survives_the_end_of_run_line(tmp_path):
    task, site = _task(tmp_path)
    blocked = [(site / "static.files" / f"f{i}.css").as_uri() for i in range(7)]
    error = (
        f"{CUSTOM_ID}: target '#copy-path' is outside the viewport: box (-4, 10, 120, 30) (CSS px), viewport "
        "1280x720, 20% inside; scroll_to: <selector> brings it into view"
    )
    msg = with_blocked_hint(task, error, blocked)
    setting = f"web.custom.root={site} would allow the 7 local file(s)"
    assert msg.startswith(f"{CUSTOM_ID}: {setting}")
    assert "outside the viewport" in msg and "blocked 7 request(s)" in msg  # nothing lost, only reordered
    assert len(msg) > 160
    trials = [{"status": "error", "error_class": "scene", "error": msg, "model_calls": 0}]
    (line,) = [ln for ln in run_report(trials, ran=1) if ln.startswith("error:")]
    first_clause = msg.split("; ")[0]
    assert first_clause in line and str(site) in line  # the whole setting, not "...outside t"
    assert line.endswith(" …")


def test_without_local_files_the_error_stays_first(tmp_path):
    task, _ = _task(tmp_path)
    msg = with_blocked_hint(
        task, f"{CUSTOM_ID}: target '#x' is not visible: display:none", ["https://cdn.example/x.js"]
    )
    assert (
        msg
        == f"{CUSTOM_ID}: target '#x' is not visible: display:none; blocked 1 request(s) of the page (https://cdn.example/x.js)"
    )


def test_shorten_keeps_whole_clauses():
    assert shorten("short") == "short"
    long_first = "a" * 200 + "; b"
    assert shorten(long_first) == "a" * 200 + " …"  # the first clause is never cut
    msg = "; ".join(["x" * 50] * 5)
    assert shorten(msg) == "; ".join(["x" * 50] * 3) + " …"
