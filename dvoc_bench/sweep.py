"""Run a sweep: config -> plan -> concurrent trials -> records -> summary (DESIGN §2 data flow)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.config import (
    OVERLAYS,
    PREDICT_MODES,
    PROTOCOLS,
    RETRY_RULES,
    ConfigError,
    ModelConfig,
    check_list,
    default_conf_dir,
    load_model_config,
    model_names,
    parse_starts,
)
from dvoc_bench.control import ALPHA_SCHEDULES, AdaptiveConfig
from dvoc_bench.detect.config import DetectorConfig, detector_config
from dvoc_bench.detect.service import DetectorService
from dvoc_bench.geometry import Box, Point
from dvoc_bench.methods import METHODS, MODEL_FREE, SOM_METHODS, get_method
from dvoc_bench.methods.common import TrialEnv, finish
from dvoc_bench.models.base import Model
from dvoc_bench.plan import Knobs, build_plan
from dvoc_bench.records import Probe, TrialResult, TrialSpec, probe_fields, to_jsonable
from dvoc_bench.render import OverlayStyle
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scheduler import GatedModel, ProviderLimits, RateGate, RetryPolicy
from dvoc_bench.scoring import score
from dvoc_bench.store import RunStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SweepSetup:
    """Everything a sweep needs, validated."""

    experiment: str
    knobs: Knobs
    models: list[ModelConfig]
    registry: SceneRegistry
    style: OverlayStyle
    adaptive: AdaptiveConfig
    retry_rule: str
    max_in_flight: int
    params: dict[str, Any]
    retry: RetryPolicy = RetryPolicy()
    rate_split: int = 1
    provider_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    detector: DetectorConfig | None = None
    """Set-of-Mark detector (``detector=`` and ``detect:``); ``None`` when no SoM method is swept."""


def _get(cfg: Mapping[str, Any], key: str, default: Any = None) -> Any:
    v = cfg.get(key, default)
    return default if v is None else v


def setup_from_config(cfg: Mapping[str, Any], experiment: str, model_choice: str | None = None) -> SweepSetup:
    """Validate a (resolved, plain) config mapping. Raises :class:`ConfigError` naming the bad key."""
    conf_dir = Path(_get(cfg.get("paths", {}), "conf", default_conf_dir()))
    models_dir = Path(_get(cfg.get("paths", {}), "models", conf_dir / "model"))
    scenes_dir = Path(_get(cfg.get("paths", {}), "scenes", default_scenes_dir()))
    registry = SceneRegistry(scenes_dir, options={"web": cfg.get("web"), "scenes": cfg.get("scenes")})
    tasks = [cfg["task"]] if cfg.get("task") else cfg.get("tasks")
    tasks = check_list("task" if cfg.get("task") else "tasks", tasks, registry.ids())
    names = [model_choice] if model_choice else cfg.get("models")
    names = check_list("models", names, model_names(models_dir))
    declare = cfg.get("declare_frame")
    if declare is not None:
        check_list("declare_frame", [declare], ["pixel", "norm1000", "norm1"])
    models = [load_model_config(n, models_dir, declare) for n in names]
    methods = check_list("methods", cfg.get("methods"), METHODS)
    loop = cfg.get("loop", {}) or {}
    oneshot = cfg.get("oneshot", {}) or {}
    smoke = bool(cfg.get("smoke", False))
    starts = parse_starts(cfg.get("starts", "paper"))
    repeats = _positive_int("repeats", cfg.get("repeats", 1))
    if smoke:  # a reduced sweep for CI: two tasks, two start points, one repeat
        tasks, starts, repeats = tasks[:2], (starts[0], min(starts[1], 2)), 1
    knobs = Knobs(
        tasks=tasks,
        methods=methods,
        protocols=check_list("protocols", cfg.get("protocols"), PROTOCOLS),
        alphas=check_list("alphas", cfg.get("alphas"), ALPHA_SCHEDULES),
        overlays=check_list("overlays", cfg.get("overlays"), OVERLAYS),
        predict_modes=check_list("predict_modes", cfg.get("predict_modes"), PREDICT_MODES),
        starts=starts,
        repeats=repeats,
        seed=int(cfg.get("seed", 0)),
        epsilon=float(_get(loop, "epsilon", 30.0)),
        threshold=float(_get(loop, "threshold", 0.5)),
        window=_positive_int("loop.window", _get(loop, "window", 2)),
        max_iterations=_positive_int("loop.max_iterations", _get(loop, "max_iterations", 15)),
        max_attempts=_positive_int("oneshot.max_attempts", _get(oneshot, "max_attempts", 5)),
        alpha_constant=float(_get(loop, "alpha_constant", 0.5)),
        hit_radius_min=float(_get(loop, "hit_radius_min", 30.0)),
    )
    retry_rule = str(_get(oneshot, "retry_rule", "hit"))
    check_list("oneshot.retry_rule", [retry_rule], RETRY_RULES)
    try:
        style = OverlayStyle.from_mapping(dict(cfg.get("overlay_style", {}) or {}))
        adaptive = AdaptiveConfig(**dict(cfg.get("adaptive", {}) or {}))
    except (TypeError, ValueError) as e:
        raise ConfigError(f"overlay_style/adaptive: {e}") from e
    run = cfg.get("run", {}) or {}
    sched = cfg.get("scheduler", {}) or {}
    try:
        retry = RetryPolicy(**dict(cfg.get("retry", {}) or {}))
    except TypeError as e:
        raise ConfigError(f"retry: {e}") from e
    overrides = {str(k): dict(v or {}) for k, v in dict(sched.get("providers", {}) or {}).items()}
    for name, o in overrides.items():
        bad = set(o) - {"rpm", "rpd", "max_concurrent", "timeout_s"}
        if bad:
            raise ConfigError(
                f"scheduler.providers.{name}: unknown key(s) {sorted(bad)}; "
                "allowed: rpm, rpd, max_concurrent, timeout_s"
            )
    detector = None
    if SOM_METHODS & set(knobs.methods):
        detector = detector_config(cfg.get("detector", "oracle"), cfg.get("detect"))
    return SweepSetup(
        detector=detector,
        retry=retry,
        rate_split=_positive_int("scheduler.rate_split", _get(sched, "rate_split", 1)),
        provider_overrides=overrides,
        experiment=experiment,
        knobs=knobs,
        models=models,
        registry=registry,
        style=style,
        adaptive=adaptive,
        retry_rule=retry_rule,
        max_in_flight=_positive_int("run.max_in_flight", _get(run, "max_in_flight", 16)),
        params=dict(cfg.get("sampling", {}) or {}),
    )


def _positive_int(key: str, v: Any) -> int:
    try:
        i = int(v)
    except (TypeError, ValueError):
        i = 0
    if i < 1:
        raise ConfigError(f"{key}: must be a whole number >= 1, got {v!r}")
    return i


def plan(setup: SweepSetup) -> list[TrialSpec]:
    """The sweep's trials."""
    scenes = {
        t: (setup.registry.snapshot(t).content_hash, setup.registry.snapshot(t).size)
        for t in setup.knobs.tasks
    }
    det = setup.detector
    detector = f"{det.backend}:{det.digest()}" if det is not None else "-"
    return build_plan(setup.experiment, setup.knobs, setup.models, scenes, detector)


def trial_record(
    spec: TrialSpec, result: TrialResult, target: Box, wall_s: float, probe: Probe | None = None
) -> dict[str, Any]:
    """The ``trials.jsonl`` line: the spec's fields, the outcome, and every scoring rule.

    ``probe`` (what the scene says lies under the final point) adds ``hit_element``, ``clicked_target``
    and ``blocked_requests``; for web scenes ``hit`` then follows the DOM (``hit_rule``, ``hit_box``).
    """
    d = asdict(spec)
    d["trial_key"] = d.pop("key")
    final = Point(*result.final_point) if result.final_point is not None else None
    s = score(final, target, spec.epsilon, spec.hit_radius_min)
    out = to_jsonable(result)
    out.pop("steps")
    d.update(out)
    d.update(
        target_box=target.as_list(),
        target_centre=target.centre.as_list(),
        final_dist_px=None if s.final_dist_px is None else round(s.final_dist_px, 3),
        hit=s.hit,
        within_eps=s.within_eps,
        hit_radius=s.hit_radius,
        radius_px=s.radius_px,
        wall_s=round(wall_s, 4),
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )
    d.update(probe_fields(probe, s.hit))
    return d


def provider_limits(model: ModelConfig, setup: SweepSetup) -> ProviderLimits:
    """The gate limits of a model: its provider file, its own ``limits:`` block (Gemini quotas are per
    model), its own ``timeout_s``, the config's ``scheduler.providers`` overrides, then the process split."""
    limits = getattr(model, "limits", None)
    d: dict[str, Any] = dict(limits) if isinstance(limits, dict) else {}
    pc = getattr(model, "provider_config", None)
    d["timeout_s"] = model.raw.get("timeout_s") or (getattr(pc, "timeout_s", None) if pc else None)
    d.update(setup.provider_overrides.get(model.provider, {}))
    return ProviderLimits(**d).split(setup.rate_split)


def gate_key(model: ModelConfig) -> str:
    """One gate per provider; a model with its own ``limits:`` block (a per-model quota) gets its own."""
    return f"{model.provider}:{model.name}" if model.raw.get("limits") else model.provider


def build_gates(setup: SweepSetup) -> dict[str, RateGate]:
    """The sweep's gates, keyed by :func:`gate_key`."""
    gates: dict[str, RateGate] = {}
    for m in setup.models:
        key = gate_key(m)
        if key not in gates:
            gates[key] = RateGate(key, provider_limits(m, setup))
    return gates


def gated(model: Model, gate: RateGate, setup: SweepSetup) -> Model:
    """Put the gate and the retries around the provider call, inside the response cache (hits never wait)."""
    from dvoc_bench.models.cache import CachedModel

    if isinstance(model, CachedModel):
        model.inner = GatedModel(model.inner, gate, setup.retry, seed=setup.knobs.seed)
        return model
    return GatedModel(model, gate, setup.retry, seed=setup.knobs.seed)


def skipped_result(reason_class: str, reason: str) -> TrialResult:
    """A trial that was never run (or cut short) because its provider became unusable."""
    return TrialResult(
        status="skipped", stop_reason="skipped", final_point=None, error_class=reason_class, error=reason
    )


def interleave(specs: list[TrialSpec]) -> list[TrialSpec]:
    """Round-robin the trials over providers (model-free ones first), keeping each provider's order.

    Trials start in this order as in-flight slots free up, so every provider always has work queued and a
    slow provider's waits overlap with the others' calls instead of following them.
    """
    queues: dict[str, list[TrialSpec]] = {}
    for s in specs:
        queues.setdefault("" if s.method in MODEL_FREE else s.provider, []).append(s)
    out = queues.pop("", [])
    lists = list(queues.values())
    for i in range(max((len(q) for q in lists), default=0)):
        out.extend(q[i] for q in lists if i < len(q))
    return out


async def run_trials(
    specs: list[TrialSpec],
    setup: SweepSetup,
    store: RunStore,
    model_factory: Callable[[ModelConfig], Model],
    on_done: Callable[[dict[str, Any]], None] | None = None,
    gates: dict[str, RateGate] | None = None,
) -> dict[str, RateGate]:
    """Run every unfinished spec concurrently (at most ``max_in_flight`` at once); returns the gates.

    Each trial runs its own loop sequentially; its model calls pass the provider's gate with call-level
    retries (:mod:`dvoc_bench.scheduler`). When a provider dies (auth / quota), its trials that have not
    finished are written as ``skipped`` with the reason (completed steps kept), never dropped.
    """
    pending = interleave([s for s in specs if s.key not in store.finished])
    gates = gates if gates is not None else build_gates(setup)
    models: dict[str, Model] = {}
    envs: dict[tuple[str, str], TrialEnv] = {}
    by_name = {m.name: m for m in setup.models}
    detector = DetectorService(setup.detector) if setup.detector is not None else None

    def env_for(spec: TrialSpec) -> TrialEnv:
        k = (spec.model, spec.task)
        if k not in envs:
            model = None
            if spec.method not in MODEL_FREE:
                if spec.model not in models:
                    cfg = by_name[spec.model]
                    models[spec.model] = gated(model_factory(cfg), gates[gate_key(cfg)], setup)
                model = models[spec.model]
            envs[k] = TrialEnv(
                snapshot=setup.registry.snapshot(spec.task),
                model=model,
                model_identity=f"{spec.model_id}@{spec.api_base or ''}",
                save_frame=store.save_frame,
                style=setup.style,
                adaptive=setup.adaptive,
                params=setup.params,
                oneshot_retry_rule=setup.retry_rule,
                detector=detector,
            )
        return envs[k]

    sem = asyncio.Semaphore(setup.max_in_flight)

    async def one(spec: TrialSpec) -> None:
        async with sem:
            env = env_for(spec)
            gate = gates.get(gate_key(by_name[spec.model])) if spec.method not in MODEL_FREE else None
            t0 = time.perf_counter()
            if gate is not None and gate.dead is not None:
                result = skipped_result(gate.dead_class or "provider_dead", gate.dead)
            else:
                try:
                    result = await get_method(spec.method)(spec, env)
                except Exception as e:  # a bug in a method must not take the sweep down; record it
                    log.exception("trial %s failed inside the harness", spec.key)
                    result = TrialResult(
                        status="error",
                        stop_reason="error",
                        final_point=None,
                        error_class="internal",
                        error=f"{type(e).__name__}: {e}"[:300],
                    )
                if result.error_class == "provider_dead" and gate is not None:
                    steps = result.steps
                    result = skipped_result(
                        gate.dead_class or "provider_dead", gate.dead or str(result.error)
                    )
                    result.steps = steps
                    finish(result)
            wall_s = time.perf_counter() - t0
            probe = None
            if result.final_point is not None:  # web: the DOM element under the point (and a real click)
                try:
                    probe = await setup.registry.aprobe(spec.task, Point(*result.final_point))
                except Exception:  # recorded as hit_rule "box": the box rule stands for this trial
                    log.exception("trial %s: probing the final point failed", spec.key)
            record = trial_record(spec, result, env.snapshot.target_box, wall_s, probe)
            store.append_trial(record, result.steps)
            if on_done is not None:
                on_done(record)

    await asyncio.gather(*(one(s) for s in pending))
    if detector is not None:
        await asyncio.to_thread(detector.close)  # stops a helper process, releases an onnx session
    await asyncio.to_thread(setup.registry.close)  # closes the browser of web scenes, if one started
    return gates
