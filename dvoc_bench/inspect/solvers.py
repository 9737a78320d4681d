"""Inspect solvers: the project's methods, run by the project's own code against Inspect's model.

Each solver finds the sample's trial in the plan of the sample's overrides with its method, its model
config and its knobs (:mod:`dvoc_bench.inspect.trials`), runs it, and leaves in the sample's metadata
(``dvoc``) the trial record (final point, every rule's verdict, calls, tokens) and its steps (each call's
point, answer and the sha256 of the frame it sent); the frames themselves are the images of Inspect's model
events. The output's completion is the final point, ``x,y`` in screenshot pixels (empty without one).

``model_config`` names the project's model config (``conf/model/<name>.yaml``) whose frame, prompt style and
tools the answers are read with; by default the name after ``dvoc/`` of the Inspect model
(``--model dvoc/sim-ideal``). A model of another provider needs it (``-S model_config=qwen2.5-vl-7b``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from inspect_ai.model import get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import span

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.inspect.trials import solver_overrides, solver_run

METADATA = "dvoc"
"""The sample metadata key that holds the trial record and its steps."""


SWEPT = ("alphas", "overlays", "protocols", "predict_modes")
"""The swept lists among the knobs (a solver gives one value: a list of one)."""


def knob_overrides(**knobs: Any) -> list[str]:
    """Hydra overrides of a solver's knob arguments (``None`` leaves the config's value)."""
    names = {
        "alpha": "alphas",
        "overlay": "overlays",
        "protocol": "protocols",
        "predict": "predict_modes",
        "epsilon": "loop.epsilon",
        "max_iterations": "loop.max_iterations",
        "max_attempts": "oneshot.max_attempts",
        "detector": "detector",
    }
    out = []
    for k, v in knobs.items():
        if v is None:
            continue
        key = names[k]
        out.append(f"{key}=[{v}]" if key in SWEPT else f"{key}={v}")
    return out


def config_name(model_config: str | None) -> str:
    """The model config a solver reads answers with: given, or the ``dvoc/<name>`` Inspect model's name."""
    if model_config:
        return model_config
    name = str(get_model())
    if name.startswith("dvoc/"):
        return name.split("/", 1)[1]
    raise ConfigError(
        f"model_config: the Inspect model {name} is not a dvoc/<profile>; name the project's model config "
        "whose frame its answers are in (-S model_config=<conf/model name>)"
    )


def method_solver(method: str, model_config: str | None, extra: Sequence[str], **knobs: Any) -> Solver:
    """A solver running ``method`` with ``knobs`` (see :func:`knob_overrides`) and extra overrides."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        overrides = solver_overrides(
            meta["overrides"], method, config_name(model_config), [*knob_overrides(**knobs), *extra]
        )
        run = solver_run(overrides)
        spec = run.spec_for(meta["task"], meta.get("start_index"), int(meta.get("rep") or 0))
        async with span(f"dvoc_bench {method}"):
            record, steps = await run.run(spec)
        state.metadata[METADATA] = {"trial": record, "steps": steps}
        point = record.get("final_point")
        state.output.completion = "" if point is None else f"{point[0]:.2f},{point[1]:.2f}"
        state.completed = True
        return state

    return solve


@solver
def dvoc(
    model_config: str | None = None,
    alpha: str | None = None,
    overlay: str | None = None,
    protocol: str | None = None,
    predict: str | None = None,
    epsilon: float | None = None,
    max_iterations: int | None = None,
    overrides: str = "",
) -> Solver:
    """DVOC: the crosshair-and-offset loop (``alpha`` decay|constant|…, ``overlay`` full|…, ``protocol``
    v1|paper)."""
    return method_solver(
        "dvoc",
        model_config,
        overrides.split(),
        alpha=alpha,
        overlay=overlay,
        protocol=protocol,
        predict=predict,
        epsilon=epsilon,
        max_iterations=max_iterations,
    )


@solver
def oneshot(
    model_config: str | None = None,
    protocol: str | None = None,
    max_attempts: int | None = None,
    overrides: str = "",
) -> Solver:
    """One-shot: ask for the point, up to ``max_attempts`` times."""
    return method_solver(
        "oneshot", model_config, overrides.split(), protocol=protocol, max_attempts=max_attempts
    )


@solver
def som(model_config: str | None = None, detector: str | None = None, overrides: str = "") -> Solver:
    """Set-of-Mark: numbered tags on the detector's boxes, the model picks one, the click is its centre."""
    return method_solver("som", model_config, overrides.split(), detector=detector)


@solver
def zoom(model_config: str | None = None, overrides: str = "") -> Solver:
    """Iterative zoom: ask on the whole screen, crop around the answer, ask again."""
    return method_solver("zoom", model_config, overrides.split())
