"""MiniWoB tasks as a task source (``scene_kind=miniwob``): task ids ``miniwob.<name>`` for every task that
has an oracle planner. A task's snapshot is its first step on seed 0 (what the plan's scene hash and start
points are made from); the episodes themselves run through :meth:`MiniwobSource.page` (the runner's
``episodes`` module). The shared browser starts on the first page and closes with :meth:`close`."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from dvoc_bench.core.geometry import Point
from dvoc_bench.core.records import Probe, SceneKind
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes.miniwob.dom import css_box_to_image
from dvoc_bench.scenes.miniwob.driver import EpisodePage
from dvoc_bench.scenes.miniwob.planners import PLANNERS, PlanError
from dvoc_bench.scenes.miniwob.settings import Episode
from dvoc_bench.scenes.sources import SceneError
from dvoc_bench.scenes.web.browser import WebBrowser

PREFIX = "miniwob."
"""Task ids are ``miniwob.<MiniWoB task name>``."""


def task_name(task_id: str) -> str:
    """``miniwob.click-test`` -> ``click-test``."""
    return task_id[len(PREFIX) :] if task_id.startswith(PREFIX) else task_id


def step_scene_id(task_id: str, trial_key: str, step: int, part: str = "") -> str:
    """The scene id of one step's screenshot (the simulator looks its truth up by it)."""
    return f"{task_id}@{trial_key[:10]}/{step}{part}"


def content_hash(image: Any, truth: SceneTruth) -> str:
    """sha256 over the pixels, the target box and the instruction (16 hex digits)."""
    h = hashlib.sha256(image.tobytes())
    h.update(repr((truth.target_box.as_list(), truth.instruction, truth.size.as_list())).encode())
    return h.hexdigest()[:16]


def step_snapshot(scene_id: str, image: Any, instruction: str, target: str, box: Any) -> Snapshot:
    """A step's screenshot with its truth: the target's box in screenshot pixels."""
    h, w = image.shape[:2]
    from dvoc_bench.core.geometry import Size

    el = Element(id=target, label=instruction, box=box)
    truth = SceneTruth(
        scene_id=scene_id,
        size=Size(w, h),
        instruction=instruction,
        target_id=target,
        target_box=box,
        elements=(el,),
    )
    return Snapshot(truth=truth, image=image, content_hash=content_hash(image, truth))


BROWSERS = 4
"""Browsers (each its own Chromium on its own thread) the episodes in flight are spread over: every call of
a page waits for its browser's thread, so episodes sharing one browser wait for each other's captures and
clicks. A browser starts when a page first needs it (one episode at a time: one browser)."""


class MiniwobSource:
    """The MiniWoB task source (see the module docstring)."""

    kind: SceneKind = "miniwob"
    ordered = False
    live = True

    def __init__(self, options: Episode | None = None, browser: WebBrowser | None = None) -> None:
        self.options = options or Episode()
        """The validated ``episode:`` block."""
        self.browser = browser or WebBrowser()
        """The first browser (the only one when given): the snapshot's, and the first episode's."""
        more = 0 if browser is not None else BROWSERS - 1
        self.browsers = [self.browser, *(WebBrowser() for _ in range(more))]
        """The browsers pages open in (:data:`BROWSERS`; one when a browser is given)."""
        self._open = [0] * len(self.browsers)
        self._lock = threading.Lock()

    def ids(self) -> list[str]:
        return sorted(PREFIX + name for name in PLANNERS)

    def page(self, task_id: str) -> EpisodePage:
        """A fresh page of the task (one per episode; the caller closes it), in the browser with the fewest
        pages open (the first among equals: one episode at a time stays in one browser)."""
        with self._lock:
            n = min(range(len(self.browsers)), key=lambda i: (self._open[i], i))
            self._open[n] += 1
        page = EpisodePage(self.browsers[n], task_name(task_id), self.options.scale)
        page.on_close = lambda: self._closed(n)
        return page

    def _closed(self, n: int) -> None:
        with self._lock:
            self._open[n] = max(0, self._open[n] - 1)

    def snapshot(self, task_id: str) -> Snapshot:
        name = task_name(task_id)
        if name not in PLANNERS:
            raise SceneError(f"{task_id}: no oracle planner for the miniwob task {name!r}")
        page = self.page(task_id)
        try:
            dom = page.start(0, self.options.wall_s)
            try:
                step = PLANNERS[name](dom, 0)
            except (PlanError, LookupError) as e:
                raise SceneError(f"{task_id}: the planner cannot read the page: {e}") from e
            el = dom.by_idx(step.target) if step is not None and step.target is not None else None
            if step is None or el is None:
                raise SceneError(f"{task_id}: the plan's first step has no target")
            image = page.capture()
            box = css_box_to_image(el.box, self.options.scale)
            return step_snapshot(task_id, image, step.instruction, f"{el.tag}@{el.idx}", box)
        finally:
            page.close()

    def meta(self, task_id: str) -> dict[str, Any] | None:
        return None

    def probe(self, task_id: str, point: Point) -> Probe | None:
        return None  # the episode's steps carry their own DOM verdicts

    def close(self) -> None:
        for b in self.browsers:  # a browser never started has nothing to close
            b.close()
