"""Real Debian GTK applications as tasks: truth and hit tests from AT-SPI, real clicks, bad input, and no
process (Xvfb, D-Bus, AT-SPI daemons, the application) left after a run or ``kill -9`` of the harness."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.scenes.desktop.apps import (
    AppOptions,
    click_effect,
    nearest,
    press_release_effect,
    task_from_mapping,
)
from tests.scenes.test_desktop_procs import gone_within, marked
from tests.support import ROOT, run_cli

# The end-to-end tests need zenity, gtk-3-examples, xvfb, dbus-daemon, at-spi2-core and python3-pyatspi
# (.ci/run installs them); without them they fail, they do not skip.
QUESTION = "zenity --question --text='Delete 3 files?'"


def _trials(run_dir: Path) -> list[dict]:
    (path,) = run_dir.rglob("trials.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


# ------------------------------------------------------------------------------------------ fast tier


def test_a_click_effect_names_the_accessible_that_changed():
    before = {"states": {"check box:a": [], "check box:b": ["focused"]}, "windows": ["frame:"], "alive": True}
    after = {"states": {"check box:a": ["checked", "focused"], "check box:b": []}, "windows": ["frame:"]}
    element, changes = click_effect(before, {**after, "alive": True})
    assert element == "check box:a"  # gained focus: ranked before the one that lost it
    assert changes == ["check box:a +checked", "check box:a +focused", "check box:b -focused"]
    assert click_effect(before, before) == (None, [])
    gone = click_effect(before, {"states": {}, "windows": [], "alive": False})
    assert gone == (None, ["window -frame:", "app exited"])
    exited = click_effect(before, {"states": {}, "windows": ["frame:"], "alive": False, "exit_code": 0})
    assert exited == (None, ["app exited (code 0)"])
    # the target (a label) is inside a row that got selected: the row's change is the target's
    row = {"states": {"list item:#4": [], "label:Weather": [], "text:": ["focused"]}}
    clicked = {"states": {"list item:#4": ["selected"], "label:Weather": [], "text:": []}}
    assert click_effect(row, clicked, ["label:Weather", "list item:#4"])[0] == "list item:#4"
    assert click_effect(row, clicked)[0] == "list item:#4"
    assert click_effect(row, clicked, ["label:Weather"])[0] == "list item:#4"  # not related: still named


def test_a_press_names_a_button_whose_release_ends_the_program():
    """zenity's Yes: the press arms it, the release closes the dialog and the program exits (code 0)."""
    up = {
        "states": {"push button:Yes": [], "push button:No": ["focused"]},
        "windows": ["dialog:Q"],
        "alive": True,
    }
    down = {**up, "states": {"push button:Yes": ["armed", "focused"], "push button:No": []}}
    gone = {"states": {}, "windows": [], "alive": False, "exit_code": 0, "related": []}
    related = ["push button:Yes", "filler:"]
    element, changes = press_release_effect(up, down, gone, [], related)
    assert element == "push button:Yes"
    assert "push button:Yes +armed" in changes and "app exited (code 0)" in changes
    assert press_release_effect(up, up, gone, [], related) == (
        None,
        ["window -dialog:Q", "app exited (code 0)"],
    )
    # an event from inside the target (a combo box's popup menu) counts for the target only
    ev = ["combo box:M +showing (a descendant)"]
    assert press_release_effect(up, up, up, ev, ["combo box:M", "panel:"])[0] == "combo box:M"
    assert (
        press_release_effect(up, up, up, ["panel: +showing (a descendant)"], ["combo box:M", "panel:"])[0]
        is None
    )
    # an already focused entry re-announces focus when clicked: an event of the target itself
    assert press_release_effect(up, up, up, ["text: +focused"], ["text:"])[0] == "text:"


def test_bad_task_definitions_are_one_line_config_errors():
    with pytest.raises(ConfigError, match=r"desktop\.app\.target: must be ROLE:NAME"):
        AppOptions.from_settings({"app": {"command": "zenity --info", "target": "OK", "instruction": "x"}})
    with pytest.raises(ConfigError, match=r"desktop\.app\.command: required"):
        AppOptions.from_settings({"app": {"target": "push button:OK", "instruction": "x"}})
    with pytest.raises(ConfigError, match=r"desktop\.app_files\[0\]: file not found"):
        AppOptions.from_settings({"app_files": ["/nonexistent/a.yaml"]})
    t = task_from_mapping({"command": "a 'b c'", "target": "push button:OK#2", "instruction": "i"}, "w", "t")
    assert t.command == ("a", "b c") and t.target == "push button:OK#2"


def test_nearest_lists_ten_pairs_most_alike_first():
    ids = [f"push button:B{i}" for i in range(20)] + ["push button:Yes", "label:Yes?"]
    line = nearest("push button:Yse", ids)
    listed = line.removeprefix("nearest on screen: ").split(", ")
    assert len(listed) == 10 and listed[0] == "push button:Yes"


# ------------------------------------------------------------------------------------------ end to end


@pytest.mark.e2e
def test_an_inline_app_task_hits_by_the_accessibility_tree(tmp_path):
    mark = uuid.uuid4().hex
    r = run_cli(
        "task=desktop_app", f'desktop.app.command="{QUESTION}"', "desktop.app.target=push button:No",
        "desktop.app.instruction=Keep the files", "methods=[oneshot,centre]", "models=[sim-ideal]",
        "starts=random:1", f"hydra.run.dir={tmp_path / 'run'}", env_extra={"DVOC_TEST_MARK": mark},
        timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    trials = {t["method"]: t for t in _trials(tmp_path / "run")}
    one, centre = trials["oneshot"], trials["centre"]
    assert one["status"] == "ok" and one["scene_kind"] == "desktop" and one["hit_rule"] == "accessible"
    assert one["hit"] and one["hit_element"] == "push button:No", one
    # the screen's centre (640, 400) is between the label and the buttons: AT-SPI finds no button there
    assert not centre["hit"] and centre["hit_element"] != "push button:No", centre
    frames = list((tmp_path / "run").rglob("*.png"))
    assert frames, "no frame written"
    assert gone_within(mark, 5) == []


@pytest.mark.e2e
def test_bad_applications_fail_their_own_trials_and_the_sweep_goes_on(tmp_path):
    files = {
        "missing": {"command": "no-such-program-xyz --flag", "target": "push button:OK"},
        "exits": {"command": "false", "target": "push button:OK"},
        "says": {"command": "sh -c 'echo first >&2; echo no display here >&2; exit 3'", "target": "label:x"},
        "hangs": {"command": "sleep 300", "target": "push button:OK"},
        "wrong": {"command": QUESTION, "target": "push button:Maybe"},
    }
    paths = []
    for name, raw in files.items():
        p = tmp_path / f"{name}.yaml"
        p.write_text(json.dumps({**raw, "instruction": "Click OK"}))
        paths.append(str(p))
    mark = uuid.uuid4().hex
    r = run_cli(
        "tasks=[missing,exits,says,hangs,wrong,S1]", f"desktop.app_files=[{','.join(paths)}]",
        "desktop.timeout_s=6", "methods=[centre]", "starts=random:1", f"hydra.run.dir={tmp_path / 'run'}",
        env_extra={"DVOC_TEST_MARK": mark}, timeout=240,
    )  # fmt: skip
    assert r.returncode != 2, r.stderr[-2000:]
    t = {x["task"]: x for x in _trials(tmp_path / "run")}
    assert t["S1"]["status"] == "ok"
    for name in files:
        assert t[name]["status"] == "error" and t[name]["error_class"] == "scene", t[name]
        assert "\n" not in t[name]["error"]
    assert "no-such-program-xyz is not installed" in t["missing"]["error"]
    assert "'false'" in t["exits"]["error"] and "exited at start" in t["exits"]["error"]
    # what a program that died at start wrote last is in its error, on one line, after one more start
    says = t["says"]["error"]
    assert f"exited at start (code 3) ({paths[2]}); it said: " in says, says
    assert says.endswith("first | no display here"), says
    log_text = (tmp_path / "run" / "__main__.log").read_text()
    assert log_text.count("starting it once more") == 2, log_text[-2000:]  # 'false' and 'says'
    assert "'sleep 300'" in t["hangs"]["error"] and "no window showed" in t["hangs"]["error"]
    wrong = t["wrong"]["error"]
    assert "target 'push button:Maybe' is not on screen" in wrong, wrong
    assert "nearest on screen: push button:" in wrong and "push button:Yes" in wrong, wrong
    assert gone_within(mark, 5) == []


@pytest.mark.e2e
def test_verify_click_observes_the_effect_not_the_hit_test(tmp_path):
    """A click on a check box checks it (the effect names it); a click on a label hits the label by the
    tree but changes nothing: the click's verdict is not the hit test's."""
    runs = {}
    for name, target in (("box", "check box:checkbutton#3"), ("label", "label:label")):
        r = run_cli(
            "task=desktop_app", "desktop.app.command=gtk3-widget-factory", f"desktop.app.target='{target}'",
            "desktop.app.wait_for=radio button:Page 1", "desktop.app.instruction=Click it",
            "desktop.verify_click=true", "methods=[oneshot]", "models=[sim-ideal]", "starts=random:1",
            f"hydra.run.dir={tmp_path / name}", timeout=240,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr[-2000:]
        (runs[name],) = _trials(tmp_path / name)
    box, label = runs["box"], runs["label"]
    assert box["hit"] and box["clicked_target"] and box["clicked_element"] == "check box:checkbutton#3", box
    assert label["hit"] and label["hit_element"] == "label:label", label
    assert label["clicked_target"] is False and label["clicked_element"] != "label:label", label


@pytest.mark.e2e
def test_kill_9_of_the_harness_leaves_no_display_bus_or_app(tmp_path):
    mark = uuid.uuid4().hex
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "DVOC_TEST_MARK": mark}
    argv = [sys.executable, "-m", "dvoc_bench", "experiment=desktop_apps", "models=[sim-ideal]",
            "methods=[oneshot]", "tasks=[A09,A01,A15]", f"hydra.run.dir={tmp_path / 'run'}"]  # fmt: skip
    harness = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    want = {"Xvfb", "dbus-daemon", "at-spi-bus-launcher", "at-spi2-registryd", "zenity"}
    try:
        deadline = time.monotonic() + 150
        names: set[str] = set()
        while time.monotonic() < deadline and not want <= names:
            time.sleep(0.2)
            for p in marked(mark):
                try:
                    cmd = " ".join(p.cmdline())
                except psutil.Error:
                    continue
                names |= {w for w in want if w in cmd}
        assert want <= names, f"the run never started all of its processes: {names}"
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        left = gone_within(mark, 10)
        assert left == [], [(p.pid, p.cmdline()) for p in left if p.is_running()]
    finally:
        if harness.poll() is None:
            harness.kill()


@pytest.mark.e2e
def test_the_bundled_application_set_runs_and_sim_ideal_hits_every_target(tmp_path):
    """``experiment=desktop_apps`` (A01-A31 on four Debian GTK programs, zenity's file chooser and
    FeatherPad's Save As dialog) with the simulator: every trial ``ok`` and sim-ideal's point on the
    target by AT-SPI's hit test (about 2 min on 2 busy cores)."""
    r = run_cli(
        "experiment=desktop_apps", "models=[sim-ideal]", "methods=[oneshot]",
        f"hydra.run.dir={tmp_path / 'run'}", timeout=600,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    trials = {t["task"]: t for t in _trials(tmp_path / "run")}
    assert sorted(trials) == [f"A{i:02d}" for i in range(1, 32)]
    bad = {k: (t["status"], t.get("error"), t["hit_element"]) for k, t in trials.items() if not t["hit"]}
    assert bad == {}, bad
    assert all(t["status"] == "ok" and t["hit_rule"] == "accessible" for t in trials.values())


def test_an_app_run_leaves_no_bus_socket_in_tmp_and_no_child_without_environment(tmp_path):
    """Issue 51, item 10. Before: the private session bus listened on ``/tmp/dbus-*`` (its config's
    ``unix:tmpdir=/tmp``) and the socket stayed (398 after a day); a child the application started with
    an empty environment survived the run. Now the bus listens in the runner's own folder, removed after.
    The bus addresses are read from the application's environment while it runs (other runs on the
    machine may create ``/tmp/dbus-*`` files of their own meanwhile)."""
    from tests.scenes.test_desktop_procs import sleeping

    stamp = f"{5000 + uuid.uuid4().int % 10**6 / 10**6:.6f}"
    script = tmp_path / "app.sh"
    script.write_text(f"#!/bin/sh\nenv -i sleep {stamp} &\nexec {QUESTION}\n")
    script.chmod(0o755)
    mark = uuid.uuid4().hex
    before = {p.name for p in Path("/tmp").glob("dbus-*")}
    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:  # the session bus address of every process of this run, while it runs
        while not done.is_set():
            for p in marked(mark):
                with contextlib.suppress(psutil.Error):
                    if address := p.environ().get("DBUS_SESSION_BUS_ADDRESS"):
                        seen.add(address)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r = run_cli(
            "task=desktop_app", f"desktop.app.command={script}", "desktop.app.target=push button:No",
            "desktop.app.instruction=Keep the files", "methods=[oneshot]", "models=[sim-ideal]",
            "starts=random:1", f"hydra.run.dir={tmp_path / 'run'}", env_extra={"DVOC_TEST_MARK": mark},
            timeout=240,
        )  # fmt: skip
    finally:
        done.set()
        watcher.join(5)
    assert r.returncode == 0, r.stderr[-2000:]
    assert _trials(tmp_path / "run")[0]["hit"]
    paths = [a.split("path=", 1)[1].split(",", 1)[0] for a in seen if "path=" in a]
    assert paths, seen  # the application ran on a private bus, seen through its environment
    assert all("/dvoc-atspi-" in p and not Path(p).parent.exists() for p in paths), paths  # folder removed
    new = {p.name for p in Path("/tmp").glob("dbus-*")} - before
    assert not {Path(p).name for p in paths} & new
    left = sleeping(stamp)
    for p in left:
        p.kill()
    assert left == [] and gone_within(mark, 5) == []


@pytest.mark.e2e
def test_a_target_laid_out_off_screen_is_named_with_its_box_and_a_task_size_shows_it(tmp_path):
    """Issue 53: a window wider than the screen (no window manager fits it) has controls that are showing
    but off screen; the error says where (before: 'not on screen' and the nearest names only). A zenity
    dialog 1200 px wide on a task screen of 800x600 (its own ``size``) puts its OK button off screen; with
    a screen of 1440x900, A31 finds the widget factory's header-bar Close (its window is up to 1366 px
    wide)."""
    task = tmp_path / "wide.yaml"
    task.write_text(json.dumps({
        "command": "zenity --info --width=1200 --text=Done", "wait_for": "label:Done",
        "target": "push button:OK", "instruction": "Acknowledge", "size": [800, 600],
    }))  # fmt: skip
    r = run_cli(
        "tasks=[wide,A31]", f"desktop.app_files=[{task}]", "models=[sim-ideal]", "methods=[oneshot]",
        "starts=random:1", f"hydra.run.dir={tmp_path / 'run'}", timeout=300,
    )  # fmt: skip
    assert r.returncode != 2, r.stderr[-2000:]
    t = {x["task"]: x for x in _trials(tmp_path / "run")}
    err = t["wide"]["error"] or ""
    assert t["wide"]["status"] == "error"
    assert "target 'push button:OK' is showing but off the 800x600 screen, at [" in err, err
    assert int(err.split(", at [", 1)[1].split(",", 1)[0]) >= 800, err  # its left edge is past the screen
    assert t["A31"]["status"] == "ok" and t["A31"]["hit"] and t["A31"]["hit_element"] == "push button:Close"
