"""``python -m dvoc_bench.bench view [--trials N] [--from RUN_DIR]``: the run viewer at scale.

Builds a synthetic run directory of ``--trials`` trials (default 10,000) from a real run (``--from``, else
the default sweep ``python -m dvoc_bench`` run into a temporary folder first): the real run's trials and
steps repeated with fresh trial keys and repeat numbers, its ``frames/`` linked (content-addressed: the
same frames). Then measures, in Debian's Chromium (headless): the site's build time, its size beyond the
frames, the open time of the table (``file://`` page load until the trial count shows), a filter change,
and a trial page until all its frames have loaded. Target: the table opens in < 3 s. Last line:
``trials=<n> build_s=<b> site_mb=<m> open_s=<o> filter_s=<f> trial_s=<t> cores=<c> load=<1-min load>``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from dvoc_bench.core.rundir import RUN, SHOTS, STEPS, TRIALS, dumps, read_jsonl

_ROOT = Path(__file__).resolve().parents[2]


def synthetic_run(source: Path, out: Path, n_trials: int) -> int:
    """Write a run dir of ``n_trials`` trials under ``out`` from ``source``'s records; the trials written."""
    trials = list(read_jsonl(source / TRIALS))
    steps: dict[str, list[dict]] = {}
    for s in read_jsonl(source / STEPS):
        steps.setdefault(s["trial_key"], []).append(s)
    out.mkdir(parents=True)
    (out / SHOTS).symlink_to((source / SHOTS).resolve())
    (out / RUN).write_text((source / RUN).read_text())
    n = 0
    with (out / TRIALS).open("w") as ft, (out / STEPS).open("w") as fs:
        while n < n_trials:
            rep = n // len(trials)
            for t in trials:
                if n >= n_trials:
                    break
                key = f"{t['trial_key']}-{rep}"
                ft.write(dumps({**t, "trial_key": key, "rep": rep}) + "\n")
                for s in steps.get(t["trial_key"], []):
                    fs.write(dumps({**s, "trial_key": key}) + "\n")
                n += 1
    return n


def measure(index: Path, chromium: str) -> dict[str, float]:
    """Seconds to open the table, change a filter, and show a trial with every frame loaded."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        page.goto(index.as_uri())
        page.wait_for_selector("#count")
        open_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        page.select_option("select[data-facet=method]", "dvoc")
        page.wait_for_function("document.querySelector('select[data-facet=method]').value === 'dvoc'")
        filter_s = time.perf_counter() - t0
        last = page.evaluate("DVOC && document.querySelector('table.trials tbody tr:last-child').dataset.i")
        t0 = time.perf_counter()
        page.evaluate(f"location.hash = 'trial={last}'")
        page.wait_for_selector("#filmstrip")
        page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        trial_s = time.perf_counter() - t0
        browser.close()
    return {"open_s": open_s, "filter_s": filter_s, "trial_s": trial_s}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dvoc_bench.bench view", description=__doc__.split("\n")[0])
    p.add_argument("--trials", type=int, default=10_000, help="trials of the synthetic run (default 10000)")
    p.add_argument("--from", dest="source", type=Path, default=None, help="the real run to repeat")
    args = p.parse_args(argv)
    from dvoc_bench.analysis.viewer import build_site, write_site
    from dvoc_bench.scenes.web.chromium import find_chromium

    with tempfile.TemporaryDirectory(prefix="dvoc-view-bench-") as tmp:
        source = args.source
        if source is None:
            source = Path(tmp) / "source"
            env = {**os.environ, "PYTHONPATH": str(_ROOT)}
            cmd = [sys.executable, "-m", "dvoc_bench", f"hydra.run.dir={source}", "run.quiet=true"]
            subprocess.run(cmd, cwd=_ROOT, env=env, check=True, capture_output=True, timeout=900)
        run = Path(tmp) / "big"
        n = synthetic_run(source, run, args.trials)
        out = Path(tmp) / "site"
        t0 = time.perf_counter()
        index = write_site(build_site([run], out), out)
        build_s = time.perf_counter() - t0
        site_mb = sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) / 1e6
        m = measure(index, find_chromium())
    load = os.getloadavg()[0]
    print(
        f"trials={n} build_s={build_s:.2f} site_mb={site_mb:.1f} open_s={m['open_s']:.2f} "
        f"filter_s={m['filter_s']:.2f} trial_s={m['trial_s']:.2f} cores={os.cpu_count()} load={load:.2f}"
    )
    return 0
