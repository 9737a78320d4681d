"""Web scenes in a real Chromium: DOM boxes vs pixels, the network fence, hit tests, real clicks, sweeps.

Skips (with the reason) only when no Chromium can be found on this machine; CI installs one.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.draw.render import encode_png
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.web.page import new_task_page, prepare, screenshot
from dvoc_bench.scenes.web.source import WebOptions, WebScenes, task_from_mapping
from tests.support import chromium_or_skip

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True, scope="module")
def _needs_chromium() -> None:
    """Every test here drives a real Chromium: skipped with the reason without one (looked up once, when
    the first test runs, not while the tests are collected)."""
    chromium_or_skip()

WEB_IDS = ["W1", "W2", "W3", "W4", "W5"]
MAGENTA = (255, 0, 255)

_PAINT_JS = """
(sel) => {
  const t = document.querySelector(sel);
  const set = (el, k, v) => el.style.setProperty(k, v, 'important');
  set(t, 'background', 'rgb(255, 0, 255)'); set(t, 'border-color', 'rgb(255, 0, 255)');
  set(t, 'color', 'rgb(255, 0, 255)'); set(t, 'box-shadow', 'none'); set(t, 'border-radius', '0');
  set(t, 'outline', 'none');
  for (const c of t.querySelectorAll('*')) set(c, 'visibility', 'hidden');
}
"""

_BACKGROUND_JS = """
(sel) => {
  // The colour painted behind the element: its own background colour or the nearest ancestor's.
  for (let e = document.querySelector(sel); e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
    if (c.length < 4 || c[3] > 0) return c.slice(0, 3);
  }
  return [255, 255, 255];
}
"""


@pytest.fixture(scope="module")
def registry():
    reg = SceneRegistry(default_scenes_dir())
    for sid in WEB_IDS:
        reg.snapshot(sid)
    yield reg
    reg.close()


@pytest.fixture(scope="module")
def web(registry: SceneRegistry) -> WebScenes:
    return registry.source("web").backend


# ---------------------------------------------------------------------------- DOM boxes and pixels


def test_w1_to_w5_render_with_dom_targets(registry: SceneRegistry, web: WebScenes) -> None:
    expected_target = {
        "W1": "sign-in",
        "W2": "nav-docs",
        "W3": "card-beta",
        "W4": "edit-bob",
        "W5": "menu-profile",
    }
    for sid in WEB_IDS:
        snap = registry.snapshot(sid)
        assert snap.image.shape == (720, 1280, 3) and not snap.image.flags.writeable
        assert snap.truth.target_id == expected_target[sid]
        ids = [e.id for e in snap.truth.elements]
        assert len(ids) == len(set(ids)) and snap.truth.target_id in ids
        assert all(e.interactive for e in snap.truth.elements)
        assert web.blocked(sid) == (), sid  # our pages fetch nothing but their fonts
        used = {f[:3]: f[3] for f in web.scene(sid).render.fonts}
        assert used[("DVOC Fallback", "normal", "normal")] == "unloaded", sid  # no glyph fell back
        family = "DVOC Mono" if sid == "W5" else "DVOC Sans"
        assert used[(family, "normal", "normal")] == "loaded", sid
    # semantic targets: W3 is the whole card (a block link), W4 has four identical Edit buttons
    w3 = registry.truth("W3")
    assert w3.target_box.h > 100 and w3.target_box.w > 250
    edits = [e for e in registry.truth("W4").elements if e.label == "Edit"]
    assert [e.id for e in edits] == ["edit-alice", "edit-bob", "edit-carol", "edit-dan"]
    assert len({(round(e.box.w), round(e.box.h)) for e in edits}) == 1
    # W5's set-up click opened the menu: its entries exist and are measured
    w5 = {e.id for e in registry.truth("W5").elements}
    assert {"menu-toggle", "menu-profile", "menu-settings", "menu-logout"} <= w5


def test_targets_stable_and_painted_where_the_dom_says(registry: SceneRegistry, web: WebScenes) -> None:
    """A second render gives the same DOM boxes and pixels; painting the target magenta fills its box."""

    def paint(task):
        def job(session):
            live = new_task_page(session, task)
            try:
                prepare(live, task)
                live.page.evaluate(_PAINT_JS, task.selector)
                return screenshot(live.page, task.viewport)
            finally:
                live.close()

        return job

    for sid in WEB_IDS:
        first = registry.snapshot(sid)
        task = web.scene(sid).task
        again = web.render(task).snapshot  # fresh context, same browser
        assert again.truth == first.truth, sid
        assert again.content_hash == first.content_hash, sid
        assert np.array_equal(again.image, first.image), sid

        painted = web.browser.run(paint(task))
        ys, xs = np.nonzero(np.all(painted == MAGENTA, axis=2))
        box = first.target_box
        seen = Box(float(xs.min()), float(ys.min()), float(xs.max()), float(ys.max()))
        for a, b in zip(seen.as_list(), box.as_list(), strict=True):
            assert abs(a - b) <= 1.0, (sid, seen, box)

        # The clean snapshot shows the element's own background across its box ...
        bg = tuple(web.browser.run(_background(sid, task.selector)))
        x0, y0, x1, y1 = (int(np.ceil(box.x0)), int(np.ceil(box.y0)), int(box.x1), int(box.y1))
        region = first.image[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3)
        colour, count = Counter(map(tuple, region)).most_common(1)[0]
        assert _close(colour, bg), (sid, colour, bg)
        assert count / len(region) > 0.5, sid
        # ... and somewhere just outside the box the pixels are not that colour
        cy, cx = int(box.centre.y), int(box.centre.x)
        around = [(cy, x0 - 3), (cy, x1 + 3), (y0 - 3, cx), (y1 + 3, cx)]
        outside = [first.image[y, x] for y, x in around if 0 <= y < 720 and 0 <= x < 1280]
        assert any(not _close(p, bg) for p in outside), sid


def _background(sid: str, selector: str):
    return lambda session: session.state[("live", sid)].page.evaluate(_BACKGROUND_JS, selector)


def _close(a, b, tol: int = 2) -> bool:
    return max(abs(int(x) - int(y)) for x, y in zip(a, b, strict=True)) <= tol


def test_setup_actions_and_bad_pages(tmp_path: Path, web: WebScenes) -> None:
    page = tmp_path / "form.html"
    page.write_text(
        """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 40px; font-family: "DVOC Sans"; } input, button { font: inherit; }
.pop { display: none; } #tip:hover .pop { display: block; }
#low { position: absolute; top: 700px; } #gone { position: absolute; top: 900px; }
</style></head><body>
<input id="name" placeholder="Your name"><div id="tip" style="width: 200px">Help
<div class="pop"><button id="more">More help</button></div></div>
<button class="twin">A</button><button class="twin">B</button><button id="low">Low</button>
<button id="gone">Gone</button>
</body></html>""",
        encoding="utf-8",
    )
    raw = {"page": str(page), "instruction": "Click More help", "selector": "#more"}
    setup = [{"fill": {"selector": "#name", "value": "Ada"}}, {"hover": "#tip"}]
    scene = web.render(
        task_from_mapping({**raw, "setup": setup}, base=tmp_path, where="t", default_id="form")
    )
    truth = scene.snapshot.truth
    assert truth.target_id == "more" and truth.elements[[e.id for e in truth.elements].index("name")].label
    value = web.browser.run(
        lambda s: s.state[("live", "form")].page.evaluate("() => document.querySelector('#name').value")
    )
    assert value == "Ada"  # fill happened; the hover revealed the target, which was then measured
    boxes = {e.id: e.box for e in truth.elements}
    assert "gone" not in boxes  # below the fold: not on the screenshot
    assert boxes["low"].y1 == 719 and boxes["low"].y0 == 700  # partly visible: clipped to the viewport
    for over, match in [
        (
            {"setup": [{"click": "#missing"}], "selector": "#name"},
            r"setup\[0\] click '#missing': the selector matches 0",
        ),
        ({"selector": ".twin"}, "matches 2 elements"),
        ({"selector": "#gone"}, r"outside the viewport: box \[\d+(\.\d+)?, 900"),
        ({"selector": "#more"}, "not visible"),
    ]:
        task = task_from_mapping({**raw, **over}, base=tmp_path, where="t", default_id="bad")
        with pytest.raises(ConfigError, match=match):
            web.render(task)
    # a target sticking out of the viewport by less than half is scored on its visible part
    low = web.render(
        task_from_mapping({**raw, "selector": "#low"}, base=tmp_path, where="t", default_id="lo")
    )
    t = low.render.target
    assert t.box == boxes["low"] and t.dom_box is not None and t.dom_box.y1 > 719 and t.dom_box.y0 == 700


# --------------------------------------------------------------------------------------- hit tests


def test_hit_test_follows_the_dom(registry: SceneRegistry) -> None:
    for sid in WEB_IDS:
        truth = registry.truth(sid)
        p = registry.probe(sid, truth.target_box.centre)
        assert p.hit is True and p.clicked_target is None and p.blocked_requests == 0, (sid, p)
        assert p.hit_element is not None and truth.target_id in p.hit_element, (sid, p)
    w4 = {e.id: e for e in registry.truth("W4").elements}
    alice = registry.probe("W4", w4["edit-alice"].box.centre)
    assert alice.hit is False and alice.hit_element == "button#edit-alice"
    # W3: a point on the card's heading is inside the card, so it is a hit
    heading = registry.probe(
        "W3", Point(registry.truth("W3").target_box.x0 + 90, registry.truth("W3").target_box.y0 + 30)
    )
    assert heading.hit is True and heading.hit_element.startswith("a#card-beta > ")
    # W5: the entry below Profile is a sibling, not the target
    settings = registry.probe(
        "W5", {e.id: e for e in registry.truth("W5").elements}["menu-settings"].box.centre
    )
    assert settings.hit is False and settings.hit_element == "a#menu-settings"
    # empty page area
    blank = registry.probe("W1", Point(20, 700))
    assert blank.hit is False and blank.hit_element == "body"


def test_verify_click_fires_on_the_target_only(tmp_path: Path) -> None:
    reg = SceneRegistry(default_scenes_dir(), options={"web": {"verify_click": True}})
    try:
        w4 = {e.id: e for e in reg.truth("W4").elements}
        bob = reg.probe("W4", w4["edit-bob"].box.centre)
        alice = reg.probe("W4", w4["edit-alice"].box.centre)
        gap = reg.probe("W4", Point(w4["edit-bob"].box.x0 - 6, w4["edit-bob"].box.centre.y))
        assert (bob.hit, bob.clicked_target) == (True, True)
        assert (alice.hit, alice.clicked_target) == (False, False)
        assert (gap.hit, gap.clicked_target) == (False, False)
        # W5: the menu is opened by the set-up click again before every verifying click
        w5 = {e.id: e for e in reg.truth("W5").elements}
        assert reg.probe("W5", w5["menu-profile"].box.centre).clicked_target is True
        assert reg.probe("W5", w5["menu-settings"].box.centre).clicked_target is False
        # W3: anywhere on the card opens the project, also its heading text
        w3 = reg.truth("W3").target_box
        assert reg.probe("W3", Point(w3.x0 + 90, w3.y0 + 30)).clicked_target is True
        assert reg.source("web").backend.browser.launches == 1
    finally:
        reg.close()
    assert not reg.source("web").backend.browser.running


# ---------------------------------------------------------------------------------- network fence


class _CountingHandler(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        type(self).hits.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def test_network_is_blocked_and_recorded(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _CountingHandler)
    _CountingHandler.hits = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    site, outside = tmp_path / "site", tmp_path / "outside"
    site.mkdir()
    outside.mkdir()
    tile = np.zeros((8, 8, 3), np.uint8)
    tile[:] = (200, 30, 30)
    (site / "local.png").write_bytes(encode_png(tile))
    (outside / "secret.png").write_bytes(encode_png(tile))
    (site / "page.html").write_text(
        f"""<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="http://127.0.0.1:{port}/style.css">
<style>body {{ margin: 0; font-family: "DVOC Sans"; }} img {{ width: 40px; height: 40px; }}</style></head>
<body><button id="go">Go</button>
<img id="remote" src="http://127.0.0.1:{port}/pixel.png"><img id="far" src="https://example.invalid/a.png">
<img id="outside" src="../outside/secret.png"><img id="local" src="local.png">
<script>try {{ new WebSocket("ws://127.0.0.1:{port}/live"); }} catch (e) {{}}</script>
</body></html>""",
        encoding="utf-8",
    )
    opts = WebOptions.from_settings(
        {"custom": {"page": str(site / "page.html"), "selector": "#go", "instruction": "Click Go"}}
    )
    reg = SceneRegistry(default_scenes_dir(), options={"web": opts})
    try:
        snap = reg.snapshot("custom")
        web = reg.source("web").backend
        loaded = web.browser.run(
            lambda s: s.state[("live", "custom")].page.evaluate(
                "() => Object.fromEntries(Array.from(document.images).map(i => [i.id, i.naturalWidth]))"
            )
        )
        probe = reg.probe("custom", snap.target_box.centre)
        blocked = web.blocked("custom")
    finally:
        reg.close()
        server.shutdown()
    assert _CountingHandler.hits == []  # nothing reached the local server: no request left the browser
    assert f"http://127.0.0.1:{port}/pixel.png" in blocked
    assert f"http://127.0.0.1:{port}/style.css" in blocked
    assert "https://example.invalid/a.png" in blocked
    assert (outside / "secret.png").as_uri() in blocked
    assert any(u.startswith(f"ws://127.0.0.1:{port}/live") for u in blocked)
    assert loaded == {"remote": 0, "far": 0, "outside": 0, "local": 8}  # rendered without the blocked ones
    assert probe.hit is True and probe.blocked_requests == len(blocked) >= 5


# ----------------------------------------------------------------------------------------- sweeps


def test_sweep_on_web_and_byo_pages_launches_one_browser(tmp_path: Path) -> None:
    page = tmp_path / "mine.html"
    page.write_text(
        """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font-family: "DVOC Sans"; background: #fff; }
button { font: inherit; position: absolute; width: 140px; height: 50px; }
</style></head><body>
<button id="save" style="left: 900px; top: 520px; background: #16a34a; color: #fff">Save</button>
<button id="discard" style="left: 240px; top: 140px">Discard</button></body></html>""",
        encoding="utf-8",
    )
    setup = quick_setup(
        [
            "model=sim-ideal",
            "tasks=[W4,custom]",
            "methods=[dvoc,oneshot]",
            "starts=random:2",
            f"web.custom.page={page}",
            'web.custom.selector="#save"',
            "web.custom.instruction='Click the Save button'",
        ]
    )
    res = run_sweep(setup, tmp_path / "run")
    specs, trials = res.specs, res.trials
    web = setup.registry.source("web").backend
    assert web.browser.launches == 1 and not web.browser.running
    assert {t["task"] for t in trials} == {"W4", "custom"} and len(trials) == len(specs)
    for t in trials:
        assert t["status"] == "ok" and t["simulated"] and t["hit_rule"] == "dom", t
        assert t["clicked_target"] is None and t["blocked_requests"] == 0
        target = "button#edit-bob" if t["task"] == "W4" else "button#save"
        assert t["hit"] == (t["hit_element"] == target), t
    assert sum(t["hit"] for t in trials) >= len(trials) - 1  # the ideal simulator finds the target


def test_cli_dvoc_sweep_on_w1(cli, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = ("model=sim-ideal", "task=W1", "methods=[dvoc]", "starts=random:2", "run.quiet=true")
    r = cli(*args, f"hydra.run.dir={run_dir}")
    assert r.returncode == 0, r.stderr[-2000:]
    trials = [json.loads(line) for line in (run_dir / "trials.jsonl").read_text().splitlines()]
    assert len(trials) == 2
    for t in trials:
        assert t["task"] == "W1" and t["method"] == "dvoc" and t["status"] == "ok"
        assert t["hit_element"] == "button#sign-in" and t["hit"] is True and t["hit_rule"] == "dom"
    steps = [json.loads(line) for line in (run_dir / "steps.jsonl").read_text().splitlines()]
    assert steps and all((run_dir / "frames" / f"{s['frame_sha']}.png").is_file() for s in steps)
    log = (run_dir / "__main__.log").read_text()
    assert log.count("Chromium ") and log.count(" launched from ") == 1 and log.count("Chromium closed") == 1
