"""Desktop episode tasks as a task source (``scene_kind=desktop``, ids ``gtk.<task>``): each task of
:mod:`dvoc_bench.scenes.desktop.gtk_tasks` is a real GTK program run step by step (the runner's
``desktop_episodes`` module drives it). A task's snapshot is its first step on seed 0 (what the plan's
scene hash and start points are made from); every episode starts the program afresh in a session of its
own (:meth:`GtkEpisodeSource.page`), closed when the episode ends.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dvoc_bench.core.geometry import Box, Point
from dvoc_bench.core.records import Probe, SceneKind
from dvoc_bench.core.scene import Snapshot
from dvoc_bench.scenes.desktop.apps import AppTask
from dvoc_bench.scenes.desktop.episodes import DesktopPage
from dvoc_bench.scenes.desktop.gtk_tasks import TASKS, Setup, box_of
from dvoc_bench.scenes.desktop.settings import Desktop
from dvoc_bench.scenes.desktop.source import DesktopOptions
from dvoc_bench.scenes.miniwob.settings import Episode
from dvoc_bench.scenes.miniwob.source import step_snapshot
from dvoc_bench.scenes.sources import SceneError

PREFIX = "gtk."
"""Task ids are ``gtk.<task name>``."""
SOURCE = "gtk_episodes"
"""The source's registered name."""


def task_name(task_id: str) -> str:
    """``gtk.zenity-form`` -> ``zenity-form``."""
    return task_id[len(PREFIX) :] if task_id.startswith(PREFIX) else task_id


def episode_label(e: Episode) -> str:
    """The ``episode:`` knobs a desktop episode depends on (its ``episode_knobs``, part of its key):
    ``episode.scale`` is MiniWoB's and is left out."""
    return f"plan={e.plan},max_steps={e.max_steps},wall_s={e.wall_s:g}"


def is_desktop_episode(registry: Any, task: str) -> bool:
    """``task`` is a desktop episode task of ``registry`` (a :class:`~dvoc_bench.scenes.SceneRegistry`)."""
    try:
        source = registry.source(SOURCE)
    except (KeyError, AttributeError):
        return False
    return isinstance(source, GtkEpisodeSource) and task in source.ids()


class GtkEpisodeSource:
    """The desktop episode source (see the module docstring)."""

    kind: SceneKind = "desktop"
    ordered = False
    live = True

    def __init__(self, episode: Episode | None = None, desktop: DesktopOptions | None = None) -> None:
        self.options = episode or Episode()
        """The validated ``episode:`` block (plan, step and wall-clock caps)."""
        self.desktop = desktop or DesktopOptions()
        """The ``desktop:`` block (``timeout_s`` bounds the program's start and each query)."""

    @classmethod
    def from_settings(cls, options: Any) -> GtkEpisodeSource:
        """From ``(episode, desktop)`` blocks (validated, or mappings validated here), or ``None``."""
        episode, desktop = options if isinstance(options, tuple) else (None, None)
        if isinstance(episode, Mapping):
            episode = Episode.model_validate(episode)
        desk = (
            DesktopOptions.from_settings(desktop, custom=False)
            if isinstance(desktop, (Desktop, Mapping))
            else None
        )
        return cls(episode, desk)

    def ids(self) -> list[str]:
        return sorted(PREFIX + name for name in TASKS)

    def setup(self, task_id: str, seed: int) -> Setup:
        name = task_name(task_id)
        if name not in TASKS:
            raise SceneError(f"{task_id}: no desktop episode task {name!r}")
        return TASKS[name].setup(seed)

    def page(self, task_id: str, setup: Setup) -> DesktopPage:
        """The program of one episode started on a display of its own (the caller closes it); a program
        that cannot start raises :class:`SceneError` in one line."""
        app = AppTask(
            id=task_id,
            command=setup.command,
            target=setup.wait_for or "frame:",
            instruction=setup.query,
            where=f"the desktop episode task {task_id}",
            wait_for=setup.wait_for,
            size=setup.size,
        )
        return DesktopPage(app, self.desktop)

    def snapshot(self, task_id: str) -> Snapshot:
        setup = self.setup(task_id, 0)
        page = self.page(task_id, setup)
        try:
            view = page.read(0)
            try:
                step = TASKS[task_name(task_id)].plan(view, 0, setup.goal)
            except LookupError as e:
                raise SceneError(f"{task_id}: the planner cannot read the program: {e}") from e
            w = view.get(step.target) if step is not None and step.target is not None else None
            if w is None:  # a first step typed into the focus: the task's anchor (its OK) stands in
                w = view.get(setup.wait_for) if setup.wait_for else None
                step = None
            if w is None:
                raise SceneError(f"{task_id}: the plan's first step has no target")
            box: Box = (step.box if step is not None else None) or box_of(w)
            words = step.instruction if step is not None else setup.query
            return step_snapshot(task_id, page.capture(), words, w.id, box)
        finally:
            page.close()

    def meta(self, task_id: str) -> dict[str, Any] | None:
        return None

    def probe(self, task_id: str, point: Point) -> Probe | None:
        return None  # the episode's steps carry their own AT-SPI verdicts

    def close(self) -> None:
        return None  # every episode closes its own program and display
