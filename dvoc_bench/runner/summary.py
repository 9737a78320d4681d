"""The end-of-run table: model x method, every rule named, simulated rows labelled. No pandas needed."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from dvoc_bench.core.records import TRIAL_STATUSES
from dvoc_bench.runner.budget import EXCESS_EPS, Spend

KNOBS = ("protocol", "coord_frame", "alpha", "overlay", "predict", "detector")
"""Knob columns shown (and grouped by) when they take more than one value in the run."""


def varying_knobs(trials: list[dict[str, Any]]) -> list[str]:
    """The knobs with more than one value among the trials where they apply (``-`` = not applicable)."""
    return [k for k in KNOBS if len({t.get(k) for t in trials if t.get(k) not in (None, "-")}) > 1]


def summarise(trials: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (model, method, varying knobs): counts, rates under each rule (over ok trials), means."""
    trials = list(trials)
    knobs = varying_knobs(trials)
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for t in trials:
        groups[(t["model"], t["method"], *(str(t.get(k)) for k in knobs))].append(t)
    rows = []
    for key, ts in sorted(groups.items()):
        model, method = key[0], key[1]
        ok = [t for t in ts if t["status"] == "ok"]
        dists = [t["final_dist_px"] for t in ok if t.get("final_dist_px") is not None]
        n_ok = len(ok)
        row = {
            "model": model + simulated_label(ts),
            "method": method,
            **dict(zip(knobs, key[2:], strict=True)),
            "n": len(ts),
            "errors": sum(t["status"] == "error" for t in ts),
            "skipped": sum(t["status"] == "skipped" for t in ts),
            "hit": _rate(sum(bool(t["hit"]) for t in ok), n_ok),
            "within_eps": _rate(sum(bool(t["within_eps"]) for t in ok), n_ok),
            "hit_radius": _rate(sum(bool(t["hit_radius"]) for t in ok), n_ok),
            "mean_dist": sum(dists) / len(dists) if dists else None,
            "mean_iters": sum(t["iterations"] for t in ok) / n_ok if n_ok else None,
        }
        rows.append(row)
    return rows


PIXEL_OFFSET_NOTE = 0.2
"""Share of pixel offsets in a simulated profile's native mix from which its offset rows get a note."""

_FRAME_WORDS = {
    "norm1000": "0–1000", "norm999": "0–999", "norm1": "0–1", "touch1000": "touch 0–1000.0",
}  # fmt: skip


def frame_notes(trials: Iterable[dict[str, Any]], models: Iterable[Any]) -> list[str]:
    """One sentence per simulated model whose profile answers offsets in pixels often (at least
    :data:`PIXEL_OFFSET_NOTE` of its native offset mix, ``sim.frames.pixel``, less the calls that obey the
    frame the prompt states, ``sim.obeys_requested_frame``) while its trials read them in
    the 0–1000 or 0–1 frame its config declares: what its offset rows (``predict=relative``) then measure.
    ``models``: the run's :class:`~dvoc_bench.models.config.ModelConfig` objects."""
    trials = list(trials)
    out = []
    for m in models:
        if m.kind != "simulator" or not isinstance(m.sim, dict):
            continue
        frames = m.sim.get("frames") or {}
        obeys = float(m.sim.get("obeys_requested_frame") or 0.0)  # those answer in the stated frame
        share = float(frames.get("pixel") or 0.0) * (1.0 - obeys)
        read = sorted(
            {t["coord_frame"] for t in trials if t["model"] == m.name and t.get("predict") == "relative"}
            & set(_FRAME_WORDS)
        )
        if share < PIXEL_OFFSET_NOTE or not read:
            continue
        units = " / ".join(_FRAME_WORDS[f] for f in read)
        out.append(
            f"{m.name}'s dvoc rows measure a unit mismatch, not grounding: its profile answers "
            f"{100 * share:.0f} % of its offsets in pixels (as the authors' recorded replies did) while its "
            f"config declares {units}, so those offsets are read as {units} units and shrink to about "
            f"(W-1)/1000 and (H-1)/1000 of their size (its steps fall short and it stops early), while its "
            f"one-shot points are in {units} as declared (see the report's coordinate-frame audit)."
        )
    return out


def simulated_label(trials: Iterable[dict[str, Any]]) -> str:
    """`` [SIMULATED]`` for simulated trials, with every assumption a row rests on (the records'
    ``simulated_assumptions``), e.g. `` [SIMULATED; overlay effect assumed]``; empty for real models."""
    from dvoc_bench.core.assumptions import marker

    trials = list(trials)
    tag = marker(any(t.get("simulated") for t in trials), (t.get("simulated_assumptions") for t in trials))
    return f" [{tag}]" if tag else ""


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def _fmt(v: Any, kind: str) -> str:
    if v is None:
        return "-"
    if kind == "pct":
        return f"{100 * v:.0f}%"
    if kind == "f1":
        return f"{v:.1f}"
    return str(v)


COLUMNS = [
    ("model", "s"),
    ("method", "s"),
    ("n", "s"),
    ("errors", "s"),
    ("hit", "pct"),
    ("within_eps", "pct"),
    ("hit_radius", "pct"),
    ("mean_dist", "f1"),
    ("mean_iters", "f1"),
]
HEADERS = {
    "within_eps": "within-eps",
    "hit_radius": "paper-radius",
    "mean_dist": "mean dist px",
    "mean_iters": "mean iters",
}


def format_table(rows: list[dict[str, Any]], epsilon: float = 30.0, notes: Iterable[str] = ()) -> str:
    """A markdown table with a legend naming each rule, then ``notes`` (:func:`frame_notes`), one a line."""
    knobs = [k for k in KNOBS if rows and k in rows[0]]
    cols = COLUMNS[:2] + [(k, "s") for k in knobs] + COLUMNS[2:]
    heads = [HEADERS.get(c, c) for c, _ in cols]
    body = [[_fmt(r[c], k) for c, k in cols] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(heads)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    out = [line(heads), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(b) for b in body]
    legend = (
        f"Rates over trials with status ok. hit = the final point is on the target (inside its box on "
        f"synthetic scenes; on the target's DOM element on web scenes; on the target by the toolkit's hit "
        f"test on desktop scenes); within-eps = "
        f"distance to the target centre < {epsilon:g} px; paper-radius = distance < max(w/2, h/2, 30) "
        f"(the authors' rule). Rows marked [SIMULATED] come from the simulated VLM, not a real model; "
        f"'... assumed' in the marker names a knob the simulated profile was not fitted for (its effect is "
        f"the simulator's assumption, not a measurement)."
    )
    notes = list(notes)
    return "\n".join(out) + "\n\n" + legend + "".join(f"\n\nNote: {n}" for n in notes)


def shorten(msg: str, limit: int = 160) -> str:
    """A message for the end-of-run lines: whole ``; ``-separated clauses while they fit in ``limit``
    characters, the first one always whole (messages put what to do first: a setting is never cut in
    half), then `` …`` when some were left out (the trial records keep the whole message)."""
    if len(msg) <= limit:
        return msg
    clauses = msg.split("; ")
    kept = clauses[0]
    for c in clauses[1:]:
        if len(kept) + 2 + len(c) > limit:
            break
        kept += "; " + c
    return kept + " …"


def run_report(trials: list[dict[str, Any]], *, ran: int, skipped_items: dict[str, list[Any]] | None = None,
               added_items: dict[str, list[Any]] | None = None, spend: Spend | None = None,
               budget_usd: float | None = None) -> list[str]:  # fmt: skip
    """The end-of-run lines printed under the table: trials by status; for each error class (and skip
    reason) its count and most common message; how many model calls the response cache answered; the cost
    the run directory recorded against its budget (``run.max_cost_usd``; shown with a budget or a cost:
    :func:`cost_line`); what a resume left out or added.
    """
    counts = Counter(t["status"] for t in trials)
    lines = [
        f"trials: {len(trials)} ({', '.join(f'{counts.get(s, 0)} {s}' for s in TRIAL_STATUSES)}); "
        f"{ran} run by this call"
    ]
    for status in ("error", "skipped"):
        by_class: dict[str, Counter[str]] = defaultdict(Counter)
        for t in trials:
            if t["status"] == status:
                by_class[t.get("error_class") or "unknown"][str(t.get("error") or "")] += 1
        for cls, msgs in sorted(by_class.items(), key=lambda kv: -sum(kv[1].values())):
            msg, _ = msgs.most_common(1)[0]
            lines.append(f"{status}: {cls} x{sum(msgs.values())}: {shorten(msg) or '(no message)'}")
    lines += grounding_lines(trials)
    lines.append(calls_line(trials))
    held = sum(t["status"] == "skipped" and t.get("error_class") == "budget" for t in trials)
    line = cost_line(spend or Spend(), budget_usd, held)
    if line:
        lines.append(line)
    if skipped_items:
        shown = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in skipped_items.items())
        lines.append(f"resumed a subset of the run; not run now: {shown}")
    if added_items:
        shown = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in added_items.items())
        lines.append(f"the run's plan grew (resume.allow_new_trials): {shown}")
    return lines


def calls_line(trials: list[dict[str, Any]]) -> str:
    """How many model calls the trials made, how many of them asked each provider (the in-process
    simulator's is ``simulator``) and how many the response cache answered without asking one."""
    calls = sum(int(t.get("model_calls") or 0) for t in trials)
    cached = sum(int(t.get("cached_calls") or 0) for t in trials)
    asked: Counter[str] = Counter()
    for t in trials:
        asked[str(t.get("provider") or "?")] += int(t.get("model_calls") or 0) - int(
            t.get("cached_calls") or 0
        )
    shown = ", ".join(f"{n} asked {p}" for p, n in sorted(asked.items()) if n) or "0 asked a provider"
    return f"model calls: {calls} ({shown}; {cached} answered by the response cache)"


def cost_line(spend: Spend, budget_usd: float | None, held: int = 0) -> str | None:
    """The end-of-run cost line: the spend recorded by the run directory's calls against its budget, by
    how much it passed the budget and by how much the worst single call passed the per-call bound it was
    admitted with, the calls whose usage was missing or a fault, the trials held for the budget; ``None``
    without a budget or a cost."""
    if budget_usd is None and spend.total <= 0 and not spend.faults:
        return None
    parts = []
    if spend.unknown:
        parts.append(f"{_calls(spend.unknown)} of unknown cost not counted")
    if budget_usd is None:
        head = f"cost: ${spend.total:.4f} recorded by the run directory's calls"
    else:
        head = (
            f"cost: ${spend.total:.4f} spent of the ${budget_usd:.4f} budget (run.max_cost_usd; every "
            "call of the run directory)"
        )
        if spend.total > budget_usd + EXCESS_EPS:
            parts.append(f"over the budget by ${spend.total - budget_usd:.4f}")
    if spend.over_bound_calls:
        parts.append(
            f"{_calls(spend.over_bound_calls)} cost more than the per-call bound, the largest single-call "
            f"excess over its admission bound: ${spend.max_excess:.4f} (no call starts once the spend has "
            "passed the budget)"
        )
    if spend.faults:
        charged = "charged their per-call bound" if budget_usd is not None else "not counted"
        parts.append(f"{_calls(spend.faults)} reported no or invalid usage ({charged}; steps: usage_fault)")
    if spend.estimated:
        parts.append(
            f"{_calls(spend.estimated)} reported usage far below the harness's estimate: charged by the "
            f"estimate (${spend.estimated_usd:.4f}, ${spend.reported_usd:.4f} by the reported counts; steps: "
            "est_tokens_in)"
        )
    if held:
        parts.append(f"{held} trials skipped for the budget (a resume with a higher one runs them)")
    return "; ".join([head, *parts])


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def grounding_lines(trials: list[dict[str, Any]]) -> list[str]:
    """The Set-of-Mark trials that ended ``grounding_error`` (no marks shown; the fallback ran), by method,
    with the most common reason; empty when there are none."""
    hit = [t for t in trials if t.get("stop_reason") == "grounding_error"]
    if not hit:
        return []
    by_method = Counter(str(t.get("method")) for t in hit)
    reasons = Counter(str((t.get("som") or {}).get("grounding_error") or "") for t in hit)
    msg, _ = reasons.most_common(1)[0]
    methods = ", ".join(f"{m} x{n}" for m, n in sorted(by_method.items()))
    return [
        f"stop grounding_error x{len(hit)} ({methods}): no marks shown, the model got the plain screenshot "
        f"(som: one click_at, som_dvoc: plain DVOC); most common reason: {shorten(msg) or '(none)'}"
    ]


EXIT_OK, EXIT_CONFIG, EXIT_NO_SUCCESS, EXIT_STOPPED, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 2, 3, 4, 130, 143
"""Exit codes of ``python -m dvoc_bench``: 0 done; 2 bad input (nothing ran); 3 model trials ran and none
ended ``ok``; 130 interrupted (Ctrl-C; finished trials are saved, the same command resumes)."""


def exit_code(trials: list[dict[str, Any]]) -> int:
    """3 when the run has model trials and none of them ended ``ok``; 0 otherwise (model-free runs too)."""
    model = [t for t in trials if t.get("model") != "none"]
    return EXIT_NO_SUCCESS if model and not any(t["status"] == "ok" for t in model) else EXIT_OK
