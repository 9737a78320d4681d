"""Run a sweep: config -> plan -> concurrent trials -> records -> summary (DESIGN §2 data flow)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dvoc_bench.config import (
    OVERLAYS,
    PREDICT_MODES,
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
from dvoc_bench.geometry import Point
from dvoc_bench.methods.common import TrialEnv, finish
from dvoc_bench.models.base import Model
from dvoc_bench.plan import Knobs, build_plan
from dvoc_bench.protocol.protocols import PROTOCOLS
from dvoc_bench.records import TrialRecord, TrialResult, TrialSpec, to_jsonable
from dvoc_bench.registry import method_info
from dvoc_bench.registry import methods as registry_methods
from dvoc_bench.render import OverlayStyle
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scheduler import GatedModel, ProviderLimits, RateGate, RetryPolicy
from dvoc_bench.workers import FrameRenderer, parse_workers

if TYPE_CHECKING:
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
    model_options: dict[str, Any] = field(default_factory=dict)
    """``build_model`` options of real models: the response cache and image resizing."""
    render_workers: int | None = None
    """``run.render_workers``: threads drawing and encoding frames (``None``: one per core; 0: inline)."""


def _get(cfg: Mapping[str, Any], key: str, default: Any = None) -> Any:
    v = cfg.get(key, default)
    return default if v is None else v


def setup_from_config(cfg: Mapping[str, Any], experiment: str, model_choice: str | None = None) -> SweepSetup:
    """Validate a (resolved, plain) config mapping. Raises :class:`ConfigError` naming the bad key."""
    conf_dir = Path(_get(cfg.get("paths", {}), "conf", default_conf_dir()))
    models_dir = Path(_get(cfg.get("paths", {}), "models", conf_dir / "model"))
    scenes_dir = Path(_get(cfg.get("paths", {}), "scenes", default_scenes_dir()))
    registry = SceneRegistry(scenes_dir, options={"web": cfg.get("web")})
    tasks = [cfg["task"]] if cfg.get("task") else cfg.get("tasks")
    tasks = check_list("task" if cfg.get("task") else "tasks", tasks, registry.ids())
    names = [model_choice] if model_choice else cfg.get("models")
    names = check_list("models", names, model_names(models_dir))
    declare = cfg.get("declare_frame")
    if declare is not None:
        check_list("declare_frame", [declare], ["pixel", "norm1000", "norm1"])
    models = [load_model_config(n, models_dir, declare) for n in names]
    methods = check_list("methods", cfg.get("methods"), list(registry_methods()))
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
        protocols=check_list("protocols", cfg.get("protocols"), list(PROTOCOLS)),
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
    if any(method_info(m).needs_detector for m in knobs.methods):
        detector = detector_config(cfg.get("detector", "oracle"), cfg.get("detect"))
    from dvoc_bench.models.factory import model_options

    try:
        render_workers = parse_workers(run.get("render_workers"))
    except ValueError as e:
        raise ConfigError(f"run.render_workers: {e}") from e
    return SweepSetup(
        render_workers=render_workers,
        model_options=model_options(cfg),
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
        queues.setdefault(s.provider if method_info(s.method).calls_model else "", []).append(s)
    out = queues.pop("", [])
    lists = list(queues.values())
    for i in range(max((len(q) for q in lists), default=0)):
        out.extend(q[i] for q in lists if i < len(q))
    return out


ModelFactory = Callable[[ModelConfig, Callable[[Model], Model]], Model]
"""Builds a model from its config. The second argument puts the provider's gate and the call-level
retries around the provider client; the factory applies it inside its response cache (cache hits never
wait): the chain is ``cache -> gate -> client``."""


@dataclass
class RunSummary:
    """What :func:`run_sweep` did."""

    run_dir: Path
    """The run directory."""
    specs: list[TrialSpec]
    """Every planned trial."""
    trials: list[dict[str, Any]]
    """The ``trials.jsonl`` records of the planned trials (including ones finished by earlier runs)."""
    ran: int
    """Trials run by this call (the others were finished before: a resume)."""
    gates: dict[str, RateGate]
    """The providers' gates, with their call counters."""

    @property
    def counts(self) -> dict[str, int]:
        """Trials by status."""
        out: dict[str, int] = {}
        for t in self.trials:
            out[t["status"]] = out.get(t["status"], 0) + 1
        return out


def default_factory(setup: SweepSetup) -> ModelFactory:
    """Models as the config describes them: the simulator, or LiteLLM behind the response cache."""
    from dvoc_bench.models.factory import build_model

    def factory(cfg: ModelConfig, gate: Callable[[Model], Model]) -> Model:
        return build_model(cfg, setup.registry.truth, wrap=gate, **setup.model_options)

    return factory


def run_sweep(
    setup: SweepSetup,
    run_dir: Path | str,
    model_factory: ModelFactory | None = None,
    *,
    specs: list[TrialSpec] | None = None,
    retry_errors: bool = False,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    gates: dict[str, RateGate] | None = None,
) -> RunSummary:
    """Plan the sweep (unless ``specs`` are given), run what ``run_dir`` does not have yet, write
    ``plan.jsonl``, ``trials.jsonl``, ``steps.jsonl``, the frames, ``summary.md`` and ``run.json``.

    The only way anything runs a sweep (the CLI, benchmarks, calibration, tests). ``model_factory``
    defaults to :func:`default_factory`; ``on_done`` sees every finished trial record (progress bars).
    Re-running into the same ``run_dir`` resumes: finished trials are kept; ``skipped`` ones run again,
    ``error`` ones only with ``retry_errors``.
    """
    from dvoc_bench.store import RunStore
    from dvoc_bench.summary import format_table, summarise

    run_dir = Path(run_dir)
    specs = plan(setup) if specs is None else specs
    factory = model_factory or default_factory(setup)
    with RunStore(run_dir, retry_errors=retry_errors) as store:
        store.write_plan(specs)
        todo = sum(s.trial_key not in store.finished for s in specs)
        log.info("%d trials planned, %d to run, run dir %s", len(specs), todo, run_dir)
        gates = _run_coroutine(lambda: _run_trials(specs, setup, store, factory, on_done, gates))
        keys = {s.trial_key for s in specs}
        trials = [t for t in store.trials() if t["trial_key"] in keys]
    (run_dir / "summary.md").write_text(format_table(summarise(trials), setup.knobs.epsilon) + "\n", "utf-8")
    (run_dir / "run.json").write_text(
        json.dumps(
            {
                "experiment": setup.experiment,
                "planned": len(specs),
                "finished": len(trials),
                "simulated": any(t.get("simulated") for t in trials),
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return RunSummary(run_dir, specs, trials, todo, gates)


def _run_coroutine(make: Callable[[], Any]) -> Any:
    """Run the coroutine ``make()`` to completion, also from inside a running event loop (a notebook):
    then in a worker thread with its own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


async def _run_trials(
    specs: list[TrialSpec],
    setup: SweepSetup,
    store: RunStore,
    model_factory: ModelFactory,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    gates: dict[str, RateGate] | None = None,
) -> dict[str, RateGate]:
    """Run every unfinished spec concurrently (at most ``max_in_flight`` at once); returns the gates.

    Each trial runs its own loop sequentially; its model calls pass the provider's gate with call-level
    retries (:mod:`dvoc_bench.scheduler`). When a provider dies (auth / quota), its trials that have not
    finished are written as ``skipped`` with the reason (completed steps kept), never dropped.
    """
    pending = interleave([s for s in specs if s.trial_key not in store.finished])
    gates = gates if gates is not None else build_gates(setup)
    models: dict[str, Model] = {}
    envs: dict[tuple[str, str], TrialEnv] = {}
    by_name = {m.name: m for m in setup.models}
    detector = DetectorService(setup.detector) if setup.detector is not None else None
    renderer = FrameRenderer(setup.render_workers, in_flight=setup.max_in_flight)  # closed below

    def gate_for(cfg: ModelConfig) -> Callable[[Model], Model]:
        gate = gates[gate_key(cfg)]
        return lambda client: GatedModel(client, gate, setup.retry, seed=setup.knobs.seed)

    def env_for(spec: TrialSpec) -> TrialEnv:
        k = (spec.model, spec.task)
        if k not in envs:
            model = None
            if method_info(spec.method).calls_model:
                if spec.model not in models:
                    cfg = by_name[spec.model]
                    models[spec.model] = model_factory(cfg, gate_for(cfg))
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
                renderer=renderer,
            )
        return envs[k]

    sem = asyncio.Semaphore(setup.max_in_flight)

    async def one(spec: TrialSpec) -> None:
        async with sem:
            env = env_for(spec)
            info = method_info(spec.method)
            gate = gates.get(gate_key(by_name[spec.model])) if info.calls_model else None
            t0 = time.perf_counter()
            if gate is not None and gate.dead is not None:
                result = skipped_result(gate.dead_class or "provider_dead", gate.dead)
            else:
                try:
                    result = await info.run(spec, env)
                except Exception as e:  # a bug in a method must not take the sweep down; record it
                    log.exception("trial %s failed inside the harness", spec.trial_key)
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
                    log.exception("trial %s: probing the final point failed", spec.trial_key)
            record = TrialRecord.build(
                spec,
                result,
                env.snapshot.target_box,
                wall_s,
                scene_kind=setup.registry.kind(spec.task),
                probe=probe,
            )
            line = to_jsonable(record)
            store.append_trial(line, result.steps)
            if on_done is not None:
                on_done(line)

    try:
        await asyncio.gather(*(one(s) for s in pending))
    finally:
        renderer.close()
    if detector is not None:
        await asyncio.to_thread(detector.close)  # stops a helper process, releases an onnx session
    await asyncio.to_thread(setup.registry.close)  # closes the browser of web scenes, if one started
    return gates
