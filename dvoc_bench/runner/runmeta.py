"""The run's fingerprint: what a run directory was made with, written before its first trial, and the
check that a resume does not mix runs (``run_meta.json``).

Everything that can change a trial's outcome is in the fingerprint: the swept lists (models with their
config digests, tasks, methods, alphas, overlays, predict modes, protocols, repeats) and every other
setting, as dotted keys. Free to change on resume: ``run.*``, ``scheduler.*``, ``retry.*``, ``cache.*``,
``resume.*``, ``paths.*``, ``probe.*`` (the frame probe runs no sweep) and the budget knobs. On resume:

- a changed setting is refused, naming every changed key (``seed: 0 -> 1``);
- fewer list items (a subset: fewer tasks, fewer repeats) is allowed and says what it skips;
- more list items is refused unless ``resume.allow_new_trials=true``: then the plan grows and says so.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.rundir import META

FREE = ("run", "scheduler", "retry", "cache", "resume", "paths", "budget", "probe")
"""Top-level settings a resume may change."""

LISTS = ("models", "tasks", "methods", "alphas", "overlays", "predict_modes", "protocols", "repeats")
"""Swept lists: a resume may drop items (a subset) or, on purpose, add them."""


@dataclass(frozen=True)
class Fingerprint:
    """The fingerprint of a sweep's settings."""

    lists: dict[str, list[Any]]
    """Swept lists (``repeats`` as the list of repeat indices)."""
    settings: dict[str, Any]
    """Every other outcome-relevant setting, as ``dotted.key -> value``."""
    scenes: dict[str, str] = field(default_factory=dict)
    """Task id -> content hash of the rendered scene (pixels, geometry, instruction): a scene edited after
    the run was made is refused on resume (its trials would mix two versions of it)."""

    @property
    def digest(self) -> str:
        """Hash of the whole fingerprint (the scenes too, when known)."""
        body: dict[str, Any] = {"lists": self.lists, "settings": self.settings}
        if self.scenes:
            body["scenes"] = self.scenes
        blob = json.dumps(body, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def to_json(self) -> dict[str, Any]:
        return {
            "digest": self.digest,
            "lists": self.lists,
            "settings": self.settings,
            "scenes": self.scenes,
        }


def _flatten(d: object, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict) and d:
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): d}


def fingerprint(settings: dict[str, Any], lists: dict[str, list[Any]]) -> Fingerprint:
    """The fingerprint of validated ``settings`` (``Settings.model_dump(mode="json")``) and the effective
    swept ``lists`` (after shorthands and ``smoke``)."""
    rest = {
        k: v for k, v in settings.items() if k not in FREE and k not in LISTS and k not in ("model", "task")
    }
    return Fingerprint({k: list(v) for k, v in lists.items()}, _flatten(rest))


@dataclass(frozen=True)
class ResumeCheck:
    """What a resume found."""

    new: Fingerprint
    """The fingerprint written (the union of lists when trials were added on purpose)."""
    skipped: dict[str, list[Any]]
    """List items of the run that this invocation leaves out (a subset resume)."""
    added: dict[str, list[Any]]
    """List items this invocation adds (only with ``resume.allow_new_trials``)."""


def _short(v: object) -> str:
    s = json.dumps(v, default=str)
    return s if len(s) <= 40 else s[:37] + "..."


def _defaults() -> dict[str, Any]:
    """The fingerprint settings of the default config (a setting newer than a run compares to these; a
    config group's key, e.g. ``detector.*``, has none here and is taken as its group's default)."""
    from dvoc_bench.runner.settings import Settings

    return fingerprint(Settings().model_dump(mode="json"), {}).settings


UNRENDERED = "unrendered"
"""The scene hash of a scene that failed to build (it may build on a resume)."""


def _check_scenes(old: dict[str, str], new: dict[str, str]) -> None:
    """A scene of the run whose content changed since: refused, naming it (runs made before scenes were
    fingerprinted have none to compare)."""
    both = sorted(set(old) & set(new))
    changed = [t for t in both if UNRENDERED not in (old[t], new[t]) and old[t] != new[t]]
    if changed:
        t = changed[0]
        more = f" (and {', '.join(changed[1:])})" if len(changed) > 1 else ""
        raise ConfigError(
            f"hydra.run.dir: scene {t} changed since this run was made (content {old[t]} -> {new[t]})"
            f"{more}; resume with the scenes as they were, or choose another hydra.run.dir"
        )


def check_resume(run_dir: Path, fp: Fingerprint, allow_new_trials: bool) -> ResumeCheck:
    """Compare ``fp`` with the run's ``run_meta.json`` (if any) and write the fingerprint. Raises
    :class:`ConfigError` (one line) when the settings differ, or when trials would be added without
    ``resume.allow_new_trials``. Call it holding the run directory's lock, before any trial runs."""
    path = Path(run_dir) / META
    old_raw: dict[str, Any] | None = None
    if path.is_file():
        try:
            old_raw = load_file(path)
        except (OSError, ValueError):  # not JSON, nested too deeply, too large: read as absent
            old_raw = None
        if not isinstance(old_raw, dict):
            old_raw = None
    skipped: dict[str, list[Any]] = {}
    added: dict[str, list[Any]] = {}
    new = fp
    if old_raw is not None:
        old = Fingerprint(
            dict(old_raw.get("lists", {})), dict(old_raw.get("settings", {})), dict(old_raw.get("scenes", {}))
        )
        _check_scenes(old.scenes, fp.scenes)
        keys = sorted(set(old.settings) | set(fp.settings))
        defaults = _defaults()
        changed = [
            k
            for k in keys
            if old.settings.get(k) != fp.settings.get(k)
            # a setting added after the run was made: the run behaved as its default does
            and not (k not in old.settings and (k not in defaults or defaults[k] == fp.settings.get(k)))
        ]
        if changed:
            shown = ", ".join(
                f"{k}: {_short(old.settings.get(k))} -> {_short(fp.settings.get(k))}" for k in changed[:6]
            )
            more = f" (and {len(changed) - 6} more)" if len(changed) > 6 else ""
            raise ConfigError(
                f"hydra.run.dir: this run was made with other settings ({shown}{more}); resume it with "
                "its own settings, or choose another hydra.run.dir"
            )
        merged: dict[str, list[Any]] = {}
        for k in sorted(set(old.lists) | set(fp.lists)):
            was, now = list(old.lists.get(k, [])), list(fp.lists.get(k, []))
            if extra := [v for v in now if v not in was]:
                added[k] = extra
            if gone := [v for v in was if v not in now]:
                skipped[k] = gone
            merged[k] = was + [v for v in now if v not in was]
        if added and not allow_new_trials:
            shown = "; ".join(f"{k} +{', '.join(map(str, v))}" for k, v in added.items())
            raise ConfigError(
                f"hydra.run.dir: this resume would add trials to the run ({shown}); to add them on purpose "
                "set resume.allow_new_trials=true, or choose another hydra.run.dir"
            )
        new = Fingerprint(merged, fp.settings, {**old.scenes, **fp.scenes})
    meta = {**new.to_json(), "written_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    tmp.replace(path)
    return ResumeCheck(new, skipped, added)
