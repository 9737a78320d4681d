"""What a scene gives the harness: a rendered Snapshot with its ground truth."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dvoc_bench.core.geometry import Box, Point, Size


@dataclass(frozen=True)
class Element:
    """One visible UI element with its box."""

    id: str
    """Stable id within the scene (e.g. ``submit``)."""
    label: str
    """Human-readable label (button text, or a description for unlabelled shapes)."""
    box: Box
    """Box in pixels (edges inclusive)."""
    role: str = "button"
    """``button | input | link | text | panel``; what a detector would call it."""
    interactive: bool = True
    """True for clickable elements (buttons, inputs, links)."""


@dataclass(frozen=True)
class SceneTruth:
    """Ground truth of a scene: what the simulator may look up by scene id, and what scoring uses."""

    scene_id: str
    """Task id (``S1`` ...)."""
    size: Size
    """Canvas size in pixels."""
    instruction: str
    """The task instruction shown to the model."""
    target_id: str
    """Id of the target element."""
    target_box: Box
    """Target element's box."""
    elements: tuple[Element, ...]
    """All elements in drawing order (the target included)."""
    target_full_box: Box | None = None
    """The target element's whole box when ``target_box`` is only its visible part (a web target sticking
    out of the viewport is scored on the part inside it); ``None`` when the two are the same."""
    target_aim: Point | None = None
    """Where a model that knows the target points: a point on it when its box's centre is not (a concave
    or ring-shaped polygon target, one with a Banned region in its middle); ``None``: the box's centre.
    The simulator aims there; no rule scores by it."""
    ends: tuple[SceneTruth, ...] = ()
    """A two-point (drag) task: the truth of each point, in order (where the drag starts, where it ends),
    each a one-point task of its own id (``<id>:from``, ``<id>:to``) on the same screen; this truth's target
    is the first. Empty for a one-point task."""

    absent: str | None = None
    """The absent-target variant this screen is (``remove``: the target was taken off it; ``ask_missing``:
    the instruction names an element it does not have; docs/absent.md); ``None``: the target is there.
    ``target_box`` then keeps where the target was (``remove``) or the original target (``ask_missing``),
    for the record; no rule counts a click there as a hit."""

    @property
    def aim(self) -> Point:
        """:attr:`target_aim`, else the target box's centre."""
        return self.target_aim if self.target_aim is not None else self.target_box.centre


@dataclass(frozen=True)
class Snapshot:
    """A rendered scene: the clean screenshot plus its ground truth. Rendered once, reused by every trial."""

    truth: SceneTruth
    """Geometry and instruction."""
    image: np.ndarray
    """Clean screenshot, ``HxWx3`` uint8, read-only."""
    content_hash: str
    """sha256 over pixels, geometry and instruction (first 16 hex digits)."""

    @property
    def scene_id(self) -> str:
        return self.truth.scene_id

    @property
    def size(self) -> Size:
        return self.truth.size

    @property
    def target_box(self) -> Box:
        return self.truth.target_box

    @property
    def instruction(self) -> str:
        return self.truth.instruction
