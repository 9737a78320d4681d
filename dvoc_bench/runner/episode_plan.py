"""Who plans an episode's next step: the task's oracle planner, or the trial's model (``episode.plan=model``).

A model plans with the tools of :mod:`dvoc_bench.protocol.episode_tools`: it sees the task area's
screenshot, the task text and the steps it took so far, and calls one tool. Its target is a description in
words, which becomes the step's instruction: the trial's method grounds it exactly as it grounds an oracle
step. The step's truth (for ``located`` and for the simulator) is the oracle planner's target on the same
page when the oracle's next step has the same action (``truth=oracle``); otherwise the step has none and
``located`` stays ``None``.

A simulated model, and a model-free baseline, plan by the oracle even under ``plan=model`` (a simulator
cannot plan; every record names its planner). The planning call is a ``steps.jsonl`` line of kind ``plan``
(its tokens and cost counted with the episode's); a reply that is not one usable planning call ends the
episode in one line (``end=plan_error``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.records import Step, TrialSpec
from dvoc_bench.draw.render import encode_png
from dvoc_bench.methods.common import TrialEnv, base_step, call_model, call_seed
from dvoc_bench.models.base import ModelRequest, Reply
from dvoc_bench.protocol import Parsed
from dvoc_bench.protocol.episode_tools import PlanCall, plan_tools, read_plan_call
from dvoc_bench.scenes.miniwob.dom import Dom
from dvoc_bench.scenes.miniwob.planners import Drop, PlanError, PlannedStep, Planner

PLAN_SEED_BASE = 1_000_000
"""Planning calls take seeds ``call_seed(trial seed, PLAN_SEED_BASE + step)``: never a grounding call's."""

SCROLL_NOTCHES = 3
"""Wheel notches of one model-planned ``scroll`` step."""

PLAN_PROMPT = """You are using a web page to do a task. The screenshot shows the page ({w}x{h} pixels).

Task: {query}

Steps you have taken so far:
{history}

Choose the next step and call exactly one tool. Name targets in words as they appear on the page \
(for example: the "Submit" button, the text field, the checkbox labelled "abc"). Call done() when the \
task is finished."""
"""The planning prompt (``{w}``, ``{h}``, ``{query}``, ``{history}``)."""


def uses_model(env: TrialEnv, plan: str) -> bool:
    """Whether this trial's steps are planned by its model: ``plan=model`` and a real, unsimulated model."""
    return plan == "model" and env.model is not None and not env.model.simulated


@dataclass
class PlanOutcome:
    """One planning decision: the step (``None``: the plan is over) and the planning call's record."""

    step: PlannedStep | None
    record: Step | None = None
    """The ``steps.jsonl`` line of the model's call (``None`` for the oracle)."""
    failed_call: Any = None
    """The model call's error (:class:`~dvoc_bench.models.base.ModelCallError`) when it failed."""
    error: str | None = None
    """One line when the model's reply is not a usable planning call (the episode ends ``plan_error``)."""


def oracle_step(oracle: Planner | None, dom: Dom, k: int) -> PlannedStep | None:
    """The oracle's next step, ``None`` when it has none or cannot read the page."""
    if oracle is None:
        return None
    try:
        return oracle(dom, k)
    except LookupError:
        return None


def to_step(call: PlanCall, truth: PlannedStep | None) -> PlannedStep:
    """A model's planning call as a step; ``truth``: the oracle's step on the same page (its target is the
    step's truth when its action is the same)."""
    same = truth if truth is not None and truth.action == call.tool else None
    a, line = call.args, call.words()
    if call.tool == "click":
        target = same.target if same is not None else None
        return PlannedStep("click", f"Click {a['target']}", target=target, call=line)
    if call.tool == "type":
        return PlannedStep("type", f'Type "{a["text"]}"', text=a["text"], call=line)
    if call.tool == "key":
        return PlannedStep("key", f"Press {a['name']}", text=a["name"], call=line)
    if call.tool == "scroll":
        where = a.get("target", "the page")
        direction = a["direction"].lower()
        target = same.target if same is not None else None
        return PlannedStep(
            "scroll", f"Scroll {direction} over {where}", target=target, text=direction,
            times=SCROLL_NOTCHES, call=line,
        )  # fmt: skip
    assert call.tool == "drag"
    drop_box = same.drop.box if same is not None and same.drop is not None else None
    drop = Drop(a["to"], drop_box if drop_box is not None else _no_box)
    target = same.target if same is not None else None
    return PlannedStep("drag", f"Drag {a['from']}", target=target, drop=drop, call=line)


def _no_box(dom: Dom, grab: tuple[float, float]) -> tuple[float, float, float, float]:
    raise PlanError("no truth for this drop")


def history_lines(steps: list[str]) -> str:
    return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(steps)) if steps else "(none yet)"


class ModelPlanner:
    """Asks the trial's model for each step (see the module docstring)."""

    def __init__(self, spec: TrialSpec, env: TrialEnv, oracle: Planner | None) -> None:
        self.spec, self.env, self.oracle = spec, env, oracle
        self.history: list[str] = []
        """The model's calls so far, one line each (shown back to it)."""

    def request(self, image: Any, query: str, k: int, scene_id: str) -> ModelRequest:
        h, w = image.shape[:2]
        text = PLAN_PROMPT.format(w=w, h=h, query=query, history=history_lines(self.history))
        return ModelRequest(
            text=text,
            image_png=encode_png(image),
            image_size=Size(w, h),
            tools=plan_tools(),
            scene_id=scene_id,
            seed=call_seed(self.spec.seed, PLAN_SEED_BASE + k),
            params=self.env.params,
            image_rgb=image,
        )

    async def next(self, dom: Dom, image: Any, k: int, scene_id: str, frame_sha: str) -> PlanOutcome:
        """The model's next step on this page (its call's record kept whatever happened)."""
        req = self.request(image, dom.query, k, scene_id)
        read: dict[str, PlanCall] = {}

        def parser(reply: Reply) -> Parsed:
            call = read["call"] = read_plan_call(reply)
            return Parsed("ok" if call.error is None else "parse_error", call.error, None, None)

        out = await call_model(self.env, req, parser=parser)
        rec = base_step(self.spec, 0, "plan", req, out, frame_sha, self.env.model_identity)
        rec.episode_step = k
        if out.error is not None:
            return PlanOutcome(None, rec, failed_call=out.error)
        call = read["call"]
        if call.error is not None or call.tool is None:
            return PlanOutcome(None, rec, error=f"the model's plan is not a usable tool call: {call.error}")
        self.history.append(call.words())
        if call.tool == "done":
            return PlanOutcome(None, rec)
        return PlanOutcome(to_step(call, oracle_step(self.oracle, dom, k)), rec)
