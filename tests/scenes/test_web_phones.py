"""Web scenes on phones (issue 55): ``web.device`` by Playwright's names, a bad name as a one-line config
error, the truth measured again on each device (the target's client rect times the device's scale),
taps that land where the hit rule says, the device in the trial key only when set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dvoc_bench.core.declare import ConfigError, validate
from dvoc_bench.core.geometry import Point
from dvoc_bench.scenes.web.devices import device_label, playwright_devices
from dvoc_bench.scenes.web.settings import CustomDevice, Web
from dvoc_bench.scenes.web.source import WebOptions, WebScenes
from tests.support import chromium_or_skip

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "scenes" / "web"

RECT_JS = """(sel) => {
  const r = document.querySelector(sel).getBoundingClientRect();
  return {rect: [r.left, r.top, r.right, r.bottom], dpr: window.devicePixelRatio,
          vw: window.innerWidth, vh: window.innerHeight};
}"""


def test_an_unknown_device_is_one_line_naming_the_known_ones():
    with pytest.raises(ConfigError) as e:
        validate(Web, {"device": "Nokia 3310"}, "web.")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("web.device:")
    assert "'Nokia 3310'" in msg and "Pixel 7" in msg and "iPhone 13" in msg and "Galaxy S9+" in msg
    assert msg.rstrip().endswith("custom")
    assert validate(Web, {"device": "Pixel 7"}, "web.").device == "Pixel 7"


def test_the_app_exits_2_on_an_unknown_device():
    out = subprocess.run(
        [sys.executable, "-m", "dvoc_bench", "web.device=Nokia 3310", "tasks=[S1]", "run.plan_only=true"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 2, out.stderr[-2000:]
    lines = [ln for ln in out.stderr.splitlines() if "config error" in ln]
    assert len(lines) == 1 and lines[0].startswith("config error: web.device: unknown device 'Nokia 3310'")
    assert "Pixel 7" in lines[0]


def test_the_device_enters_the_key_label_only_as_set():
    assert device_label(None) == "-"
    assert device_label("Pixel 7") == "Pixel 7"
    a = device_label("custom", CustomDevice())
    b = device_label("custom", CustomDevice(width=360))
    assert a == "custom:412x839@2.625,mobile,touch" and b.startswith("custom:360x839") and a != b


@pytest.fixture(scope="module")
def phones():
    """Two phones' scene sources (verifying taps), closed after the module."""
    chromium_or_skip()
    made = {d: WebScenes(WebOptions.from_settings({"device": d, "verify_click": True})) for d in DEVICES}
    yield made
    for s in made.values():
        s.close()


DEVICES = ("Pixel 7", "Galaxy S9+")


@pytest.mark.parametrize("task", ["W4", "W2", "M1a", "M4a"])
def test_the_target_box_is_the_client_rect_times_the_devices_scale(phones, task):
    css = {}
    for name in DEVICES:
        scenes = phones[name]
        snap = scenes.load(WEB / f"{task}.yaml")
        desc = playwright_devices()[name]
        scale = float(desc["device_scale_factor"])
        vw, vh = desc["viewport"]["width"], desc["viewport"]["height"]
        assert snap.image.shape[:2] == (round(vh * scale), round(vw * scale))
        selector = scenes.scene(task).task.selector
        got = scenes.browser.run(lambda s, sel=selector: s.state[("live", task)].page.evaluate(RECT_JS, sel))
        assert got["dpr"] == scale and (got["vw"], got["vh"]) == (vw, vh)  # the descriptor, not a default
        left, top, right, bottom = got["rect"]
        box = snap.truth.target_box
        assert box.x0 == pytest.approx(left * scale, abs=1e-3)
        assert box.y0 == pytest.approx(top * scale, abs=1e-3)
        assert box.x1 == pytest.approx(right * scale - 1, abs=1e-3)  # edges inclusive: the last pixel
        assert box.y1 == pytest.approx(bottom * scale - 1, abs=1e-3)
        css[name] = got["rect"]
    # the layout reflowed: the target's CSS rect itself differs between the phones (not one render scaled)
    assert css[DEVICES[0]] != css[DEVICES[1]]


@pytest.mark.parametrize(
    ("task", "other"), [("M1a", "#wifi-toggle"), ("W4", "#edit-alice"), ("M5a", "#cancel")]
)
def test_a_tap_lands_where_the_hit_rule_says(phones, task, other):
    scenes = phones["Galaxy S9+"]
    snap = scenes.load(WEB / f"{task}.yaml")
    on = snap.truth.target_box.centre
    probe = scenes.probe(task, on)
    assert probe.hit is True and probe.clicked_target is True  # the tap's touch and click reached it
    rect = scenes.browser.run(lambda s: s.state[("live", task)].page.evaluate(RECT_JS, other))
    x0, y0, x1, y1 = (v * 4.5 for v in rect["rect"])
    miss = scenes.probe(task, Point((x0 + x1) / 2, (y0 + y1) / 2))
    assert miss.hit is False and miss.clicked_target is False


def test_a_page_that_lays_out_wider_than_the_phone_fails_its_scene_saying_why(phones, tmp_path):
    from dvoc_bench.scenes.sources import SceneError
    from dvoc_bench.scenes.web.source import load_task, on_device

    page = tmp_path / "desk.html"  # no <meta name="viewport">: a phone lays it out at 980 CSS px
    page.write_text('<!doctype html><html><body><button id="b">Go</button></body></html>')
    (tmp_path / "desk.yaml").write_text("page: desk.html\nselector: '#b'\ninstruction: Tap Go\n")
    scenes = phones["Pixel 7"]
    task = on_device(load_task(tmp_path / "desk.yaml"), scenes.options.device)
    with pytest.raises(SceneError) as e:
        scenes.render(task)
    msg = str(e.value)
    assert "\n" not in msg and "expected [412, 839] on Pixel 7" in msg and 'name="viewport"' in msg
