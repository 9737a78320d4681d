"""From a validated config to the list of TrialSpecs (the cartesian product of the knob lists)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.core.records import SceneKind, TrialSpec
from dvoc_bench.methods.registry import method_info
from dvoc_bench.models.config import ModelConfig
from dvoc_bench.protocol.protocols import get_protocol
from dvoc_bench.runner.setup import SweepSetup

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


def trial_key(fields: Mapping[str, object]) -> str:
    """Hash of every outcome-relevant field (20 hex digits)."""
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


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
) -> list[str]:
    """The assumption markers of a simulated profile's trial (none for real models): the registered knobs
    of :mod:`dvoc_bench.core.assumptions`, with zoom crops and the kind of screen."""
    if model.kind != "simulator":
        return []
    from dvoc_bench.models.simulator.profile import assumed_knobs

    sim = model.sim
    extra = {"crops": "zoom" if crops else "none", "scene": scene_kind, "label_placement": labels}
    return assumed_knobs(sim, protocol=protocol, overlay=overlay, default_style=default_style, extra=extra)


NONE_MODEL = ModelConfig(name="none", kind="none", model_id="none", provider="none", coord_frame="pixel")
"""Stand-in model of the non-visual baselines."""


def build_plan(
    setup: SweepSetup,
    scenes: dict[str, tuple[str, Size]],
    kinds: Mapping[str, SceneKind] | None = None,
) -> list[TrialSpec]:
    """Every trial of the sweep, deduplicated by key, in a stable order.

    ``scenes`` maps task id -> (scene content hash, size). Each method's registry entry
    (:mod:`dvoc_bench.methods.registry`) says which knobs it uses; the others are recorded as ``"-"`` so such
    trials are planned once (a method that calls no model also ignores the model and the protocol). Only
    methods that ``uses_start`` get the start point; the others keep the start index as a plain repeat
    counter (the authors did the same) — except on dataset samples, where the sample is the unit: a method
    without a start point runs once per sample and repeat (``repeats=N`` asks for more identical requests).
    Methods that use the ``detector`` knob carry it (backend + settings digest) in their key, so a resume with
    another detector runs them again. The protocol object
    decides the frame answers are read in (``paper`` reads every answer as pixels, the paper's reading).
    ``kinds`` maps task id -> scene kind (for the simulated profiles' assumption markers; default
    ``synthetic``).
    """
    s, swept, loop = setup.settings, setup.swept, setup.settings.loop
    det = setup.detector
    detector = f"{det.backend}:{det.digest()}" if det is not None else NA
    default_style = s.overlay_style == type(s.overlay_style)()
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
            if not info.uses_start and (kinds or {}).get(task) == "dataset":
                points = points[:1]  # a sample is the unit: a method without a start runs once per repeat
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
                if "zoom" in uses:  # only zoom trials carry it: the keys of the others stay as they were
                    fields["zoom"] = s.zoom.label()
                labels = _label_placement(s.overlay.label_placement, protocol, overlay)
                if labels != "corner":  # in the key only then: the keys of the authors' placement stay
                    fields["label_placement"] = labels
                key = trial_key({**fields, "sweep_seed": s.seed})
                crops = "zoom" in uses  # crops: no simulated profile was fitted on them
                scene_kind = (kinds or {}).get(task, "synthetic")
                drawn = NA if overlay in (NA, "none") else labels
                assumed = _assumptions(model, protocol, overlay, default_style, crops, scene_kind, drawn)
                specs.setdefault(
                    key,
                    TrialSpec(
                        trial_key=key,
                        experiment=setup.experiment,
                        seed=_seed_for(key),
                        simulated_assumptions=assumed,
                        **fields,
                    ),
                )
    return list(specs.values())
