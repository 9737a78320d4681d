"""From a validated config to the list of TrialSpecs (the cartesian product of the knob lists)."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dvoc_bench.config import ModelConfig
from dvoc_bench.geometry import Point, Size
from dvoc_bench.methods import MODEL_FREE
from dvoc_bench.records import TrialSpec

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


@dataclass(frozen=True)
class Knobs:
    """The swept lists and the fixed loop settings."""

    tasks: Sequence[str]
    methods: Sequence[str]
    protocols: Sequence[str]
    alphas: Sequence[str]
    overlays: Sequence[str]
    predict_modes: Sequence[str]
    starts: tuple[str, int]
    repeats: int
    seed: int
    epsilon: float = 30.0
    threshold: float = 0.5
    window: int = 2
    max_iterations: int = 15
    max_attempts: int = 5
    alpha_constant: float = 0.5
    hit_radius_min: float = 30.0


def trial_key(fields: dict) -> str:
    """Hash of every outcome-relevant field (20 hex digits)."""
    blob = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _seed_for(key: str) -> int:
    return int(hashlib.sha256(("seed:" + key).encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


def start_points(kind: str, n: int, size: Size, task: str, seed: int) -> list[Point]:
    """The start list for one scene: the paper's fixed points, or ``n`` uniform points (5 % margin)."""
    if kind == "paper":
        return list(PAPER_STARTS[:n])
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


NONE_MODEL = ModelConfig(name="none", kind="none", model_id="none", provider="none", coord_frame="pixel")
"""Stand-in model of the non-visual baselines."""


def build_plan(
    experiment: str,
    knobs: Knobs,
    models: Sequence[ModelConfig],
    scenes: dict[str, tuple[str, Size]],
    detector: str = NA,
) -> list[TrialSpec]:
    """Every trial of the sweep, deduplicated by key, in a stable order.

    ``scenes`` maps task id -> (scene content hash, size). Knobs that do not apply to a method are
    recorded as ``"-"`` (one-shot ignores alpha/overlay/predict; the baselines also ignore the model and
    the protocol), so such trials are planned once. One-shot and the baselines keep the start index as a
    plain repeat counter (the authors did the same); only DVOC uses the point. ``som_dvoc`` sweeps the DVOC
    knobs but starts from the SoM pick; the SoM methods carry ``detector`` (backend + settings digest) in
    their key, so a resume with another detector runs them again. Under ``protocol=paper``
    every answer is read as pixels, whatever the model config declares (the paper's reading).
    """
    specs: dict[str, TrialSpec] = {}
    kind, n = knobs.starts
    for method in knobs.methods:
        free, dvoc = method in MODEL_FREE, method == "dvoc"
        loop = method in ("dvoc", "som_dvoc")  # methods that run the DVOC loop
        som = method in ("som", "som_dvoc")
        combos = itertools.product(
            [NONE_MODEL] if free else models,
            knobs.tasks,
            [NA] if free else knobs.protocols,
            knobs.alphas if loop else [NA],
            knobs.overlays if loop else [NA],
            knobs.predict_modes if loop else [NA],
        )
        for model, task, protocol, alpha, overlay, predict in combos:
            scene_hash, size = scenes[task]
            points = start_points(kind, n, size, task, knobs.seed)
            for (si, p), rep in itertools.product(enumerate(points, start=1), range(knobs.repeats)):
                fields = dict(
                    model=model.name, model_id=model.model_id, api_base=model.api_base,
                    provider=model.provider, simulated=model.simulated,
                    coord_frame="pixel" if protocol == "paper" else model.coord_frame,
                    task=task, scene_hash=scene_hash, method=method, protocol=protocol, alpha=alpha,
                    overlay=overlay, predict=predict, start=p.as_list() if dvoc else None,
                    start_index=si, rep=rep, epsilon=knobs.epsilon, conf_threshold=knobs.threshold,
                    window=knobs.window, max_iterations=knobs.max_iterations,
                    max_attempts=knobs.max_attempts, alpha_constant=knobs.alpha_constant,
                    hit_radius_min=knobs.hit_radius_min, detector=detector if som else NA,
                )  # fmt: skip
                key = trial_key({**fields, "sweep_seed": knobs.seed})
                specs.setdefault(
                    key, TrialSpec(key=key, experiment=experiment, seed=_seed_for(key), **fields)
                )
    return list(specs.values())


def spec_fields() -> list[str]:
    return [f.name for f in dataclasses.fields(TrialSpec)]
