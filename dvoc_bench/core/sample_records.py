"""The dataset blocks of a trial record, part of :mod:`dvoc_bench.core.records`' vocabulary: a dataset
trial's ``sample`` (:class:`SampleMeta`: the sample's identity and metadata) and a two-point trial's ``drag``
(:class:`DragRecord`: each end scored on its own target). Points and boxes are screenshot pixels."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SampleMeta:
    """What a dataset sample says about itself (the ``sample`` field of dataset trials)."""

    dataset: str | None = None
    """Format it was read as: ``screenspot | screenspot_v2 | screenspot_pro | manifest | cuactspot |
    precision_cua``."""
    file: str | None = None
    """Stem of the annotation file (``screenspot_mobile``, ``photoshop_macos``, ...)."""
    ui_type: str | None = None
    """``text | icon`` (ScreenSpot's ``data_type``, ScreenSpot-Pro's ``ui_type``)."""
    platform: str | None = None
    """ScreenSpot-Pro's ``platform``; ScreenSpot: ``mobile | desktop | web`` (the file's name)."""
    application: str | None = None
    """ScreenSpot-Pro's ``application``."""
    group: str | None = None
    """ScreenSpot-Pro's ``group`` (Dev, Creative, CAD, Scientific, Office, OS)."""
    data_source: str | None = None
    """ScreenSpot's ``data_source`` (ios, android, windows, macos, ...)."""
    instruction: str | None = None
    """The instruction as the dataset states it (the task text)."""
    image: str | None = None
    """The screenshot's file name."""
    img_size: list[int] | None = None
    """``[w, h]`` the annotation states, when it does."""
    category: str | None = None
    """CUActSpot's category (Canvas, GUI, Image, Table, Text); precision-cua-bench's ``label_type``."""
    lang: str | None = None
    """Language of the task text (``en | zh``; CUActSpot)."""
    task_kind: str | None = None
    """``click`` (one point), ``drag`` (rank 1 then rank 2) or ``multi`` (more points; CUActSpot)."""
    endpoint: str | None = None
    """A drag's endpoint task: ``from`` (what to drag) or ``to`` (where to drop it); a multi-point sample's
    point ``1`` .. ``K``; ``None`` otherwise (CUActSpot)."""
    points: int | None = None
    """How many points the sample's own rule needs (1 click, 2 drag, ``K`` multi; CUActSpot)."""
    size_class: str | None = None
    """The target's size class by its shorter side (:func:`dvoc_bench.scenes.screen_sets.size_class`)."""


@dataclass
class DragRecord:
    """A two-point (drag) trial's two points scored one by one (the ``drag`` field). The record's own
    ``final_point`` / ``target_box`` are the start's; its ``hit``, ``hit_box``, ``hit_radius`` and
    ``within_eps`` hold when both points do."""

    from_hit: bool | None = None
    """The start's point is on its target (the scene's rule: CUActSpot's polygon, else the box)."""
    to_hit: bool | None = None
    """The end's point is on its target (the same rule)."""
    from_hit_box: bool | None = None
    """The start's point is inside its target box."""
    to_hit_box: bool | None = None
    """The end's point is inside its target box."""
    from_hit_radius: bool | None = None
    """The paper's radius rule for the start."""
    to_hit_radius: bool | None = None
    """The paper's radius rule for the end."""
    from_within_eps: bool | None = None
    """The start's point is within ``epsilon`` of its target's centre."""
    to_within_eps: bool | None = None
    """The end's point is within ``epsilon`` of its target's centre."""
    to_box: list[float] | None = None
    """The end's target box ``[x0, y0, x1, y1]``, pixels."""
    to_dist_px: float | None = None
    """Distance from the end's point to its target's centre (3 decimals); ``None`` without the point."""
    to_element: str | None = None
    """What lies under the end's point (a polygon's id, ``banned:R3``, an element id)."""
