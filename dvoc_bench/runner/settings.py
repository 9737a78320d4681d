"""Every knob of ``python -m dvoc_bench``, declared once: type, default, range or allowed values, and what
it means (the field docstrings). Hydra composes the config; :func:`load_settings` validates it inside the
job, and a bad value is one line ``<key>: <what>; allowed: ...`` (:mod:`dvoc_bench.core.declare`).

The defaults here are the defaults: :func:`register_defaults` hands them to Hydra's ConfigStore as the
``base`` config that ``conf/config.yaml`` starts from (and ``detector/base_<backend>`` for the detector
group), so no YAML file repeats them. Lists whose allowed values are only known at run time (models, tasks,
methods, protocols) are checked against their registries when the sweep is set up
(:func:`dvoc_bench.runner.setup.setup_from_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from dvoc_bench.core.control import AdaptiveConfig, LoopConfig
from dvoc_bench.core.control import AlphaSchedule as Alpha
from dvoc_bench.core.declare import Declared, NonNegInt, PosFloat, PosInt, validate
from dvoc_bench.core.geometry import FrameName
from dvoc_bench.draw.render import OverlayOptions, OverlayStyle
from dvoc_bench.models.options import CacheOptions, ImageOptions
from dvoc_bench.protocol.prompts import Overlay, Predict
from dvoc_bench.runner.scheduler import RetryPolicy
from dvoc_bench.runner.shard import Shard, parse_shard
from dvoc_bench.scenes.datasets import DatasetSettings
from dvoc_bench.scenes.desktop.settings import Desktop
from dvoc_bench.scenes.miniwob.settings import Episode
from dvoc_bench.scenes.web.settings import Web
from dvoc_bench.scenes.wording import Wording

STARTS = ("auto", "paper", "scaled", "centre", "oneshot")
"""Named start lists (besides ``random:N``)."""


class Oneshot(Declared):
    """The one-shot baseline."""

    max_attempts: PosInt = 5
    """Attempts per trial."""
    retry_rule: Literal["hit", "hit_radius", "within_eps"] = "hit"
    """Which rule tells the model its answer missed (``protocol=paper`` always uses ``hit_radius``: its
    trials record and key the default, whatever is set here)."""


class Zoom(Declared):
    """Iterative zoom (``methods=[zoom]``): ask on the whole screen, crop around the answer, ask again."""

    factor: float = Field(2.0, gt=1.0, le=16.0)
    """Each crop's sides are the previous crop's divided by this (aspect kept)."""
    rounds: NonNegInt = Field(2, le=8)
    """Crops after the whole-screen question (a trial makes ``rounds + 1`` calls)."""
    min_crop: PosInt = Field(256, ge=16)
    """Shortest side of a crop, screenshot pixels (a crop never shrinks below it, nor exceeds the
    screen)."""

    def label(self) -> str:
        """``factor/rounds/min_crop``, as recorded in a zoom trial's ``zoom`` field (part of its key)."""
        return f"{self.factor:g}/{self.rounds}/{self.min_crop}"


class Dvoc(Declared):
    """The DVOC loop on two-point (drag) tasks."""

    drag_start: Literal["source", "model"] = "source"
    """Where the loop of a drag's end starts: ``source`` (where the start's loop landed) or ``model`` (the
    model's own one-shot answer for the end, asked first). Part of the trial key of the methods that start
    from a point when not ``source``."""


class Absent(Declared):
    """Absent targets (docs/absent.md): the screen without its target, or an instruction naming an element
    the screen does not have, and a "not present" answer offered to the model."""

    variant: Literal["off", "remove", "ask_missing"] = "off"
    """``off``: the target is there (every key as before). ``remove``: the target is taken off the screen
    before the screenshot (synthetic scenes drawn without it; web pages with it hidden in the DOM; other
    sources fail their trials with the reason). ``ask_missing``: the instruction names an element the
    screen does not have, built by a rule and checked against the measured layout."""
    offer: bool | None = None
    """Offer the model a "not present" answer (the ``not_present`` tool, the family's own form,
    Set-of-Mark's ``none`` mark). ``None``: offered exactly when ``variant`` is not ``off``; set ``true`` on
    the present run of a comparison, so both halves are asked the same way."""

    @property
    def offered(self) -> bool:
        """Whether the requests offer a "not present" answer."""
        return self.offer if self.offer is not None else self.variant != "off"


class Run(Declared):
    """How the sweep runs (free to change on resume)."""

    max_in_flight: PosInt = 16
    """Trials in flight at once."""
    quiet: bool = False
    """No progress bar."""
    render_workers: NonNegInt | None = None
    """Threads drawing, encoding and storing frames off the event loop (``null``: one per core, none at
    ``max_in_flight`` 1; ``0``: inline)."""
    max_reply_chars: int = Field(64000, ge=100)
    """Characters kept of a reply's text and of each tool call's arguments (the full length and sha256
    are recorded; the cache stores the same)."""
    plan_only: bool = False
    """Print the plan per model (trials; upper-bound and expected calls; estimated cost; the wall time the
    provider quotas imply) and exit 0: no model is called, no key is needed, no trial is written."""
    plan_from: str | None = None
    """A previous run (or multirun) directory whose recorded calls per trial, tokens and cost per call the
    plan uses as its expectation (else the authors' records, else the upper bound; the plan says which)."""
    frames: Literal["auto", "all", "sent", "none"] = "auto"
    """Which shots (the images the harness drew for a model) are written to ``frames/``: ``all`` every
    shot, and each task's full-size screenshot when it was downscaled; ``sent`` what a model saw,
    downscaled as sent (``image.max_side``); ``none`` hashes only (``frame_sha`` is still recorded).
    ``auto``: ``all`` for the drawn scenes and web pages, ``sent`` for datasets."""
    max_cost_usd: float | None = Field(None, ge=0.0)
    """Budget of the run directory, USD (every call it recorded counts). No trial starts when the cost
    spent plus the upper bounds of the trials in flight and its own would pass it; those are written
    ``skipped`` with reason ``budget`` and a resume with a higher budget runs them. ``None``: no budget.
    With ``run.shard=I/N`` it is the whole sweep's budget: each shard gets ``1/N`` of it."""
    shard: str | None = None
    """``I/N``: run only the trials of shard ``I`` of ``N`` (a stable partition by trial key), into this
    run directory; ``python -m dvoc_bench.merge`` brings the shards together (docs/cli.md). Each shard's
    gates get ``1/N`` of every provider quota. ``None``: the whole sweep."""

    @field_validator("shard", mode="before")
    @classmethod
    def _shard(cls, v: object) -> str | None:
        shard = parse_shard(v)
        return None if shard is None else shard.label

    @property
    def shard_of_sweep(self) -> Shard | None:
        """``shard`` parsed; ``None`` for the whole sweep."""
        return parse_shard(self.shard)


class ProviderOverride(Declared):
    """Per-provider overrides of ``conf/provider/<name>.yaml``."""

    rpm: PosFloat | None = None
    """Requests per minute."""
    rpd: PosFloat | None = None
    """Requests per day."""
    max_concurrent: PosInt | None = None
    """Calls in flight at once."""
    timeout_s: PosFloat | None = None
    """Timeout of one call, seconds."""


class Scheduler(Declared):
    """Provider gates."""

    rate_split: PosInt = 1
    """Jobs sharing each provider's quota (a multirun of N jobs: set N; each gets rpm/N). With
    ``run.shard=I/N`` at least ``N`` (the shards of a sweep share its quota)."""
    providers: dict[str, ProviderOverride] = {}
    """Per-provider overrides: ``+scheduler.providers.<name>.rpm=30``."""


class Resume(Declared):
    """What a resumed run does again."""

    retry_errors: bool = False
    """Re-run ``status=error`` trials when resuming (``skipped`` ones always re-run)."""
    allow_new_trials: bool = False
    """Let a resume add trials to the run on purpose (more models, tasks, methods, knob values or
    repeats); without it such a resume is refused. Fewer (a subset) is always allowed."""


class Scenes(Declared):
    """Limits on the scenes a sweep may render."""

    max_side: PosInt = 8192
    """Largest scene canvas side, px; a bigger scene is refused before it is drawn."""


class Paths(Declared):
    """Where scenes and model configs are read from."""

    scenes: str | None = None
    """Default: the repository's ``scenes/``."""
    models: str | None = None
    """Default: ``conf/model/``."""


class ProbeOptions(Declared):
    """The frame probe (``experiment=frame_probe``): which coordinate frame does each model answer in?"""

    repeats: PosInt = 2
    """Calls per scene (different seeds)."""
    margin_px: float = Field(10.0, ge=0.0)
    """Slack around the target box when deciding whether a reading fits."""
    min_share: float = Field(0.8, gt=0.0, le=1.0)
    """Share of the telling answers the verdict frame needs."""
    min_telling: PosInt = 3
    """Telling answers needed for any verdict."""
    seed: NonNegInt = 0
    """Base of the per-call seeds."""


class Settings(Declared):
    """The whole configuration of one sweep (everything ``conf/config.yaml`` composes)."""

    models: list[str] = ["sim-gemma-4-26b"]
    """Names of files in ``conf/model/``; several in one run interleave providers."""
    model: dict[str, Any] | None = None
    """``model=<name>``: the one-model shorthand (Hydra puts the chosen file's content here)."""
    tasks: list[str] = ["S1", "S2", "S3", "S4", "S5", "S6"]
    """Scene / task ids."""
    task: str | None = None
    """``task=<id>``: the one-task shorthand."""
    methods: list[str] = ["dvoc", "oneshot", "centre"]
    """Registered methods (``dvoc_bench/methods/registry.py``)."""
    alphas: list[Alpha] = ["decay"]
    """Alpha schedules of DVOC."""
    overlays: list[Overlay] = ["full"]
    """What DVOC draws on its frames."""
    predict_modes: list[Predict] = ["relative"]
    """Whether DVOC asks for an offset or an absolute point."""
    protocols: list[str] = ["v1"]
    """``v1`` (corrected) and/or ``paper`` (the authors' semantics)."""
    repeats: PosInt = 1
    """Repeats per start point."""
    starts: str = "auto"
    """``paper`` (the authors' five points, absolute pixels for 800x600), ``scaled`` (the same points
    scaled to each image), ``centre`` (the image centre), ``oneshot`` (DVOC refines the model's own
    one-shot answer), or ``random:N``. ``auto``: ``paper`` on the paper's scenes, ``scaled`` on datasets."""
    seed: int = Field(0, ge=0)
    """The sweep seed."""
    smoke: bool = False
    """A reduced sweep for CI: two tasks, two start points, one repeat."""
    declare_frame: FrameName | None = None
    """Declare every model's answers in this frame (``pixel`` reproduces the paper's reading)."""
    loop: LoopConfig = LoopConfig()
    """The DVOC stop policy."""
    adaptive: AdaptiveConfig = AdaptiveConfig()
    """Knobs of the ``adaptive`` alpha schedule."""
    oneshot: Oneshot = Oneshot()
    """The one-shot baseline."""
    zoom: Zoom = Zoom()
    """Iterative zoom."""
    dvoc: Dvoc = Dvoc()
    """The DVOC loop on two-point (drag) tasks (``dvoc.drag_start``)."""
    absent: Absent = Absent()
    """Absent targets: ``absent.variant=off|remove|ask_missing``, ``absent.offer`` (docs/absent.md)."""
    overlay_style: OverlayStyle = OverlayStyle()
    """Colours and sizes of the overlay."""
    overlay: OverlayOptions = OverlayOptions()
    """Where the overlay's labels go (``overlay.label_placement=corner|away``; part of the trial key)."""
    sampling: dict[str, Any] = {}
    """Extra request parameters (temperature, max_tokens, ...)."""
    cache: CacheOptions = CacheOptions(enabled=True)
    """Response cache of real models (never the simulator)."""
    image: ImageOptions = ImageOptions()
    """Input limits of every model (a model config's own ``image:`` wins); the harness resizes to them."""
    scenes: Scenes = Scenes()
    """Limits on the scenes."""
    paths: Paths = Paths()
    """Where scenes and model configs are read from."""
    run: Run = Run()
    """How the sweep runs."""
    scheduler: Scheduler = Scheduler()
    """Provider gates."""
    retry: RetryPolicy = RetryPolicy()
    """Call-level retries."""
    resume: Resume = Resume()
    """What a resumed run does again."""
    web: Web = Web()
    """Web scenes and bring-your-own pages."""
    desktop: Desktop = Desktop()
    """Desktop scenes and bring-your-own Tk apps."""
    wording: Wording = "given"
    """How the task is asked: ``given`` (the scene file's words), or ``paraphrase``, ``relational``,
    ``visual``, made by rules from the measured layout and checked to fit the target alone (a scene without
    one: its trials are skipped); docs/variation.md."""
    episode: Episode = Episode()
    """MiniWoB++ episodes (tasks ``miniwob.<name>``): plan, screenshot scale, step and wall-clock caps."""
    dataset: DatasetSettings = DatasetSettings()
    """A standard dataset as the task source (``dataset=screenspot_pro dataset.root=DIR``)."""
    probe: ProbeOptions = ProbeOptions()
    """The frame probe's options (``experiment=frame_probe``; no sweep runs)."""
    detector: dict[str, Any] | None = None
    """The Set-of-Mark detector (the ``detector`` config group; validated by
    :func:`dvoc_bench.detect.config.detector_config` when a SoM method runs)."""

    @field_validator("starts")
    @classmethod
    def _starts(cls, v: str) -> str:
        if v in STARTS or (v.startswith("random:") and v[7:].isdigit() and int(v[7:]) >= 1):
            return v
        raise ValueError(f"unknown value {v!r}; allowed: {', '.join(STARTS)}, random:N (N >= 1)")


def load_settings(cfg: Mapping[Any, Any]) -> Settings:
    """Validate a composed, resolved config (OmegaConf's container of it; the ``hydra`` node left out);
    raises ``ConfigError``."""
    return validate(Settings, {k: v for k, v in cfg.items() if k != "hydra"})


def defaults_of(model: type[BaseModel]) -> dict[str, Any]:
    """The declared defaults of a settings model as plain YAML-able values (no validation)."""
    out: dict[str, Any] = {}
    for name, f in model.model_fields.items():
        v = f.get_default(call_default_factory=True)
        if isinstance(v, BaseModel):
            v = v.model_dump(mode="json")
        elif isinstance(v, tuple):
            v = list(v)
        out[name] = v
    return out


def register_defaults() -> None:
    """Give Hydra the declared defaults: ``base`` (the whole config) and ``detector/base_<backend>``."""
    from hydra.core.config_store import ConfigStore

    from dvoc_bench.detect.config import DETECTOR_SETTINGS

    cs = ConfigStore.instance()
    base = Settings().model_dump(mode="json", exclude={"model", "detector"})
    cs.store(name="base", node=base)
    for backend, model in DETECTOR_SETTINGS.items():
        cs.store(group="detector", name=f"base_{backend}", node=defaults_of(model))
