"""Absent targets (``absent.variant``, docs/absent.md): a task's screen without its target, or an
instruction naming an element the screen does not have.

- ``remove``: the source renders the task with its target taken off the screen (synthetic scenes are
  drawn without the target and the labels drawn on it; web pages hide it in the DOM before the screenshot,
  nothing else moving). A source that cannot (desktop programs, datasets, episodes) fails that task's
  trials with the reason: a desktop program's widget cannot be taken out of a running toolkit without
  changing the program, and a dataset's screenshot has no DOM to take it from (painting over it would
  leave traces a model could see).
- ``ask_missing``: the screen as it is, the instruction rewritten by a rule to name a label no element of
  the measured layout has (:func:`missing_label`): the target's label in the instruction is replaced by the
  first label of :data:`MISSING_LABELS` (rotated by a hash of the task id) that no element's label and no
  word of the instruction matches; an instruction that does not quote the target's label becomes
  ``Click the <label> button``. It works on every source; on a dataset sample the layout known is only the
  target, so the check there is weaker (the doc says so).

The variant's truth says ``absent`` (:attr:`~dvoc_bench.core.scene.SceneTruth.absent`); the scene hash
moves with it, so its trials never share a key with the present task's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from typing import Any

from dvoc_bench.core.scene import SceneTruth, Snapshot
from dvoc_bench.scenes.sources import SceneError
from dvoc_bench.scenes.synthetic import content_hash

VARIANTS = ("off", "remove", "ask_missing")
"""The values of ``absent.variant``."""

MISSING_LABELS = (
    "Export", "Archive", "Print", "Upload", "Share", "Refresh", "Bookmark", "Undo", "Translate",
    "Duplicate", "Subscribe", "Rename",
)  # fmt: skip
"""Labels an ``ask_missing`` instruction may name: common controls, none of them on the built-in scenes
(each is checked against the screen's layout before it is used)."""

_WORD = re.compile(r"[a-z0-9]+")
_ROLES = frozenset({"button", "field", "input", "link", "icon", "box", "tab", "checkbox", "menu"})
"""Words a label may end in that say what kind of element it is (kept when the label is replaced)."""


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def missing_label(truth: SceneTruth) -> str | None:
    """The first label of :data:`MISSING_LABELS`, from a place chosen by the task id's hash, that shares no
    word with any element's label nor with the instruction (``None`` when every one does)."""
    taken: set[str] = _words(truth.instruction)
    for e in truth.elements:
        taken |= _words(e.label)
    start = int(hashlib.sha256(truth.scene_id.encode()).hexdigest()[:8], 16) % len(MISSING_LABELS)
    for i in range(len(MISSING_LABELS)):
        label = MISSING_LABELS[(start + i) % len(MISSING_LABELS)]
        if not _words(label) & taken:
            return label
    return None


def missing_instruction(truth: SceneTruth) -> str | None:
    """The instruction of the ``ask_missing`` variant: the target's label, where the instruction names it,
    replaced by :func:`missing_label` (a role word ending a longer label, ``… button``, kept); else
    ``Click the <label> button``. ``None``: no label is absent."""
    label = missing_label(truth)
    if label is None:
        return None
    target = next((e.label for e in truth.elements if e.id == truth.target_id), "")
    if target.strip():
        found = re.search(re.escape(target.strip()), truth.instruction, re.IGNORECASE)
        if found is not None:
            last = target.split()[-1].lower()  # "small green button": the role word stays
            name = f"{label} {target.split()[-1]}" if len(target.split()) > 1 and last in _ROLES else label
            return truth.instruction[: found.start()] + name + truth.instruction[found.end() :]
    return f"Click the {label} button"


def ask_missing(snap: Snapshot) -> Snapshot:
    """``snap`` with its instruction naming an element the screen does not have (:func:`missing_instruction`);
    :class:`SceneError` when no label of :data:`MISSING_LABELS` is absent from it."""
    text = missing_instruction(snap.truth)
    if text is None:
        raise SceneError(f"{snap.scene_id}: absent.variant=ask_missing: every candidate label is on screen")
    truth = dataclasses.replace(snap.truth, instruction=text, absent="ask_missing")
    digest = content_hash(snap.image, truth, "ask_missing")
    return Snapshot(truth=truth, image=snap.image, content_hash=digest)


def absent_variant(source: Any, task_id: str, variant: str) -> Snapshot:
    """Task ``task_id`` of ``source`` rendered as absent-target ``variant`` (``remove`` or
    ``ask_missing``). A two-point task, or ``remove`` on a source that cannot take the target off its
    screen, is a :class:`SceneError` (that task's trials fail with the reason)."""
    if variant == "remove":
        remove = getattr(source, "without_target", None)
        snap = remove(task_id) if remove is not None else None
        if snap is None:
            kind = getattr(source, "kind", "this")
            raise SceneError(
                f"{task_id}: absent.variant=remove: {kind} scenes cannot take their target off the screen "
                "(synthetic and web scenes can); use absent.variant=ask_missing"
            )
    elif variant == "ask_missing":
        snap = ask_missing(source.snapshot(task_id))
    else:
        raise ValueError(f"absent variant {variant!r}; allowed: {', '.join(VARIANTS[1:])}")
    if snap.truth.ends:
        raise SceneError(f"{task_id}: absent.variant={variant}: absent targets apply to one-point tasks only")
    return snap
