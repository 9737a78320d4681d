"""Setup: a composed config -> validated :class:`Settings` -> what the sweep needs (:class:`SweepSetup`).

Every knob is validated once, by :func:`dvoc_bench.runner.settings.load_settings`; the setup adds only what
needs the registries or the files: the swept lists checked against them (:class:`Swept`), the model configs,
the task source, the detector, the fingerprint a resume is checked against. Nothing downstream reads the raw
config dict again: it reads ``setup.settings``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from dvoc_bench.core.declare import ConfigError, check_list
from dvoc_bench.detect.config import DetectorConfig, detector_config
from dvoc_bench.methods.registry import method_info
from dvoc_bench.methods.registry import methods as registry_methods
from dvoc_bench.models.config import ModelConfig, default_conf_dir, load_model_config, model_names
from dvoc_bench.models.options import model_image
from dvoc_bench.protocol.protocols import PROTOCOLS
from dvoc_bench.runner.runmeta import Fingerprint, fingerprint
from dvoc_bench.runner.settings import Alpha, Overlay, Predict, Settings, load_settings
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Swept:
    """The lists the plan multiplies, resolved against their registries (after ``task=``/``model=``
    shorthands, a dataset's sample ids and ``smoke``). Every other knob is read from the settings."""

    tasks: tuple[str, ...]
    """Task ids, in the order they are planned (a dataset's own order)."""
    methods: tuple[str, ...]
    """Registered methods."""
    protocols: tuple[str, ...]
    """Prompt protocols."""
    alphas: tuple[str, ...]
    """Alpha schedules."""
    overlays: tuple[str, ...]
    """DVOC overlays."""
    predict_modes: tuple[str, ...]
    """DVOC answer kinds."""
    starts: tuple[str, int]
    """The start list: its kind (``paper``, ``scaled``, ``centre``, ``oneshot``, ``random``) and length."""
    repeats: int
    """Repeats per start point."""


@dataclass(frozen=True)
class SweepSetup:
    """Everything a sweep needs, validated: the settings themselves and what they resolve to."""

    experiment: str
    """The experiment preset's name (``custom`` without one)."""
    settings: Settings
    """The validated config: the one place every knob is read from."""
    swept: Swept
    """The swept lists, checked against the registries."""
    models: list[ModelConfig]
    """The swept models' configs (provider files attached)."""
    registry: SceneRegistry
    """The task source of the sweep (scenes, or a dataset's samples)."""
    detector: DetectorConfig | None = None
    """Set-of-Mark detector (``detector=`` and ``detect:``); ``None`` when no SoM method is swept."""
    fingerprint: Fingerprint | None = None
    """What the run is made with (:mod:`dvoc_bench.runner.runmeta`); checked on resume. ``None``: no check."""
    frames: str = "all"
    """``run.frames`` resolved: ``all | sent | none`` (``auto`` is ``sent`` on a dataset, else ``all``)."""
    model_changes: Mapping[str, str] = field(default_factory=dict)
    """Model name -> the digest of its config when it is not the repository's file as shipped (a
    ``model.*`` override, a file of ``paths.models``); absent when it is. A trial's ``model_config``."""


def model_options(s: Settings) -> dict[str, Any]:
    """``build_model`` keyword arguments of real models: the response cache, the image limits and the
    reply bound (``cache:``, ``image:``, ``run.max_reply_chars``)."""
    return {"cache": s.cache, "image": s.image, "max_reply_chars": s.run.max_reply_chars}


def parse_starts(spec: object, dataset: bool = False) -> tuple[str, int]:
    """``paper | scaled | centre | oneshot | auto`` or ``random:N`` -> (kind, N); ``auto`` is ``scaled``
    on a dataset, else ``paper``."""
    s = str(spec)
    if s == "auto":
        s = "scaled" if dataset else "paper"
    if s in ("paper", "scaled"):
        return s, 5
    if s in ("centre", "oneshot"):
        return s, 1
    if s.startswith("random:"):
        try:
            n = int(s.split(":", 1)[1])
        except ValueError:
            n = 0
        if n > 0:
            return "random", n
    raise ConfigError(
        f"starts: unknown value {s!r}; allowed: auto, paper, scaled, centre, oneshot, random:N (N >= 1)"
    )


def setup_from_config(cfg: Mapping[str, Any], experiment: str, model_choice: str | None = None) -> SweepSetup:
    """Validate a (resolved, plain) config mapping, then set the sweep up (:func:`setup_from_settings`).
    Raises :class:`ConfigError` naming the bad key."""
    return setup_from_settings(load_settings(dict(cfg)), experiment, model_choice)


def setup_from_settings(s: Settings, experiment: str, model_choice: str | None = None) -> SweepSetup:
    """Check the lists whose allowed values live in registries and files, read the model configs and
    build the task source. Raises :class:`ConfigError` naming the bad key."""
    models_dir = Path(s.paths.models) if s.paths.models else default_conf_dir() / "model"
    scenes_dir = Path(s.paths.scenes) if s.paths.scenes else default_scenes_dir()
    dataset = s.dataset.format is not None
    if s.absent.variant != "off" and s.wording != "given":  # two rewrites of one instruction
        raise ConfigError(
            f"wording: {s.wording} words the target the screen shows; with absent.variant={s.absent.variant} "
            "it has none: set one of them to its default"
        )
    if dataset:  # the dataset's (selected) samples are the tasks; tasks=[...] picks sample ids
        registry = dataset_registry(s, scenes_dir)
        tasks = registry.ids()
    else:
        registry = scene_registry(s, scenes_dir)
        tasks = check_list("task" if s.task else "tasks", [s.task] if s.task else s.tasks, registry.ids())
        gtk = [t for t in tasks if registry.kind(t) == "desktop" and t.startswith("gtk.")]
        _check_desktop_episodes(s, gtk)
    if s.model and not model_choice:  # model.<key>=V with models=[...]: it would change no model
        key = next(iter(s.model))
        raise ConfigError(
            f"model.{key}: a model.* override applies to the model=<name> shorthand; give model=<name> "
            "(models=[...] reads each file as it is)"
        )
    names = check_list("models", [model_choice] if model_choice else s.models, model_names(models_dir))
    models = [
        # model=<name>: Hydra already read the file (with any model.* override) into the config; read
        # nothing twice. It read conf/model/<name>.yaml when there is one, else paths.models' file
        # (dvoc_bench/app/own_models.py). A plan calls no model: it needs no key.
        load_model_config(
            n,
            models_dir,
            s.declare_frame,
            check_key=not s.run.plan_only,
            data=s.model if n == model_choice and s.model and _composed_from(models_dir, n) else None,
        )
        for n in names
    ]
    for m in models:  # a bad image: or sim: block is a config error before anything runs
        model_image(m.image, s.image, f"model {m.name}: ")
        if m.kind == "simulator":
            from dvoc_bench.models.simulator import SimProfile

            if m.sim is None:
                raise ConfigError(f"model {m.name}: a simulator config needs a 'sim' block")
            SimProfile.from_mapping(m.sim, prefix=f"model {m.name}: sim.")
        if m.kind == "ocr" and not s.run.plan_only:  # its binary: checked before anything is written
            from dvoc_bench.models.ocr.model import ocr_model_from_config

            ocr_model_from_config(m.name, m.ocr)
        if m.kind == "parse" and not s.run.plan_only:  # its weights and OCR engine: checked likewise
            from dvoc_bench.models.ocr.parser import parse_model_from_config

            parse_model_from_config(m.name, m.parse).close()
    starts, repeats = parse_starts(s.starts, dataset), s.repeats
    if s.smoke:  # a reduced sweep for CI: two tasks, two start points, one repeat
        tasks, starts, repeats = tasks[:2], (starts[0], min(starts[1], 2)), 1
    swept = Swept(
        tasks=tuple(tasks),
        methods=tuple(check_list("methods", s.methods, list(registry_methods()))),
        protocols=tuple(check_list("protocols", s.protocols, list(PROTOCOLS))),
        alphas=tuple(check_list("alphas", s.alphas, get_args(Alpha))),
        overlays=tuple(check_list("overlays", s.overlays, get_args(Overlay))),
        predict_modes=tuple(check_list("predict_modes", s.predict_modes, get_args(Predict))),
        starts=starts,
        repeats=repeats,
    )
    detector = None
    if any(method_info(m).needs_detector for m in swept.methods):
        detector = detector_config(s.detector)
    _warn_unused_knobs(s, swept.methods)
    if s.run.max_cost_usd is not None and not s.run.plan_only:
        _check_budget(models, swept.methods)
    lists: dict[str, list[str] | list[int]] = {
        "models": [f"{m.name}@{model_digest(m)}" for m in models],
        "tasks": list(swept.tasks),
        "methods": list(swept.methods),
        "alphas": list(swept.alphas),
        "overlays": list(swept.overlays),
        "predict_modes": list(swept.predict_modes),
        "protocols": list(swept.protocols),
        "repeats": list(range(repeats)),
    }
    changes = {m.name: d for m in models if (d := _unlike_shipped(m, s.declare_frame)) is not None}
    frames = s.run.frames if s.run.frames != "auto" else ("sent" if dataset else "all")
    settings = s.model_dump(mode="json", exclude={"smoke", "starts", "repeats"})
    settings["starts"] = list(starts)  # after smoke=true, which also shortens the start list
    return SweepSetup(
        experiment=experiment,
        settings=s,
        swept=swept,
        models=models,
        registry=registry,
        detector=detector,
        fingerprint=fingerprint(settings, lists),
        frames=frames,
        model_changes=changes,
    )


def _unlike_shipped(m: ModelConfig, declare_frame: str | None) -> str | None:
    """``None`` when ``m`` is the repository's ``conf/model/<name>.yaml`` as shipped (read with the same
    ``declare_frame``), else the digest of ``m``."""
    shipped = default_conf_dir() / "model" / f"{m.name}.yaml"
    if shipped.exists():
        try:
            ref = load_model_config(m.name, shipped.parent, declare_frame, check_key=False)
        except ConfigError:
            ref = None
        if ref is not None and model_digest(ref) == model_digest(m):
            return None
    return model_digest(m)


def _composed_from(models_dir: Path, name: str) -> bool:
    """Whether Hydra's ``model=<name>`` composed ``<models_dir>/<name>.yaml``: the repository's
    ``conf/model/`` wins Hydra's search path, ``paths.models`` is searched when that has no such file."""
    default = default_conf_dir() / "model"
    return models_dir.resolve() == default.resolve() or not (default / f"{name}.yaml").exists()


def scene_registry(s: Settings, scenes_dir: Path, unvaried: bool = False) -> SceneRegistry:
    """The registry of the scene folders' tasks under the validated settings; ``unvaried``: with every
    variation axis at its default (the scenes a varied trial's twin runs on, docs/variation.md)."""
    web, desktop, wording = s.web, s.desktop, s.wording
    if unvaried:
        web = web.model_copy(update={k.removeprefix("web."): getattr(type(web)(), k.removeprefix("web."))
                                     for k in web.variation()})  # fmt: skip
        desktop = desktop.model_copy(
            update={k.removeprefix("desktop."): getattr(type(desktop)(), k.removeprefix("desktop."))
                    for k in desktop.variation()}  # fmt: skip
        )
        wording = "given"
    return SceneRegistry(
        scenes_dir,
        # validated: used as they are
        options={
            "web": web,
            "desktop": desktop,
            "apps": desktop,
            "miniwob": s.episode,
            "gtk_episodes": (s.episode, desktop),
        },
        max_side=s.scenes.max_side,
        absent=s.absent.variant,
        wording=wording,
    )


def _check_desktop_episodes(s: Settings, gtk: list[str]) -> None:
    """The GTK programs' episodes run their oracle's plan on the program as it starts: refuse the knobs they
    would carry in their keys without honouring them (model planning, the variation axes and wordings)."""
    if not gtk:
        return
    if s.episode.plan != "oracle":
        raise ConfigError(
            f"episode.plan: {s.episode.plan} plans MiniWoB pages only; {gtk[0]} plans by its oracle"
        )
    knobs = [*s.web.variation(), *s.desktop.variation(), *(["wording"] if s.wording != "given" else [])]
    if knobs:
        raise ConfigError(
            f"{knobs[0]}: the desktop episodes ({gtk[0]}, ...) run unvaried; leave them out of tasks"
        )


def varied(s: Settings) -> bool:
    """Whether any variation axis is off its default (docs/variation.md)."""
    return bool(s.web.variation() or s.desktop.variation() or s.wording != "given")


def dataset_registry(s: Settings, scenes_dir: Path) -> SceneRegistry:
    """The registry of a dataset's selected samples (``dataset.*``, ``tasks=[...]``); its ids are in the
    dataset's order.

    ``tasks`` left at its default (the paper's S1-S6) or ``task``/``tasks`` naming no sample means all the
    selected samples; otherwise the listed ids are picked (an unknown id is a one-line error)."""
    from dvoc_bench.scenes import build_sources

    picks: list[str] | None = [s.task] if s.task else list(s.tasks)
    if not s.task and picks == Settings().tasks:
        picks = None
    from dvoc_bench.scenes.dataset_source import DatasetChoice

    options = DatasetChoice(s.dataset, picks, s.scenes.max_side)
    fmt = s.dataset.format
    assert fmt is not None
    sources = build_sources({fmt: options}, names=[fmt])
    return SceneRegistry(scenes_dir, sources=sources, max_side=s.scenes.max_side, absent=s.absent.variant)


def _check_budget(models: Sequence[ModelConfig], methods: Sequence[str]) -> None:
    """``run.max_cost_usd`` needs an upper bound for every trial: a price for every model that is called
    and a declared ``max_calls`` for every method that calls one."""
    from dvoc_bench.models.pricing import price_of

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
    raw = {k: v for k, v in m.declared.items() if k not in ("limits", "timeout_s", "description", "pricing")}
    blob = json.dumps({"raw": raw, "frame": m.coord_frame}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:8]


def _warn_unused_knobs(s: Settings, methods: Sequence[str]) -> None:
    """One warning line per swept knob that no swept method uses (its values would change nothing)."""
    used = set().union(*(method_info(m).knobs for m in methods))
    default = Settings()
    for knob, key in (("alpha", "alphas"), ("overlay", "overlays"), ("predict", "predict_modes"),
                      ("protocol", "protocols")):  # fmt: skip
        if knob not in used and getattr(s, key) != getattr(default, key):
            log.warning("%s=%s has no effect: no swept method uses it (methods: %s)",
                        key, getattr(s, key), ", ".join(methods))  # fmt: skip
    if "detector" not in used and (s.detector or {}).get("backend", "oracle") != "oracle":
        log.warning("detector=%s has no effect: no swept method uses a detector (methods: %s)",
                    (s.detector or {}).get("backend"), ", ".join(methods))  # fmt: skip
