"""Desktop episodes (issue #54): real GTK programs driven step by step with real X input, their state read
through AT-SPI and their own verdict (a zenity dialog's printed answer, the widget factory's states).

The end-to-end tests need zenity, xvfb, xdotool, dbus-daemon, at-spi2-core and python3-pyatspi (.ci/run
installs them); like the application tests they fail without zenity, they do not skip."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import psutil
import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.desktop_episodes import DesktopEpisode, ProgramExited
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.desktop.episodes import View, Widget
from dvoc_bench.scenes.desktop.gtk_source import SOURCE, GtkEpisodeSource
from dvoc_bench.scenes.desktop.gtk_tasks import TASKS, knob_box
from dvoc_bench.scenes.desktop.source import DesktopOptions
from dvoc_bench.scenes.miniwob.settings import Episode as EpisodeSettings
from dvoc_bench.scenes.miniwob.source import step_snapshot
from tests.scenes.test_desktop_procs import gone_within
from tests.support import ShotSink, make_spec, need


def w(wid: str, box: tuple[int, int, int, int], states: tuple[str, ...] = (), **kw: object) -> Widget:
    role, _, name = wid.partition(":")
    return Widget(wid, role, name.split("#")[0], box, frozenset(states), **kw)  # type: ignore[arg-type]


def view(*widgets: Widget, alive: bool = True, code: int | None = None, out: str = "") -> View:
    return View(tuple(widgets), ("dialog:New contact",) if alive else (), alive, code, out)


# ------------------------------------------------------------------------------------------- fast tier


def test_the_form_planner_reads_the_program_and_the_verdict_is_what_it_printed():
    form = TASKS["zenity-form"]
    goal = ("Maple", "nectar@example.org")
    ok = w("push button:OK", (672, 439, 757, 472))
    name, email = (583, 356, 750, 389), (583, 396, 750, 429)
    start = view(w("text:", name, ("focused",), text=""), w("text:#2", email, text=""), ok)
    assert form.plan(start, 0, goal).action == "type"  # the Name field has the focus: type into it
    typed = view(w("text:", name, ("focused",), text="Maple"), w("text:#2", email, text=""), ok)
    step = form.plan(typed, 1, goal)
    assert (step.action, step.target) == ("click", "text:#2")
    wrong = view(w("text:", name, text="Maple"), w("text:#2", email, ("focused",), text="x"), ok)
    assert form.plan(wrong, 2, goal).text == "ctrl+a BackSpace"  # a field holding other text is cleared
    filled = view(w("text:", name, text="Maple"), w("text:#2", email, text="nectar@example.org"), ok)
    assert form.plan(filled, 3, goal).target == "push button:OK"
    assert form.plan(view(alive=False, code=0), 4, goal) is None
    said = view(alive=False, code=0, out="Maple|nectar@example.org\n")
    assert form.verdict(said, goal) == (True, "it printed 'Maple|nectar@example.org'")
    other = form.verdict(view(alive=False, code=0, out="Maple|\n"), goal)
    assert other[0] is False and "not 'Maple|nectar@example.org'" in other[1]
    cancelled = form.verdict(view(alive=False, code=1), goal)
    assert cancelled == (False, "the dialog exited with code 1 (cancelled)")


def test_the_knob_and_the_drop_follow_the_scale_and_the_grab():
    """zenity's scale (0-10, --hide-value) at [12, 43, 287, 76]: the knob's centre on screen was measured at
    x = 99.5 for the value 3 (the knob's white pixels span 91-108 in a screenshot), 24.5 for 0, 274.5 for
    10. A grab 2 px right of the knob's centre moves the drop region 2 px right."""
    slider = w("slider:", (12, 43, 287, 76), value=(3.0, 0.0, 10.0))
    assert knob_box(slider).centre == Point(99.5, 59.5)
    assert knob_box(w("slider:", (12, 43, 287, 76), value=(10.0, 0.0, 10.0))).centre.x == 274.5
    drag = TASKS["zenity-scale-drag"]
    step = drag.plan(view(slider, w("push button:OK", (207, 82, 292, 115))), 0, 5)
    assert step.action == "drag" and step.box == knob_box(slider) and step.drop is not None
    at_centre = step.drop.box(view(slider), Point(99.5, 59.5))
    assert at_centre.centre.x == pytest.approx(149.5) and at_centre.w == pytest.approx(0.8 * 25)
    assert step.drop.box(view(slider), Point(101.5, 59.5)).centre.x == pytest.approx(151.5)


def test_a_program_that_exits_when_its_task_does_not_end_so_is_a_scene_failure():
    ep = DesktopEpisode.__new__(DesktopEpisode)
    ep.spec = make_spec(task="gtk.factory-check")
    ep.program = "gtk3-widget-factory"
    factory, zenity = TASKS["factory-check"], TASKS["zenity-list"]
    assert ep.closed(factory, view()) is False
    with pytest.raises(ProgramExited, match=r"^gtk.factory-check: gtk3-widget-factory exited \(code 0\) in"):
        ep.closed(factory, view(alive=False, code=0))
    assert ep.closed(zenity, view(alive=False, code=1)) is True  # zenity's Cancel: its answer, not a fault
    with pytest.raises(ProgramExited, match="killed by signal 9"):
        ep.closed(zenity, view(alive=False, code=-9))


# ------------------------------------------------------------------------------------------ end to end


def needs_programs() -> None:
    for tool, package in (("Xvfb", "xvfb"), ("xdotool", "xdotool")):
        need("XVFB", None if shutil.which(tool) else f"no {tool} on PATH (Debian package {package})")


@pytest.fixture
def mark(monkeypatch: pytest.MonkeyPatch) -> str:
    """A marker in the environment of every process the test starts (tests.scenes.test_desktop_procs)."""
    value = uuid.uuid4().hex
    monkeypatch.setenv("DVOC_TEST_MARK", value)
    return value


@pytest.mark.e2e
def test_oracle_plans_with_sim_ideal_succeed_by_the_programs_verdict(tmp_path: Path, mark: str) -> None:
    """The product path (run_sweep, experiment=episodes): a typed form and the desktop drag end on the
    program's answer, every point on its target (the drag's two apart), and nothing is left running."""
    needs_programs()
    setup = quick_setup(["experiment=episodes", "tasks=[gtk.zenity-form,gtk.zenity-scale-drag]",
                         "methods=[oneshot]", "repeats=1", "run.quiet=true"])  # fmt: skip
    run_sweep(setup, tmp_path)
    trials = [json.loads(x) for x in (tmp_path / "trials.jsonl").read_text().splitlines()]
    assert len(trials) == 2
    for t in trials:
        ep = t["episode"]
        assert t["scene_kind"] == "desktop" and t["status"] == "ok", t.get("error")
        assert ep["end"] == "verdict" and ep["done"] and ep["exit_code"] == 0 and t["episode_success"], ep
        assert ep["stdout"].strip() and ep["reason"] == f"it printed {ep['stdout'].strip()!r}"
        grounded = [s for s in ep["steps"] if s["point"] is not None]
        assert grounded and all(s["located"] for s in grounded) and t["hit"] is True
        assert all(s["interacted"] for s in ep["steps"])
        assert all(s["frame_before"] and s["frame_after"] for s in ep["steps"])
    drag = next(s for t in trials for s in t["episode"]["steps"] if s["action"] == "drag")
    assert drag["located_by"] == "box" and drag["drop_located"] is True
    assert Box(*drag["drop_box"]).contains(Point(*drag["drop_point"]))
    assert gone_within(mark, 10) == []
    from dvoc_bench.analysis.report import build_report

    text, _ = build_report([str(tmp_path)], [], out=tmp_path / "report", figures=False, n_boot=50)
    section = text.split("### Episodes (")[1]  # desktop episodes have the section too, not only MiniWoB's
    assert "| zenity-form | oneshot | 1 | 1 | 1 | 100.0% |" in section


Grounder = Callable[[DesktopEpisode, TrialEnv], Awaitable[list[float]]]


def run_desktop_with(task: str, seed: int, ground: Grounder) -> TrialResult:
    """One episode of ``task`` whose every grounding is ``ground(episode, env)`` (a point, no model)."""
    source = GtkEpisodeSource(EpisodeSettings(max_steps=4), DesktopOptions(timeout_s=90))  # a loaded machine
    registry = SceneRegistry(default_scenes_dir(), sources={SOURCE: source})
    spec: TrialSpec = make_spec(task=f"gtk.{task}", method="scripted", rep=seed, seed=0)
    blank = step_snapshot("blank", np.zeros((800, 1280, 3), np.uint8), "-", "-", Box(0, 0, 1, 1))
    env = TrialEnv(snapshot=blank, model=None, model_identity="t", save_shot=ShotSink())
    holder: dict[str, DesktopEpisode] = {}

    async def run(spec: TrialSpec, env: TrialEnv) -> TrialResult:
        point = await ground(holder["e"], env)
        return TrialResult(status="ok", stop_reason="hit", final_point=point)

    ep = DesktopEpisode(spec, env, SimpleNamespace(run=run), source, registry)  # type: ignore[arg-type]
    holder["e"] = ep
    return asyncio.run(ep.run())


async def on_target(ep: DesktopEpisode, env: TrialEnv) -> list[float]:
    return env.snapshot.truth.target_box.centre.as_list()


@pytest.mark.e2e
def test_a_point_off_the_target_makes_the_programs_own_verdict_fail(mark: str) -> None:
    """zenity's list: pointing at Cancel when the step asks for OK is zenity's own "cancelled" (exit code 1,
    nothing printed), the verdict fails and that step is the first off target; the same seed with every
    point on its target's centre succeeds with zenity printing the city."""
    needs_programs()
    goal = TASKS["zenity-list"].setup(3).goal

    async def cancel_for_ok(ep: DesktopEpisode, env: TrialEnv) -> list[float]:
        assert ep.desk is not None
        if env.snapshot.truth.target_id == "push button:OK":
            now = await asyncio.to_thread(ep.desk.read, 0)
            cancel = now.find("push button", "Cancel")[0]
            return Box(*(float(v) for v in cancel.box)).centre.as_list()
        return await on_target(ep, env)

    off = run_desktop_with("zenity-list", 3, cancel_for_ok).episode
    on = run_desktop_with("zenity-list", 3, on_target).episode
    assert off is not None and on is not None
    assert off.end == "verdict" and off.done and off.exit_code == 1 and not off.success, off
    assert off.reason == "the dialog exited with code 1 (cancelled)"
    assert [s.located for s in off.steps] == [True, False] and off.first_off_target == 1
    assert off.steps[1].hit_element == "push button:Cancel"
    assert on.success and on.stdout == f"{goal}\n" and all(s.located for s in on.steps)
    assert gone_within(mark, 10) == []


@pytest.mark.e2e
def test_a_program_killed_mid_episode_fails_its_episode_in_one_line_and_leaves_nothing(mark: str) -> None:
    """The first grounding kills zenity: the episode ends ``page_error`` with ``error_class=scene`` and one
    line naming the program; the display, the buses and the runner are gone."""
    needs_programs()

    async def kill_then_centre(ep: DesktopEpisode, env: TrialEnv) -> list[float]:
        assert ep.desk is not None
        below = psutil.Process(ep.desk.session.proc.pid).children(recursive=True)
        (zenity,) = [p for p in below if p.name() == "zenity"]
        zenity.kill()  # the runner reaps it (it is the runner's child): its exit code is -9
        return await on_target(ep, env)

    result = run_desktop_with("zenity-list", 0, kill_then_centre)
    assert result.status == "error" and result.error_class == "scene" and result.episode is not None
    assert result.episode.end == "page_error" and not result.episode.success
    assert result.error == "gtk.zenity-list: zenity was killed by signal 9 in the middle of the episode"
    assert "\n" not in result.error and os.environ["DVOC_TEST_MARK"] == mark
    assert gone_within(mark, 10) == []


@pytest.mark.e2e
def test_a_located_click_that_changes_nothing_is_located_not_interacted(monkeypatch, mark: str) -> None:
    """The widget factory's fifth checkbutton is insensitive: a click on it lands on it by AT-SPI's hit
    test (located) but it stays unchecked (not interacted); the planner asks again until the step cap."""
    needs_programs()
    import dataclasses

    from dvoc_bench.scenes.desktop import gtk_tasks
    from dvoc_bench.scenes.desktop.gtk_tasks import Step, states_changed

    def tick_the_fifth(view: View, k: int, goal: object) -> Step | None:
        box = [b for b in view.find("check box") if b.name == "checkbutton"][4]
        assert "sensitive" not in box.states
        return Step("click", "Tick the fifth checkbox", box.id, expect=states_changed(box.id, "checked"))

    task = dataclasses.replace(gtk_tasks.TASKS["factory-check"], plan=tick_the_fifth)
    monkeypatch.setitem(gtk_tasks.TASKS, "factory-check", task)
    rec = run_desktop_with("factory-check", 0, on_target).episode
    assert rec is not None and rec.end == "step_cap" and not rec.success and len(rec.steps) == 4
    assert all(s.located and s.located_by == "accessible" and not s.interacted for s in rec.steps)
    assert rec.first_off_target is None
    assert gone_within(mark, 10) == []


@pytest.mark.parametrize(
    ("knob", "message"),
    [
        ("episode.plan=model", "episode.plan: model plans MiniWoB pages only; gtk.zenity-form plans by"),
        ("desktop.gdk_scale=2", "desktop.gdk_scale: the desktop episodes (gtk.zenity-form, ...) run"),
        ("wording=visual", "wording: the desktop episodes (gtk.zenity-form, ...) run unvaried"),
    ],
)
def test_knobs_a_desktop_episode_would_not_honour_are_refused(knob: str, message: str) -> None:
    """A GTK episode runs its oracle's plan on the program as it starts: a knob it would carry in its key
    without honouring it is a config error, not a silently different record."""
    with pytest.raises(ConfigError) as e:
        quick_setup(["experiment=episodes", "tasks=[gtk.zenity-form,miniwob.click-test]", knob])
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    quick_setup(["experiment=episodes", "tasks=[miniwob.click-test]", knob])  # MiniWoB pages take them
