"""From a validated config to the list of TrialSpecs (the cartesian product of the knob lists)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Collection, Mapping
from typing import Any, get_args

import numpy as np
from pydantic import BaseModel

from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.core.records import SceneKind, TrialSpec
from dvoc_bench.methods.registry import method_info
from dvoc_bench.models.config import ModelConfig
from dvoc_bench.protocol.protocols import get_protocol
from dvoc_bench.runner.setup import SweepSetup
from dvoc_bench.scenes.desktop.gtk_source import episode_label, is_desktop_episode
from dvoc_bench.scenes.web.devices import device_label
from dvoc_bench.scenes.wording import wording_variation

PAPER_STARTS: tuple[Point, ...] = (
    Point(194, 92),
    Point(361, 205),
    Point(308, 151),
    Point(184, 426),
    Point(638, 124),
)
"""The authors' five start points (``random.Random(42)`` ints in [80,720]x[80,520]); also on web pages."""

NA = "-"
"""Value of a knob that does not apply to a method (so the trial is planned once, not per value)."""


_SCENE = (
    "what is rendered, or which samples: a trial keys its task id and its rendered scene's content hash "
    "(scene_hash), so a setting that changes the screen moves the key through it"
)
_WAIT = "how long to wait for a page or a program: a timeout fails the trial, it never changes an answer"

UNKEYED_SETTINGS: dict[str, str] = {
    "run.max_in_flight": "how many trials run at once: each trial's requests and seeds are its own",
    "run.quiet": "terminal output only: the trials are the same",
    "smoke": "a smaller sweep (two tasks, two starts, one repeat): which trials run, each keyed as usual",
    "run.render_workers": "where frames are drawn (a pool or inline): the same pixels either way",
    "run.max_reply_chars": (
        "a bound against runaway replies, not a knob of the answer: its default, 64,000, is 60 times the "
        "longest reply in the authors' records (1,068 characters of text, 65 characters of tool calls' "
        "arguments), so it cuts none; a bound set below an answer cuts what the method reads, which the key "
        "does not see: every cut is recorded in its step (reply_truncated: the part, its full length and "
        "sha256); free on resume like every run.* knob"
    ),
    "run.plan_only": "prints the plan and runs no trial",
    "run.plan_from": "which plan file a shard or resume reads: the specs in it carry their own keys",
    "run.frames": "which images are stored in the run directory, not what a model is sent",
    "run.max_cost_usd": "the budget may leave a trial unrun (skipped); it never changes one that ran",
    "run.shard": "which part of the plan this process runs: the keys are the whole plan's",
    "scheduler": "when calls are made (rate gates, quotas): a trial's answer is the reply it got",
    "retry": "how often a failed call is retried before a trial is an error: the answer is the reply it got",
    "resume": "which recorded trials a resume runs again, not what they are",
    "cache": (
        "a cached reply is the reply the identical request got (its hash covers the model, prompt, image and "
        "parameters)"
    ),
    "probe": "the frame probe's own knobs: it runs no sweep",
    "paths.models": (
        "which folder model files are read from: the model's name and its config (model, model_config) are "
        "keyed"
    ),
    "paths.scenes": _SCENE,
    "scenes.max_side": _SCENE,
    "web.chromium": _SCENE,
    "web.task_files": _SCENE,
    "web.custom": _SCENE,
    "web.allow_origins": _SCENE,
    "web.timeout_s": _WAIT,
    "desktop.size": _SCENE,
    "desktop.custom": _SCENE,
    "desktop.app": _SCENE,
    "desktop.app_files": _SCENE,
    "desktop.timeout_s": _WAIT,
    "dataset": _SCENE,
    "episode.plan": (
        "written into every episode trial's episode_knobs, which are keyed (on episode trials only)"
    ),
}
"""Settings (a dotted key, or a block's prefix) that cannot change a trial, each with its reason. Every other
leaf of the settings schema reaches the trial's spec and so its key (``tests/test_trial_key.py`` walks the
schema: a new setting fails it until it is keyed or listed here)."""


def unkeyed_reason(setting: str) -> str | None:
    """Why ``setting`` (a dotted key) is not part of any trial key, or ``None`` when it is keyed."""
    parts = setting.split(".")
    for n in range(len(parts), 0, -1):
        if (reason := UNKEYED_SETTINGS.get(".".join(parts[:n]))) is not None:
            return reason
    return None


def changed(block: BaseModel | Mapping[str, Any], defaults: BaseModel | None = None) -> str:
    """A settings block as the ``name=value`` pairs that differ from its defaults (every pair of a plain
    mapping), sorted, values as compact JSON; ``-`` when none (the spec fields' default)."""
    if isinstance(block, BaseModel):
        now = block.model_dump(mode="json")
        base = (defaults or type(block)()).model_dump(mode="json")
        pairs = {k: v for k, v in now.items() if base.get(k) != v}
    else:
        pairs = dict(block)
    if not pairs:
        return NA
    compact = {k: json.dumps(v, sort_keys=True, separators=(",", ":")) for k, v in pairs.items()}
    return ",".join(f"{k}={v}" for k, v in sorted(compact.items()))


def _seed_for(key: str) -> int:
    return int(hashlib.sha256(("seed:" + key).encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


PAPER_CANVAS = Size(800, 600)
"""The canvas the authors' start points were drawn for."""


def start_points(kind: str, n: int, size: Size, task: str, seed: int) -> list[Point | None]:
    """The start list for one scene: the paper's fixed points (``paper``), the same points scaled from
    800x600 to the image (``scaled``), the image centre (``centre``), ``[None]`` for ``oneshot`` (the
    start is the model's own one-shot answer, known only when the trial runs), or ``n`` uniform points
    (5 % margin)."""
    if kind == "paper":
        return list(PAPER_STARTS[:n])
    if kind == "scaled":
        sx, sy = size.width / PAPER_CANVAS.width, size.height / PAPER_CANVAS.height
        return [Point(round(p.x * sx, 1), round(p.y * sy, 1)) for p in PAPER_STARTS[:n]]
    if kind == "centre":
        return [size.centre]
    if kind == "oneshot":
        return [None]
    h = int(hashlib.sha256(f"starts:{seed}:{task}".encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(h)
    mx, my = 0.05 * size.width, 0.05 * size.height
    return [
        Point(
            float(round(rng.uniform(mx, size.width - 1 - mx))),
            float(round(rng.uniform(my, size.height - 1 - my))),
        )
        for _ in range(n)
    ]


def _label_placement(configured: str, protocol: str, overlay: str) -> str:
    """The placement of a trial's overlay labels: its protocol's (``paper``: the authors' corners), and
    ``corner`` when the trial draws no labels (no overlay knob, or overlay ``none``)."""
    if protocol == NA or overlay in (NA, "none"):
        return "corner"
    return get_protocol(protocol).label_placement(configured)


def _assumptions(
    model: ModelConfig,
    protocol: str,
    overlay: str,
    default_style: bool,
    crops: bool,
    scene_kind: SceneKind,
    labels: str = NA,
    points: str = NA,
    absent: str = "off",
) -> list[str]:
    """The assumption markers of a simulated profile's trial (none for real models): the registered knobs
    of :mod:`dvoc_bench.core.assumptions`, with zoom crops and the kind of screen."""
    if model.kind != "simulator":
        return []
    from dvoc_bench.models.simulator.profile import assumed_knobs

    sim = model.sim
    extra = {"crops": "zoom" if crops else "none", "scene": scene_kind, "label_placement": labels,
             "points": points, "absent": absent}  # fmt: skip
    return assumed_knobs(sim, protocol=protocol, overlay=overlay, default_style=default_style, extra=extra)


def _retry_rule(configured: str, protocol: str) -> str:
    """The ``oneshot.retry_rule`` a trial records and keys: the configured rule, or the default when the
    trial calls no model (``protocol`` is ``-``) or its protocol decides the rule whatever is configured
    (``paper``: the authors' ``hit_radius``), so such trials are planned once, under the keys they had."""
    from dvoc_bench.runner.settings import Oneshot

    default = str(Oneshot.model_fields["retry_rule"].default)
    if protocol == NA:
        return default
    rules = get_args(Oneshot.model_fields["retry_rule"].annotation)
    return default if len({get_protocol(protocol).oneshot_retry_rule(r) for r in rules}) == 1 else configured


NONE_MODEL = ModelConfig(name="none", kind="none", model_id="none", provider="none", coord_frame="pixel")
"""Stand-in model of the non-visual baselines."""


def variation_of(setup: SweepSetup, kind: str) -> str:
    """The ``variation`` field of a trial on a scene of ``kind``: the variation axes set off their defaults
    that reach that kind of screen (docs/variation.md), or ``-``."""
    s = setup.settings
    pairs: dict[str, Any] = {}
    if kind == "web":
        pairs |= s.web.variation()
    if kind == "desktop":
        pairs |= s.desktop.variation()
    if kind in ("synthetic", "web", "desktop"):
        pairs |= wording_variation(s.wording)
    return changed(pairs)


def build_plan(
    setup: SweepSetup,
    scenes: dict[str, tuple[str, Size]],
    kinds: Mapping[str, SceneKind] | None = None,
    drags: Collection[str] = (),
    unvaried: Mapping[str, tuple[str, Size]] | None = None,
) -> list[TrialSpec]:
    """Every trial of the sweep, deduplicated by key, in a stable order.

    ``scenes`` maps task id -> (scene content hash, size). Each method's registry entry
    (:mod:`dvoc_bench.methods.registry`) says which knobs it uses; the others are recorded as ``"-"`` so such
    trials are planned once (a method that calls no model also ignores the model and the protocol). Only
    methods that ``uses_start`` get the start point; the others keep the start index as a plain repeat
    counter (the authors did the same) — except on dataset samples, where the sample is the unit: a method
    without a start point runs once per sample and repeat (``repeats=N`` asks for more identical requests),
    and for a method declared ``per_input`` (Set-of-Mark), which runs once per task and repeat on every kind
    of screen (the start index of its one trial is 1, so its key is the one it had before).
    Methods that use the ``detector`` knob carry it (backend + settings digest) in their key, so a resume with
    another detector runs them again. The protocol object
    decides the frame answers are read in (``paper`` reads every answer as pixels, the paper's reading).
    ``kinds`` maps task id -> scene kind (for the simulated profiles' assumption markers; default
    ``synthetic``); ``drags``: the two-point tasks (a simulated profile's two-point answers are an
    assumption unless it was fitted on them). ``unvaried``: task id -> (scene hash, size) of the task
    without the variation axes (:func:`variation_of`); a varied trial takes the seed of that unvaried twin,
    whose start is planned on the twin's size (the same relative point as the varied trial's, in the
    unvaried screen's pixels), so a size-changing axis keeps the shared seed.
    """
    s, swept, loop = setup.settings, setup.swept, setup.settings.loop
    det = setup.detector
    detector = f"{det.backend}:{det.digest()}" if det is not None else NA
    default_style = s.overlay_style == type(s.overlay_style)()
    adaptive, sampling = changed(s.adaptive), changed(s.sampling)
    style, image = changed(s.overlay_style), changed(s.image)
    verify = {"web": s.web.verify_click, "desktop": s.desktop.verify_click}
    specs: dict[str, TrialSpec] = {}
    kind, n = swept.starts
    for method in swept.methods:
        info = method_info(method)
        uses = info.knobs
        combos = itertools.product(
            setup.models if info.calls_model else [NONE_MODEL],
            swept.tasks,
            swept.protocols if "protocol" in uses else [NA],
            swept.alphas if "alpha" in uses else [NA],
            swept.overlays if "overlay" in uses else [NA],
            swept.predict_modes if "predict" in uses else [NA],
        )
        for model, task, protocol, alpha, overlay, predict in combos:
            scene_hash, size = scenes[task]
            points = start_points(kind, n, size, task, s.seed)
            twin = (unvaried or {}).get(task)
            twin_points = start_points(kind, n, twin[1], task, s.seed) if twin is not None else points
            if not info.uses_start and (info.per_input or (kinds or {}).get(task) == "dataset"):
                points = points[:1]  # the input is the unit: the start would change nothing it sends
            for (si, p), rep in itertools.product(enumerate(points, start=1), range(swept.repeats)):
                fields: dict[str, Any] = dict(
                    model=model.name, model_id=model.model_id, api_base=model.api_base,
                    provider=model.provider, simulated=model.simulated,
                    coord_frame=model.coord_frame if protocol == NA
                    else get_protocol(protocol).answer_frame(model.coord_frame),
                    task=task, scene_hash=scene_hash, method=method, protocol=protocol, alpha=alpha,
                    overlay=overlay, predict=predict,
                    start=p.as_list() if info.uses_start and p is not None else None,
                    start_index=si, rep=rep, epsilon=loop.epsilon, conf_threshold=loop.threshold,
                    window=loop.window, max_iterations=loop.max_iterations,
                    max_attempts=s.oneshot.max_attempts, alpha_constant=loop.alpha_constant,
                    hit_radius_min=loop.hit_radius_min, detector=detector if "detector" in uses else NA,
                )  # fmt: skip
                if info.uses_start and p is None:  # starts=oneshot (in the key only then: old keys stay)
                    fields["start_from"] = "oneshot"
                if info.uses_start and task in drags and s.dvoc.drag_start != "source":  # drags, off default
                    fields["drag_start"] = s.dvoc.drag_start
                if "zoom" in uses:  # only zoom trials carry it: the keys of the others stay as they were
                    fields["zoom"] = s.zoom.label()
                labels = _label_placement(s.overlay.label_placement, protocol, overlay)
                if labels != "corner":  # in the key only then: the keys of the authors' placement stay
                    fields["label_placement"] = labels
                scene_kind = (kinds or {}).get(task, "synthetic")
                if scene_kind == "miniwob":  # an episode's knobs (in the key only on its trials)
                    fields["episode_knobs"] = s.episode.label()
                elif scene_kind == "desktop" and is_desktop_episode(setup.registry, task):
                    fields["episode_knobs"] = episode_label(s.episode)
                if scene_kind == "web" and s.web.device is not None:  # a phone (in the key only then)
                    fields["device"] = device_label(s.web.device, s.web.custom_device)
                # every setting that can change what a trial sends, how its answer is read or what its
                # record holds is a spec field; at its default it leaves the key as it was (TrialSpec.key)
                fields.update(
                    sweep_seed=s.seed,
                    adaptive=adaptive if alpha == "adaptive" else NA,
                    sampling=sampling if info.calls_model else NA,
                    overlay_style=style if "overlay" in uses else NA,
                    image=image if info.calls_model else NA,
                    retry_rule=_retry_rule(s.oneshot.retry_rule, protocol),
                    verify_click=verify.get(scene_kind, False),
                    model_config=setup.model_changes.get(model.name, NA) if info.calls_model else NA,
                    absent=s.absent.variant,  # the screen's variant; off: not in the key (TrialSpec.key)
                    offer_absent=s.absent.offered and info.calls_model,
                    variation=variation_of(setup, scene_kind),
                )
                spec = TrialSpec(trial_key="", experiment=setup.experiment, seed=0, **fields)
                key = spec.key()
                seed_key = key
                if spec.variation != NA and twin is not None and twin[0]:
                    # the seed of the unvaried twin, started on its own screen: the pair shares its randomness
                    q = twin_points[si - 1] if spec.start is not None else None
                    start = q.as_list() if q is not None else None
                    base = dataclasses.replace(spec, variation=NA, scene_hash=twin[0], start=start)
                    seed_key = base.key()
                crops = "zoom" in uses  # crops: no simulated profile was fitted on them
                drawn = NA if overlay in (NA, "none") else labels
                two = "two" if task in drags else NA
                assumed = _assumptions(
                    model, protocol, overlay, default_style, crops, scene_kind, drawn, two, s.absent.variant
                )
                specs.setdefault(
                    key,
                    dataclasses.replace(
                        spec, trial_key=key, seed=_seed_for(seed_key), simulated_assumptions=assumed
                    ),
                )
    return list(specs.values())
