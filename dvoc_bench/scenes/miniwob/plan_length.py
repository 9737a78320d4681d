"""How many groundings an oracle plan asks for, per MiniWoB task: what ``run.plan_only`` multiplies a
grounding's calls by for an episode (:mod:`dvoc_bench.runner.sizing`).

Counted from the planners (:mod:`dvoc_bench.scenes.miniwob.planners`) on a page where every grounding lands
on its target: a ``click`` or ``select`` step is one grounding, a ``drag`` step two (its start and its
drop), ``type`` and ``key`` steps none (they go to the focused element). A missed grounding makes the
planner ask again, so a real episode may take more, up to ``episode.max_steps`` steps.

Tasks whose plan length depends on the page are left out (``None`` from :func:`plan_groundings`):
``click-checkboxes`` (one click per box to change, then Submit), ``use-spinner`` (one click per unit the
value is away, then Submit), ``click-tab-2`` (the link's tab first when the link is hidden).
"""

from __future__ import annotations

PLAN_GROUNDINGS: dict[str, int] = {
    # one click that ends the episode
    "click-test": 1, "click-test-2": 1, "click-button": 1, "unicode-test": 1, "click-link": 1,
    "click-widget": 1, "click-dialog": 1, "click-dialog-2": 1, "focus-text": 1, "focus-text-2": 1,
    "click-tab": 1,
    # two clicks: ONE then TWO; the choice then Submit; a field (click, type) then Submit
    "click-button-sequence": 2, "click-option": 2, "choose-list": 2, "enter-text": 2, "enter-text-2": 2,
    "simple-arithmetic": 2, "click-collapsible": 2, "use-slider": 2,
    # two fields (click, type each) then Submit / Login
    "enter-password": 3, "login-user": 3,
    # one drag (its start and its drop) then Submit
    "drag-box": 3,
}  # fmt: skip
"""Task name -> groundings of its oracle plan when every grounding lands (module docstring)."""


def plan_groundings(task: str) -> int | None:
    """The groundings of ``task``'s oracle plan (a name, ``click-test``, or an id, ``miniwob.click-test``);
    ``None`` when its length depends on the page or the task has no entry."""
    return PLAN_GROUNDINGS.get(task.removeprefix("miniwob."))
