"""The records of an episode (several grounded steps on a live page, the page's own verdict), part of
:mod:`dvoc_bench.core.records`' vocabulary: a trial of a MiniWoB task keeps one :class:`EpisodeRecord` in
its ``episode`` field, with one :class:`EpisodeStepRecord` per step; the method's model calls stay
``steps.jsonl`` lines, each naming its episode step (``Step.episode_step``). Points and boxes are screenshot
pixels (the task area at the episode's device scale factor)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

EpisodeEnd = Literal[
    "verdict", "plan_over", "step_cap", "wall_cap", "grounding_failed", "plan_error", "page_error"
]
"""How an episode ended: the page gave its verdict (``WOB_DONE_GLOBAL``; a desktop program: it closed with
its answer, or the plan was done and its state was read); the plan had no step left and the page gave none;
the step cap (``episode.max_steps``) or the wall-clock cap (``episode.wall_s``) ended it;
a step's grounding gave no point; the planner could not read the page; the page failed (a desktop program
would not start, died or exited mid-episode; one line in ``error``)."""

EPISODE_ENDS: tuple[str, ...] = get_args(EpisodeEnd)


@dataclass
class EpisodeStepRecord:
    """One step of an episode: what was asked, where the method pointed, what the input did."""

    index: int
    """0-based step index."""
    action: str
    """``click | hover | type | select | drag | scroll | key``
    (:data:`dvoc_bench.scenes.miniwob.planners.Action`;
    desktop: :data:`dvoc_bench.scenes.desktop.gtk_tasks.Action`)."""
    instruction: str
    """The step in words, as the method was asked it (a drag's first point)."""
    target: str | None = None
    """The target element (``tag#id@index``); ``None`` for ``type`` and ``key``, which go to the focus."""
    target_box: list[float] | None = None
    """The target's DOM box in screenshot pixels ``[x0, y0, x1, y1]`` (the step's truth)."""
    point: list[float] | None = None
    """Where the method pointed (the action's point), screenshot pixels."""
    hit_element: str | None = None
    """The element under ``point`` when the action was made."""
    located: bool | None = None
    """``point`` is on the target's DOM element (or inside it); ``None`` for ungrounded steps."""
    drop_instruction: str | None = None
    """A drag's second point, in words."""
    drop_box: list[float] | None = None
    """Where a drag's second point must land (from the first point's grab), screenshot pixels."""
    drop_point: list[float] | None = None
    """Where the method pointed for the drop."""
    drop_located: bool | None = None
    """``drop_point`` is inside ``drop_box``."""
    text: str | None = None
    """What was typed, the option chosen, the key pressed (the instruction says how many times), a
    scroll's direction, or the key held during a click (``Control``)."""
    refused: str | None = None
    """Why the page refused the action (no drop-down list under the point), one line; ``None``: done."""
    interacted: bool = False
    """The step's intended state change happened (a box checked, a value set, a tab shown, the page's
    verdict given), read from the page after the action."""
    calls: int = 0
    """Model calls this step's grounding made."""
    grounding_stop: str | None = None
    """How the method's grounding of this step ended (its ``stop_reason``; a drag: the first point's)."""
    frame_before: str | None = None
    """sha256 of the screenshot the step was grounded on (``frames/<sha>.png``)."""
    frame_after: str | None = None
    """sha256 of the screenshot after the action."""
    ground_s: float = 0.0
    """Seconds of grounding (the method, its model calls included)."""
    harness_s: float = 0.0
    """Seconds of harness work: captures, page reads, the hit test and the action itself."""
    done_after: bool = False
    """The page had given its verdict after this step (a desktop program: had closed)."""
    planned_by: str = "oracle"
    """Who chose this step: ``oracle`` (the task's planner) or ``model`` (``episode.plan=model``)."""
    plan_call: str | None = None
    """A model-planned step: the model's call as one line (``click(target='the OK button')``)."""
    truth: str | None = None
    """A model-planned step: where its target's truth came from (``oracle``: the oracle's step on the same
    page had the same action; its element is the target); ``None`` when it has none (``located`` stays
    ``None``)."""
    located_by: str | None = None
    """Desktop episodes: what decided ``located``: ``accessible`` (AT-SPI's hit test on the target) or
    ``box`` (the target's box: a part of an accessible, such as a slider's knob, or a target the hit test
    cannot reach, such as a button in a GTK popover); ``None``: the page's DOM (MiniWoB)."""


@dataclass
class EpisodeRecord:
    """One episode (the ``episode`` field of a MiniWoB trial)."""

    task: str
    """MiniWoB task name (``click-checkboxes``)."""
    family: str
    """The planner's task family (``click``, ``checkbox``, ``type``, ``select``, ``tabs``, ``drag``, ...)."""
    seed: int
    """The page's ``Math.seedrandom`` seed: the sweep's ``seed`` plus the trial's repeat index, so every
    method meets the same episodes."""
    plan: str
    """``episode.plan`` as set: ``oracle`` or ``model``."""
    scale: float
    """Device pixels per CSS pixel of the screenshots (``episode.scale``)."""
    size: list[int]
    """``[W, H]`` of every screenshot, pixels (MiniWoB's 160x210 CSS px task area at ``scale``)."""
    planner: str = "oracle"
    """Who planned the steps: ``oracle`` (the task's planner: only grounding is measured; also every
    simulated or model-free trial under ``plan=model``) or ``model`` (the trial's model, with the planning
    tools)."""
    query: str = ""
    """The task as the page posed it."""
    end: EpisodeEnd = "verdict"
    """How the episode ended."""
    done: bool = False
    """The page gave its verdict (``WOB_DONE_GLOBAL``)."""
    raw_reward: float | None = None
    """``WOB_RAW_REWARD_GLOBAL``: the page's reward without its time penalty; ``None`` without a verdict."""
    success: bool = False
    """The page's own verdict: done with ``raw_reward > 0``."""
    reason: str | None = None
    """``WOB_REWARD_REASON`` when the page gave one."""
    steps: list[EpisodeStepRecord] = field(default_factory=list)
    """The steps, in order."""
    first_off_target: int | None = None
    """Index of the first step whose grounding missed its target (a drag: either point); ``None``: none."""
    error: str | None = None
    """One line when the episode ended on a failure (planner, page, grounding)."""
    wall_s: float = 0.0
    """Seconds from the page's start to the verdict read."""
    program: str | None = None
    """Desktop episodes: the program's command line (``scene_kind=desktop``); ``None`` on a page."""
    start_s: float | None = None
    """Desktop episodes: seconds to start the program's session (display, buses, the program ready)."""
    exit_code: int | None = None
    """Desktop episodes: the program's exit code when it closed (a zenity dialog: 0 for OK)."""
    stdout: str | None = None
    """Desktop episodes: what the program printed (a zenity dialog's answer, its verdict)."""
