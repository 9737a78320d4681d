"""Desktop runs leave no Xvfb or Tk process behind: a normal run, a failing scene, ``kill -9`` of the harness.

Every process a run starts inherits the harness's environment, so a marker variable finds them all
(Xvfb, the Tk runners, xdotool) without guessing names. Also: a bring-your-own Tk app end to end.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from tests.support import ROOT, run_cli

pytestmark = pytest.mark.e2e

APP = """
import tkinter as tk

root = tk.Tk()
root.geometry("640x400+0+0")
frame = tk.Frame(root, name="dlg")
frame.pack(fill="both", expand=True)
tk.Label(frame, text="Delete 3 files?").pack(pady=20)
c = tk.Canvas(frame, name="c", width=300, height=120, background="white")
c.pack()
c.create_rectangle(20, 30, 120, 90, fill="#cc3333", tags=("stop",))
c.create_oval(180, 30, 240, 90, fill="#33aa33", tags=("go", "round"))
tk.Button(frame, name="ok", text="OK", command=root.destroy).pack(pady=10)
root.mainloop()
"""


def marked(mark: str) -> list[psutil.Process]:
    """Live processes (zombies excluded) whose environment carries ``DVOC_TEST_MARK=mark``."""
    out = []
    for p in psutil.process_iter():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.environ().get("DVOC_TEST_MARK") == mark:
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return out


def gone_within(mark: str, seconds: float) -> list[psutil.Process]:
    deadline = time.monotonic() + seconds
    while (left := marked(mark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _trials(run_dir: Path) -> list[dict]:
    (path,) = run_dir.rglob("trials.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bring_your_own_app_runs_and_leaves_nothing(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP)
    mark = uuid.uuid4().hex
    r = run_cli(
        "task=desktop_custom", f"desktop.custom.script={app}", "desktop.custom.target=canvas:.dlg.c:round",
        "desktop.custom.instruction=Click the green circle", "desktop.verify_click=true",
        "methods=[oneshot,centre]", "models=[sim-ideal]", "starts=random:2",
        f"hydra.run.dir={tmp_path / 'run'}", env_extra={"DVOC_TEST_MARK": mark}, timeout=180,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    trials = _trials(tmp_path / "run")
    assert len(trials) == 4 and {t["scene_kind"] for t in trials} == {"desktop"}
    one = [t for t in trials if t["method"] == "oneshot"]
    assert all(t["hit"] and t["clicked_target"] and t["hit_rule"] == "toolkit" for t in one), one
    assert all(t["hit_element"] == t["clicked_element"] == "canvas:.dlg.c:go" for t in one)
    # the centre baseline clicks (320, 200): the label's row, not the circle; the click agrees
    centre = [t for t in trials if t["method"] == "centre"]
    assert all(not t["hit"] and t["clicked_element"] == t["hit_element"] for t in centre), centre
    assert gone_within(mark, 5) == []


SPAWNING_APP = """
import os
import subprocess
import tkinter as tk

subprocess.Popen(["sleep", "300"])  # a plain child
subprocess.Popen(["sleep", "301"], start_new_session=True)  # a child in a session of its own
if os.fork() == 0:  # a daemon: fork, setsid, fork again; its parent exits at once
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "302"])
    os._exit(0)
root = tk.Tk()
root.geometry("300x200+0+0")
tk.Button(root, name="ok", text="OK", command=root.destroy).pack(pady=40)
root.mainloop()
"""


def test_what_a_custom_app_starts_ends_with_it(tmp_path):
    """Children of a custom Tk script (plain, in a new session, or daemonised with setsid) do not outlive
    the run."""
    app = tmp_path / "spawner.py"
    app.write_text(SPAWNING_APP)
    mark = uuid.uuid4().hex
    r = run_cli(
        "task=desktop_custom", f"desktop.custom.script={app}", "desktop.custom.target=widget:.ok",
        "desktop.custom.instruction=Click OK", "methods=[oneshot]", "models=[sim-ideal]", "starts=random:1",
        f"hydra.run.dir={tmp_path / 'run'}", env_extra={"DVOC_TEST_MARK": mark}, timeout=180,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert gone_within(mark, 5) == []


def test_a_failing_scene_fails_its_trials_and_leaves_nothing(tmp_path):
    app = tmp_path / "bad.py"
    app.write_text("import tkinter\nroot = tkinter.Tk()\n1 / 0\n")
    mark = uuid.uuid4().hex
    r = run_cli(
        "tasks=[D1,desktop_custom]", f"desktop.custom.script={app}", "desktop.custom.target=widget:.ok",
        "desktop.custom.instruction=x", "methods=[centre]", "starts=random:1",
        f"hydra.run.dir={tmp_path / 'run'}", env_extra={"DVOC_TEST_MARK": mark}, timeout=180,
    )  # fmt: skip
    trials = {t["task"]: t for t in _trials(tmp_path / "run")}
    assert trials["D1"]["status"] == "ok"
    bad = trials["desktop_custom"]
    assert bad["status"] == "error" and bad["error_class"] == "scene", bad
    assert "bad.py failed: ZeroDivisionError: division by zero" in bad["error"]
    assert r.returncode != 2, r.stderr[-2000:]  # not a config error: the sweep ran
    assert gone_within(mark, 5) == []


def test_kill_9_of_the_harness_leaves_no_xvfb_or_tk_process(tmp_path):
    mark = uuid.uuid4().hex
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "DVOC_TEST_MARK": mark}
    argv = [sys.executable, "-m", "dvoc_bench", "tasks=[D1,D2,D3,D4]", "desktop.verify_click=true",
            "repeats=5", f"hydra.run.dir={tmp_path / 'run'}"]  # fmt: skip
    harness = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        names: set[str] = set()
        while time.monotonic() < deadline and not ({"Xvfb", "runner"} <= names):
            time.sleep(0.2)
            names = set()
            for p in marked(mark):
                try:
                    cmd = " ".join(p.cmdline())
                except psutil.Error:
                    continue
                names |= {"Xvfb"} if "Xvfb" in cmd else {"runner"} if "runner.py" in cmd else set()
        assert {"Xvfb", "runner"} <= names, f"the run never started its display and apps: {names}"
        children = [p for p in marked(mark) if p.pid != harness.pid]
        assert children
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        assert gone_within(mark, 10) == []
    finally:
        if harness.poll() is None:
            harness.kill()


def test_a_killed_harness_leaves_no_display_folder_behind(tmp_path):
    """A display folder of a process that is gone is removed by the next display; a live one is kept."""
    from dvoc_bench.scenes.desktop.display import TMP_PREFIX, remove_stale_folders

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{TMP_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{TMP_PREFIX}{os.getpid()}-def"
    for d in (stale, live):
        d.mkdir()
        (d / "fonts.conf").write_text("x")
    assert remove_stale_folders(tmp_path) == [stale]
    assert not stale.exists() and live.exists()


def test_a_killed_runs_atspi_folder_is_swept_too(tmp_path):
    """An AT-SPI runner's private folder (``dvoc-atspi-<pid>-...``) of a gone process is removed; a live
    one is kept."""
    from dvoc_bench.scenes.desktop.atspi_runner import TMP_PREFIX
    from dvoc_bench.scenes.desktop.display import remove_stale_folders

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{TMP_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{TMP_PREFIX}{os.getpid()}-def"
    for d in (stale, live):
        (d / "home").mkdir(parents=True)
    assert remove_stale_folders(tmp_path) == [stale]
    assert not stale.exists() and live.exists()


EMPTY_ENV_APP = """
import os
import subprocess
import sys
import tkinter as tk

plain, daemon = sys.argv[1], sys.argv[2]
subprocess.Popen(["env", "-i", "sleep", plain])  # no environment at all: no mark, no tree token
if os.fork() == 0:  # a daemon without environment: fork, setsid, fork again; its parent exits at once
    os.setsid()
    if os.fork() == 0:
        os.execvp("env", ["env", "-i", "sleep", daemon])
    os._exit(0)
root = tk.Tk()
root.geometry("300x200+0+0")
tk.Button(root, name="ok", text="OK", command=root.destroy).pack(pady=40)
root.mainloop()
"""


def sleeping(*args: str) -> list[psutil.Process]:
    """Live ``sleep`` processes whose argument is one of ``args``."""
    out = []
    for p in psutil.process_iter():
        try:
            if p.status() != psutil.STATUS_ZOMBIE and p.cmdline()[1:] and p.cmdline()[-1] in args:
                out.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return out


def test_children_started_with_an_empty_environment_end_with_the_run(tmp_path):
    """Issue 51, item 10. Before: cleanup found descendants by an environment token, so a child started
    with ``env -i`` (plain, or daemonised out of the session) outlived the run."""
    app = tmp_path / "bare.py"
    app.write_text(EMPTY_ENV_APP.replace("sys.argv[1], sys.argv[2]", "PLAIN, DAEMON"))
    n = uuid.uuid4().int % 10**6
    plain, daemon = f"{3000 + n / 10**6:.6f}", f"{4000 + n / 10**6:.6f}"  # unique sleep arguments
    app.write_text(app.read_text().replace("PLAIN, DAEMON", f"{plain!r}, {daemon!r}"))
    r = run_cli(
        "task=desktop_custom", f"desktop.custom.script={app}", "desktop.custom.target=widget:.ok",
        "desktop.custom.instruction=Click OK", "methods=[oneshot]", "models=[sim-ideal]", "starts=random:1",
        f"hydra.run.dir={tmp_path / 'run'}", timeout=180,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    deadline = time.monotonic() + 5
    while (left := sleeping(plain, daemon)) and time.monotonic() < deadline:
        time.sleep(0.1)
    for p in left:  # never leave them to the machine, whatever the outcome
        p.kill()
    assert left == []


def _harness_with_bare_children(tmp_path: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """A harness running a Tk app that started an ``env -i`` child and an ``env -i`` daemon (both up)."""
    n = uuid.uuid4().int % 10**6
    plain, daemon = f"{6000 + n / 10**6:.6f}", f"{7000 + n / 10**6:.6f}"
    app = tmp_path / "bare.py"
    app.write_text(EMPTY_ENV_APP.replace("sys.argv[1], sys.argv[2]", f"{plain!r}, {daemon!r}"))
    argv = [sys.executable, "-m", "dvoc_bench", "task=desktop_custom", f"desktop.custom.script={app}",
            "desktop.custom.target=widget:.ok", "desktop.custom.instruction=Click OK", "methods=[oneshot]",
            "models=[sim-ideal]", "starts=random:1", "repeats=300",
            f"hydra.run.dir={tmp_path / 'run'}"]  # fmt: skip
    env = {**os.environ, "HYDRA_FULL_ERROR": "0"}
    harness = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(sleeping(plain, daemon)) < 2 and harness.poll() is None:
        time.sleep(0.2)
    if len(sleeping(plain, daemon)) < 2:
        harness.kill()
        for p in sleeping(plain, daemon):
            p.kill()
        raise AssertionError("the app never started its children")
    return harness, plain, daemon


def test_kill_9_of_the_harness_ends_the_children_without_environment_too(tmp_path):
    """Issue 51, item 10: after ``kill -9`` of the harness the Tk runner's tree ends, also children
    started with an empty environment (before the reaper: they survived in 2 of 3 CI runs under load)."""
    harness, plain, daemon = _harness_with_bare_children(tmp_path)
    try:
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        deadline = time.monotonic() + 60  # a wait on the condition (the runner sweeps its tree under load)
        while (left := sleeping(plain, daemon)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for p in left:
            p.kill()
        assert left == []
    finally:
        if harness.poll() is None:
            harness.kill()


def test_an_abrupt_end_of_the_runner_with_the_harness_leaves_no_child(tmp_path):
    """Issue 51, item 10, the way it failed under load: when the harness dies its X server dies too, and a
    Tk runner whose display vanished exits inside Xlib before its own clean-up runs; what it started
    went to init and lived on. Here the runner is killed outright (``kill -9``), then the harness: the
    reaper above the runner, a subreaper, gets the orphans and ends them."""
    harness, plain, daemon = _harness_with_bare_children(tmp_path)
    try:
        runners = []
        for p in psutil.Process(harness.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                cmd = p.cmdline()
                if any(a.endswith("desktop/runner.py") for a in cmd) and not any("reaper" in a for a in cmd):
                    runners.append(p)
        assert len(runners) == 1, runners
        runners[0].kill()
        harness.send_signal(signal.SIGKILL)
        harness.wait(timeout=10)
        deadline = time.monotonic() + 60
        while (left := sleeping(plain, daemon)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == []
    finally:
        if harness.poll() is None:
            harness.kill()
        for p in sleeping(plain, daemon):  # never leave them to the machine, whatever the outcome
            p.kill()
