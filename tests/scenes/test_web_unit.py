"""Web scenes without a browser: Chromium discovery, the request filter, task specs and options, probes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.records import Probe
from dvoc_bench.scenes import SceneRegistry, box_probe, default_scenes_dir
from dvoc_bench.scenes.web.browser import request_allowed, url_to_path
from dvoc_bench.scenes.web.chromium import HOW_TO_GET, ChromiumNotFoundError, resolve_chromium
from dvoc_bench.scenes.web.page import SetupAction, font_css, font_files, setup_actions
from dvoc_bench.scenes.web.source import CUSTOM_ID, WebOptions, WebScenes, load_task, task_from_mapping

WEB = default_scenes_dir() / "web"

# ------------------------------------------------------------------------------- chromium discovery


def _fs(*files: str):
    present = set(files)
    return (lambda p: p in present), (
        lambda name: f"/opt/bin/{name}" if f"/opt/bin/{name}" in present else None
    )


def test_chromium_order_playwright_own_first() -> None:
    exists, which = _fs("/pw/chrome", "/usr/bin/chromium", "/env/chrome")
    got = resolve_chromium(
        None, "/pw/chrome", env={"DVOC_CHROMIUM": "/env/chrome"}, which=which, exists=exists
    )
    assert got == "/pw/chrome"


def test_chromium_order_env_then_system() -> None:
    exists, which = _fs("/usr/bin/chromium", "/env/chrome")
    env = {"DVOC_CHROMIUM": "/env/chrome"}
    assert resolve_chromium(None, "/pw/missing", env=env, which=which, exists=exists) == "/env/chrome"
    assert resolve_chromium(None, "/pw/missing", env={}, which=which, exists=exists) == "/usr/bin/chromium"
    exists, which = _fs("/opt/bin/google-chrome")
    assert resolve_chromium(None, None, env={}, which=which, exists=exists) == "/opt/bin/google-chrome"


def test_chromium_explicit_path_wins_and_must_exist() -> None:
    exists, which = _fs("/pw/chrome", "/my/chrome")
    assert resolve_chromium("/my/chrome", "/pw/chrome", env={}, which=which, exists=exists) == "/my/chrome"
    with pytest.raises(ChromiumNotFoundError, match="web.chromium: '/nope'"):
        resolve_chromium("/nope", "/pw/chrome", env={}, which=which, exists=exists)
    with pytest.raises(ChromiumNotFoundError, match="DVOC_CHROMIUM='/gone'"):
        resolve_chromium(None, None, env={"DVOC_CHROMIUM": "/gone"}, which=which, exists=exists)


def test_no_chromium_is_a_one_line_config_error_saying_how() -> None:
    exists, which = _fs()
    with pytest.raises(ChromiumNotFoundError) as e:
        resolve_chromium(None, "/pw/missing", env={}, which=which, exists=exists)
    msg = str(e.value)
    assert isinstance(e.value, ConfigError) and "\n" not in msg and msg == HOW_TO_GET
    assert "python -m playwright install chromium" in msg and "apt-get install chromium" in msg


# ------------------------------------------------------------------------------------ request filter


def test_request_filter_allows_only_local_page_files(tmp_path: Path) -> None:
    page = tmp_path / "site" / "page.html"
    font = Path("/fonts/DejaVuSans.ttf")
    ok = [
        page.as_uri(),
        page.as_uri() + "#section",
        (page.parent / "img" / "a.png").as_uri(),
        font.as_uri(),
        "data:image/png;base64,AAAA",
        "about:blank",
    ]
    blocked = [
        "http://127.0.0.1:8000/a.png",
        "https://example.com/a.png",
        "ws://example.com/socket",
        (tmp_path / "other" / "secret.txt").as_uri(),
        page.parent.as_uri() + "/../other/secret.txt",
        "file://remote-host/share/page.html",
        "ftp://example.com/x",
    ]
    root = page.parent.resolve()
    for url in ok:
        assert request_allowed(url, root, [font]), url
    for url in blocked:
        assert not request_allowed(url, root, [font]), url
    # a symlink beside the page that points out of the root is outside it; one pointing inside is fine
    root.mkdir(parents=True)
    (root / "leak.txt").symlink_to("/etc/passwd")
    (root / "inner.txt").write_text("x")
    (root / "alias.txt").symlink_to(root / "inner.txt")
    assert not request_allowed((root / "leak.txt").as_uri(), root, [font])
    assert request_allowed((root / "alias.txt").as_uri(), root, [font])
    # a wider root allows the sibling folder; loopback origins only when listed, WebSockets by their origin
    assert request_allowed((tmp_path / "other" / "secret.txt").as_uri(), tmp_path.resolve())
    origins = ("http://127.0.0.1:8000",)
    assert request_allowed("http://127.0.0.1:8000/a.png", root, (), origins)
    assert request_allowed("ws://127.0.0.1:8000/hmr", root, (), origins)
    assert not request_allowed("http://127.0.0.1:8001/a.png", root, (), origins)
    assert not request_allowed("http://localhost:8000/a.png", root, (), origins)
    assert not request_allowed(page.as_uri(), None)  # a served page gets no local files


def test_url_to_path_decodes() -> None:
    assert url_to_path("file:///srv/my%20dir/p.html?x=1#y") == Path("/srv/my dir/p.html")
    assert url_to_path("https://x/p.html") is None


# ------------------------------------------------------------------------------------------ fonts


def test_font_css_names_files_that_exist_and_freezes_animation() -> None:
    files = font_files()
    assert {"DejaVuSans.ttf", "DejaVuSansMono.ttf", "LastResortHE-Regular.ttf"} <= set(files)
    css = font_css()
    for path in files.values():
        assert path.is_file() and path.as_uri() in css
    assert css.count("@font-face") == len(files)
    assert "animation: none !important" in css and "transition: none !important" in css


def test_shipped_pages_name_only_the_pinned_fonts_and_no_machine_path() -> None:
    for html in sorted(WEB.glob("W*.html")):
        text = html.read_text(encoding="utf-8")
        assert "file:" not in text and "http" not in text.lower(), html.name
        decls = [line.split("font-family:")[1] for line in text.splitlines() if "font-family:" in line]
        families = {d.split(";")[0].strip() for d in decls}
        assert families, html.name
        for fam in families:
            names = {f.strip().strip('"') for f in fam.split(",")}
            assert names <= {"DVOC Sans", "DVOC Mono", "DVOC Fallback"}, (html.name, fam)


def test_shipped_page_text_is_covered_by_dejavu() -> None:
    """Every visible character of W1-W5 exists in DejaVu Sans, so no page falls back to any other font."""
    import html as htmllib
    import re

    from fontTools.ttLib import TTFont

    files = font_files()
    cmap = set(TTFont(files["DejaVuSans.ttf"]).getBestCmap())
    for page in sorted(WEB.glob("W*.html")):
        text = re.sub(
            r"<style.*?</style>|<!--.*?-->|<[^>]+>", " ", page.read_text(encoding="utf-8"), flags=re.S
        )
        missing = sorted({c for c in htmllib.unescape(text) if not c.isspace() and ord(c) not in cmap})
        assert not missing, (page.name, missing)


# -------------------------------------------------------------------------------------- task specs


def test_shipped_tasks_load() -> None:
    tasks = {p.stem: load_task(p) for p in sorted(WEB.glob("W*.yaml"))}
    assert sorted(tasks) == ["W1", "W2", "W3", "W4", "W5"]
    assert {t.selector for t in tasks.values()} == {
        "#sign-in",
        "#nav-docs",
        "#card-beta",
        "#edit-bob",
        "#menu-profile",
    }
    for sid, t in tasks.items():
        assert t.id == sid and t.page == WEB / f"{sid}.html" and t.viewport.as_list() == [1280, 720]
    assert tasks["W5"].setup == (SetupAction("click", "#menu-toggle"),)
    assert all(not t.setup for sid, t in tasks.items() if sid != "W5")


def _task(tmp_path: Path, **over) -> dict:
    page = tmp_path / "p.html"
    page.write_text("<button id=go>Go</button>", encoding="utf-8")
    return {"page": "p.html", "instruction": "Click Go", "selector": "#go", **over}


def test_task_spec_defaults_and_paths(tmp_path: Path) -> None:
    t = task_from_mapping(_task(tmp_path), base=tmp_path, where="x", default_id="mine")
    assert (
        t.id == "mine" and t.page == (tmp_path / "p.html").resolve() and t.viewport.as_list() == [1280, 720]
    )
    by_url = _task(tmp_path, page=(tmp_path / "p.html").as_uri())
    url = task_from_mapping(by_url, base=Path("/"), where="x", default_id="u")
    assert url.page == t.page


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"colour": "red"}, "unknown key"),
        ({"selector": ""}, "'selector' is required"),
        ({"instruction": None}, "'instruction' is required"),
        ({"page": "https://example.com/"}, "only local files"),
        ({"page": "missing.html"}, "file not found"),
        ({"viewport": [10, 720]}, "viewport"),
        ({"viewport": "big"}, "viewport"),
        ({"difficulty": "brutal"}, "difficulty"),
        ({"setup": [{"tap": "#go"}]}, "unknown action 'tap'"),
        ({"setup": [{"click": ""}]}, "non-empty CSS selector"),
        ({"setup": [{"fill": "#go"}]}, "fill takes"),
        ({"setup": "click"}, "must be a list"),
    ],
)
def test_task_spec_errors_name_the_key(tmp_path: Path, over: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        task_from_mapping(_task(tmp_path, **over), base=tmp_path, where="t.yaml", default_id="t")


def test_setup_actions_parse() -> None:
    got = setup_actions([{"click": "#a"}, {"hover": " .b "}, {"fill": {"selector": "#c", "value": 42}}], "s")
    assert got == (SetupAction("click", "#a"), SetupAction("hover", ".b"), SetupAction("fill", "#c", "42"))


# ----------------------------------------------------------------------------------------- options


def test_options_defaults_and_errors(tmp_path: Path) -> None:
    o = WebOptions.from_settings(None)
    assert o == WebOptions() and not o.verify_click and o.custom is None
    # the config's empty custom block (viewport only) defines no task
    assert (
        WebOptions.from_settings({"custom": {"page": None, "viewport": [1280, 720], "setup": []}}).custom
        is None
    )
    for raw, match in [
        ({"verify_click": "maybe"}, "web.verify_click: must be true or false"),
        ({"timeout_s": 0}, "web.timeout_s"),
        ({"chromium": " "}, "web.chromium: must be a path to a Chromium binary, got ' '"),
        ({"speed": 1}, "web.speed: unknown key"),
        ({"task_files": ["nope.yaml"]}, r"web.task_files\[0\]"),
        ({"custom": {"selector": "#go", "instruction": "x"}}, "web.custom.page: required"),
        ({"custom": {"page": "p.html", "selector": "#go", "colour": 1}}, "web.custom.colour: unknown key"),
    ]:
        with pytest.raises(ConfigError, match=match):
            WebOptions.from_settings(raw, cwd=tmp_path)


def test_the_settings_block_is_the_web_package_s_and_reaches_the_source_as_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dvoc_bench.runner.settings import Settings, load_settings
    from dvoc_bench.scenes.web import source as web_source_mod
    from dvoc_bench.scenes.web.settings import Web

    assert Settings.model_fields["web"].annotation is Web  # declared once, by the package that uses it
    _task(tmp_path)
    settings = load_settings({"web": {"timeout_s": 12, "custom": {"page": str(tmp_path / "p.html"),
                                                                  "selector": "#go", "instruction": "Go"}}})
    assert isinstance(settings.web, Web)

    def again(*a: object, **k: object) -> None:
        raise AssertionError("the validated web block was validated again")

    monkeypatch.setattr(web_source_mod, "validate", again)
    reg = SceneRegistry(default_scenes_dir(), options={"web": settings.web})
    web = reg.source("web").backend
    assert web.options.timeout_s == 12 and web.task(web.extra[CUSTOM_ID]).selector == "#go"


def test_byo_tasks_join_the_registry_without_a_browser(tmp_path: Path) -> None:
    raw = _task(tmp_path)
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({**raw, "id": "mine"}), encoding="utf-8")
    opts = {"task_files": ["mine.yaml"], "custom": {"page": "p.html", "selector": "#go", "instruction": "Go"}}
    reg = SceneRegistry(default_scenes_dir(), options={"web": WebOptions.from_settings(opts, cwd=tmp_path)})
    web_ids = [i for i in reg.ids() if not i.startswith(("miniwob.", "gtk."))]  # episodes follow
    assert web_ids[-7:] == ["W1", "W2", "W3", "W4", "W5", CUSTOM_ID, "mine"]
    web = reg.source("web").backend
    assert isinstance(web, WebScenes) and web.browser.launches == 0 and not web.browser.running
    assert web.task(web.extra[CUSTOM_ID]).selector == "#go" and web.task(web.extra["mine"]).id == "mine"


def test_byo_id_clash_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "W1.yaml").write_text(yaml.safe_dump({**_task(tmp_path), "id": "W1"}), encoding="utf-8")
    opts = WebOptions.from_settings({"task_files": ["W1.yaml"]}, cwd=tmp_path)
    with pytest.raises(ValueError, match="defined twice"):
        SceneRegistry(default_scenes_dir(), options={"web": opts}).ids()


# ------------------------------------------------------------------------------------------ probes


def test_synthetic_probe_is_the_topmost_box_and_the_box_rule_stands() -> None:
    reg = SceneRegistry(default_scenes_dir())
    truth = reg.truth("S3")
    target = truth.target_box
    p = reg.probe("S3", target.centre)
    assert p == Probe(hit_element=truth.target_id, hit=None)
    assert reg.probe("S3", Point(799, 599)).hit_element is None
    # topmost = last drawn among the boxes containing the point
    for e in truth.elements:
        c = e.box.centre
        under = [x.id for x in truth.elements if x.box.contains(c)]
        assert box_probe(truth, c).hit_element == under[-1]
    rec = _record(target.centre, target, p)
    fields = {k: getattr(rec, k) for k in ("hit", "hit_rule", "hit_box", "hit_element", "clicked_target")}
    assert fields == {
        "hit": True,
        "hit_rule": "box",
        "hit_box": True,
        "hit_element": truth.target_id,
        "clicked_target": None,
    }
    assert rec.blocked_requests is None


def _record(point, target, probe):
    """The trials.jsonl record of a trial that ended at ``point`` with ``probe`` under it."""
    from dvoc_bench.core.records import TrialRecord, TrialResult, TrialSpec

    spec = TrialSpec(
        trial_key="k", experiment="e", model="m", model_id="m", api_base=None, provider="p", simulated=True,
        coord_frame="pixel", task="W4", scene_hash="h", method="centre", protocol="-", alpha="-",
        overlay="-", predict="-", start=None, start_index=1, rep=0, seed=0, epsilon=30.0,
        conf_threshold=0.5, window=2, max_iterations=15, max_attempts=5, alpha_constant=0.5,
    )  # fmt: skip
    res = TrialResult(status="ok", stop_reason="baseline", final_point=point.as_list())
    return TrialRecord.build(spec, res, target, 0.0, scene_kind="web", probe=probe)


def test_dom_probe_decides_hit() -> None:
    target = Box(0, 0, 100, 100)
    miss = Probe(hit_element="button#edit-alice", hit=False, clicked_target=False, blocked_requests=0)
    f = _record(Point(50, 50), target, miss)
    assert f.hit is False and f.hit_box is True and f.hit_rule == "dom"
    assert f.hit_element == "button#edit-alice" and f.clicked_target is False and f.blocked_requests == 0
    none = _record(Point(500, 500), target, None)
    assert none.hit is False and none.hit_element is None and none.hit_rule == "box"


def test_launch_args_fence_and_allowed_origins() -> None:
    from dvoc_bench.scenes.web.chromium import NO_PROXY_HOST, launch_args

    base = launch_args()
    assert "--webrtc-ip-handling-policy=disable_non_proxied_udp" in base
    assert f"--proxy-server=http://{NO_PROXY_HOST}:9" in base and "--proxy-bypass-list=<-loopback>" in base
    assert "--host-resolver-rules=MAP * ~NOTFOUND" in base
    wide = launch_args(("http://127.0.0.1:8000", "http://localhost:5173"))
    assert "--proxy-bypass-list=<-loopback>;127.0.0.1:8000;localhost:5173" in wide
    assert "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost" in wide
    assert len(wide) == len(base)


def test_one_disable_features_switch_carries_playwrights_list_and_ours() -> None:
    from dvoc_bench.scenes.web.chromium import PLAYWRIGHT_DISABLED_FEATURES, dropped_features, launch_args

    for args in (launch_args(), launch_args(("http://127.0.0.1:8000",))):
        lists = [a.split("=", 1)[1].split(",") for a in args if a.startswith("--disable-features=")]
        assert len(lists) == 1, args  # Chromium honours only the last one
        assert {"WebRtcHideLocalIpsWithMdns", "MediaRouter", *PLAYWRIGHT_DISABLED_FEATURES} <= set(lists[0])
        assert len(lists[0]) == len(set(lists[0]))
    pw = "--disable-features=A,B,C"
    assert dropped_features(["chrome", pw, "--x", "--disable-features=B,D"]) == ["A", "C"]
    assert dropped_features(["chrome", pw, "--disable-features=C,B,A,D"]) == []
    assert dropped_features(["chrome", pw]) == [] and dropped_features([]) == []


def test_viewport_forms_and_new_task_keys(tmp_path: Path) -> None:
    t = task_from_mapping(
        _task(tmp_path, viewport={"width": 640, "height": 360, "device_scale_factor": 2}, root=".",
              wait_for="#go", scroll_to="#go"),
        base=tmp_path, where="x", default_id="v",
    )  # fmt: skip
    assert t.viewport.as_list() == [640, 360] and t.scale == 2 and t.image_size.as_list() == [1280, 720]
    assert t.root == tmp_path.resolve() and t.wait_for == "#go" and t.scroll_to == "#go"
    for over, match in [
        ({"viewport": {"width": 640}}, "viewport mapping"),
        ({"viewport": {"width": 640, "height": 360, "device_scale_factor": 9}}, "device_scale_factor"),
        ({"root": "missing"}, "root: folder not found"),
        ({"wait_for": ""}, "wait_for"),
    ]:
        with pytest.raises(ConfigError, match=match):
            task_from_mapping(_task(tmp_path, **over), base=tmp_path, where="t", default_id="t")
    sub = tmp_path / "sub"
    sub.mkdir()
    with pytest.raises(ConfigError, match="does not contain the page"):
        task_from_mapping(_task(tmp_path, root="sub"), base=tmp_path, where="t", default_id="t")
