"""Bring-your-own pages: Playwright selectors, not-visible reasons, high-DPI frames, a local dev server,
and pages that fail their own trials without stopping the sweep. Skips only without a Chromium."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Point
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.summary import exit_code, run_report
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.sources import SceneError
from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium
from dvoc_bench.scenes.web.source import WebOptions, WebScenes, task_from_mapping
from tests.support import need

pytestmark = pytest.mark.e2e

try:
    find_chromium()
except ChromiumNotFoundError as e:  # pragma: no cover - CI always has one
    need("CHROMIUM", str(e), module=True)

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font-family: "DVOC Sans"; } button, a { font: inherit; }
#top-next { position: absolute; left: 40px; top: 20px; }
#bottom-next { position: absolute; left: 40px; top: 1500px; }
#menu { position: absolute; left: 300px; top: 20px; width: 120px; height: 40px; }
#hidden { display: none; }
#zero { position: absolute; left: 10px; top: 200px; width: 0; height: 0; padding: 0; border: 0; }
#under { position: absolute; left: 500px; top: 100px; width: 120px; height: 40px; }
#cover { position: absolute; left: 480px; top: 90px; width: 200px; height: 80px; background: #eee; }
#edge { position: absolute; left: -4px; top: 300px; width: 100px; height: 30px; }
.card { position: absolute; top: 400px; width: 100px; height: 40px; }
</style></head><body>
<a id="top-next" accesskey="n" href="#next">Next chapter</a>
<a id="bottom-next" accesskey="n" href="#next">Next chapter</a>
<button id="menu" aria-label="Settings">&#9881;</button>
<button id="hidden">Hidden</button><button id="zero"></button>
<button id="under">Under</button><div id="cover">overlay</div>
<a id="edge" href="#edge">Edge link</a>
<button class="card" style="left: 100px">Open</button><button class="card" style="left: 300px">Open</button>
</body></html>"""


@pytest.fixture(scope="module")
def web() -> WebScenes:
    w = WebScenes(WebOptions(timeout_s=8))
    yield w
    w.close()


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("pages") / "page.html"
    p.write_text(PAGE, encoding="utf-8")
    return p


def _task(page: Path, selector: str, **over):
    raw = {"page": str(page), "selector": selector, "instruction": "Click it", **over}
    return task_from_mapping(raw, base=page.parent, where="t", default_id="sel")


@pytest.mark.parametrize(
    ("selector", "target"),
    [
        ('a[accesskey="n"] >> nth=0', "top-next"),  # Playwright's nth, not a CSS error
        ('a[accesskey="n"]', "top-next"),  # twin far below the fold: the one in view is the target
        ("text=Edge link", "edge"),
        ('role=button[name="Settings"]', "menu"),
        ('internal:role=button[name="Settings"i]', "menu"),
        ("body >> button:visible >> nth=0", "menu"),  # chaining and :visible (#hidden comes first)
    ],
)
def test_playwright_selectors_pick_the_visible_match(web: WebScenes, page: Path, selector, target) -> None:
    scene = web.render(_task(page, selector))
    assert scene.snapshot.truth.target_id == target
    probe = web.probe("sel", scene.snapshot.target_box.centre)
    assert probe.hit is True and f"#{target}" in (probe.hit_element or "")


def test_not_visible_reasons_and_ambiguity(web: WebScenes, page: Path) -> None:
    cases = [
        ("#hidden", r"not visible: display:none"),
        ("#zero", r"not visible: zero size \(0x0\)"),
        ("#under", r"not visible: covered by div#cover"),
        (
            "#bottom-next",
            r"outside the viewport: box \[40, 1500, .*\] \(CSS px\), viewport 1280x720, 0% inside",
        ),
        (
            ".card",
            r"matches 2 elements, 2 of them visible.*\[0\] body > button.card box \[100, 400, .*\[1\] "
            r"body > button.card box \[300, 400.*add '>> nth=N'",
        ),
        ("#nothing", "matches nothing"),
        ("a[[", "not a valid selector"),
    ]
    for selector, match in cases:
        with pytest.raises(SceneError, match=match) as e:
            web.render(_task(page, selector))
        assert "\n" not in str(e.value)
    # scroll_to brings the twin below the fold into view; then it is the target
    scene = web.render(_task(page, "#bottom-next", scroll_to="#bottom-next"))
    assert scene.snapshot.truth.target_box.y0 < 720 and scene.snapshot.truth.target_id == "bottom-next"


def test_edge_target_is_scored_on_its_visible_part(web: WebScenes, page: Path) -> None:
    scene = web.render(_task(page, "#edge"))
    t = scene.render.target
    assert t.dom_box is not None and t.dom_box.x0 == -4 and t.dom_box.x1 == 95
    assert t.box.x0 == 0 and t.box.x1 == 95 and scene.snapshot.truth.target_box == t.box


def test_2x_frames_scale_dom_boxes(web: WebScenes, page: Path) -> None:
    one = web.render(_task(page, "#menu"))
    two = web.render(
        _task(page, "#menu", viewport={"width": 640, "height": 360, "device_scale_factor": 2}, id="two")
    )
    assert two.snapshot.image.shape == (720, 1280, 3) and two.snapshot.truth.size.as_list() == [1280, 720]
    b1, b2 = one.render.target.box, two.render.target.box
    # DOM box [300, 20, 420, 60) -> at 2x [600, 40, 840, 120) -> edges-inclusive pixels
    assert (b1.x0, b1.y0, b1.x1, b1.y1) == (300, 20, 419, 59)
    assert (b2.x0, b2.y0, b2.x1, b2.y1) == (600, 40, 839, 119)
    assert web.probe("two", b2.centre).hit is True  # image pixels map back to CSS pixels
    assert web.probe("two", Point(b2.x1 + 4, b2.centre.y)).hit is False
    # the gear is drawn where the box says: its pixels differ from the background inside, not outside
    img = two.snapshot.image
    assert (img[40:120, 600:840] != 255).any() and (img[130:200, 600:840] == 255).all()


# ----------------------------------------------------------------------------- a local dev server


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture()
def server(tmp_path: Path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "style.css").write_text("#save { background: rgb(200, 0, 0); color: #fff; width: 160px; }")
    (site / "index.html").write_text(
        '<!doctype html><html><head><link rel="stylesheet" href="/style.css"><script src="/app.js">'
        '</script></head><body style="margin:0;font-family:\'DVOC Sans\'"><div id="app"></div></body></html>'
    )
    (site / "app.js").write_text(
        "window.addEventListener('DOMContentLoaded', () => {"
        " const b = document.createElement('button'); b.id = 'save'; b.textContent = 'Save';"
        " document.getElementById('app').appendChild(b);"
        " fetch('http://127.0.0.1:9/elsewhere').catch(() => {}); });"
    )
    handler = functools.partial(_Quiet, directory=str(site))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


def test_page_from_a_local_dev_server(server: str) -> None:
    opts = WebOptions.from_settings(
        {
            "allow_origins": [server],
            "custom": {"page": server + "/index.html", "selector": "text=Save", "instruction": "Save",
                       "wait_for": "#save"},
        }
    )  # fmt: skip
    reg = SceneRegistry(default_scenes_dir(), options={"web": opts})
    try:
        snap = reg.snapshot("custom")
        web = reg.source("web").backend
        box = snap.target_box
        colour = snap.image[int(box.centre.y), int(box.x0) + 3]
        assert tuple(int(c) for c in colour) == (200, 0, 0)  # the served stylesheet applied
        assert web.blocked("custom") == ("http://127.0.0.1:9/elsewhere",)  # other ports stay fenced
        assert reg.probe("custom", box.centre).hit is True
    finally:
        reg.close()
    for bad, match in [
        (["http://10.0.0.1:8000"], "only loopback servers"),
        (["http://127.0.0.1"], "must be an origin like"),
        (["http://127.0.0.1:8000/app"], "must be an origin like"),
    ]:
        with pytest.raises(ConfigError, match=match):
            WebOptions.from_settings({"allow_origins": bad})
    with pytest.raises(ConfigError, match=r"web.allow_origins=\[http://127.0.0.1:8001\]"):
        WebOptions.from_settings(
            {"custom": {"page": "http://127.0.0.1:8001/", "selector": "a", "instruction": "x"}}
        )


# ------------------------------------------------------------------------- failing pages, one sweep


def test_hanging_and_leaving_pages_fail_their_own_trials(tmp_path: Path) -> None:
    (tmp_path / "good.html").write_text(
        '<!doctype html><body style="margin:0"><button id="go" style="position:absolute;left:600px;'
        'top:300px;width:120px;height:50px">Go</button></body>'
    )
    (tmp_path / "hang.html").write_text(
        "<!doctype html><body><button id=go>Go</button><script>while (true) {}</script>"
    )
    (tmp_path / "spin.html").write_text(
        "<!doctype html><body><button id=go>Go</button>"
        "<script>addEventListener('load', () => setTimeout(() => { while (true) {} }, 50));</script>"
    )
    (tmp_path / "leave.html").write_text(
        "<!doctype html><body><button id=go>Go</button>"
        "<script>addEventListener('load', () => setTimeout(() => location.href = 'good.html', 20));</script>"
    )
    for name in ("good", "hang", "spin", "leave"):
        (tmp_path / f"{name}.yaml").write_text(
            f"id: {name}\npage: {name}.html\nselector: '#go'\ninstruction: Click Go\n"
        )
    files = ",".join(str(tmp_path / f"{n}.yaml") for n in ("good", "hang", "spin", "leave"))
    setup = quick_setup(
        ["model=sim-ideal", "tasks=[good,hang,spin,leave]", "methods=[dvoc,oneshot]", "starts=random:1",
         f"web.task_files=[{files}]", "web.timeout_s=4"]
    )  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    by = {}
    for t in res.trials:
        by.setdefault(t["task"], []).append(t)
    assert len(res.trials) == 8
    assert all(t["status"] == "ok" and t["hit_rule"] == "dom" for t in by["good"])
    for name, match in [("hang", "loading the page: no answer within 4 s"), ("spin", ": no answer within "),
                        ("leave", "navigated away")]:  # fmt: skip
        for t in by[name]:
            assert t["status"] == "error" and t["error_class"] == "scene", t
            assert match in t["error"] and "\n" not in t["error"], t["error"]
    lines = run_report(res.trials, ran=res.ran)
    assert lines[0].startswith("trials: 8 (2 ok,") and "6 error" in lines[0]
    assert any(line.startswith("error: scene x6: ") for line in lines), lines
    assert exit_code(res.trials) == 0  # model trials ran and some ended ok


def test_cli_console_summary_and_exit_code_with_a_failing_page(cli, tmp_path: Path) -> None:
    (tmp_path / "good.html").write_text('<!doctype html><body><button id="go">Go</button></body>')
    (tmp_path / "leave.html").write_text(
        "<!doctype html><body><button id=go>Go</button>"
        "<script>addEventListener('load', () => setTimeout(() => location.href = 'good.html', 20));</script>"
    )
    for name in ("good", "leave"):
        (tmp_path / f"{name}.yaml").write_text(f"page: {name}.html\nselector: '#go'\ninstruction: Click Go\n")
    files = f"[{tmp_path / 'good.yaml'},{tmp_path / 'leave.yaml'}]"
    run_dir = tmp_path / "run"
    args = ("model=sim-ideal", "tasks=[good,leave]", "methods=[oneshot]", "starts=random:1", "run.quiet=true")
    r = cli(*args, f"web.task_files={files}", f"hydra.run.dir={run_dir}")
    assert r.returncode == 0, r.stderr[-2000:]
    out = r.stdout + r.stderr
    assert "trials: 2 (1 ok," in out and "1 error" in out
    assert "error: scene x1: leave: the page navigated away from" in out
    # every trial of the failing page failed, none of the good one's: exit 3 only when nothing is ok
    r = cli("model=sim-ideal", "tasks=[leave]", "methods=[oneshot]", "starts=random:1", "run.quiet=true",
            f"web.task_files={files}", f"hydra.run.dir={tmp_path / 'run2'}")  # fmt: skip
    assert r.returncode == 3 and "error: scene x1" in r.stdout + r.stderr
