"""Issue 14, failure 7: an idle `python -m dvoc_bench.serve` kept its Chromium (18 processes, ~770 MB).

The browser is needed only to render the web scenes; after `--browser-idle` seconds without a request it
is closed, and requests keep being answered from the cached snapshots.
"""

import subprocess
import sys
import time

import psutil
import pytest

from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
from dvoc_bench.serve import SimBackend
from tests.support import ROOT, body_for, chromium_or_skip

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True, scope="module")
def _needs_chromium() -> None:
    """Every test here drives a real Chromium: skipped with the reason without one (looked up once, when
    the first test runs, not while the tests are collected)."""
    chromium_or_skip()


def wait_until(cond, timeout=15.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def chromium_pids(pid: int) -> set[int]:
    """Live Chromium processes below ``pid``."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return set()
    out = set()
    for k in kids:
        try:
            if "chrom" in k.name().lower() and k.status() != psutil.STATUS_ZOMBIE:
                out.add(k.pid)
        except psutil.NoSuchProcess:
            continue
    return out


def test_the_browser_closes_when_idle_and_requests_are_still_answered():
    only = build_sources(names=["synthetic", "web"])  # the browser's scenes (not every program and page)
    backend = SimBackend(registry=SceneRegistry(default_scenes_dir(), sources=only), browser_idle_s=1.0)
    me = psutil.Process().pid
    others = chromium_pids(me)  # browsers other tests of this process may still hold: not this one's
    try:
        backend.warm()  # renders W1-W5: the browser runs
        browser = backend.registry.source("web").backend.browser
        ours = chromium_pids(me) - others
        assert browser.running and ours
        t_end = time.monotonic() + 1.5
        while time.monotonic() < t_end:  # requests keep it open: the idle time counts from the last one
            assert backend.chat(body_for(backend.registry, "W1"))["choices"]
            time.sleep(0.2)
        assert backend.browser_closes == 0 and browser.running
        assert wait_until(lambda: backend.browser_closes == 1 and not browser.running)
        assert wait_until(lambda: not (chromium_pids(me) & ours))
        answer = backend.chat(body_for(backend.registry, "W2"))  # from the cached snapshot, no browser
        assert answer["choices"][0]["message"]
        assert not browser.running
    finally:
        backend.close()


def test_the_serve_command_closes_its_browser_after_the_idle_time():
    p = subprocess.Popen(
        [sys.executable, "-m", "dvoc_bench.serve", "--port", "0", "--browser-idle", "1"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = p.stdout.readline()
        assert line.startswith("serving the simulator"), line + p.stderr.read()
        assert chromium_pids(p.pid)  # the web scenes were rendered at start-up
        assert wait_until(lambda: not chromium_pids(p.pid)), "Chromium still running after 15 s idle"
        assert p.poll() is None  # the server itself keeps serving
    finally:
        p.terminate()
        p.wait(timeout=30)
    r = subprocess.run(
        [sys.executable, "-m", "dvoc_bench.serve", "--browser-idle", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "--browser-idle" in r.stderr


def test_the_scene_index_leaves_episodes_out_and_renders_no_page_or_program_for_them(monkeypatch):
    """``serve`` indexes single screens for the simulator; an episode (a MiniWoB page, a GTK program) has a
    screen per step, and rendering it would start every page and program at ``serve``'s start."""
    from dvoc_bench.app.simserve.backend import SimBackend
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir

    registry = SceneRegistry(
        default_scenes_dir(), sources=build_sources(names=["synthetic", "miniwob", "gtk_episodes"])
    )
    asked: list[str] = []
    real = registry.snapshot
    monkeypatch.setattr(registry, "snapshot", lambda sid: asked.append(sid) or real(sid))
    instr, _ = SimBackend(registry=registry)._scene_index()
    ids = registry.ids()
    assert any(i.startswith("miniwob.") for i in ids) and any(i.startswith("gtk.") for i in ids)
    assert asked and all(registry.kind(s) == "synthetic" for s in asked), asked
    assert set(instr) == {s for s in registry.ids() if s.startswith("S")}
