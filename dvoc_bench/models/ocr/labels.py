"""What the OCR model looks for: the instruction in the prompt, and the target's label in the instruction.

Only the prompt text is read (never the scene). The instruction is the text after ``Instruction:`` (v1
prompts and Set-of-Mark), ``Task:`` (the paper's DVOC prompt) or ``The task is still:`` (the paper's
one-shot retries); the paper's first one-shot call carries none, so there is nothing to look for.

The label, by the first rule that applies (the rules are tested on every instruction in ``scenes/``):

1. **Quoted text**: ``'Submit'``, ``"Save"``, ``“Save”`` -> that text.
2. **Named**: ``labeled|labelled|named|called|titled|saying|reading|that says X`` -> X (up to a role noun,
   a preposition or the end).
3. **Noun phrase**: after the verb (``click``, ``press``, ``tap``, ``select``, ``open``, ``choose``, ``go
   to``; ``on``/``inside``/``in`` skipped) and an article, the words before the first *role noun*
   (button, link, tab, field, input, entry, item, card, menu, icon, checkbox, option, project,
   documentation, page, ...) or a lower-case preposition (``Sign In`` keeps its ``In``). Description
   words are then dropped: colours (``green``, ``BLUE``), sizes
   (``small``), positions (``top``, ``left``, ``first``), ordinals and articles. What remains is the label
   (``the Sign In button`` -> ``Sign In``; ``the Beta project card`` -> ``Beta``; ``the small green
   button`` -> nothing: the target is described, not named, an icon for OCR).
4. **Navigation words**: with no label yet, ``next``/``previous``/``prev``/``back``/``home``/``up`` in the
   instruction -> that word (``Go to the next page of the manual`` -> ``next``).

Rules 2-4 read the instruction without its parentheses (``the trash-can (delete) button`` -> ``trash-can``):
a parenthesis describes, it is not the text on the control.

An anchor narrows several matches of the label: ``in X's row`` / ``in the row of [the file] X`` -> prefer
the match on the line nearest X (``the Edit button in Bob Martinez's row``: anchor ``Bob Martinez``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Target", "instruction_of", "target_of"]

_INSTR_RES = (
    re.compile(r"^[ \t]*instruction:[ \t]*(.+)$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"^[ \t]*task:[ \t]*(.+)$", re.IGNORECASE | re.MULTILINE),
    re.compile(r"the task is still:[ \t]*(.+)$", re.IGNORECASE | re.MULTILINE),
)


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


ROLE_NOUNS = _set(
    "button buttons link links tab tabs field fields input inputs entry entries item items card cards menu "
    "menus icon icons checkbox checkboxes option options project projects documentation docs-page page "
    "pages section sections chapter chapters heading headings title box textbox area row column toggle "
    "switch radio dropdown list panel element control label labels port ports node nodes handle"
)
"""Nouns that name what kind of element the target is, not what it says."""

DESCRIPTORS = _set(
    "a an the this that its small smaller smallest large larger largest big bigger biggest tiny little "
    "red green blue yellow orange purple pink black white grey gray dark light primary secondary main "
    "top bottom left right upper lower middle centre center first second third last top-left top-right "
    "bottom-left bottom-right corner highlighted selected active round square rectangular output"
)
"""Words that describe an element (colour, size, position) rather than quote its text."""

_VERBS = r"(?:click|press|tap|select|open|choose|hit|activate|follow|go to|navigate to|use)"
_PREPS = _set("in on at of to from for with inside under near beside below above within")
_QUOTE_RE = re.compile(r"'([^']+)'|\"([^\"]+)\"|\u201c([^\u201d]+)\u201d|\u2018([^\u2019]+)\u2019")
_NAMED_RE = re.compile(r"\b(?:labell?ed|named|called|titled|saying|reading|that says)\s+(.+)$", re.IGNORECASE)
_HEAD_RE = re.compile(rf"^\s*{_VERBS}\b\s*(?:on|inside|into|in)?\s*", re.IGNORECASE)
_PAREN_RE = re.compile(r"\s*\([^)]*\)")
_NAV = ("next", "previous", "prev", "back", "home", "up")
_ANCHOR_RES = (
    re.compile(r"\bin\s+(?:the\s+)?(.+?)'s\s+row\b", re.IGNORECASE),
    re.compile(
        r"\bin\s+the\s+row\s+(?:of|for)\s+(?:the\s+)?(?:(?:file|folder|user|item|entry)\s+)?(.+?)\s*$",
        re.IGNORECASE,
    ),
)


@dataclass(frozen=True)
class Target:
    """What the instruction asks for, as the OCR model reads it."""

    instruction: str | None
    """The instruction found in the prompt (``None``: the prompt has none)."""
    label: str | None
    """The text to find on the screen (``None``: the target is described, not named)."""
    rule: str
    """Which rule gave the label: ``quoted``, ``named``, ``phrase``, ``nav``, ``none``, ``no-instruction``."""
    anchor: str | None = None
    """Text on the target's row that tells several matches apart, when the instruction names one."""


def instruction_of(prompt: str) -> str | None:
    """The instruction line of a prompt (the first pattern that matches), stripped."""
    for rx in _INSTR_RES:
        m = rx.search(prompt)
        if m is not None and m.group(1).strip():
            return m.group(1).strip()
    return None


def _words(s: str) -> list[str]:
    return s.replace(",", " ").split()


def _until_role(words: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        bare = w.lower().strip(".,;:!?")
        if bare in ROLE_NOUNS or (bare in _PREPS and w[:1].islower()):
            break
        out.append(w.strip(".,;:!?"))
    return out


def _drop_descriptors(words: list[str]) -> list[str]:
    return [w for w in words if w.lower() not in DESCRIPTORS]


def _anchor(instruction: str) -> str | None:
    for rx in _ANCHOR_RES:
        m = rx.search(instruction)
        if m is not None:
            return m.group(1).strip(" .")
    return None


def target_of(prompt: str) -> Target:
    """The label (and anchor) the prompt's instruction asks for; see the module docstring for the rules."""
    instruction = instruction_of(prompt)
    if instruction is None:
        return Target(None, None, "no-instruction")
    anchor = _anchor(instruction)
    q = _QUOTE_RE.search(instruction)
    if q is not None:
        text = next(g for g in q.groups() if g is not None).strip()
        if text:
            return Target(instruction, text, "quoted", anchor)
    instruction_bare = _PAREN_RE.sub("", instruction)
    n = _NAMED_RE.search(instruction_bare)
    if n is not None:
        words = _until_role(_words(n.group(1)))
        if words:
            return Target(instruction, " ".join(words), "named", anchor)
    rest = _HEAD_RE.sub("", instruction_bare, count=1)
    words = _drop_descriptors(_until_role(_words(rest)))
    if words and len(words) <= 6:
        return Target(instruction, " ".join(words), "phrase", anchor)
    lowered = [w.lower().strip(".,;:!?") for w in _words(instruction_bare)]
    for nav in _NAV:
        if nav in lowered:
            return Target(instruction, nav, "nav", anchor)
    return Target(instruction, None, "none", anchor)


_DRAG_VERB = re.compile(r"^\W*(?:please\s+)?(?:drag|move|pull|slide)\s+", re.IGNORECASE)
_DRAG_TO = re.compile(r"\s+(?:to|into|onto|over|on to|until)\s+", re.IGNORECASE)


def drag_parts(instruction: str) -> tuple[str, str] | None:
    """A drag's instruction as two one-point instructions, what to drag and where to drop it: the text
    before the last ``to`` / ``into`` / ``onto`` / ``over`` (its drag verb dropped) and the text after it,
    each as ``Click …``; ``None`` when there is no such word. A reading of the words only: the rule the
    offline models use for two-point prompts."""
    first = instruction.strip().splitlines()[0] if instruction.strip() else ""
    cuts = list(_DRAG_TO.finditer(first))
    if not cuts:
        return None
    cut = cuts[-1]
    start = _DRAG_VERB.sub("", first[: cut.start()]).strip()
    end = first[cut.end() :].strip()
    if not start or not end:
        return None
    return f"Click {start}", f"Click {end}"
