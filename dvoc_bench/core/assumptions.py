"""What a simulated result rests on: the knobs a simulator profile was fitted for, and the marker every
other value carries, in one place for the plan, the summary, the report and the plots.

A calibrated profile declares ``sim.fitted_for``: per knob, the values its parameters were fitted for
(``protocols: [paper]``, ``overlays: [full]``, ``overlay_style: default``, and any registered knob under
``knobs: {name: [values]}``). A trial of that profile under any other value of a *registered* knob rests on
an assumption of the simulator and carries the knob's label: the record's ``simulated_assumptions``, the
summary row, the report's tables and the figures' titles say e.g. ``[SIMULATED; overlay effect assumed]``.

**Adding a knob** (e.g. zoom crops, or a dataset): call :func:`register_assumed_knob` once, at
import of the module that owns the knob, e.g.::

    register_assumed_knob("zoom", "zoom effect assumed", fitted_key="zooms", default_fitted=("none",))

then pass the trial's value where the plan computes a trial's assumptions
(:func:`dvoc_bench.models.simulator.assumed_knobs` ``extra={"zoom": value}``). A profile that was fitted
on zoomed trials lists them in ``fitted_for.knobs: {zooms: [none, 2x]}``; every other profile marks them.
Nothing else changes: the summary, report and plots read the labels from the records.

This module imports nothing of the package (the analysis layer may use it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ANY",
    "AssumedKnob",
    "assumed_labels",
    "labels_of",
    "marker",
    "register_assumed_knob",
    "registered_knobs",
]

ANY = "any"
"""A fitted value list containing this covers every value of the knob."""


@dataclass(frozen=True)
class AssumedKnob:
    """A knob whose effect a simulator profile may or may not have been fitted for."""

    name: str
    """The trial's knob (key of the ``values`` passed to :func:`assumed_labels`)."""
    label: str
    """The marker text, e.g. ``overlay effect assumed``."""
    fitted_key: str
    """Key of ``sim.fitted_for`` (or of ``sim.fitted_for.knobs``) listing the fitted values."""
    default_fitted: tuple[str, ...] = ()
    """Values taken as fitted when the profile's ``fitted_for`` does not name the key."""


_KNOBS: dict[str, AssumedKnob] = {}


def register_assumed_knob(
    name: str, label: str, *, fitted_key: str, default_fitted: Iterable[str] = ()
) -> AssumedKnob:
    """Declare a knob whose values outside a profile's ``fitted_for`` are marked ``label`` (idempotent for
    the same declaration; a different one under a registered name is an error)."""
    knob = AssumedKnob(name, label, fitted_key, tuple(default_fitted))
    old = _KNOBS.get(name)
    if old is not None and old != knob:
        raise ValueError(f"assumed knob {name!r} is already registered as {old}")
    _KNOBS[name] = knob
    return knob


def registered_knobs() -> tuple[AssumedKnob, ...]:
    """The registered knobs, in registration order."""
    return tuple(_KNOBS.values())


def _fitted(fitted_for: Mapping[str, Any], knob: AssumedKnob) -> tuple[str, ...]:
    extra = fitted_for.get("knobs") or {}
    v = fitted_for.get(knob.fitted_key, extra.get(knob.fitted_key) if isinstance(extra, Mapping) else None)
    if v is None:
        return knob.default_fitted
    return (str(v),) if isinstance(v, str) else tuple(str(x) for x in v)


def assumed_labels(fitted_for: Mapping[str, Any] | None, values: Mapping[str, str]) -> list[str]:
    """The labels of the registered knobs among ``values`` whose value the profile's ``fitted_for`` does not
    list (``-`` = the knob does not apply to the trial). Empty without ``fitted_for`` (a hand-set profile
    declares nothing)."""
    if not fitted_for:
        return []
    out = []
    for name, value in values.items():
        knob = _KNOBS.get(name)
        if knob is None:
            raise KeyError(f"{name!r} is not a registered assumed knob ({', '.join(_KNOBS)})")
        if value == "-":
            continue
        fitted = _fitted(fitted_for, knob)
        if ANY not in fitted and str(value) not in fitted:
            out.append(knob.label)
    return out


def labels_of(cell: object) -> list[str]:
    """The labels held by one record field or table cell: a list, or text joined with ``; `` (the loaders'
    column), or a JSON list; empty for nothing."""
    if cell is None or (isinstance(cell, float) and cell != cell):
        return []
    if isinstance(cell, (list, tuple)):
        return [str(x) for x in cell if str(x)]
    text = str(cell).strip()
    if text in ("", "[]", "<NA>", "nan"):
        return []
    if text.startswith("["):
        import json

        try:
            return [str(x) for x in json.loads(text)]
        except ValueError:
            pass
    return [x.strip() for x in text.split(";") if x.strip()]


def marker(simulated: bool, assumed: Iterable[object] = ()) -> str:
    """``SIMULATED`` with every assumption (sorted, each once), e.g. ``SIMULATED; overlay effect assumed``;
    empty for real results. ``assumed``: labels, or cells :func:`labels_of` reads."""
    if not simulated:
        return ""
    labels = sorted({a for c in assumed for a in labels_of(c)})
    return "SIMULATED" + "".join(f"; {a}" for a in labels)


register_assumed_knob("protocol", "frame request assumed", fitted_key="protocols", default_fitted=("paper",))
register_assumed_knob("overlay", "overlay effect assumed", fitted_key="overlays", default_fitted=("full",))
register_assumed_knob(
    "overlay_style", "overlay style assumed", fitted_key="overlay_style", default_fitted=("default",)
)
register_assumed_knob(
    "label_placement", "label placement assumed", fitted_key="label_placements", default_fitted=("corner",)
)
"""The overlay's labels away from the crosshair (``overlay.label_placement=away``): the profiles were fitted
on the authors' frames, whose labels are in fixed corners."""
register_assumed_knob("crops", "crops/zoom assumed", fitted_key="crops", default_fitted=("none",))
"""Zoom methods send crops of the screen; no profile was fitted on crops."""
register_assumed_knob("scene", "screen kind assumed", fitted_key="scene_kinds", default_fitted=("synthetic",))
"""The kind of screen (:data:`dvoc_bench.core.records.SceneKind`): the profiles were fitted on the authors'
drawn
800x600 scenes; web pages, desktop scenes and dataset screenshots rest on the simulator's assumptions."""
register_assumed_knob("points", "two-point answers assumed", fitted_key="points", default_fitted=("one",))
"""Two-point (drag) tasks: the profiles were fitted on one-point answers; a drag's one-call answer and each
end's grounding rest on the simulator's assumptions."""
register_assumed_knob("absent", "absent target assumed", fitted_key="absents", default_fitted=("off",))
"""An absent target (``absent.variant``, docs/absent.md): no record has one, so where a fitted profile aims
is an assumption (where the target was, or the target an ``ask_missing`` instruction replaced)."""
