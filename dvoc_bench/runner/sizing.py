"""``run.plan_only``: size a sweep before spending. No model is called and no key is needed.

Per model: the trials; the **upper-bound calls** (each method's ``max_calls`` in the registry: DVOC
``loop.max_iterations``, one-shot ``oneshot.max_attempts``, SoM 1, SoM -> DVOC ``1 + max_iterations``);
the **expected calls**, per method from the first source that has it: the method's mean calls per trial
in an earlier run (``run.plan_from=DIR``, its ``trials.jsonl`` files, ``ok`` trials), else the authors'
records (``dvoc_bench/runner/recorded_calls.json``, by model name without ``sim-``), else the upper
bound, capped at the upper bound and always said which; the **cost** of both
(:mod:`dvoc_bench.models.pricing`: tokens per call by rule, or measured in the earlier run; unknown
prices shown as unknown); and the **wall time the provider quotas imply**: the scheduler's lower bound
per gate, ``(n - 1) * 60 / rpm`` seconds for
``n`` calls (with the gate's 1 % margin), plus a day per ``rpd`` calls beyond the first day's (the gate ends
the provider at its daily quota: the sweep needs resuming the next day). When a per-call latency is known
(the earlier run, else the authors' records) the latency bound is shown beside it:
``calls * latency / min(max_concurrent, run.max_in_flight)``.

Those counts are per **grounding** (one point). A two-point task (a drag) grounds each end: twice a
point's calls, one more with ``dvoc.drag_start=model``; one-shot asks for both ends in one call per
attempt, so a point's. An episode (``miniwob.*``) grounds every grounded step of its plan: the oracle
plan's groundings (:mod:`dvoc_bench.scenes.miniwob.plan_length`, a drag step twice) times a grounding's
calls, or, where the plan's length depends on the page, ``episode.max_steps`` groundings (said so); its
upper bound is ``episode.max_steps`` steps (twice for the drag family) times a grounding's bound. An
earlier run's drags and episodes are kept apart from its one-point trials (``method (drag)``,
``method (episode)``); when it has only one-point trials of a method, their mean is a grounding's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.records import TrialSpec
from dvoc_bench.core.rundir import TRIALS, read_jsonl
from dvoc_bench.methods.registry import method_info
from dvoc_bench.models.pricing import CallEstimate, call_estimate
from dvoc_bench.runner.scheduler import SPACING_MARGIN, ProviderLimits

if TYPE_CHECKING:
    from dvoc_bench.runner.setup import SweepSetup

RECORDED = Path(__file__).with_name("recorded_calls.json")
"""Calls per trial in the authors' records (written by :mod:`dvoc_bench.benchmarks.recorded_calls`)."""


@dataclass
class Measured:
    """What an earlier run recorded for one model."""

    calls: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    """Model calls of each ``ok`` trial, per method."""
    tokens_in: int = 0
    tokens_out: int = 0
    token_calls: int = 0
    """Calls of the trials that reported tokens."""
    seconds_per_call: list[float] = field(default_factory=list)
    """Trial wall time over its calls, per trial (cache hits excluded)."""


def read_plan_from(directory: Path | str) -> dict[str, Measured]:
    """The calls, tokens and latency per model recorded under ``directory`` (a run or a multirun)."""
    d = Path(directory)
    files = sorted(d.glob(f"**/{TRIALS}")) if d.is_dir() else []
    if not files:
        raise ConfigError(f"run.plan_from: no {TRIALS} in {directory} or below it")
    out: dict[str, Measured] = defaultdict(Measured)
    for f in files:
        for t in read_jsonl(f):
            calls = int(t.get("model_calls") or 0)
            if t.get("status") != "ok" or calls <= 0 or not isinstance(t.get("model"), str):
                continue
            m = out[t["model"]]
            m.calls[measured_key(str(t.get("method")), trial_shape(t))].append(calls)
            if t.get("tokens_in") or t.get("tokens_out"):
                m.tokens_in += int(t.get("tokens_in") or 0)
                m.tokens_out += int(t.get("tokens_out") or 0)
                m.token_calls += calls
            fresh = calls - int(t.get("cached_calls") or 0)
            if fresh > 0 and isinstance(t.get("wall_s"), (int, float)):
                m.seconds_per_call.append(float(t["wall_s"]) / fresh)
    return dict(out)


def trial_shape(t: dict[str, Any]) -> str:
    """What a recorded trial was: ``episode`` (a MiniWoB episode), ``drag`` (two points) or ``point``."""
    if t.get("episode") is not None or t.get("scene_kind") == "miniwob":
        return "episode"
    return "drag" if t.get("drop_point") is not None or t.get("drag") is not None else "point"


def measured_key(method: str, shape: str) -> str:
    """The key of an earlier run's calls: the method, with ``(drag)`` / ``(episode)`` for those trials (a
    one-point trial's calls say nothing about a drag's or an episode's)."""
    return method if shape == "point" else f"{method} ({shape})"


@dataclass(frozen=True)
class Shape:
    """How many one-point groundings a planned trial runs (module docstring: drags and episodes)."""

    groundings: int
    """Groundings the trial is expected to run (a drag's ends, an episode's plan)."""
    max_groundings: int
    """The most it can run (an episode: ``episode.max_steps`` steps, a drag step twice)."""
    extra: int = 0
    """Calls besides the groundings (a drag's end start with ``dvoc.drag_start=model``)."""
    kind: str = "point"
    """``point``, ``drag`` or ``episode`` (:func:`trial_shape`)."""
    note: str = ""
    """Where ``groundings`` comes from, when it is not 1."""


def trial_shape_of(
    setup: SweepSetup, spec: TrialSpec, kinds: Mapping[str, str], ends: Mapping[str, int]
) -> Shape:
    """The :class:`Shape` of a planned trial: a drag grounds each end (one-shot: both in one call per
    attempt); an episode grounds every grounded step of its oracle plan (its length from
    :mod:`dvoc_bench.scenes.miniwob.plan_length` where known, else assumed ``episode.max_steps``), a drag
    step twice."""
    from dvoc_bench.methods.drag import end_start_calls, ends_grounded
    from dvoc_bench.scenes.miniwob.plan_length import plan_groundings
    from dvoc_bench.scenes.miniwob.planners import family_of

    info = method_info(spec.method)
    if spec.task.startswith("gtk.") and kinds.get(spec.task) == "desktop":  # a GTK program's episode
        cap = setup.settings.episode.max_steps
        note = f"a desktop episode: assumed {cap} groundings (episode.max_steps), a drag's two each"
        return Shape(cap, 2 * cap, kind="episode", note=note)
    if kinds.get(spec.task) == "miniwob":
        cap = setup.settings.episode.max_steps
        most = cap * (2 if family_of(spec.task.removeprefix("miniwob.")) == "drag" else 1)
        known = plan_groundings(spec.task)
        if known is not None:
            return Shape(known, most, kind="episode", note=f"{known} groundings, the oracle plan's")
        note = f"plan length varies with the page: assumed {cap} groundings (episode.max_steps)"
        return Shape(cap, most, kind="episode", note=note)
    two = ends.get(spec.task) == 2
    n = ends_grounded(info, two)
    return Shape(n, n, end_start_calls(info, spec, two), kind="drag" if two else "point")


def recorded_table() -> dict[str, Any]:
    """The authors' calls per trial (``{model: {method: {mean_calls, trials, median_s_per_call}}}``)."""
    try:
        return load_file(RECORDED).get("models", {})
    except (OSError, ValueError):
        return {}


@dataclass
class ModelPlan:
    """The estimates of one model."""

    model: str
    trials: int = 0
    upper: int = 0
    upper_unknown: int = 0
    """Trials whose method declares no ``max_calls``."""
    expected: float = 0.0
    cost_expected: float | None = 0.0
    cost_upper: float | None = 0.0
    latency_s: float = 0.0
    """Sum over expected calls of the per-call latency (0 when unknown)."""
    sources: dict[str, str] = field(default_factory=dict)
    """Per method: where its expected calls come from."""
    estimate: CallEstimate | None = None
    gate: str = ""


def _fmt_time(s: float) -> str:
    if s >= 86400:
        days, rest = divmod(s, 86400)
        return f"{days:.0f} d" + (f" + {_fmt_time(rest)}" if rest >= 60 else "")
    if s < 90:
        return f"{s:.0f} s"
    if s < 90 * 60:
        return f"{s / 60:.0f} min"
    if s < 48 * 3600:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def _fmt_cost(c: float | None) -> str:
    return "unknown" if c is None else f"${c:.2f}" if c >= 1 else f"${c:.4f}"


def quota_seconds(n: float, lim: ProviderLimits) -> float:
    """The scheduler's lower bound for ``n`` calls through a gate with ``lim`` (module docstring)."""
    n = math.ceil(n)
    spacing = SPACING_MARGIN * 60.0 / lim.rpm if lim.rpm else 0.0
    days = 0
    if lim.rpd and n > lim.rpd:
        days = math.ceil(n / lim.rpd) - 1
        n -= int(days * lim.rpd)
    return days * 86400.0 + max(0, n - 1) * spacing


def _scene_of(setup: SweepSetup, task: str) -> tuple[Size, int]:
    """A task's screen size and its number of grounded ends (2 for a drag); a scene that fails to build
    (its trials will fail or be skipped) has the size it would have had, else 800x600, and one end."""
    from dvoc_bench.runner.trials import scene_failure

    try:
        snap = setup.registry.snapshot(task)
    except Exception as e:
        if scene_failure(e) is None:
            raise
        return getattr(e, "size", None) or Size(800, 600), 1
    return snap.size, len(snap.truth.ends)


def estimate(setup: SweepSetup, specs: list[TrialSpec]) -> tuple[list[ModelPlan], dict[str, ProviderLimits]]:
    """Per-model estimates of ``specs`` and the limits of each gate they pass."""
    from dvoc_bench.runner.gates import gate_key, provider_limits

    plan_from = setup.settings.run.plan_from
    measured = read_plan_from(plan_from) if plan_from else {}
    recorded = recorded_table()
    by_name = {m.name: m for m in setup.models}
    image = setup.settings.image
    plans: dict[str, ModelPlan] = {}
    limits: dict[str, ProviderLimits] = {}
    scenes = {t: _scene_of(setup, t) for t in {s.task for s in specs}}
    sizes = {t: size for t, (size, _) in scenes.items()}
    ends = {t: n for t, (_, n) in scenes.items()}
    kinds = {t: setup.registry.kind(t) for t in scenes}
    for s in specs:
        info = method_info(s.method)
        if not info.calls_model:
            p = plans.setdefault("none", ModelPlan("none"))
            p.trials += 1
            p.sources[s.method] = "no model"
            continue
        cfg = by_name[s.model]
        p = plans.setdefault(s.model, ModelPlan(s.model))
        p.gate = gate_key(cfg)
        limits.setdefault(p.gate, provider_limits(cfg, setup.settings))
        mine = measured.get(s.model)
        tokens = None
        if mine is not None and mine.token_calls:
            tokens = (mine.tokens_in / mine.token_calls, mine.tokens_out / mine.token_calls)
        est = call_estimate(cfg, sizes[s.task], image, dict(setup.settings.sampling), tokens)
        p.estimate = p.estimate or est
        shape = trial_shape_of(setup, s, kinds, ends)
        one = info.call_bound(s)
        bound = None if one is None else shape.max_groundings * one + shape.extra
        rec = recorded.get(s.model.removeprefix("sim-"), {}).get(s.method)
        latency = None
        own = measured_key(s.method, shape.kind)
        label = own if shape.kind == "point" else f"{own}: {shape.note}" if shape.note else own
        per = f" x {shape.groundings} groundings" + (f" + {shape.extra}" if shape.extra else "")
        per = per if shape.groundings != 1 or shape.extra else ""
        if mine is not None and mine.calls.get(own):  # the same kind of trial, as recorded
            got = mine.calls[own]
            exp = sum(got) / len(got)
            p.sources[label] = f"{exp:.2f}/trial in {plan_from} ({len(got)} trials)"
            if mine.seconds_per_call:
                latency = sorted(mine.seconds_per_call)[len(mine.seconds_per_call) // 2]
        elif mine is not None and mine.calls.get(s.method):  # one-point trials recorded: per grounding
            got = mine.calls[s.method]
            exp = sum(got) / len(got) * shape.groundings + shape.extra
            p.sources[label] = f"{sum(got) / len(got):.2f}/grounding in {plan_from} ({len(got)} trials){per}"
            if mine.seconds_per_call:
                latency = sorted(mine.seconds_per_call)[len(mine.seconds_per_call) // 2]
        elif rec is not None:
            exp = float(rec["mean_calls"]) * shape.groundings + shape.extra
            mean = float(rec["mean_calls"])
            p.sources[label] = f"{mean:.2f}/grounding in the authors' records ({rec['trials']} trials){per}"
            latency = rec.get("median_s_per_call")
        elif bound is not None:
            exp = float(shape.groundings * (one or 0) + shape.extra)
            p.sources[label] = "the upper bound (no record of this method)" + per
        else:
            exp = 0.0
            p.sources[label] = "unknown (no record, no max_calls)"
        if bound is not None:
            exp = min(exp, float(bound))
        p.trials += 1
        p.expected += exp
        p.latency_s += exp * float(latency or 0.0)
        if bound is None:
            p.upper_unknown += 1
        else:
            p.upper += bound
        for attr, n in (("cost_expected", exp), ("cost_upper", bound)):
            cur = getattr(p, attr)
            add = None if est.cost_usd is None or n is None else est.cost_usd * n
            setattr(p, attr, None if cur is None or add is None else cur + add)
    return list(plans.values()), limits


def plan_lines(setup: SweepSetup, specs: list[TrialSpec]) -> list[str]:
    """The printed plan: a table per model and a total, then where each number comes from. With
    ``run.shard=I/N``, the plan of that shard (its trials, its part of every quota and of the budget)."""
    from dvoc_bench.runner.shard import rate_split, select, shard_budget

    shard = setup.settings.run.shard_of_sweep
    whole = len(specs)
    specs = select(specs, shard)
    plans, limits = estimate(setup, specs)
    gate_calls: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for p in plans:
        if p.gate:
            gate_calls[p.gate][0] += p.expected
            gate_calls[p.gate][1] += p.upper

    def quota(gate: str) -> tuple[float, float]:
        lim = limits[gate]
        return quota_seconds(gate_calls[gate][0], lim), quota_seconds(gate_calls[gate][1], lim)

    head = ["model", "trials", "calls upper", "calls expected", "cost expected", "cost upper",
            "quota wall time expected", "upper", "latency bound"]  # fmt: skip
    rows = []
    for p in plans:
        q = quota(p.gate) if p.gate else (0.0, 0.0)
        lim = limits.get(p.gate)
        quota_free = lim is None or not (lim.rpm or lim.rpd)
        in_flight = setup.settings.run.max_in_flight
        conc = min(lim.max_concurrent or in_flight, in_flight) if lim else 1
        lat = p.latency_s / conc if p.latency_s else None
        rows.append([
            p.model, str(p.trials),
            f"{p.upper}" + (f" + {p.upper_unknown} trials unbounded" if p.upper_unknown else ""),
            f"{p.expected:.0f}", _fmt_cost(p.cost_expected), _fmt_cost(p.cost_upper),
            "-" if quota_free else _fmt_time(q[0]), "-" if quota_free else _fmt_time(q[1]),
            _fmt_time(lat) if lat else "-",
        ])  # fmt: skip
    costs_e = [p.cost_expected for p in plans]
    costs_u = [p.cost_upper for p in plans]

    def tot(cs: list[float | None]) -> str:
        known = [c for c in cs if c is not None]
        if not known:
            return "unknown"
        return _fmt_cost(sum(known)) + (" + unknown" if len(known) < len(cs) else "")

    walls = [quota(g) for g in gate_calls]
    rows.append([
        "total", str(sum(p.trials for p in plans)), str(sum(p.upper for p in plans)),
        f"{sum(p.expected for p in plans):.0f}", tot(costs_e), tot(costs_u),
        _fmt_time(max((w[0] for w in walls), default=0.0)),
        _fmt_time(max((w[1] for w in walls), default=0.0)),
        "",
    ])  # fmt: skip
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"  # noqa: E731
    of = f" (shard {shard.label}: {len(specs)} of the sweep's {whole})" if shard else ""
    out = [
        f"plan only: experiment {setup.experiment}, {len(specs)} trials{of}; nothing run, no model called",
        line(head),
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
        *(line(r) for r in rows),
        "",
    ]
    for p in plans:
        if p.model == "none":
            out.append(f"none: {p.trials} model-free trials (no calls)")
            continue
        est = p.estimate
        assert est is not None
        out.append(f"{p.model}:")
        out.append("  expected calls: " + "; ".join(f"{m} {src}" for m, src in p.sources.items()))
        price = est.price
        if price.pricing is None:
            out.append(f"  price: unknown ({price.source})")
        else:
            pr = price.pricing
            extra = f" + ${pr.per_image:g}/image" if pr.per_image else ""
            out.append(
                f"  price: ${pr.input_per_mtok:g} in / ${pr.output_per_mtok:g} out per Mtok{extra} "
                f"({price.source})"
            )
        cost = "" if est.cost_usd is None else f" = {_fmt_cost(est.cost_usd)}/call"
        out.append(f"  tokens per call: {est.tokens_in:.0f} in + {est.tokens_out:.0f} out{cost} ({est.how})")
        lim = limits[p.gate]
        rate = ", ".join(
            f"{k} {v:g}"
            for k, v in (("rpm", lim.rpm), ("rpd", lim.rpd), ("max_concurrent", lim.max_concurrent))
            if v
        )
        n_e, n_u = gate_calls[p.gate]
        note = (
            f"  quota: gate {p.gate} ({rate or 'no quota'}) carries {n_e:.0f} expected / {n_u:.0f} upper "
            "calls"
        )
        if lim.rpd and n_e > lim.rpd:
            note += (
                f"; more than rpd {lim.rpd:g}: the gate ends the provider at the daily quota, resume the "
                f"next day ({math.ceil(n_e / lim.rpd)} days expected)"
            )
        out.append(note)
    if shard is not None:
        split = rate_split(shard, setup.settings.scheduler.rate_split)
        wall = max((quota(g)[0] for g in gate_calls), default=0.0)
        cap = shard_budget(setup.settings.run.max_cost_usd, shard)
        out.append(
            f"Shards: {shard.count} shards share every provider quota (each gate gets 1/{split} of rpm and "
            f"rpd); with all shards running at once the sweep's quota wall time is this shard's, "
            f"{_fmt_time(wall)} expected; one at a time, {shard.count} times that."
            + (f" Budget of this shard: ${cap:.4f} (run.max_cost_usd / {shard.count})." if cap else "")
        )
    samples = {s.task for s in specs if setup.registry.kind(s.task) == "dataset"}
    once = [
        s for s in specs if s.task in samples and not method_info(s.method).uses_start and s.model != "none"
    ]
    if once:  # a sample is the unit: what asking again would cost
        from dvoc_bench.methods.drag import drag_bound

        two = {t for t in samples if len(setup.registry.snapshot(t).truth.ends) == 2}
        bounds = (drag_bound(method_info(s.method), s, s.task in two) or 0 for s in once)
        per = sum(bounds) / max(1, setup.swept.repeats)
        out.append(
            f"Dataset samples: {len(samples)}; methods without a start point run once per sample and repeat "
            f"({len(once)} trials); each further repeat (repeats=N) sends the same requests again: up to "
            f"{per:.0f} more calls per repeat."
        )
    out.append(
        "Upper bounds use each method's max_calls; run.max_cost_usd reserves them at twice the estimated "
        "cost of a call. Estimates, not quotes: prices change, and a provider may count image tokens "
        "otherwise."
    )
    return out
