"""The ``episode:`` block of the config, declared once (docs/episodes.md): how MiniWoB episodes run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dvoc_bench.core.declare import Declared, PosFloat, PosInt


class Episode(Declared):
    """MiniWoB++ episodes (tasks ``miniwob.<name>``): plan, screenshot scale, caps."""

    plan: Literal["oracle", "model"] = "oracle"
    """Who plans the steps: ``oracle``, the task family's planner reading the page (only grounding is
    measured); ``model``, the trial's model with the planning tools (``click(target)``, ``type(text)``,
    ``drag(from, to)``, ``scroll(direction)``, ``key(name)``, ``done()``), each target in words grounded
    by the method. A simulated model (and a model-free baseline) plans by the oracle in either mode, and
    every record says so (``planner``)."""
    scale: float = Field(4.0, ge=1.0, le=8.0)
    """Device pixels per CSS pixel: MiniWoB's 160x210 CSS px task area is screenshotted at
    ``160*scale x 210*scale`` pixels (4: 640x840)."""
    max_steps: PosInt = Field(12, le=200)
    """Steps an episode may take before it is ended (``end=step_cap``)."""
    wall_s: PosFloat = 300.0
    """Seconds an episode may run (grounding included) before it is ended (``end=wall_cap``); also the
    page's own time limit, so the page never ends an episode on its clock first."""

    def label(self) -> str:
        """The knobs as recorded in an episode trial's ``episode_knobs`` field (part of its key)."""
        return f"plan={self.plan},scale={self.scale:g},max_steps={self.max_steps},wall_s={self.wall_s:g}"
