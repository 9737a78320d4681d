"""What an oracle planner reads of a MiniWoB page: the task text (``#query``), every visible element with
its box, text and state, and the page's verdict. One JavaScript call (:data:`DOM_JS`) reads it all; the
elements keep an index (``data-dvoc-idx``) for the whole episode, so a planned target is the same element
after the page changed around it.

Boxes are CSS pixels ``[left, top, right, bottom)``; :func:`css_box_to_image` turns one into the
edges-inclusive screenshot box at the episode's device scale factor.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dvoc_bench.core.geometry import Box

SKIP_IDS = ("reward-display", "sync-task-cover", "click-canvas", "attention-canvas")
"""The page's own harness overlays (MiniWoB's ``core.getDOMInfo`` leaves them out too)."""

DOM_JS = """
() => {
  const skip = new Set(SKIP_IDS);
  if (window.__dvocNext === undefined) window.__dvocNext = 1;
  const out = [];
  const walk = (el, parent) => {
    if (skip.has(el.id) || el.tagName === 'SCRIPT' || el.tagName === 'STYLE') return;
    if (!el.dataset.dvocIdx) el.dataset.dvocIdx = String(window.__dvocNext++);
    const idx = +el.dataset.dvocIdx;
    const r = el.getBoundingClientRect();
    const cs = window.getComputedStyle(el);
    const own = Array.from(el.childNodes).filter(n => n.nodeType === 3)
      .map(n => n.data).join(' ').replace(/\\s+/g, ' ').trim();
    const visible = r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none'
      && parseFloat(cs.opacity || '1') > 0;
    out.push({
      idx: idx, parent: parent, tag: el.tagName.toLowerCase(), id: el.id || '',
      cls: typeof el.className === 'string' ? el.className : '',
      type: el.type || '', own: own,
      text: (el.textContent || '').replace(/\\s+/g, ' ').trim().slice(0, 300),
      value: ('value' in el && typeof el.value === 'string') ? el.value : null,
      checked: ('checked' in el) ? !!el.checked : (el.tagName === 'OPTION' ? !!el.selected : null),
      href: el.getAttribute('href'), focused: document.activeElement === el,
      box: [r.left, r.top, r.right, r.bottom], visible: visible,
      expanded: el.getAttribute('aria-expanded'), selected: el.getAttribute('aria-selected'),
      clicked: el.dataset.tampered !== undefined && el.dataset.tampered === 'e' + WOB_EPISODE_ID,
      scroll: el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1
        ? [el.scrollTop, el.scrollHeight, el.clientHeight] : null,
    });
    for (const c of el.children) walk(c, idx);
  };
  walk(document.body, 0);
  const q = document.getElementById('query');
  return {
    query: q ? q.textContent.replace(/\\s+/g, ' ').trim() : '',
    done: !!WOB_DONE_GLOBAL, raw_reward: WOB_RAW_REWARD_GLOBAL, reason: String(WOB_REWARD_REASON),
    elements: out,
  };
}
""".replace("SKIP_IDS", repr(list(SKIP_IDS)))
"""Reads the page (see the module docstring); element fields as :class:`DomElement`."""

HIT_JS = """
([x, y, idx]) => {
  const el = document.elementFromPoint(x, y);
  if (!el) return [null, false];
  const t = document.querySelector('[data-dvoc-idx="' + idx + '"]');
  let d = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '');
  if (el.dataset && el.dataset.dvocIdx) d += '@' + el.dataset.dvocIdx;
  return [d, !!t && (t === el || t.contains(el))];
}
"""
"""``[description of the element under a CSS point, whether it is the target or inside it]``."""


@dataclass(frozen=True)
class DomElement:
    """One element of the page as :data:`DOM_JS` read it."""

    idx: int
    """Index of the element for the whole episode (``data-dvoc-idx``)."""
    parent: int
    """Index of its parent element (0: the body's)."""
    tag: str
    """Lower-case tag name."""
    id: str
    """Its ``id`` attribute ('' when none)."""
    cls: str
    """Its ``class`` attribute."""
    type: str
    """An input's ``type`` ('' otherwise)."""
    own: str
    """Its own text nodes, whitespace collapsed (a label's name beside its checkbox)."""
    text: str
    """All text inside it, whitespace collapsed (first 300 characters)."""
    value: str | None
    """A form control's value."""
    checked: bool | None
    """A checkbox's or radio button's state; an ``<option>``'s ``selected``."""
    href: str | None
    """A link's ``href``."""
    focused: bool
    """It has the keyboard focus."""
    box: tuple[float, float, float, float]
    """CSS pixels ``[left, top, right, bottom)`` in the viewport."""
    visible: bool
    """Non-empty box, not hidden."""
    expanded: str | None = None
    """``aria-expanded``."""
    selected: str | None = None
    """``aria-selected``."""
    clicked: bool = False
    """The page saw a click on it this episode (MiniWoB's own ``data-tampered`` mark of a click's target)."""

    scroll: tuple[float, float, float] | None = None
    """A scrollable element's ``(scrollTop, scrollHeight, clientHeight)``, CSS pixels; ``None`` when its
    content fits."""

    def has_class(self, name: str) -> bool:
        return name in self.cls.split()

    @property
    def state(self) -> tuple[Any, ...]:
        """What a step may change of it (compared before and after an action)."""
        return (
            self.value,
            self.checked,
            self.visible,
            self.box,
            self.cls,
            self.text,
            self.expanded,
            self.selected,
            self.scroll,
        )


@dataclass(frozen=True)
class Dom:
    """A read of the page: the task text, its elements in document order, the verdict so far."""

    query: str
    """The task as the page poses it (``#query``'s text)."""
    done: bool
    """``WOB_DONE_GLOBAL``: the page ended the episode."""
    raw_reward: float
    """``WOB_RAW_REWARD_GLOBAL``: the page's reward without its time penalty (meaningful once done)."""
    reason: str
    """``WOB_REWARD_REASON``."""
    elements: tuple[DomElement, ...]
    """Every element under the body but the harness overlays, in document order."""

    @classmethod
    def from_js(cls, raw: Mapping[str, Any]) -> Dom:
        els = tuple(
            DomElement(
                **{
                    **e,
                    "box": tuple(float(v) for v in e["box"]),
                    "scroll": None if e.get("scroll") is None else tuple(float(v) for v in e["scroll"]),
                }
            )
            for e in raw.get("elements", [])
        )
        return cls(
            str(raw.get("query", "")),
            bool(raw.get("done")),
            float(raw.get("raw_reward") or 0.0),
            str(raw.get("reason")),
            els,
        )

    def visible(self) -> Iterator[DomElement]:
        return (e for e in self.elements if e.visible)

    def by_idx(self, idx: int) -> DomElement | None:
        return next((e for e in self.elements if e.idx == idx), None)

    def find(
        self,
        *,
        tag: str | None = None,
        id: str | None = None,
        cls: str | None = None,
        text: str | None = None,
        own: str | None = None,
        type: str | None = None,
        visible: bool = True,
    ) -> list[DomElement]:
        """The elements matching every given field (``text``/``own``: equal after stripping)."""
        out = []
        for e in self.elements:
            if visible and not e.visible:
                continue
            if tag is not None and e.tag != tag or id is not None and e.id != id:
                continue
            if cls is not None and not e.has_class(cls) or type is not None and e.type != type:
                continue
            if text is not None and e.text != text or own is not None and e.own != own:
                continue
            out.append(e)
        return out

    def one(self, **kw: Any) -> DomElement:
        """The first element :meth:`find` gives; ``LookupError`` naming the search when none."""
        hits = self.find(**kw)
        if not hits:
            raise LookupError(f"no visible element with {kw}")
        return hits[0]

    def children(self, parent: DomElement) -> list[DomElement]:
        return [e for e in self.elements if e.parent == parent.idx]

    def changed(self, after: Dom) -> bool:
        """Whether anything a step may change differs in ``after`` (an element's state, one appearing or
        going, the verdict)."""
        if after.done != self.done:
            return True
        before = {e.idx: e.state for e in self.elements}
        now = {e.idx: e.state for e in after.elements}
        return before != now


def css_box_to_image(box: Sequence[float], scale: float) -> Box:
    """A CSS rectangle ``[left, top, right, bottom)`` -> the edges-inclusive box of screenshot pixels."""
    x0, y0, x1, y1 = (float(v) * scale for v in box)
    return Box(round(x0, 2), round(y0, 2), round(max(x1 - 1, x0), 2), round(max(y1 - 1, y0), 2))
