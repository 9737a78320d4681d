// dvoc-bench run viewer: no network, no library; data comes from data/*.js script files (file:// safe).
"use strict";
(function () {
  const SVGNS = "http://www.w3.org/2000/svg";
  const PAGE = 100;
  const state = { index: null, chunks: {}, waiting: {}, filters: {}, dmin: "", dmax: "", sort: null, desc: false, page: 0 };

  function el(tag, attrs, ...kids) {
    const e = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "text") e.textContent = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const kid of kids) if (kid !== null && kid !== undefined) e.append(kid);
    return e;
  }
  const app = () => document.getElementById("app");
  const fmt = (v) => (v === null || v === undefined ? "" : typeof v === "number" && !Number.isInteger(v) ? v.toFixed(1) : String(v));
  const col = (name) => state.index.columns.indexOf(name);

  window.DVOC = {
    fail(msg) { app().replaceChildren(el("p", { class: "skipped", text: "The viewer could not load its data: " + msg })); },
    index(d) {
      state.index = d;
      if (d.simulated) document.getElementById("sim").textContent = "SIMULATED results present";
      window.addEventListener("hashchange", route);
      route();
    },
    chunk(d) {
      state.chunks[d.chunk] = d.trials;
      for (const cb of state.waiting[d.chunk] || []) cb(d.trials);
      delete state.waiting[d.chunk];
    },
  };

  function withTrial(i, cb) {
    const c = Math.floor(i / state.index.chunk);
    if (state.chunks[c]) return cb(state.chunks[c][i]);
    (state.waiting[c] = state.waiting[c] || []).push((t) => cb(t[i]));
    if (state.waiting[c].length > 1) return;
    const s = el("script", { src: `data/trials/${c}.js` });
    s.onerror = () => DVOC.fail(`data/trials/${c}.js is missing`);
    document.body.append(s);
  }

  function route() {
    const h = location.hash.replace(/^#/, "");
    const byKey = h.match(/^key=(.+)$/);  // the report links failures by trial key
    if (byKey) {
      const i = state.index.keys.indexOf(decodeURIComponent(byKey[1]));
      if (i < 0) return DVOC.fail(`no trial with key ${byKey[1]} in this site`);
      return history.replaceState(null, "", `#trial=${i}`), route();
    }
    const m = h.match(/^(trial|compare)=(\d+)$/);
    if (!m) return table();
    const i = Number(m[2]);
    app().replaceChildren(el("p", { text: "Loading trial " + i + " ..." }));
    if (m[1] === "trial") withTrial(i, (t) => trialPage(i, t));
    else comparePage(i);
  }

  // ------------------------------------------------------------------ the table
  function skippedBox() {
    const box = el("div", { id: "skipped" });
    for (const r of state.index.runs) {
      const items = r.skipped.slice();
      if (r.frames === "none") items.unshift("no frames by design (run.frames=none): each step shows its frame hash only");
      if (!items.length) continue;
      box.append(el("div", { class: "skipped" }, el("b", { text: r.dir }), el("ul", {}, ...items.map((t) => el("li", { text: t })))));
    }
    return box;
  }

  function matches(row, skip) {
    for (const [c, v] of Object.entries(state.filters)) {
      if (c === skip || v === "") continue;
      if (fmt(row[col(c)]) !== v) return false;
    }
    const d = row[col("final_dist_px")];
    if (state.dmin !== "" && !(d !== null && d >= Number(state.dmin))) return false;
    if (state.dmax !== "" && !(d !== null && d <= Number(state.dmax))) return false;
    return true;
  }

  function table() {
    const ix = state.index;
    const idx = [];
    ix.rows.forEach((r, i) => { if (matches(r)) idx.push(i); });
    if (state.sort !== null) {
      const k = col(state.sort), dir = state.desc ? -1 : 1;
      idx.sort((a, b) => {
        const x = ix.rows[a][k], y = ix.rows[b][k];
        if (x === y) return a - b;
        if (x === null) return 1;
        if (y === null) return -1;
        return (x < y ? -1 : 1) * dir;
      });
    }
    const pages = Math.max(1, Math.ceil(idx.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const filters = el("div", { class: "filters" });
    for (const f of ix.facets) {
      const counts = new Map();
      for (const r of ix.rows) if (matches(r, f)) { const v = fmt(r[col(f)]); counts.set(v, (counts.get(v) || 0) + 1); }
      const sel = el("select", { "data-facet": f, onchange: (e) => { state.filters[f] = e.target.value; state.page = 0; table(); } },
        el("option", { value: "", text: "(all)" }));
      for (const [v, n] of [...counts.entries()].sort()) {
        const o = el("option", { value: v, text: `${v === "" ? "(empty)" : v} (${n})` });
        if (state.filters[f] === v) o.selected = true;
        sel.append(o);
      }
      filters.append(el("label", {}, f, sel));
    }
    const num = (key, label) => el("label", {}, label, el("input", { type: "number", size: 6, value: state[key], "data-range": key,
      onchange: (e) => { state[key] = e.target.value; state.page = 0; table(); } }));
    filters.append(num("dmin", "distance ≥ px"), num("dmax", "distance ≤ px"));
    const head = el("tr", {}, el("th", { text: "#" }), ...ix.columns.map((c) => el("th", { text: c + (state.sort === c ? (state.desc ? " ▼" : " ▲") : ""), "data-col": c,
      onclick: () => { if (state.sort === c) state.desc = !state.desc; else { state.sort = c; state.desc = false; } table(); } })));
    const body = el("tbody");
    for (const i of idx.slice(state.page * PAGE, (state.page + 1) * PAGE)) {
      const r = ix.rows[i];
      const tr = el("tr", { class: r[col("hit")] === false ? "miss" : "", "data-i": i },
        el("td", {}, el("a", { href: `#trial=${i}`, text: String(i) })));
      ix.columns.forEach((c, k) => tr.append(el("td", { class: c, text: fmt(r[k]) })));
      body.append(tr);
    }
    const pager = el("div", { class: "pager" },
      el("button", { text: "◀", onclick: () => { state.page = Math.max(0, state.page - 1); table(); } }),
      el("span", { id: "page", text: `page ${state.page + 1} of ${pages}` }),
      el("button", { text: "▶", onclick: () => { state.page = Math.min(pages - 1, state.page + 1); table(); } }),
      el("button", { text: "clear filters", onclick: () => { state.filters = {}; state.dmin = state.dmax = ""; table(); } }));
    app().replaceChildren(skippedBox(), filters,
      el("p", {}, el("b", { id: "count", text: String(idx.length) }), ` of ${ix.rows.length} trials`), pager,
      el("table", { class: "trials" }, el("thead", {}, head), body));
  }

  // ------------------------------------------------------------------ one trial
  const num = (v) => (typeof v === "number" ? v : null);
  const pt = (x, y) => (num(x) !== null && num(y) !== null ? [x, y] : null);

  // the Set-of-Mark pick a select step made: a drag's end ("to") has its own pick (som_drop_*)
  const dropPick = (step) => step.drag_end === "to";
  const chosenId = (trial, step) => (dropPick(step) ? trial.som_drop_chosen_id : trial.som_chosen_id);

  function chosenMark(trial, step) {
    if (dropPick(step)) return Array.isArray(trial.som_drop_mark_box) ? trial.som_drop_mark_box : null;
    const marks = Array.isArray(trial.som_mark_boxes) ? trial.som_mark_boxes : [];
    const id = trial.som_chosen_id;
    return id && marks[id - 1] ? marks[id - 1] : null;
  }

  function overlay(trial, step, w, h) {
    const crop = pt(step.crop_x0, step.crop_y0) ? [step.crop_x0, step.crop_y0, step.crop_x1, step.crop_y1] : null;
    const vb = crop ? [crop[0], crop[1], crop[2] - crop[0], crop[3] - crop[1]] : [0, 0, w, h];
    const svg = el("svg:svg", { viewBox: vb.join(" "), preserveAspectRatio: "none" });
    for (const t of Array.isArray(trial.targets) ? trial.targets : []) {  // a drag: where it starts and ends
      const b = t.box;
      svg.append(el("svg:rect", { class: `target ${t.role}`, x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1] }));
    }
    const b = step.kind === "select" ? chosenMark(trial, step) : null;
    if (b) svg.append(el("svg:rect", { class: "mark", x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1] }));
    const r = Math.max(vb[2], vb[3]) / 80;
    const cur = pt(step.draft_x, step.draft_y);
    const nxt = pt(step.next_x, step.next_y) || pt(step.px_x, step.px_y);
    if (cur && nxt) svg.append(el("svg:line", { class: "move", x1: cur[0], y1: cur[1], x2: nxt[0], y2: nxt[1] }));
    if (cur) svg.append(el("svg:circle", { class: "current", cx: cur[0], cy: cur[1], r: r * 1.5 }));
    if (nxt) svg.append(el("svg:circle", { class: "next", cx: nxt[0], cy: nxt[1], r: r * 0.8 }));
    return svg;
  }

  function frameView(trial, step) {
    if (!step.frame_src) return el("div", { class: "noframe", text: (step.frame_state || "no frame") + (step.frame_sha ? " · " + step.frame_sha.slice(0, 12) : "") });
    const img = el("img", { src: step.frame_src, alt: `frame of step ${step.index}` });
    const box = el("div", { class: "frame" }, img);
    const draw = () => box.append(overlay(trial, step, trial.image_w || img.naturalWidth, trial.image_h || img.naturalHeight));
    if (trial.image_w && trial.image_h) draw(); else img.addEventListener("load", draw);
    img.addEventListener("error", () => box.replaceWith(el("div", { class: "noframe", text: "frame could not be loaded: " + step.frame_src })));
    return box;
  }

  function kv(obj, keys) {
    const dl = el("dl", { class: "kv" });
    for (const k of keys) if (obj[k] !== undefined && obj[k] !== null) dl.append(el("dt", { text: k }), el("dd", { text: typeof obj[k] === "object" ? JSON.stringify(obj[k]) : fmt(obj[k]) }));
    return dl;
  }

  function kvWide(obj, keys) { const dl = kv(obj, keys); dl.classList.add("wide"); return dl; }

  function answer(trial, step) {
    const raw = step.kind === "select" && chosenId(trial, step) !== undefined ? `mark id=${chosenId(trial, step)}`
      : step.kind === "verify" && num(step.raw_dx) !== null ? `dx=${fmt(step.raw_dx)}, dy=${fmt(step.raw_dy)}`
      : num(step.raw_x) !== null ? `x=${fmt(step.raw_x)}, y=${fmt(step.raw_y)}` : "(none)";
    const px = num(step.px_dx) !== null ? `dx=${fmt(step.px_dx)}, dy=${fmt(step.px_dy)} px`
      : num(step.px_x) !== null ? `(${fmt(step.px_x)}, ${fmt(step.px_y)}) px` : "(none)";
    return { "answer (model's frame)": raw + (num(step.raw_conf) !== null ? `, confidence=${step.raw_conf}` : ""), "answer (pixels)": px };
  }

  function stepCard(trial, step) {
    const a = answer(trial, step);
    const info = Object.assign({}, step, a);
    const card = el("div", { class: "step", "data-step": step.index },
      el("h4", { text: `step ${step.index} · ${step.kind || "?"} · ${step.decision || step.parse_status || ""}` }),
      frameView(trial, step),
      kv(info, ["true_dist_px", "draft_x", "draft_y", "answer (model's frame)", "answer (pixels)", "frame", "frame_rule", "seen_size", "prompt_style",
        "parse_status", "parse_detail", "decision", "alpha", "next_x", "next_y", "crop_x0", "crop_y0", "crop_x1", "crop_y1", "error_class", "error", "latency_s", "tokens_in", "tokens_out", "cost_usd"]));
    if (step.extra && step.extra.length) card.append(el("div", { class: "skipped" }, "fields this viewer does not know: ", kv(step, step.extra)));
    if (step.prompt) card.append(el("details", {}, el("summary", { text: "prompt" }), el("pre", { class: "prompt", text: step.prompt })));
    const reply = [step.reply_text, step.reply_tool_calls ? JSON.stringify(step.reply_tool_calls, null, 1) : null].filter(Boolean).join("\n");
    card.append(el("details", { open: "" }, el("summary", { text: "raw reply" }), el("pre", { class: "reply", text: reply || "(no reply)" })));
    return card;
  }

  function distChart(steps) {
    const pts = steps.map((s) => s.true_dist_px).filter((d) => typeof d === "number");
    if (!pts.length) return el("p", { text: "no distance per step recorded" });
    const W = 360, H = 120, P = 24, mx = Math.max(...pts, 1);
    const x = (i) => P + (pts.length === 1 ? 0 : (i * (W - 2 * P)) / (pts.length - 1));
    const y = (d) => H - P - (d / mx) * (H - 2 * P);
    const svg = el("svg:svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: "dist" },
      el("svg:line", { x1: P, y1: H - P, x2: W - P, y2: H - P, stroke: "#888" }),
      el("svg:text", { x: 2, y: 12, "font-size": 10, text: `${mx.toFixed(0)} px` }),
      el("svg:text", { x: W - P - 40, y: H - 6, "font-size": 10, text: "step →" }),
      el("svg:polyline", { points: pts.map((d, i) => `${x(i)},${y(d)}`).join(" "), fill: "none", stroke: "#06c", "stroke-width": 2 }));
    pts.forEach((d, i) => svg.append(el("svg:circle", { cx: x(i), cy: y(d), r: 3, fill: "#06c", "data-dist": d })));
    return el("div", {}, el("h3", { text: "true distance per step (px)" }), svg);
  }

  function cropsPanel(trial, steps) {
    const crops = steps.filter((s) => num(s.crop_x0) !== null);
    if (!crops.length || !trial.image_w) return null;
    const full = steps.find((s) => num(s.crop_x0) === null && s.frame_src);
    const svg = el("svg:svg", { viewBox: `0 0 ${trial.image_w} ${trial.image_h}`, preserveAspectRatio: "none" });
    crops.forEach((s) => svg.append(el("svg:rect", { class: "crop", x: s.crop_x0, y: s.crop_y0, width: s.crop_x1 - s.crop_x0, height: s.crop_y1 - s.crop_y0 })));
    const base = full ? el("img", { src: full.frame_src, alt: "full screen" }) : el("div", { class: "noframe", style: `width:${trial.image_w / 2}px;height:${trial.image_h / 2}px` });
    return el("div", {}, el("h3", { text: "zoom: the crops in the full screen" }), el("div", { class: "frame crops" }, base, svg));
  }

  // ------------------------------------------------------------------ one episode (a filmstrip of its steps)
  const box4 = (b) => Array.isArray(b) && b.length === 4 && b.every((v) => typeof v === "number");

  function arrowDefs() {
    return el("svg:defs", {}, el("svg:marker", { id: "arrowhead", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" },
      el("svg:path", { d: "M0,0 L10,5 L0,10 z", class: "arrowhead" })));
  }

  // the action of an episode step drawn on the screenshot it was grounded on: its target box, the click
  // point, a drag's arrow to its drop point and the drop's box, the text typed or chosen, the key pressed
  function actionOverlay(es, w, h) {
    const svg = el("svg:svg", { viewBox: `0 0 ${w} ${h}`, preserveAspectRatio: "none", class: "action" }, arrowDefs());
    const r = Math.max(w, h) / 70;
    if (box4(es.target_box)) { const b = es.target_box; svg.append(el("svg:rect", { class: "target from", x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1] })); }
    if (box4(es.drop_box)) { const b = es.drop_box; svg.append(el("svg:rect", { class: "target to", x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1] })); }
    const p = Array.isArray(es.point) ? es.point : null, q = Array.isArray(es.drop_point) ? es.drop_point : null;
    if (p && q) svg.append(el("svg:line", { class: "drag", x1: p[0], y1: p[1], x2: q[0], y2: q[1], "marker-end": "url(#arrowhead)" }));
    if (p) svg.append(el("svg:circle", { class: `click ${es.located === false ? "off" : "on"}`, cx: p[0], cy: p[1], r: r }));
    if (q) svg.append(el("svg:circle", { class: `drop ${es.drop_located === false ? "off" : "on"}`, cx: q[0], cy: q[1], r: r * 0.8 }));
    const words = es.action === "type" ? `typed "${es.text || ""}"` : es.action === "key" ? `key ${es.text || ""}`
      : es.action === "select" ? `chose "${es.text || ""}"` : null;
    if (words) {  // a banner along the bottom of the frame, where MiniWoB's task area is blank
      const fs = h / 20;
      svg.append(el("svg:rect", { class: "typed", x: 0, y: h - fs * 1.6, width: w, height: fs * 1.6 }),
        el("svg:text", { class: "typed", x: fs * 0.4, y: h - fs * 0.5, "font-size": fs, text: words }));
    }
    return svg;
  }

  function shotView(src, state, alt, drawn) {
    if (!src) return el("div", { class: "noframe", text: state || "no screenshot" });
    const img = el("img", { src: src, alt: alt });
    const box = el("div", { class: "frame" }, img);
    if (drawn) box.append(drawn);
    img.addEventListener("error", () => box.replaceWith(el("div", { class: "noframe", text: "screenshot could not be loaded: " + src })));
    return box;
  }

  const mark = (v) => (v === true ? "✓" : v === false ? "✗" : "–");

  function episodeStep(t, ep, es, calls) {
    const [w, h] = Array.isArray(ep.size) ? ep.size : [t.image_w, t.image_h];
    const targets = [box4(es.target_box) ? { role: "from", box: es.target_box } : null, box4(es.drop_box) ? { role: "to", box: es.drop_box } : null].filter(Boolean);
    const view = Object.assign({}, t, { targets: targets, image_w: w, image_h: h });
    const head = `step ${es.index} · ${es.action} · located ${mark(es.located)}${es.drop_box ? " / drop " + mark(es.drop_located) : ""} · interacted ${mark(es.interacted)}${es.done_after ? " · verdict given" : ""}`;
    const grounding = el("div", { class: "calls", "data-calls": calls.length },
      el("h5", { text: calls.length ? `grounding: ${calls.length} model call${calls.length > 1 ? "s" : ""} (${es.grounding_stop || ""})` : "not grounded (goes to the focus)" }),
      el("div", { class: "strip" }, ...calls.map((c) => stepCard(view, c))));
    return el("div", { class: "estep", "data-estep": es.index },
      el("h4", { text: head }),
      el("p", { class: "instruction", text: es.instruction + (es.drop_instruction ? ` → ${es.drop_instruction}` : "") }),
      el("div", { class: "pair" },
        el("figure", { class: "before" }, shotView(es.before_src, es.before_state, `step ${es.index}: before, the action drawn`, actionOverlay(es, w, h)),
          el("figcaption", { text: "before · the action drawn" })),
        el("figure", { class: "after" }, shotView(es.after_src, es.after_state, `step ${es.index}: after`, null),
          el("figcaption", { text: "after the action" })),
        kv(es, ["target", "target_box", "point", "hit_element", "located", "drop_box", "drop_point", "drop_located", "text", "refused", "interacted", "calls", "ground_s", "harness_s"])),
      grounding);
  }

  function episodePage(i, t, steps) {
    const ep = t.episode;
    const byStep = {};
    for (const c of steps) (byStep[c.episode_step] = byStep[c.episode_step] || []).push(c);
    const head = el("div", {},
      el("p", {}, el("a", { href: "#", text: "← all trials" }), " · ", el("a", { href: `#compare=${i}`, id: "compare-link", text: "compare methods on this episode" })),
      el("h2", { text: `episode ${i}: ${t.method} · ${t.model} · ${ep.task} seed ${ep.seed}${t.simulated ? " [SIMULATED]" : ""}` }),
      el("p", { class: `verdict ${ep.success ? "ok" : "fail"}`, text: `${ep.success ? "success" : "failure"} by the page's verdict · ended ${ep.end} · raw reward ${fmt(ep.raw_reward)} · ${ep.steps.length} steps` }),
      kvWide(Object.assign({}, ep, { model_calls: t.model_calls, cost_usd: t.cost_usd }), ["query", "family", "plan", "scale", "size", "done", "raw_reward", "reason", "first_off_target", "error", "wall_s", "model_calls", "cost_usd", "trial_key"]),
      el("div", { class: "legend" }, el("span", { text: "cyan dashed box: the step's target" }), el("span", { text: "yellow dashed box: a drag's drop target" }),
        el("span", { text: "red dot: where the action was made (ringed black when off target)" }), el("span", { text: "arrow: a drag" }), el("span", { text: "text: what was typed, chosen or pressed" })));
    const strip = el("div", { class: "filmstrip", id: "episode-strip" }, ...ep.steps.map((es) => episodeStep(t, ep, es, byStep[es.index] || [])));
    if (!ep.steps.length) strip.append(el("p", { text: "this episode made no step" }));
    app().replaceChildren(head, el("h3", { text: "steps in order" }), strip);
  }

  function trialPage(i, data) {
    if (!data) return DVOC.fail(`trial ${i} is not in the data`);
    const t = data.trial;
    if (t.episode && Array.isArray(t.episode.steps)) return episodePage(i, t, data.steps);
    const head = el("div", {},
      el("p", {}, el("a", { href: "#", text: "← all trials" }), " · ", el("a", { href: `#compare=${i}`, id: "compare-link", text: "compare methods on this sample" })),
      el("h2", { text: `trial ${i}: ${t.method} · ${t.model} · ${t.task}${t.simulated ? " [SIMULATED]" : ""}` }),
      kvWide(t, ["status", "stop_reason", "error_class", "error", "hit", "within_eps", "hit_radius", "hit_rule", "final_dist_px", "final_x", "final_y",
        "drop_x", "drop_y", "drag_from_hit", "drag_to_hit", "drag_to_box", "drag_to_dist_px", "drag_to_element",
        "target_x0", "target_y0", "target_x1", "target_y1", "start_x", "start_y", "protocol", "alpha", "overlay", "predict", "zoom", "detector",
        "som_chosen_id", "som_chosen_valid", "som_hit", "som_drop_chosen_id", "som_drop_chosen_valid", "som_drop_hit", "som_marks", "sample_instruction", "iterations", "model_calls", "cost_usd", "trial_key", "run_dir"]),
      el("div", { class: "legend" }, el("span", { text: "cyan dashed box: target (from the record; a drag: where it starts)" }),
        el("span", { text: "yellow dashed box: a drag's drop target" }), el("span", { text: "red ring: current point" }),
        el("span", { text: "orange dot: next point / answer" }), el("span", { text: "magenta: chosen mark (a drag's end step: the end's pick)" })));
    if (t.extra && t.extra.length) head.append(el("div", { class: "skipped" }, "fields this viewer does not know: ", kv(t, t.extra)));
    const strip = el("div", { class: "strip", id: "filmstrip" }, ...data.steps.map((s) => stepCard(t, s)));
    if (!data.steps.length) strip.append(el("p", { text: "this trial made no model call (no frames)" }));
    app().replaceChildren(head, distChart(data.steps), cropsPanel(t, data.steps) || "", el("h3", { text: "frames in order" }), strip);
  }

  // ------------------------------------------------------------------ compare
  function comparePage(i) {
    const ix = state.index, r0 = ix.rows[i];
    if (!r0) return DVOC.fail(`trial ${i} is not in the data`);
    const same = ["task", "start_index", "rep"].filter((c) => col(c) >= 0);
    const peers = [];
    ix.rows.forEach((r, j) => { if (same.every((c) => r[col(c)] === r0[col(c)])) peers.push(j); });
    const wrap = el("div", { class: "cmp", id: "compare" });
    app().replaceChildren(el("p", {}, el("a", { href: `#trial=${i}`, text: "← trial " + i })),
      el("h2", { text: `same sample: ${same.map((c) => `${c}=${fmt(r0[col(c)])}`).join(", ")} · ${peers.length} trials` }), wrap);
    for (const j of peers) {
      const colDiv = el("div", { class: "col", "data-i": j, "data-method": ix.rows[j][col("method")], "data-model": ix.rows[j][col("model")] },
        el("p", { text: "loading ..." }));
      wrap.append(colDiv);
      withTrial(j, (d) => {
        const t = d.trial;
        colDiv.replaceChildren(el("h4", {}, el("a", { href: `#trial=${j}`, text: `${t.method} · ${t.model}` })),
          kv(t, ["stop_reason", "hit", "final_dist_px", "model_calls"]), distChart(d.steps),
          ...d.steps.slice(-1).map((s) => frameView(t, s)));
      });
    }
  }
})();
