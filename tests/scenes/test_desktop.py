"""Desktop scenes D1-D4 on a real Xvfb display: frames, toolkit truth, hit tests and real clicks.

One display for the whole module (the registry below); the process tests are in test_desktop_procs.py.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Point
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.desktop import display as display_mod
from dvoc_bench.scenes.desktop.display import DesktopUnavailable, XDisplay
from dvoc_bench.scenes.desktop.source import DesktopOptions, DesktopScenes
from dvoc_bench.scenes.sources import SceneError

pytestmark = pytest.mark.e2e

IDS = ("D1", "D2", "D3", "D4")


@pytest.fixture(scope="module")
def reg():
    r = SceneRegistry(default_scenes_dir(), options={"desktop": {"verify_click": True}})
    yield r
    r.close()
    desk = r.source("desktop").backend
    assert not desk.display.running and desk.pids() == []


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def test_frames_are_the_screen_and_truth_comes_from_the_toolkit(reg):
    for sid in IDS:
        snap = reg.snapshot(sid)
        assert reg.kind(sid) == "desktop"
        assert (snap.size.width, snap.size.height) == (1280, 800) and snap.image.shape == (800, 1280, 3)
        ids = [e.id for e in snap.truth.elements]
        assert snap.truth.target_id in ids and len(ids) == len(set(ids)), sid
        b = snap.target_box
        assert 0 <= b.x0 < b.x1 < 1280 and 0 <= b.y0 < b.y1 < 800, sid
        assert len(np.unique(snap.image.reshape(-1, 3), axis=0)) > 20, f"{sid}: a flat frame"
    # D3: the target exists only as a canvas item; its box (canvas.bbox mapped to the screen) is where
    # the frame shows the port's fill colour, and the port is small
    d3 = reg.snapshot("D3")
    assert d3.truth.target_id.startswith("canvas:")
    c = d3.target_box.centre
    assert tuple(d3.image[int(c.y), int(c.x)]) == _hex("#f2c14e")
    assert d3.target_box.x1 - d3.target_box.x0 <= 16 and d3.target_box.y1 - d3.target_box.y0 <= 16
    # D2: the icon-only delete button: the trash can's red is inside the target box and nowhere else
    d2 = reg.snapshot("D2")
    red = np.argwhere((d2.image == _hex("#c62828")).all(axis=2))
    b = d2.target_box
    assert len(red) > 30 and all(b.x0 <= x <= b.x1 and b.y0 <= y <= b.y1 for y, x in red)
    assert not any(
        e.label and e.label != e.id.rsplit(".", 1)[-1] for e in d2.truth.elements if ".toolbar." in e.id
    )  # fmt: skip  (no text on the toolbar buttons)
    # D4: the instruction names the file of the target's row
    d4 = reg.snapshot("D4")
    row = d4.truth.target_id.rsplit("_", 1)[-1]
    name = next(e for e in d4.truth.elements if e.id.endswith(f".table.name_{row}"))
    assert name.label in d4.instruction
    assert sum(e.label == "Open" for e in d4.truth.elements) == 24


def test_real_click_agrees_with_the_toolkit_hit_test(reg):
    rng = np.random.default_rng(7)
    n = agree = 0
    for sid in IDS:
        b = reg.truth(sid).target_box
        points = [b.centre, Point(b.x0, b.y0), Point(b.x1 + 1, b.y1 + 1), Point(b.centre.x, b.y1 + 1)]
        points += [Point(b.centre.x + rng.uniform(-40, 40), b.centre.y + rng.uniform(-25, 25))]
        results = []
        for p in points:
            probe = reg.probe(sid, p)
            assert probe.hit_element is not None and probe.clicked_element is not None, (sid, p)
            n += 1
            agree += probe.clicked_element == probe.hit_element and probe.clicked_target == probe.hit
            results.append(probe.hit)
        assert results[0] is True and False in results, (sid, results)
    assert agree == n == 20


def test_the_real_click_is_what_the_app_saw_not_the_hit_test(reg, monkeypatch):
    """The click's record comes from the app's own event, not from the hit test: a pointer that lands
    elsewhere than the point probed (here: moved 300 px left of it) is recorded as a miss while the hit test
    at the point says target."""
    desk = reg.source("desktop").backend
    real_click = desk.display.click
    monkeypatch.setattr(desk.display, "click", lambda x, y: real_click(max(0, x - 300), y))
    centre = reg.truth("D1").target_box.centre
    probe = reg.probe("D1", centre)
    assert probe.hit is True and probe.clicked_target is False
    assert probe.clicked_element != probe.hit_element


def test_hidden_scene_comes_back_where_it_was(reg):
    desk = reg.source("desktop").backend
    inst = desk.scene("D1").instance
    desk._show(desk.scene("D3").instance)  # D1 withdrawn, D3 shown
    assert inst.request({"op": "hit", "x": 600, "y": 562, "target": "widget:."})["element"] != (
        "widget:.dlg.body.buttons.ok"
    )
    desk._show(inst)  # D1 mapped again
    assert inst.request({"op": "hit", "x": 600, "y": 562, "target": "widget:."})["element"] == (
        "widget:.dlg.body.buttons.ok"
    )
    again = inst.request({"op": "truth", "targets": ["widget:.dlg.body.buttons.ok"]})
    boxes = {e["id"]: tuple(e["box"]) for e in again["elements"]}
    assert boxes == {e.id: tuple(e.box.as_list()) for e in reg.truth("D1").elements}


def test_bad_desktop_settings_are_one_line_config_errors(tmp_path):
    app = tmp_path / "app.py"
    app.write_text("import tkinter\n")
    for raw, key in [
        ({"size": [10, 10]}, "desktop.size"),
        ({"size": [1280, 800, 900]}, "desktop.size: must be [width, height] in 200..4096"),
        ({"verify_click": "maybe"}, "desktop.verify_click"),
        ({"custom": {"script": str(app), "target": "ok", "instruction": "x"}}, "desktop.custom.target"),
        (
            {"custom": {"script": str(tmp_path / "nope.py"), "target": "widget:.ok", "instruction": "x"}},
            "desktop.custom.script",
        ),  # fmt: skip
        ({"custom": {"script": str(app), "target": "widget:.ok"}}, "desktop.custom.instruction"),
        ({"colour": 1}, "desktop.colour: unknown key"),
    ]:
        with pytest.raises(ConfigError) as e:
            DesktopOptions.from_settings(raw)
        assert str(e.value).startswith(key) and "\n" not in str(e.value), str(e.value)


def test_missing_xvfb_or_tk_names_the_debian_package(monkeypatch, tmp_path):
    real_which = display_mod.shutil.which
    monkeypatch.setattr(display_mod.shutil, "which", lambda n: None if n == "Xvfb" else real_which(n))
    with pytest.raises(DesktopUnavailable, match=r"install the Debian package xvfb \(apt-get install xvfb\)"):
        XDisplay().start()
    desk = DesktopScenes()
    with pytest.raises(SceneError, match="D1: desktop scenes need Xvfb: install the Debian package xvfb"):
        desk.load(default_scenes_dir() / "desktop" / "D1.yaml")
    monkeypatch.undo()
    monkeypatch.setitem(sys.modules, "_tkinter", None)
    with pytest.raises(DesktopUnavailable, match="install the Debian package python3-tk"):
        XDisplay().start()


FONT_PROBE = """
import sys
import tkinter
import tkinter.font

root = tkinter.Tk()
families = sorted(set(tkinter.font.families(root)))
actual = tkinter.font.nametofont("TkDefaultFont", root).actual("family")
if families != sorted(sys.argv[1:]) or actual != "DejaVu Sans":
    raise SystemExit(f"fonts not pinned: default {actual!r}, families {families}")
root.mainloop()
"""


def test_tk_sees_only_the_project_fonts(reg, tmp_path):
    """Tk finds exactly the families of the pinned font folder, and its default font is DejaVu Sans."""
    from PIL import ImageFont

    from dvoc_bench.scenes.desktop.display import font_folder
    from dvoc_bench.scenes.desktop.source import DesktopTask

    families = {ImageFont.truetype(str(f), 10).getname()[0] for f in font_folder().glob("*.ttf")}
    script = tmp_path / "fonts.py"
    script.write_text(FONT_PROBE.replace("sys.argv[1:]", repr(sorted(families))))
    desk = reg.source("desktop").backend
    task = DesktopTask(id="fonts", script=script, target="widget:.", instruction="-", where=str(script))
    with desk._lock:
        inst = desk._start(task)  # raises SceneError with the script's message when the fonts leak
        inst.close()
        desk._shown = None


CUSTOM_APP = """
import tkinter as tk
root = tk.Tk()
dlg = tk.Frame(root, name="dlg")
dlg.pack()
ok = tk.Button(dlg, name="ok", text="OK")
ok.pack()
tk.Button(dlg, name="cancel", text="Cancel").pack()
print("path of OK:", str(ok))
print("to stderr too", file=__import__("sys").stderr)
root.mainloop()
"""


def test_a_custom_apps_prints_reach_the_log_and_a_wrong_path_names_the_nearest(reg, tmp_path, caplog):
    """The README's advice (print ``str(widget)``) works: the prints are in the run's log; a mistyped
    target path is refused with the nearest paths on screen."""
    import logging

    from dvoc_bench.scenes.desktop.source import DesktopTask

    script = tmp_path / "app.py"
    script.write_text(CUSTOM_APP)
    desk = reg.source("desktop").backend
    task = DesktopTask(id="custom1", script=script, target="widget:.dlg.okay", instruction="-", where="x")
    logger = "dvoc_bench.scenes.desktop.source"
    with caplog.at_level(logging.INFO, logger=logger), pytest.raises(SceneError) as e:
        desk.render(task)
    desk._shown = None
    msg = str(e.value)
    assert "target widget:.dlg.okay is not on screen (x); nearest on screen: widget:.dlg.ok" in msg
    assert "\n" not in msg and "run's log" in msg
    assert "custom1: the app printed" in caplog.text
    assert "path of OK: .dlg.ok" in caplog.text and "to stderr too" in caplog.text


def test_a_screen_above_scenes_max_side_is_refused_before_anything_starts():
    reg = SceneRegistry(default_scenes_dir(), options={"desktop": {"size": [1280, 800]}}, max_side=1000)
    with pytest.raises(SceneError, match="D1: desktop.size 1280x800 exceeds scenes.max_side=1000"):
        reg.snapshot("D1")
    assert not reg.source("desktop").backend.display.running


def test_the_http_simulator_leaves_out_scenes_this_machine_cannot_render(monkeypatch):
    from dvoc_bench.scenes import build_sources
    from dvoc_bench.serve import SimBackend

    monkeypatch.setattr(display_mod.shutil, "which", lambda n: None)  # no Xvfb here
    registry = SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic", "desktop"]))
    backend = SimBackend(registry=registry)
    backend.warm()
    instructions, _ = backend._scene_index()
    assert sorted(instructions) == ["S1", "S2", "S3", "S4", "S5", "S6"]
