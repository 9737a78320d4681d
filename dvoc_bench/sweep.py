"""Run a sweep: config -> plan -> concurrent trials -> records -> summary (DESIGN §2 data flow)."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from dvoc_bench.budget import Budget, spent_in
from dvoc_bench.config import (
    ConfigError,
    ModelConfig,
    check_list,
    default_conf_dir,
    load_model_config,
    model_names,
    parse_starts,
)
from dvoc_bench.control import AdaptiveConfig
from dvoc_bench.detect.config import DetectorConfig, detector_config
from dvoc_bench.detect.service import DetectorService
from dvoc_bench.frames import FrameSaver
from dvoc_bench.geometry import Box, Point, Size
from dvoc_bench.methods.common import TrialEnv, finish
from dvoc_bench.models.base import Model
from dvoc_bench.models.options import model_image
from dvoc_bench.plan import Knobs, build_plan
from dvoc_bench.protocol.protocols import PROTOCOLS
from dvoc_bench.records import SampleMeta, TrialRecord, TrialResult, TrialSpec, read_jsonl, to_jsonable
from dvoc_bench.registry import method_info
from dvoc_bench.registry import methods as registry_methods
from dvoc_bench.render import OverlayStyle
from dvoc_bench.runmeta import Fingerprint, ResumeCheck, check_resume, fingerprint
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scheduler import FATAL_FOR_PROVIDER, GatedModel, ProviderLimits, RateGate, RetryPolicy
from dvoc_bench.settings import Alpha, Overlay, Predict, load_settings
from dvoc_bench.workers import FrameRenderer

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
    fingerprint: Fingerprint | None = None
    """What the run is made with (:mod:`dvoc_bench.runmeta`); checked on resume. ``None``: no check."""
    allow_new_trials: bool = False
    """``resume.allow_new_trials``: a resume may add trials to the run."""
    render_workers: int | None = None
    """``run.render_workers``: threads drawing and encoding frames (``None``: one per core; 0: inline)."""
    max_cost_usd: float | None = None
    """``run.max_cost_usd``: the run directory's budget (:mod:`dvoc_bench.budget`); ``None``: none."""
    plan_only: bool = False
    """``run.plan_only``: print the plan's estimates and run nothing (:mod:`dvoc_bench.sizing`)."""
    plan_from: str | None = None
    """``run.plan_from``: an earlier run whose recorded calls and tokens the plan expects."""
    frames: str = "all"
    """``run.frames`` resolved: ``all | sent | none`` (:func:`frame_saver`)."""


def setup_from_config(cfg: Mapping[str, Any], experiment: str, model_choice: str | None = None) -> SweepSetup:
    """Validate a (resolved, plain) config mapping (:mod:`dvoc_bench.settings`), then the lists whose
    allowed values live in registries. Raises :class:`ConfigError` naming the bad key."""
    s = load_settings(dict(cfg))
    models_dir = Path(s.paths.models) if s.paths.models else default_conf_dir() / "model"
    scenes_dir = Path(s.paths.scenes) if s.paths.scenes else default_scenes_dir()
    dataset = s.dataset.format is not None
    if dataset:  # the dataset's (selected) samples are the tasks; tasks=[...] picks sample ids
        registry, tasks = dataset_registry(s, scenes_dir)
    else:
        registry = SceneRegistry(
            scenes_dir,
            options={"web": s.web.model_dump(), "desktop": s.desktop.model_dump()},
            max_side=s.scenes.max_side,
        )
        tasks = check_list("task" if s.task else "tasks", [s.task] if s.task else s.tasks, registry.ids())
    names = check_list("models", [model_choice] if model_choice else s.models, model_names(models_dir))
    models = [
        # model=<name>: Hydra already read conf/model/<name>.yaml into the config; read nothing twice.
        # A plan calls no model: it needs no key.
        load_model_config(
            n,
            models_dir,
            s.declare_frame,
            check_key=not s.run.plan_only,
            data=s.model if n == model_choice and not s.paths.models else None,
        )
        for n in names
    ]
    for m in models:  # a bad image: block is a config error before anything runs
        model_image(m.raw, s.image, f"model {m.name}: ")
    starts, repeats = parse_starts(s.starts, dataset), s.repeats
    if s.smoke:  # a reduced sweep for CI: two tasks, two start points, one repeat
        tasks, starts, repeats = tasks[:2], (starts[0], min(starts[1], 2)), 1
    knobs = Knobs(
        tasks=tasks,
        methods=check_list("methods", s.methods, list(registry_methods())),
        protocols=check_list("protocols", s.protocols, list(PROTOCOLS)),
        alphas=check_list("alphas", s.alphas, get_args(Alpha)),
        overlays=check_list("overlays", s.overlays, get_args(Overlay)),
        predict_modes=check_list("predict_modes", s.predict_modes, get_args(Predict)),
        starts=starts,
        repeats=repeats,
        seed=s.seed,
        epsilon=s.loop.epsilon,
        threshold=s.loop.threshold,
        window=s.loop.window,
        max_iterations=s.loop.max_iterations,
        max_attempts=s.oneshot.max_attempts,
        alpha_constant=s.loop.alpha_constant,
        hit_radius_min=s.loop.hit_radius_min,
        overlay_style_default=s.overlay_style == type(s.overlay_style)(),
        zoom=s.zoom.label(),
    )
    detector = None
    if any(method_info(m).needs_detector for m in knobs.methods):
        detector = detector_config(s.detector)
    _warn_unused_knobs(s, knobs.methods)
    if s.run.max_cost_usd is not None and not s.run.plan_only:
        _check_budget(models, knobs.methods)
    lists = {
        "models": [f"{m.name}@{model_digest(m)}" for m in models],
        "tasks": list(tasks),
        "methods": list(knobs.methods),
        "alphas": list(knobs.alphas),
        "overlays": list(knobs.overlays),
        "predict_modes": list(knobs.predict_modes),
        "protocols": list(knobs.protocols),
        "repeats": list(range(repeats)),
    }
    frames = s.run.frames if s.run.frames != "auto" else ("sent" if dataset else "all")
    settings = s.model_dump(mode="json", exclude={"smoke", "starts", "repeats"})
    settings["starts"] = list(starts)  # after smoke=true, which also shortens the start list
    return SweepSetup(
        render_workers=s.run.render_workers,
        model_options={"cache": s.cache, "image": s.image, "max_reply_chars": s.run.max_reply_chars},
        detector=detector,
        retry=s.retry,
        rate_split=s.scheduler.rate_split,
        provider_overrides={k: v.model_dump(exclude_none=True) for k, v in s.scheduler.providers.items()},
        experiment=experiment,
        knobs=knobs,
        models=models,
        registry=registry,
        style=s.overlay_style,
        adaptive=s.adaptive,
        retry_rule=s.oneshot.retry_rule,
        max_in_flight=s.run.max_in_flight,
        params=dict(s.sampling),
        fingerprint=fingerprint(settings, lists),
        allow_new_trials=s.resume.allow_new_trials,
        max_cost_usd=s.run.max_cost_usd,
        plan_only=s.run.plan_only,
        plan_from=s.run.plan_from,
        frames=frames,
    )


def dataset_registry(s: Any, scenes_dir: Path) -> tuple[SceneRegistry, list[str]]:
    """The registry of a dataset's selected samples and their task ids (``dataset.*``, ``tasks=[...]``).

    ``tasks`` left at its default (the paper's S1-S6) or ``task``/``tasks`` naming no sample means all the
    selected samples; otherwise the listed ids are picked (an unknown id is a one-line error)."""
    from dvoc_bench.scenes import build_sources
    from dvoc_bench.settings import Settings

    picks: list[str] | None = [s.task] if s.task else list(s.tasks)
    if not s.task and picks == Settings().tasks:
        picks = None
    options = {**s.dataset.model_dump(), "picks": picks}
    fmt = s.dataset.format
    sources = build_sources({fmt: options}, names=[fmt])
    registry = SceneRegistry(scenes_dir, sources=sources, max_side=s.scenes.max_side)
    return registry, list(sources[fmt].backend.samples)  # dataset order


def _check_budget(models: Sequence[ModelConfig], methods: Sequence[str]) -> None:
    """``run.max_cost_usd`` needs an upper bound for every trial: a price for every model that is called
    and a declared ``max_calls`` for every method that calls one."""
    from dvoc_bench.pricing import price_of

    calling = [m for m in methods if method_info(m).calls_model]
    for m in calling:
        if method_info(m).max_calls is None:
            raise ConfigError(
                f"run.max_cost_usd: method {m} declares no max_calls, so no trial of it can be bounded"
            )
    for cfg in models if calling else []:
        price = price_of(cfg)
        if price.pricing is None:
            raise ConfigError(
                f"run.max_cost_usd: the cost of model {cfg.name} is unknown ({price.source}); give its "
                "config a pricing: {input_per_mtok, output_per_mtok, per_image} block"
            )


def model_digest(m: ModelConfig) -> str:
    """Hash of a model config as far as it can change answers (not its quota, timeout, description or
    price)."""
    raw = {k: v for k, v in m.raw.items() if k not in ("limits", "timeout_s", "description", "pricing")}
    blob = json.dumps({"raw": raw, "frame": m.coord_frame}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def _warn_unused_knobs(s: Any, methods: Sequence[str]) -> None:
    """One warning line per swept knob that no swept method uses (its values would change nothing)."""
    from dvoc_bench.settings import Settings

    used = set().union(*(method_info(m).knobs for m in methods))
    default = Settings()
    for knob, key in (("alpha", "alphas"), ("overlay", "overlays"), ("predict", "predict_modes"),
                      ("protocol", "protocols")):  # fmt: skip
        if knob not in used and getattr(s, key) != getattr(default, key):
            log.warning("%s=%s has no effect: no swept method uses it (methods: %s)",
                        key, getattr(s, key), ", ".join(methods))  # fmt: skip
    if "detector" not in used and (s.detector or {}).get("backend", "oracle") != "oracle":
        log.warning("detector=%s has no effect: no swept method uses a detector (methods: %s)",
                    s.detector.get("backend"), ", ".join(methods))  # fmt: skip


UNRENDERED = "unrendered"
"""Scene hash of a scene that failed to build (its trials are ``error``/``scene``)."""


def scene_failure(e: BaseException) -> str | None:
    """The one-line reason when ``e`` is a per-scene failure (an exception with ``error_class == "scene"``,
    e.g. a web page that hangs); ``None`` for anything else (a bad config stops the sweep as before)."""
    return str(e).splitlines()[0][:600] if getattr(e, "error_class", None) == "scene" else None


def plan(setup: SweepSetup) -> list[TrialSpec]:
    """The sweep's trials. A scene that fails to build still gets its trials (they end ``error``/``scene``
    when run); its size is the one it would have had."""
    scenes = {}
    for t in setup.knobs.tasks:
        try:
            snap = setup.registry.snapshot(t)
            scenes[t] = (snap.content_hash, snap.size)
        except Exception as e:
            if scene_failure(e) is None:
                raise
            log.warning("scene %s failed: %s", t, scene_failure(e))
            scenes[t] = (UNRENDERED, getattr(e, "size", None) or Size(800, 600))
    det = setup.detector
    detector = f"{det.backend}:{det.digest()}" if det is not None else "-"
    kinds = {t: setup.registry.kind(t) for t in setup.knobs.tasks}
    return build_plan(setup.experiment, setup.knobs, setup.models, scenes, detector, kinds)


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


PROVIDER_FATAL = FATAL_FOR_PROVIDER | {"provider_dead"}
"""Error classes of a trial whose provider died under it: written as ``skipped``, run again on resume."""


def skipped_result(reason_class: str, reason: str) -> TrialResult:
    """A trial that was never run (or cut short) because its provider became unusable, or never started
    because it could have passed the cost budget (``reason_class="budget"``)."""
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
    resume: ResumeCheck | None = None
    """What the resume check found (items of the run this call skipped, items it added)."""
    spent_usd: float = 0.0
    """USD recorded by every call of the run directory (earlier invocations included)."""
    unknown_cost_calls: int = 0
    """Calls of the run directory whose cost is unknown (not in ``spent_usd``)."""
    budget_usd: float | None = None
    """``run.max_cost_usd`` of this call; ``None`` without a budget."""
    frames_line: str = ""
    """The end-of-run line on the frames this call wrote (``run.frames``; :mod:`dvoc_bench.frames`)."""
    frame_bytes: int = 0
    """Bytes of the frames this call wrote."""

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
    on_start: Callable[[int], None] | None = None,
    gates: dict[str, RateGate] | None = None,
) -> RunSummary:
    """Plan the sweep (unless ``specs`` are given), run what ``run_dir`` does not have yet, write
    ``plan.jsonl``, ``trials.jsonl``, ``steps.jsonl``, the frames, ``summary.md`` and ``run.json``.

    The only way anything runs a sweep (the CLI, benchmarks, calibration, tests). ``model_factory``
    defaults to :func:`default_factory`; ``on_done`` sees every finished trial record (progress bars).
    Re-running into the same ``run_dir`` resumes: finished trials are kept; ``skipped`` ones run again,
    ``error`` ones only with ``retry_errors``. A resume must use the run's own settings
    (:mod:`dvoc_bench.runmeta`: a different fingerprint is a :class:`ConfigError` and nothing changes);
    a subset is allowed, more trials only with ``resume.allow_new_trials``, and ``plan.jsonl`` keeps the
    run's whole plan. ``on_start(n)`` is told how many trials this call will run.
    """
    from dvoc_bench.store import RunStore
    from dvoc_bench.summary import format_table, summarise

    run_dir = Path(run_dir)
    specs = plan(setup) if specs is None else specs
    factory = model_factory or default_factory(setup)
    checked: list[ResumeCheck] = []

    def on_locked(d: Path) -> None:  # before anything in the run dir changes
        if setup.fingerprint is not None:
            checked.append(check_resume(d, setup.fingerprint, setup.allow_new_trials))

    with RunStore(run_dir, retry_errors=retry_errors, on_locked=on_locked) as store:
        old_plan = [p for p in read_jsonl(run_dir / "plan.jsonl") if isinstance(p.get("trial_key"), str)]
        known = {p["trial_key"] for p in old_plan}
        store.write_plan(old_plan + [to_jsonable(s) for s in specs if s.trial_key not in known])
        todo = sum(s.trial_key not in store.finished for s in specs)
        log.info("%d trials planned, %d to run, run dir %s", len(specs), todo, run_dir)
        if on_start is not None:
            on_start(todo)
        saver = FrameSaver(store.save_frame, setup.frames)
        gates = _run_coroutine(lambda: _run_trials(specs, setup, store, factory, on_done, gates, saver))
        keys = {s.trial_key for s in specs}
        trials = [t for t in store.trials() if t["trial_key"] in keys]
        spent, unknown = spent_in(run_dir)
        table = format_table(summarise(trials), setup.knobs.epsilon)
        (run_dir / "summary.md").write_text(table + "\n", "utf-8")  # still under the run dir's lock
        (run_dir / "run.json").write_text(
            json.dumps(
                {
                    "experiment": setup.experiment,
                    "planned": len(specs),
                    "finished": len(trials),
                    "simulated": any(t.get("simulated") for t in trials),
                    "frames": setup.frames,
                    "fingerprint": setup.fingerprint.digest if setup.fingerprint else None,
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    return RunSummary(
        run_dir,
        specs,
        trials,
        todo,
        gates,
        checked[0] if checked else None,
        spent,
        unknown,
        setup.max_cost_usd,
        saver.line(len({s.task for s in specs})),
        saver.bytes,
    )


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


def sample_meta(registry: SceneRegistry, task: str) -> SampleMeta | None:
    """The trial record's ``sample`` block of a dataset task (``None`` for other scenes)."""
    meta = registry.meta(task)
    if meta is None:
        return None
    known = {f.name for f in dataclasses.fields(SampleMeta)}
    return SampleMeta(**{k: v for k, v in meta.items() if k in known})


async def _run_trials(
    specs: list[TrialSpec],
    setup: SweepSetup,
    store: RunStore,
    model_factory: ModelFactory,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    gates: dict[str, RateGate] | None = None,
    frames: FrameSaver | None = None,
) -> dict[str, RateGate]:
    """Run every unfinished spec concurrently (at most ``max_in_flight`` at once); returns the gates.

    Each trial runs its own loop sequentially; its model calls pass the provider's gate with call-level
    retries (:mod:`dvoc_bench.scheduler`). When a provider dies (auth / quota), its trials that have not
    finished are written as ``skipped`` with the reason (completed steps kept), never dropped.
    """
    pending = [s for s in specs if s.trial_key not in store.finished]
    lazy = {t for t in {s.task for s in pending} if setup.registry.kind(t) == "dataset"}
    if lazy:  # dataset samples run task by task: few screenshots decoded at once, each env freed early
        order = {t: i for i, t in enumerate(dict.fromkeys(s.task for s in pending))}
        pending = sorted(pending, key=lambda s: order[s.task])
    pending = interleave(pending)
    left = Counter((s.model, s.task) for s in pending if s.task in lazy)
    gates = gates if gates is not None else build_gates(setup)
    models: dict[str, Model] = {}
    envs: dict[tuple[str, str], TrialEnv] = {}
    saver = frames if frames is not None else FrameSaver(store.save_frame, setup.frames)
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
                save_frame=saver,
                style=setup.style,
                adaptive=setup.adaptive,
                params=setup.params,
                oneshot_retry_rule=setup.retry_rule,
                detector=detector,
                renderer=renderer,
                image=model_image(
                    by_name[spec.model].raw if spec.model in by_name else None,
                    setup.model_options.get("image"),
                ),
            )
            if saver.mode == "all" and not envs[k].view().identity:  # the original beside the sent frames
                saver(envs[k].clean_png())
        return envs[k]

    sem = asyncio.Semaphore(setup.max_in_flight)
    budget = Budget(setup.max_cost_usd, spent_in(store.dir)[0]) if setup.max_cost_usd is not None else None
    estimates: dict[tuple[str, str], float] = {}

    def call_cost(spec: TrialSpec, env: TrialEnv) -> float:
        """Estimated cost of one call of the spec's model on its scene (the budget's per-call basis)."""
        k = (spec.model, spec.task)
        if k not in estimates:
            from dvoc_bench.pricing import call_estimate

            est = call_estimate(by_name[spec.model], env.snapshot.size, setup.model_options.get("image"),
                                setup.params)  # fmt: skip
            estimates[k] = est.cost_usd or 0.0  # unknown prices are refused when the budget is set up
        return estimates[k]

    def scene_error(spec: TrialSpec, reason: str) -> None:
        result = TrialResult(
            status="error", stop_reason="error", final_point=None, error_class="scene", error=reason
        )
        kind = setup.registry.kind(spec.task)
        sample = sample_meta(setup.registry, spec.task)
        record = TrialRecord.build(spec, result, Box(0, 0, 0, 0), 0.0, scene_kind=kind, sample=sample)
        line = to_jsonable(record)
        store.append_trial(line, [])
        if on_done is not None:
            on_done(line)

    async def one(spec: TrialSpec) -> None:
        async with sem:
            try:
                env = env_for(spec)
            except Exception as e:  # a page that hangs or has no target fails its own trials only
                reason = scene_failure(e)
                if reason is None:
                    raise
                scene_error(spec, reason)
                return
            info = method_info(spec.method)
            gate = gates.get(gate_key(by_name[spec.model])) if info.calls_model else None
            t0 = time.perf_counter()
            bound, per_call, refused = 0.0, 0.0, None
            if budget is not None and info.calls_model and (gate is None or gate.dead is None):
                per_call = budget.per_call(spec.model, call_cost(spec, env))
                bound = (info.call_bound(spec) or 0) * per_call
                refused = await budget.admit(bound)
                t0 = time.perf_counter()  # the wait for the budget is not the trial's time
            if gate is not None and gate.dead is not None:
                result = skipped_result(gate.dead_class or "provider_dead", gate.dead)
            elif refused is not None:
                result = skipped_result("budget", refused)
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
                dead = gate is not None and gate.dead is not None
                if dead and result.status == "error" and result.error_class in PROVIDER_FATAL:
                    # the provider died (auth / quota): this trial did not finish; resume runs it again
                    steps = result.steps
                    assert gate is not None
                    result = skipped_result(
                        gate.dead_class or "provider_dead", gate.dead or str(result.error)
                    )
                    result.steps = steps
                    finish(result)
            if budget is not None and refused is None:  # charge the calls, free the reservation
                await budget.release(bound, spec.model, result, per_call)
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
                target_full=env.snapshot.truth.target_full_box,
                sample=sample_meta(setup.registry, spec.task),
            )
            line = to_jsonable(record)
            store.append_trial(line, result.steps)
            if on_done is not None:
                on_done(line)
            k = (spec.model, spec.task)
            if k in left:  # a dataset sample's last trial of this model: free its environment
                left[k] -= 1
                if left[k] == 0:
                    envs.pop(k, None)

    try:
        await asyncio.gather(*(one(s) for s in pending))
    except BaseException:  # stop live scenes (browser, Xvfb and Tk apps) on the way out, too
        setup.registry.close()
        raise
    finally:
        renderer.close()
    if detector is not None:
        await asyncio.to_thread(detector.close)  # stops a helper process, releases an onnx session
    await asyncio.to_thread(setup.registry.close)  # closes the browser / Xvfb of live scenes, if started
    return gates
