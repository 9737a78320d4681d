"""Inspect tasks: the inputs of a dvoc-bench sweep as Inspect samples.

Each task composes the project's config from its arguments (the same Hydra overrides ``python -m dvoc_bench``
takes), plans it once with a reference method that uses every start point (``dvoc``), and makes one sample
per input: scene, start point, repeat. A sample carries the screenshot (a data URL), the instruction, the
truth box (``target``: ``x0,y0,x1,y1`` in screenshot pixels) and in its metadata what the solvers need to
find the same trial in their own plan (:data:`dvoc_bench.inspect.trials.SAMPLE_KEYS`).

The default solver is ``dvoc``; ``--solver dvoc_bench/oneshot`` (or ``som``, ``zoom``) changes the method.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample

from dvoc_bench.draw.render import encode_png
from dvoc_bench.inspect.scorers import SCORERS
from dvoc_bench.inspect.solvers import dvoc
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import plan


def _listed(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v) for v in value]


def sweep_overrides(
    tasks: str | Sequence[str] | None = None,
    starts: str | None = None,
    repeats: int | None = None,
    seed: int | None = None,
    overrides: str | Sequence[str] | None = None,
    base: Sequence[str] = (),
) -> list[str]:
    """The Hydra overrides of a task's arguments (``overrides`` is a list, or one string split on spaces)."""
    out = list(base)
    names = _listed(tasks)
    if names:
        out.append(f"tasks=[{','.join(names)}]")
    if starts is not None:
        out.append(f"starts={starts}")
    if repeats is not None:
        out.append(f"repeats={int(repeats)}")
    if seed is not None:
        out.append(f"seed={int(seed)}")
    extra = overrides.split() if isinstance(overrides, str) else list(overrides or [])
    return out + extra


def samples(overrides: list[str]) -> list[Sample]:
    """One sample per input of the sweep ``overrides`` describe (planned with ``dvoc`` and the simulator
    ``sim-ideal``, which need no key: the solver plans again with its own method and model config)."""
    setup = quick_setup([*overrides, "methods=[dvoc]", "models=[sim-ideal]"])
    out: list[Sample] = []
    images: dict[str, str] = {}
    for spec in plan(setup):
        snap = setup.registry.snapshot(spec.task)
        if spec.task not in images:
            images[spec.task] = "data:image/png;base64," + base64.b64encode(encode_png(snap.image)).decode()
        box = snap.target_box
        meta: dict[str, Any] = {
            "overrides": overrides,
            "task": spec.task,
            "start_index": spec.start_index,
            "rep": spec.rep,
            "start": spec.start,
            "scene_kind": setup.registry.kind(spec.task),
            "width": snap.size.width,
            "height": snap.size.height,
        }
        out.append(
            Sample(
                id=f"{spec.task}/s{spec.start_index or 0}/r{spec.rep}",
                input=[_user(snap.instruction or "", images[spec.task])],
                target=f"{box.x0},{box.y0},{box.x1},{box.y1}",
                metadata=meta,
            )
        )
    setup.registry.close()
    return out


def _user(instruction: str, image: str) -> Any:
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    return ChatMessageUser(content=[ContentText(text=instruction), ContentImage(image=image)])


def _task(overrides: list[str], name: str) -> Task:
    return Task(
        dataset=MemoryDataset(samples(overrides), name=name),
        solver=dvoc(),
        scorer=[s() for s in SCORERS],
    )


@task
def synthetic(
    tasks: str = "S1,S2,S3,S4,S5,S6",
    starts: str = "auto",
    repeats: int = 1,
    seed: int = 0,
    overrides: str = "",
) -> Task:
    """The synthetic scenes (S1-S6 by default) at the paper's start points."""
    return _task(sweep_overrides(tasks, starts, repeats, seed, overrides), "dvoc_bench/synthetic")


@task
def web(
    tasks: str = "W1,W2,W3,W4,W5", starts: str = "auto", repeats: int = 1, seed: int = 0, overrides: str = ""
) -> Task:
    """The web scenes, rendered in the system Chromium (loopback only)."""
    return _task(sweep_overrides(tasks, starts, repeats, seed, overrides), "dvoc_bench/web")


@task
def dataset(
    dataset: str,
    root: str,
    tasks: str = "",
    starts: str = "auto",
    repeats: int = 1,
    seed: int = 0,
    overrides: str = "",
) -> Task:
    """A standard dataset (``dataset=screenspot|screenspot_v2|screenspot_pro|manifest|cuactspot|
    precision_cua``) read from ``root`` (its samples as tasks; ``tasks`` picks some by id)."""
    base = [f"dataset={dataset}", f"dataset.root={root}"]
    picked = f"[{','.join(_listed(tasks))}]" if tasks else None
    ov = sweep_overrides(None, starts, repeats, seed, overrides, base)
    if picked:
        ov.append(f"tasks={picked}")
    return _task(ov, f"dvoc_bench/dataset/{dataset}")


@task
def real_screens(
    set: str = "cuactspot", root: str = "", tasks: str = "", seed: int = 0, overrides: str = ""
) -> Task:
    """A real-screen set with truth (``cuactspot`` or ``precision_cua``) read from ``root``."""
    return dataset(set, root, tasks, "auto", 1, seed, overrides)
