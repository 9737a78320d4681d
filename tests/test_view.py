"""The run viewer (``python -m dvoc_bench.view``) in a real Chromium (Debian's), on a real default run.

Every number the page shows is checked against the records read here independently (``json.loads`` of
each line of ``trials.jsonl`` / ``steps.jsonl``, PNG sizes from Pillow), and the drawn target box is
measured on the screen, in the image's pixels, against the record's box.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from PIL import Image

from tests.support import HANG_S, ROOT, chromium_or_skip, need, need_upstream

pytestmark = pytest.mark.e2e


def records(path: Path) -> list[dict]:
    """The records of a JSONL file, read here (lines that do not parse left out)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            out.append(json.loads(line))
    return out


def view_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "dvoc_bench.view", *args]


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def build(run: Path, out: Path) -> Path:
    cmd = view_cmd(str(run), "--out", str(out))
    p = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=HANG_S)
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"site: {out / 'index.html'}" in p.stdout
    return out / "index.html"


@pytest.fixture(scope="module")
def browser():
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    from dvoc_bench.scenes.web.chromium import find_chromium

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.errors = errors
    yield pg
    pg.close()


def open_site(page, index: Path, fragment: str = "") -> None:
    page.goto(index.as_uri() + fragment)
    page.wait_for_selector("#count" if not fragment else "main h2")


def count(page) -> int:
    return int(page.text_content("#count"))


def kv(page, key: str) -> str:
    return page.evaluate(
        "k => [...document.querySelectorAll('dl.kv dt')].find(d => d.textContent === k)"
        ".nextSibling.textContent",
        key,
    )


def test_table_filters_count_what_the_records_hold(default_run: Path, tmp_path: Path, page) -> None:
    index = build(default_run, tmp_path / "site")
    trials = records(default_run / "trials.jsonl")
    open_site(page, index)
    assert count(page) == len(trials) == 270
    page.select_option("select[data-facet=method]", "dvoc")
    dvoc = [t for t in trials if t["method"] == "dvoc"]
    assert count(page) == len(dvoc) > 0
    # the other filters count within this one: the task select's options say how many dvoc trials each has
    label = page.text_content("select[data-facet=task] option[value=S2]")
    assert label == f"S2 ({sum(t['task'] == 'S2' for t in dvoc)})"
    page.select_option("select[data-facet=task]", "S2")
    page.fill("input[data-range=dmax]", "30")
    page.dispatch_event("input[data-range=dmax]", "change")
    want = [
        t for t in dvoc if t["task"] == "S2" and t["final_dist_px"] is not None and t["final_dist_px"] <= 30
    ]
    assert count(page) == len(want) > 0
    assert page.locator("table.trials tbody tr").count() == len(want)
    # sorting by distance puts the farthest first
    page.click("th[data-col=final_dist_px]")
    page.click("th[data-col=final_dist_px]")
    first = float(page.text_content("table.trials tbody tr:first-child td.final_dist_px"))
    assert first == pytest.approx(max(t["final_dist_px"] for t in want), abs=0.051)
    assert not page.errors


def test_trial_page_draws_the_record_where_it_says(default_run: Path, tmp_path: Path, page) -> None:
    index = build(default_run, tmp_path / "site")
    open_site(page, index)
    page.select_option("select[data-facet=method]", "dvoc")
    page.click("table.trials tbody tr:first-child td a")
    page.wait_for_selector("#filmstrip .step")
    key = kv(page, "trial_key")
    trial = next(t for t in records(default_run / "trials.jsonl") if t["trial_key"] == key)
    steps = [s for s in records(default_run / "steps.jsonl") if s["trial_key"] == key]
    assert trial["method"] == "dvoc" and len(steps) >= 1
    page.wait_for_function("[...document.images].every(i => i.complete)")
    imgs = page.evaluate(
        "[...document.querySelectorAll('#filmstrip .frame img')]"
        ".map(i => [i.getAttribute('src'), i.naturalWidth])"
    )
    assert [src.rsplit("/", 1)[1] for src, _ in imgs] == [f"{s['frame_sha']}.png" for s in steps]
    assert all(w > 0 for _, w in imgs)
    x0, y0, x1, y1 = trial["target_box"]
    for n, s in enumerate(steps):
        width, height = Image.open(default_run / "frames" / f"{s['frame_sha']}.png").size
        # the box as drawn on the screen, in the frame image's pixels
        got = page.evaluate(
            """n => { const f = document.querySelectorAll('#filmstrip .frame')[n];
                const i = f.querySelector('img').getBoundingClientRect();
                const r = f.querySelector('rect.target').getBoundingClientRect();
                const c = f.querySelector('circle.current').getBoundingClientRect();
                return {i: [i.width, i.height],
                        r: [r.left - i.left, r.top - i.top, r.right - i.left, r.bottom - i.top],
                        c: [(c.left + c.right) / 2 - i.left, (c.top + c.bottom) / 2 - i.top]}; }""",
            n,
        )
        sx, sy = width / got["i"][0], height / got["i"][1]
        drawn = [got["r"][0] * sx, got["r"][1] * sy, got["r"][2] * sx, got["r"][3] * sy]
        assert drawn == pytest.approx([x0, y0, x1, y1], abs=1.5 * max(sx, sy))
        assert [got["c"][0] * sx, got["c"][1] * sy] == pytest.approx(s["draft"], abs=1.5 * max(sx, sy))
    dots = page.evaluate("[...document.querySelectorAll('svg.dist circle')].map(c => +c.dataset.dist)")
    assert dots == pytest.approx([s["true_dist_px"] for s in steps])
    replies = page.evaluate("[...document.querySelectorAll('#filmstrip pre.reply')].map(p => p.textContent)")
    assert all(json.loads(s["reply_tool_calls"][0]["arguments"]) == json.loads(json.loads(r)[0]["arguments"])
               for s, r in zip(steps, replies, strict=True))  # fmt: skip
    assert not page.errors


def test_compare_shows_every_method_on_the_sample(default_run: Path, tmp_path: Path, page) -> None:
    index = build(default_run, tmp_path / "site")
    open_site(page, index)
    page.select_option("select[data-facet=method]", "dvoc")
    page.click("table.trials tbody tr:first-child td a")
    page.wait_for_selector("#compare-link")
    key = kv(page, "trial_key")
    trials = records(default_run / "trials.jsonl")
    t0 = next(t for t in trials if t["trial_key"] == key)
    same = [
        t
        for t in trials
        if (t["task"], t["start_index"], t["rep"]) == (t0["task"], t0["start_index"], t0["rep"])
    ]
    page.click("#compare-link")
    page.wait_for_function("document.querySelectorAll('#compare .col h4').length >= 2")
    page.wait_for_function(f"document.querySelectorAll('#compare .col h4').length === {len(same)}")
    cols = page.evaluate(
        "[...document.querySelectorAll('#compare .col')].map(c => [c.dataset.method, c.dataset.model])"
    )
    assert sorted(map(tuple, cols)) == sorted((t["method"], t["model"]) for t in same)
    assert {"dvoc", "oneshot", "centre"} <= {m for m, _ in cols}
    # every chart, frame and line stays inside its column (issue 52 item 9: the charts spilled over)
    spill = page.evaluate(
        """[...document.querySelectorAll('#compare .col')].map(c => { const r = c.getBoundingClientRect();
        return [...c.querySelectorAll('*')].filter(e => { const q = e.getBoundingClientRect();
        return q.width > 0 && (q.right > r.right + 0.5 || q.left < r.left - 0.5); }).length; })"""
    )
    assert spill == [0] * len(same), spill
    assert not page.errors


def test_bad_input_is_shown_and_listed(default_run: Path, tmp_path: Path, page) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copytree(default_run / "frames", run / "frames")
    shutil.copy(default_run / "run.json", run / "run.json")
    lines = (default_run / "trials.jsonl").read_text().splitlines()
    steps = (default_run / "steps.jsonl").read_text().splitlines()
    torn = next(n for n, line in enumerate(lines) if '"method":"dvoc"' in line)
    lines[torn] = lines[torn][: len(lines[torn]) // 2]  # a torn line in the middle of the file
    odd = json.loads(lines[-1])
    odd["mystery_field"] = 7
    lines[-1] = json.dumps(odd)
    (run / "trials.jsonl").write_text("\n".join(lines) + "\n")
    (run / "steps.jsonl").write_text("\n".join(steps) + "\n")
    gone = json.loads(steps[-1])["frame_sha"]
    (run / "frames" / f"{gone}.png").unlink()
    index = build(run, tmp_path / "site")
    open_site(page, index)
    assert count(page) == len(lines) - 1
    listed = page.text_content("#skipped")
    assert f"trials.jsonl:{torn + 1}" in listed
    assert "steps of trials not in trials.jsonl" in listed  # the torn trial's steps
    assert "unknown field `mystery_field` in 1 records" in listed
    assert f"1 frames missing from frames/: {gone[:12]}.png" in listed
    # the trial of the missing frame still shows its other frames and says which one is missing
    key = json.loads(steps[-1])["trial_key"]
    i = next(
        n
        for n, t in enumerate(x for x in records(run / "trials.jsonl") if "trial_key" in x)
        if t["trial_key"] == key
    )
    page.goto(index.as_uri() + f"#trial={i}")
    page.wait_for_selector("#filmstrip .step")
    assert "missing from frames/" in page.text_content("#filmstrip")
    # run.frames=none: no frame is missing, every one is absent by design
    (run / "run.json").write_text(
        json.dumps({**json.loads((run / "run.json").read_text()), "frames": "none"})
    )
    index = build(run, tmp_path / "site2")
    open_site(page, index)
    listed = page.text_content("#skipped")
    assert "no frames by design" in listed and "frames missing" not in listed
    page.goto(index.as_uri() + f"#trial={i}")
    page.wait_for_selector("#filmstrip .step")
    assert page.locator("#filmstrip img").count() == 0
    assert "none by design" in page.text_content("#filmstrip")
    assert not page.errors


def test_serve_binds_loopback_and_serves_site_and_frames(default_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    proc = subprocess.Popen(view_cmd(str(default_run), "--out", str(out), "--serve", "--port", "0"), cwd=ROOT,
                            env=ENV, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout.readline().startswith("site: ")
        url = proc.stdout.readline().split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/index.html")
        assert b"data/index.js" in urllib.request.urlopen(url, timeout=10).read()
        sha = records(default_run / "steps.jsonl")[0]["frame_sha"]
        base = url.rsplit("/", 1)[0]
        rel = os.path.relpath(default_run, out)
        png = urllib.request.urlopen(f"{base}/{rel}/frames/{sha}.png", timeout=10).read()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        with pytest.raises(
            urllib.error.HTTPError
        ):  # the run's records are not served, only the site and frames
            urllib.request.urlopen(f"{base}/{rel}/trials.jsonl", timeout=10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _get(url: str, host: str | None = None) -> int:
    """The HTTP status of a GET of ``url`` (with ``Host: host`` when given)."""
    req = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_serve_confines_a_hostile_run_to_its_own_files_and_answers_loopback_hosts_only(
    default_run: Path, tmp_path: Path
) -> None:
    """Issue 51, item 4: a run received from someone else whose ``frames/`` is a symlink to ``/`` (and a frame
    linked to a file outside) exposes nothing; a DNS-rebinding ``Host`` is refused; no directory is listed."""
    run = tmp_path / "received"
    shutil.copytree(default_run, run, ignore=shutil.ignore_patterns("frames", "view", ".analysis_cache"))
    (run / "frames").symlink_to("/")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the viewer")
    (run / "frames2").mkdir()
    (run / "frames2" / "x.png").symlink_to(secret)
    out = tmp_path / "site"
    proc = subprocess.Popen(view_cmd(str(run), "--out", str(out), "--serve", "--port", "0"), cwd=ROOT,
                            env=ENV, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stdout.readline().startswith("site: ")
        url = proc.stdout.readline().split()[1]
        base = url.rsplit("/", 1)[0]
        rel = os.path.relpath(run, out)
        assert _get(url) == 200
        for path in ("etc/passwd", "etc/shadow", f"{rel}/frames/etc/passwd", f"{rel}/frames2/x.png",
                     f"{rel}/../secret.txt", "..%2F..%2Fetc%2Fpasswd", f"{rel}/frames/", ""):  # fmt: skip
            assert _get(f"{base}/{path}") == 404, path
        port = url.split(":")[2].split("/")[0]
        assert _get(url, host=f"localhost:{port}") == 200
        assert _get(url, host=f"[::1]:{port}") == 200
        assert _get(url, host=f"evil.example:{port}") == 403
        assert _get(url, host="127.0.0.1.evil.example") == 403
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def zoom_som_run(tmp_path_factory) -> Path:
    from tests.support import make_run

    out = tmp_path_factory.mktemp("runs") / "zoom_som"
    return make_run(out, "methods=[zoom,som]", "task=S3", "model=sim-gemma-4-26b")


def on_screen(page, n: int, selector: str) -> tuple[list[float], list[float]]:
    """The displayed size of frame ``n``'s image and the box of ``selector`` over it (relative to it)."""
    got = page.evaluate(
        """([n, sel]) => { const f = document.querySelectorAll('#filmstrip .frame')[n];
            const i = f.querySelector('img').getBoundingClientRect();
            const r = f.querySelector(sel).getBoundingClientRect();
            return [[i.width, i.height],
                    [r.left - i.left, r.top - i.top, r.right - i.left, r.bottom - i.top]]; }""",
        [n, selector],
    )
    return got[0], got[1]


def test_zoom_crops_and_som_marks_sit_where_the_records_say(zoom_som_run: Path, tmp_path: Path, page) -> None:
    run = zoom_som_run
    index = build(run, tmp_path / "site")
    trials = records(run / "trials.jsonl")
    steps = records(run / "steps.jsonl")
    # zoom: each round's frame is a crop; the target box is drawn in the crop's coordinates
    i = next(n for n, t in enumerate(trials) if t["method"] == "zoom")
    zsteps = [s for s in steps if s["trial_key"] == trials[i]["trial_key"]]
    assert any(s["crop"] for s in zsteps)
    open_site(page, index, f"#trial={i}")
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    x0, y0, x1, y1 = trials[i]["target_box"]
    for n, s in enumerate(zsteps):
        w, h = Image.open(run / "frames" / f"{s['frame_sha']}.png").size
        cx0, cy0, cx1, cy1 = s["crop"] or [0, 0, w, h]
        shown, r = on_screen(page, n, "rect.target")
        kx, ky = (cx1 - cx0) / shown[0], (cy1 - cy0) / shown[1]  # screenshot px per displayed px
        drawn = [cx0 + r[0] * kx, cy0 + r[1] * ky, cx0 + r[2] * kx, cy0 + r[3] * ky]
        assert drawn == pytest.approx([x0, y0, x1, y1], abs=1.5 * max(kx, ky)), n
    assert page.locator(".crops rect.crop").count() == sum(1 for s in zsteps if s["crop"])
    # Set-of-Mark: the chosen mark's box, from the record's marks
    j = next(n for n, t in enumerate(trials) if t["method"] == "som" and (t["som"] or {}).get("chosen_valid"))
    som = trials[j]["som"]
    open_site(page, index, f"#trial={j}")
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    s0 = next(s for s in steps if s["trial_key"] == trials[j]["trial_key"])
    w, h = Image.open(run / "frames" / f"{s0['frame_sha']}.png").size
    shown, r = on_screen(page, 0, "rect.mark")
    kx, ky = w / shown[0], h / shown[1]
    mx0, my0, mx1, my1 = som["mark_boxes"][som["chosen_id"] - 1][:4]
    assert [r[0] * kx, r[1] * ky, r[2] * kx, r[3] * ky] == pytest.approx([mx0, my0, mx1, my1], abs=1.5 * kx)
    assert f"mark id={som['chosen_id']}" in page.text_content("#filmstrip")
    assert not page.errors


def test_report_links_each_failed_trial_to_its_page(default_run: Path, tmp_path: Path, page) -> None:
    import re

    run = tmp_path / "run"
    run.mkdir()
    (run / "frames").symlink_to(default_run / "frames")
    shutil.copy(default_run / "run.json", run / "run.json")
    shutil.copy(default_run / "steps.jsonl", run / "steps.jsonl")
    trials = records(default_run / "trials.jsonl")
    failed = [n for n, t in enumerate(trials) if t["method"] == "dvoc"][3:5]
    for n in failed:
        trials[n] |= {
            "status": "error",
            "stop_reason": "error",
            "error_class": "timeout",
            "error": "took too long",
        }
    (run / "trials.jsonl").write_text("".join(json.dumps(t) + "\n" for t in trials))
    cmd = [sys.executable, "-m", "dvoc_bench.report", str(run), "--no-figures", "--n-boot", "50"]
    report = run / "report" / "report.md"
    # no site yet: the failed trials are listed all the same, with the command that writes the site
    p = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=HANG_S)
    assert p.returncode == 0, p.stderr[-2000:]
    text = report.read_text()
    assert len(re.findall(r"^- dvoc · .*: `timeout` took too long$", text, re.M)) == len(failed), text
    assert f"`python -m dvoc_bench.view {run}` writes the viewer's site" in text
    build(run, run / "view")
    p = subprocess.run(cmd, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=HANG_S)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "writes the viewer's site" not in report.read_text()
    links = re.findall(r"\]\(([^)]*index\.html#key=[^)]+)\): `timeout`", report.read_text())
    assert [link.rsplit("=", 1)[1] for link in links] == [trials[n]["trial_key"] for n in failed]
    for link, n in zip(links, failed, strict=True):
        path, _, frag = link.partition("#")
        page.goto((report.parent / path).resolve().as_uri() + "#" + frag)
        page.wait_for_selector("#filmstrip")
        assert kv(page, "trial_key") == trials[n]["trial_key"]
        assert kv(page, "status") == "error" and kv(page, "error") == "took too long"
    assert not page.errors


@pytest.fixture(scope="module")
def desktop_run(tmp_path_factory) -> Path:
    """Two Tk desktop scenes on the project's Xvfb (skipped with the reason without Xvfb and Tk)."""
    from tests.support import make_run

    for tool in ("Xvfb", "xdotool"):
        need("XVFB", None if shutil.which(tool) else f"no {tool} on PATH")
    return make_run(tmp_path_factory.mktemp("runs") / "desktop", "tasks=[D1,D2]", "models=[sim-ideal]",
                    "methods=[dvoc,oneshot]", "starts=random:2")  # fmt: skip


@pytest.fixture(scope="module")
def dataset_run(tmp_path_factory) -> Path:
    """A ScreenSpot-format dataset run (the project's fixture writer: 1920x1080 screens)."""
    from dvoc_bench.scenes.dataset_fixture import write_fixture
    from tests.support import make_run

    root = tmp_path_factory.mktemp("ds")
    write_fixture(root, "screenspot_v2", (1920, 1080), screens=2, per_screen=2)
    return make_run(tmp_path_factory.mktemp("runs") / "dataset", "dataset=screenspot_v2",
                    f"dataset.root={root}", "models=[sim-ideal]", "methods=[oneshot,dvoc]")  # fmt: skip


@pytest.mark.parametrize("fixture", ["web_run", "alpha_multirun", "desktop_run", "dataset_run"])
def test_web_run_and_multirun_sweep(fixture: str, request, tmp_path: Path, page) -> None:
    """A run of web pages (frames of a real Chromium), a two-job multirun sweep read as one table, a run of
    Tk desktop scenes (frames of Xvfb) and a ScreenSpot-format dataset run."""
    root = request.getfixturevalue(fixture)
    index = build(root, tmp_path / "site")
    dirs = sorted({p.parent for p in root.rglob("trials.jsonl") if ".analysis_cache" not in p.parts})
    trials = [t for d in dirs for t in records(d / "trials.jsonl")]
    open_site(page, index)
    assert count(page) == len(trials)
    if fixture == "alpha_multirun":  # each job's override is a filter
        page.select_option("select[data-facet='override.alphas']", "[adaptive]")
        assert count(page) == len(records(root / "1" / "trials.jsonl"))
    page.select_option("select[data-facet=method]", "dvoc")
    page.click("table.trials tbody tr:last-child td a")
    page.wait_for_selector("#filmstrip .step")
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    run, key = Path(kv(page, "run_dir")), kv(page, "trial_key")
    trial = next(t for t in records(run / "trials.jsonl") if t["trial_key"] == key)
    steps = [s for s in records(run / "steps.jsonl") if s["trial_key"] == key]
    assert page.locator("#filmstrip .frame img").count() == len(steps) > 0
    for n, s in enumerate(steps):
        w, h = Image.open(run / "frames" / f"{s['frame_sha']}.png").size
        shown, r = on_screen(page, n, "rect.target")
        kx, ky = w / shown[0], h / shown[1]
        got = [r[0] * kx, r[1] * ky, r[2] * kx, r[3] * ky]
        assert got == pytest.approx(trial["target_box"], abs=1.5 * max(kx, ky))
    assert not page.errors


def test_a_10000_trial_run_opens_and_its_last_trial_shows(default_run: Path, tmp_path: Path, page) -> None:
    """The benchmark's 10,000-trial run (``bench view`` times it): the table counts every trial, a filter
    counts what the records hold, and the last trial's page shows its frames."""
    from dvoc_bench.benchmarks.view import synthetic_run

    n = synthetic_run(default_run, tmp_path / "big", 10_000)
    trials = records(tmp_path / "big" / "trials.jsonl")
    assert n == len(trials) == 10_000
    index = build(tmp_path / "big", tmp_path / "site")
    open_site(page, index)
    assert count(page) == 10_000
    page.select_option("select[data-facet=method]", "dvoc")
    assert count(page) == sum(t["method"] == "dvoc" for t in trials)
    page.click("table.trials tbody tr:last-child td a")
    page.wait_for_selector("#filmstrip .step")
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    assert page.locator("#filmstrip .frame img").count() >= 1
    assert not page.errors


def test_the_authors_clone_with_their_frames(tmp_path: Path, page) -> None:
    """``--upstream <their clone>``: the report's records (their aggregate file), each trial's frames from the
    tree folder whose trial.json equals the record (found here by a plain scan), the crosshair where their
    iteration history says and the target box around their target position."""
    clone = need_upstream()
    out = tmp_path / "site"
    p = subprocess.run(view_cmd("--upstream", str(clone), "--out", str(out)), cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=HANG_S)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    agg = clone / "artifacts" / "previous_runs" / "complete_results.json"
    recs = json.loads(agg.read_text())["results"]
    open_site(page, out / "index.html")
    assert count(page) == len(recs) == 600
    tree = agg.parent / "artifacts"
    folders = {}
    for tj in sorted(tree.glob("*/*/*/*/trial.json")):
        folders.setdefault(tj.read_text(), tj.parent)
    n = next(i for i, r in enumerate(recs) if r["method"] == "dvoc" and r["iterations"] >= 3)
    rec = recs[n]
    folder = next(f for text, f in folders.items() if json.loads(text) == rec)
    page.goto((out / "index.html").as_uri() + f"#key={agg.name}%23{n}")
    page.wait_for_selector("#filmstrip .step")
    page.wait_for_function("[...document.images].every(i => i.complete)")
    imgs = page.evaluate(
        "[...document.querySelectorAll('#filmstrip .frame img')].map(i => [i.src, i.naturalWidth])"
    )
    history = rec["iteration_history"]
    want = [(folder / f"iter_{k:03d}.png").resolve().as_uri() for k in range(len(history))]
    assert [src for src, _ in imgs] == want and all(w > 0 for _, w in imgs)
    width, height = Image.open(folder / "iter_000.png").size
    for k, h in enumerate(history):
        got = page.evaluate(
            """n => { const f = document.querySelectorAll('#filmstrip .frame')[n];
                const i = f.querySelector('img').getBoundingClientRect();
                const r = f.querySelector('rect.target').getBoundingClientRect();
                const c = f.querySelector('circle.current').getBoundingClientRect();
                return {i: [i.width, i.height],
                        r: [r.left - i.left, r.top - i.top, r.right - i.left, r.bottom - i.top],
                        c: [(c.left + c.right) / 2 - i.left, (c.top + c.bottom) / 2 - i.top]}; }""",
            k,
        )
        sx, sy = width / got["i"][0], height / got["i"][1]
        assert [got["c"][0] * sx, got["c"][1] * sy] == pytest.approx(
            [h["draft"]["x"], h["draft"]["y"]], abs=1.5 * max(sx, sy)
        )
        tx, ty = rec["target_position"]["x"], rec["target_position"]["y"]
        assert got["r"][0] * sx <= tx <= got["r"][2] * sx and got["r"][1] * sy <= ty <= got["r"][3] * sy
    # a record no trial.json equals shows no frame and says why; the first page says how many
    trees = [json.loads(text) for text in folders]
    lost = next(i for i, r in enumerate(recs) if r not in trees and r["iteration_history"])
    page.goto((out / "index.html").as_uri() + f"#key={agg.name}%23{lost}")
    page.wait_for_selector("#filmstrip .step")
    assert page.locator("#filmstrip img").count() == 0
    assert "no trial.json in the authors' tree equals this record" in page.text_content("#filmstrip")
    page.goto((out / "index.html").as_uri())
    page.wait_for_selector("#count")
    left = [json.loads(tj.read_text()) for tj in tree.glob("*/*/*/*/trial.json")]
    unmatched = 0
    for r in recs:  # each folder answers one record
        if r in left:
            left.remove(r)
        else:
            unmatched += 1
    assert unmatched > 0 and f"{unmatched} records equal no trial.json there" in page.text_content("#skipped")
    assert not page.errors


def test_the_authors_clone_as_run_dir_says_to_pass_upstream() -> None:
    clone = need_upstream()
    p = subprocess.run(
        view_cmd(str(clone)), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=HANG_S
    )
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert f"pass it as --upstream {clone}" in p.stderr


def test_a_bad_port_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 52, item 8: ``--port 70000`` (and a port in use) end in one line naming --port, exit 2."""
    from dvoc_bench.view import main

    assert main([str(tmp_path), "--serve", "--port", "70000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("view: --port: ") and "\n" not in err


def test_serve_door_refuses_a_port_outside_the_range(capsys: pytest.CaptureFixture[str]) -> None:
    from dvoc_bench.serve import main

    assert main(["--port", "70000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("serve: --port: ") and "\n" not in err


def test_a_drag_trials_frames_draw_both_targets_where_the_record_says(tmp_path: Path, page) -> None:
    """A CUActSpot-format drag (issue 50) run by one-shot and DVOC with sim-ideal: every frame of the trial
    draws the start's target (cyan) and the drop's (yellow), each where the record's boxes say."""
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep
    from tests.scenes.test_cuactspot import DROP, TARGET, poly, write

    root = tmp_path / "ds"
    root.mkdir()
    write(root, "Canvas-drag", [poly("R1", TARGET), poly("R2", DROP, rank="2")])
    run = tmp_path / "run"
    run_sweep(quick_setup(["dataset=cuactspot", f"dataset.root={root}", "models=[sim-ideal]",
                           "methods=[oneshot,dvoc]", "starts=centre", "run.quiet=true", "run.frames=all"]),
              run)  # fmt: skip
    index = build(run, tmp_path / "site")
    trials = records(run / "trials.jsonl")
    for i, t in enumerate(trials):
        assert t["drag"] is not None
        open_site(page, index, f"#trial={i}")
        page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        frames = [s for s in records(run / "steps.jsonl") if s["trial_key"] == t["trial_key"]]
        assert frames and {s["drag_end"] for s in frames} <= {"from", "to", "both"}
        for n, s in enumerate(frames):
            w, h = Image.open(run / "frames" / f"{s['frame_sha']}.png").size
            sent = s["sent_size"] or [w, h]
            for sel, box in (("rect.target.from", t["target_box"]), ("rect.target.to", t["drag"]["to_box"])):
                shown, r = on_screen(page, n, sel)
                kx, ky = 2560 / shown[0], 1400 / shown[1]  # screenshot px per displayed px
                drawn = [r[0] * kx, r[1] * ky, r[2] * kx, r[3] * ky]
                assert drawn == pytest.approx(box, abs=1.5 * max(kx, ky)), (t["method"], n, sel, sent)
    assert not page.errors


def test_a_set_of_mark_drag_draws_each_ends_pick_on_its_own_frame(tmp_path: Path, page) -> None:
    """Set-of-Mark on a CUActSpot-format drag (issue 50): the record keeps both picks (``som.chosen_id``
    for the start, ``som.drop_*`` for the drop); the start's select frame draws the start's chosen mark, the
    end's select frame the end's (``drop_mark_box``), each frame names its own id."""
    from dvoc_bench.core.geometry import Box, Point
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep
    from tests.scenes.test_cuactspot import DROP, TARGET, poly, write

    root = tmp_path / "ds"
    root.mkdir()
    write(root, "Canvas-drag", [poly("R1", TARGET), poly("R2", DROP, rank="2")])
    run = tmp_path / "run"
    run_sweep(quick_setup(["dataset=cuactspot", f"dataset.root={root}", "models=[sim-ideal]",
                           "methods=[som]", "run.quiet=true", "run.frames=all"]), run)  # fmt: skip
    index = build(run, tmp_path / "site")
    (t,) = records(run / "trials.jsonl")
    som = t["som"]
    assert som["chosen_valid"] and som["drop_chosen_valid"]
    start_box = som["mark_boxes"][som["chosen_id"] - 1][:4]
    assert Box(*start_box).contains(Point(*t["final_point"]))
    assert Box(*som["drop_mark_box"][:4]).contains(Point(*t["drop_point"]))
    assert som["drop_point"] == t["drop_point"]
    open_site(page, index, "#trial=0")
    page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
    frames = [s for s in records(run / "steps.jsonl") if s["trial_key"] == t["trial_key"]]
    assert [(s["kind"], s["drag_end"]) for s in frames] == [("select", "from"), ("select", "to")]
    cards = page.locator("#filmstrip .step")
    picks = ((start_box, som["chosen_id"]), (som["drop_mark_box"][:4], som["drop_chosen_id"]))
    for n, (box, pick) in enumerate(picks):
        shown, r = on_screen(page, n, "rect.mark")
        kx, ky = 2560 / shown[0], 1400 / shown[1]  # screenshot px per displayed px
        assert [r[0] * kx, r[1] * ky, r[2] * kx, r[3] * ky] == pytest.approx(box, abs=1.5 * max(kx, ky)), n
        assert f"mark id={pick}" in cards.nth(n).text_content()
    assert not page.errors
