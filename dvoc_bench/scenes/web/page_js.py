"""The JavaScript the harness runs in a page (measure, settle, hit test, click arming), kept apart from the
Python that drives it (:mod:`dvoc_bench.scenes.web.page`)."""

from __future__ import annotations

DESCRIBE_JS = """
function dvocDescribe(el) {
  const parts = [];
  let e = el;
  for (let depth = 0; e && e.nodeType === 1 && depth < 4; depth++) {
    let s = e.tagName.toLowerCase();
    if (e.id) { parts.unshift(s + '#' + e.id); break; }
    const cls = Array.from(e.classList).slice(0, 2);
    if (cls.length) s += '.' + cls.join('.');
    parts.unshift(s);
    if (s === 'body' || s === 'html') break;
    e = e.parentElement;
  }
  return parts.join(' > ');
}
"""

SETTLE_JS = """
async () => {
  // Force a layout so the faces the page uses start loading, wait for them, then two frames.
  void document.body.offsetHeight;
  await document.fonts.ready;
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await document.fonts.ready;
  const ours = Array.from(document.fonts).filter(f => f.family.replace(/["']/g, '').startsWith('DVOC '));
  return ours.map(f => [f.family.replace(/["']/g, ''), String(f.weight), f.style, f.status]);
}
"""

MEASURE_JS = (
    """
({matches}) => {
"""
    + DESCRIBE_JS
    + """
  const INTERACTIVE = 'a[href], button, input:not([type=hidden]), select, textarea, summary, ' +
    '[role=button], [role=link], [role=menuitem], [role=menuitemcheckbox], [role=menuitemradio], ' +
    '[role=tab], [role=checkbox], [role=radio], [role=option], [role=switch], [role=textbox], ' +
    '[role=combobox], [onclick], [tabindex]:not([tabindex="-1"])';
  const W = window.innerWidth, H = window.innerHeight;
  function clipOf(r) {
    return [Math.max(r.left, 0), Math.max(r.top, 0), Math.min(r.right, W), Math.min(r.bottom, H)];
  }
  function why(el) {
    // Why a match is not a visible target (null: it is one), its visible fraction and what covers it.
    const r = el.getBoundingClientRect();
    const rect = [r.left, r.top, r.right, r.bottom];
    const [x0, y0, x1, y1] = clipOf(r);
    const area = r.width * r.height;
    const frac = area > 0 && x1 > x0 && y1 > y0 ? (x1 - x0) * (y1 - y0) / area : 0;
    const out = {description: dvocDescribe(el), rect: rect, fraction: frac, reason: null, kind: null};
    if (!el.checkVisibility()) { out.kind = 'hidden'; out.reason = 'display:none (itself or an ancestor)'; }
    else if (r.width <= 0 || r.height <= 0) {
      out.kind = 'hidden'; out.reason = 'zero size (' + r.width + 'x' + r.height + ')';
    }
    else if (!el.checkVisibility({visibilityProperty: true})) {
      out.kind = 'hidden'; out.reason = 'visibility:hidden';
    }
    else if (!el.checkVisibility({opacityProperty: true})) { out.kind = 'hidden'; out.reason = 'opacity:0'; }
    else if (frac < 0.5) { out.kind = 'outside'; out.reason = 'outside the viewport'; }
    else {
      const top = document.elementFromPoint((x0 + x1) / 2, (y0 + y1) / 2);
      if (top && top !== el && !el.contains(top)) {
        out.kind = 'covered'; out.reason = 'covered by ' + dvocDescribe(top);
      }
    }
    return out;
  }
  const infos = matches.map(why);
  const ok = infos.map((m, i) => m.kind === null ? i : -1).filter(i => i >= 0);
  const chosen = matches.length === 1 ? (ok.length ? 0 : null) : (ok.length === 1 ? ok[0] : null);
  const res = {matches: infos, chosen: chosen, viewport: [W, H], elements: []};
  if (chosen === null) return res;
  const target = matches[chosen];
  window.__dvocTarget = target;
  function roleOf(el) {
    const tag = el.tagName.toLowerCase(), r = (el.getAttribute('role') || '').toLowerCase();
    const type = (el.getAttribute('type') || '').toLowerCase();
    if (r === 'link' || r === 'menuitem' || (tag === 'a' && !r)) return 'link';
    if (['textbox', 'combobox', 'checkbox', 'radio', 'switch'].includes(r)) return 'input';
    if (tag === 'input' && ['button', 'submit', 'reset', 'image'].includes(type)) return 'button';
    if (['input', 'select', 'textarea'].includes(tag)) return 'input';
    return 'button';
  }
  function labelOf(el) {
    const squash = s => (s || '').replace(/\\s+/g, ' ').trim();
    let t = squash(el.getAttribute('aria-label'));
    if (!t) t = squash(el.innerText);
    if (!t && el.labels && el.labels.length) t = squash(el.labels[0].innerText);
    if (!t) t = squash(el.value) || squash(el.getAttribute('placeholder')) ||
                squash(el.getAttribute('title')) || squash(el.getAttribute('alt'));
    return t.slice(0, 80);
  }
  function shown(el) {
    const st = getComputedStyle(el);
    return st.visibility !== 'hidden' && st.visibility !== 'collapse' && Number(st.opacity) > 0;
  }
  const list = Array.from(document.querySelectorAll(INTERACTIVE));
  if (!list.includes(target)) list.push(target);
  const wanted = new Set(list);
  const ordered = Array.from(document.querySelectorAll('*')).filter(el => wanted.has(el));
  ordered.forEach((el, i) => {
    const r = el.getBoundingClientRect();
    const [x0, y0, x1, y1] = clipOf(r);
    const isTarget = el === target;
    const visible = r.width > 0 && r.height > 0 && x1 > x0 && y1 > y0 && shown(el);
    if (!visible && !isTarget) return;
    res.elements.push({
      dom_id: el.id || '', tag: el.tagName.toLowerCase(), index: i,
      label: labelOf(el), role: isTarget && !el.matches(INTERACTIVE) ? 'panel' : roleOf(el),
      description: dvocDescribe(el), is_target: isTarget,
      rect: [r.left, r.top, r.right, r.bottom], clip: [x0, y0, x1, y1],
    });
  });
  return res;
}
"""
)

HIT_JS = (
    """
([x, y, target]) => {
"""
    + DESCRIBE_JS
    + """
  const el = document.elementFromPoint(x, y);
  return {element: el ? dvocDescribe(el) : null,
          hit: Boolean(el && target && (el === target || target.contains(el)))};
}
"""
)

ARM_CLICK_JS = """
(target) => {
  window.__dvocTargetClicked = false;
  window.__dvocTargetTouched = false;
  // Capture phase on the target: runs for a click on the target or anything inside it, before any
  // handler of the page can stop the event.
  target.addEventListener('click', () => { window.__dvocTargetClicked = true; }, {capture: true});
  // A tap (touch devices): its touch must begin on the target too, not only the click it makes.
  target.addEventListener('touchstart', () => { window.__dvocTargetTouched = true; },
                          {capture: true, passive: true});
  // Bubble phase on the window, after the page's own handlers: keep the default action (following a
  // link, submitting a form) from navigating the page away before the flag is read.
  window.addEventListener('click', e => e.preventDefault());
  return {armed: true};
}
"""

STYLE_JS = """
(css) => {
  const s = document.createElement('style');
  s.textContent = css;
  (document.head || document.documentElement).appendChild(s);
  return true;
}
"""

CLICKED_JS = (
    "() => ({clicked: window.__dvocTargetClicked === true, touched: window.__dvocTargetTouched === true})"
)

FONT_SCALE_JS = """
(factor) => {
  // Every element's computed font size times the factor, all read before any is written (no compounding).
  const all = Array.from(document.querySelectorAll('*'));
  const sizes = all.map(el => parseFloat(getComputedStyle(el).fontSize));
  all.forEach((el, i) => {
    if (sizes[i] > 0) el.style.setProperty('font-size', (sizes[i] * factor) + 'px', 'important');
  });
  return true;
}
"""
