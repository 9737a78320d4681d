"""The protocol objects: everything that differs between the corrected protocol ``v1`` and the authors'
``paper`` semantics lives in one object per protocol, which the methods and the planner consult.

A method never asks ``if protocol == "paper"``; it asks its protocol:

- :meth:`Protocol.answer_frame`: the frame the answers are read in (``paper`` reads everything as pixels,
  whatever the model answers in: the paper's misreading);
- :meth:`Protocol.drawn_point`: where the crosshair is drawn (``paper`` truncates to whole pixels);
- :attr:`Protocol.missing_answer_is_zero`: a reply without usable numbers counts as the offset / point
  (0, 0) with confidence 0 (``paper``), or is recorded and asked again (``v1``);
- :meth:`Protocol.oneshot_retry_rule`: which rule tells the one-shot model it missed (``paper``: the
  radius rule the authors' harness used);
- :meth:`Protocol.label_placement`: where the overlay's labels go (``paper``: the authors' fixed corners);
- the prompt texts and the drawn label (``paper``'s first one-shot prompt carries no task).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dvoc_bench.core.geometry import Frame, NormMapping, Point, Size
from dvoc_bench.protocol import paper, prompts
from dvoc_bench.protocol.som import som_prompt as _som_prompt

if TYPE_CHECKING:
    from dvoc_bench.draw.som_render import Mark
    from dvoc_bench.protocol.prompts import HistoryEntry


@dataclass(frozen=True)
class Protocol:
    """The corrected protocol ``v1``: the model's own frame, stated; the image size stated; the crosshair
    position on a text line every step; the history shows where the crosshair really went."""

    name: str = "v1"
    """The value of ``protocols=[...]`` and of the records' ``protocol`` field."""
    missing_answer_is_zero: bool = False
    """A reply without usable numbers counts as (0, 0) with confidence 0 (else: recorded, asked again)."""
    checks_offset_range: bool = True
    """A DVOC offset outside its frame's range is recorded ``out_of_frame`` and not used (``paper``: used as
    read, as the authors' harness did; the loop clamps the step to the screen)."""

    def answer_frame(self, declared: str) -> str:
        """The frame answers are read in, given the model config's declared frame."""
        return declared

    def drawn_point(self, p: Point) -> Point:
        """Where the crosshair for the draft ``p`` is drawn."""
        return p

    def oneshot_retry_rule(self, configured: str) -> str:
        """The rule that tells a one-shot model its answer missed (``oneshot.retry_rule``)."""
        return configured

    def label_placement(self, configured: str) -> str:
        """Where a DVOC frame's labels are drawn (``overlay.label_placement``:
        :func:`dvoc_bench.draw.render.label_corners`)."""
        return configured

    def overlay_label(
        self, p: Point, frame: Frame, size: Size, radius: int, mapping: NormMapping = "last_pixel"
    ) -> str:
        """The drawn position label of a DVOC frame (bottom-right with the authors' placement), written by
        ``mapping`` (the model config's ``coord_frame.mapping``)."""
        return prompts.position_label(p, frame, size, mapping)

    def dvoc_prompt(
        self,
        *,
        instruction: str,
        size: Size,
        frame: Frame,
        overlay: str,
        predict: str,
        draft: Point,
        iteration: int,
        history: Sequence[HistoryEntry],
        circle_radius: int = 30,
        labels: str = "corner",
        mapping: NormMapping = "last_pixel",
    ) -> str:
        """Text of one DVOC step (``draft`` and ``history`` in pixels; ``labels``: the label placement;
        ``mapping``: the model config's ``coord_frame.mapping``)."""
        return prompts.dvoc_prompt(
            instruction=instruction, size=size, frame=frame, overlay=overlay, predict=predict, draft=draft,
            iteration=iteration, history=history, circle_radius=circle_radius, labels=labels, mapping=mapping,
        )  # fmt: skip

    def oneshot_prompt(
        self,
        *,
        instruction: str,
        size: Size,
        frame: Frame,
        attempt: int,
        previous: Point | None,
        mapping: NormMapping = "last_pixel",
    ) -> str:
        """Text of one one-shot attempt (``previous``: the last usable answer, pixels)."""
        return prompts.oneshot_prompt(
            instruction=instruction,
            size=size,
            frame=frame,
            attempt=attempt,
            previous=previous,
            mapping=mapping,
        )

    def som_prompt(self, *, instruction: str, size: Size, frame: Frame, marks: Sequence[Mark]) -> str:
        """Text of a Set-of-Mark request (one wording for both protocols)."""
        return _som_prompt(instruction=instruction, size=size, frame=frame, marks=marks)


@dataclass(frozen=True)
class PaperProtocol(Protocol):
    """The authors' benchmark semantics, in our own words (:mod:`dvoc_bench.protocol.paper`)."""

    name: str = "paper"
    missing_answer_is_zero: bool = True
    checks_offset_range: bool = False

    def answer_frame(self, declared: str) -> str:
        return "pixel"  # the prompt says pixels and every number is read as one

    def drawn_point(self, p: Point) -> Point:
        return paper.truncated(p)  # the authors drew at int(x), int(y)

    def oneshot_retry_rule(self, configured: str) -> str:
        return "hit_radius"  # the authors stopped at d < max(w/2, h/2, 30)

    def label_placement(self, configured: str) -> str:
        return "corner"  # the authors' fixed corners: step label top-left, position label bottom-right

    def overlay_label(
        self, p: Point, frame: Frame, size: Size, radius: int, mapping: NormMapping = "last_pixel"
    ) -> str:
        return paper.overlay_label(p, radius)

    def dvoc_prompt(self, *, instruction: str, overlay: str, predict: str, history: Sequence[HistoryEntry],
                    iteration: int, **_: object) -> str:  # fmt: skip
        prompts.check_dvoc_args(overlay, predict, iteration, history)
        return paper.dvoc_prompt(instruction=instruction, overlay=overlay, predict=predict, history=history)

    def oneshot_prompt(self, *, instruction: str, attempt: int, previous: Point | None, **_: object) -> str:
        if attempt < 0:
            raise ValueError(f"attempt must be >= 0, got {attempt}")
        return paper.oneshot_prompt(instruction=instruction, attempt=attempt, previous=previous)


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (Protocol(), PaperProtocol())}
"""Every protocol by name (the allowed values of ``protocols=[...]``)."""


def get_protocol(name: str) -> Protocol:
    """The protocol object for ``name`` (``ValueError`` naming the allowed ones)."""
    if name not in PROTOCOLS:
        raise ValueError(f"protocol {name!r} is not available; allowed: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]
