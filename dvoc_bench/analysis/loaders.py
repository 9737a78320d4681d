"""Read our run directories into :class:`~dvoc_bench.analysis.schema.Runs`.

A path given to :func:`load_runs` may be a run directory (it holds ``trials.jsonl``), a ``trials.jsonl``
file, or any directory above run directories: a Hydra multirun sweep
(``runs/<exp>/multirun/<time>/<job num>/``, each job with ``.hydra/<time>/overrides.yaml``) or a whole
``runs/`` tree. Every run directory found is read; Hydra jobs get their job number and one
``override.<key>`` column per override, so the jobs of a sweep merge into one frame that can be grouped
by what was swept. A run whose ``trials.jsonl`` holds a trial key twice is refused (``ValueError``).

Parsed frames are cached as parquet in ``<run_dir>/.analysis_cache/`` (rebuilt when ``trials.jsonl`` or
``steps.jsonl`` change size or mtime); a read-only run directory is simply read without a cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from dvoc_bench.analysis.schema import (
    STEP_COLUMNS,
    TEXT_COLUMNS,
    TRIAL_COLUMNS,
    TRIAL_TO_STEP,
    Runs,
    coerce,
    empty_frame,
)
from dvoc_bench.core.jsonread import MAX_LINE_BYTES, load_file, loads
from dvoc_bench.core.rundir import (
    HYDRA,
    HYDRA_CONFIG,
    HYDRA_OVERRIDES,
    META,
    STEPS,
    TRIALS,
    read_json,
    read_jsonl,
    shot_path,
)

log = logging.getLogger(__name__)

CACHE_DIR = ".analysis_cache"
CACHE_VERSION = 4
"""Bumped when what a parse writes into the cache changes (4: has_task unknown under a rewritten prompt)."""
RUN_DIR_ENV = "DVOC_RUN_DIR"
"""Environment variable naming the run directory notebooks read (else the newest under ``runs/``)."""


# ----------------------------------------------------------------------------------------------- discovery


class DuplicateTrials(ValueError):
    """A run directory holds a trial key twice (two writers, or a copy): it is refused, naming the doctor."""


def find_run_dirs(paths: Iterable[Path | str]) -> list[Path]:
    """Run directories under ``paths`` (each holds ``trials.jsonl``), in path order, without duplicates."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_file() and p.name == TRIALS:
            cands = [p.parent]
        elif (p / TRIALS).is_file():
            cands = [p]
        elif p.is_dir():
            cands = sorted(
                (t.parent for t in p.rglob(TRIALS) if CACHE_DIR not in t.parts),
                key=_job_sort_key,
            )
        else:
            raise FileNotFoundError(f"no such run directory or {TRIALS}: {p}")
        if not cands:
            raise FileNotFoundError(f"no run directory (a folder with {TRIALS}) under {p}")
        for c in cands:
            if c.resolve() not in {f.resolve() for f in found}:
                found.append(c)
    return found


def _job_sort_key(p: Path) -> tuple[str, int, str]:
    return (str(p.parent), int(p.name) if p.name.isdigit() else -1, p.name)


def _has_a_finished_trial(trials: Path) -> bool:
    """Whether a ``trials.jsonl`` holds a trial of status ``ok`` (read up to the first one)."""
    try:
        with trials.open(encoding="utf-8", errors="replace") as f:
            for line in f:
                try:
                    if loads(line, max_bytes=MAX_LINE_BYTES).get("status") == "ok":
                        return True
                except (ValueError, AttributeError):
                    continue
    except OSError:
        return False
    return False


def newest_run(root: Path | str = "runs") -> Path | None:
    """The run directory under ``root`` whose ``trials.jsonl`` changed last and holds a finished trial
    (``None`` if there is none). A newer run in which every trial failed (a one-task probe that could not
    render) is passed over and named in a warning; when no run has a finished trial, the newest is taken."""
    root = Path(root)
    if not root.is_dir():
        return None
    files = [t for t in root.rglob(TRIALS) if CACHE_DIR not in t.parts]
    if not files:
        return None
    files.sort(key=lambda t: t.stat().st_mtime_ns, reverse=True)
    for i, t in enumerate(files):
        if _has_a_finished_trial(t):
            if i:
                skipped = ", ".join(str(f.parent) for f in files[:i])
                log.warning("newest run with a trial ok: %s (passed over, none ok: %s)", t.parent, skipped)
            return t.parent
    return files[0].parent


def user_path(value: str | Path) -> Path:
    """A path a user gave in an environment variable, relative ones read from the directory the command
    was typed in.

    ``DVOC_RUN_DIR=runs/quick/<time> jupyter nbconvert --execute analysis/x.ipynb`` starts the kernel in
    ``analysis/``, so the working directory is not where the user stood; the shell's ``$PWD``, which the
    kernel inherits, is. A relative path is therefore tried against ``$PWD`` first, then the working
    directory; when neither holds it, the ``$PWD`` one is returned (the error then names that path)."""
    p = Path(value).expanduser()
    if p.is_absolute():
        return p
    pwd = os.environ.get("PWD")
    bases = [Path(pwd)] if pwd and Path(pwd).is_absolute() and Path(pwd).is_dir() else []
    bases.append(Path.cwd())
    for base in bases:
        if (base / p).exists():
            return base / p
    return bases[0] / p


def default_run_dir(root: Path | str | None = None) -> Path:
    """``$DVOC_RUN_DIR`` if set (a relative one read from where the command was typed,
    :func:`user_path`), else the newest run under ``root`` (default: the repository's ``runs/``).

    Raises ``FileNotFoundError`` with what to do when there is none.
    """
    env = os.environ.get(RUN_DIR_ENV)
    if env:
        return user_path(env)
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2] / "runs"
    run = newest_run(root)
    if run is None:
        raise FileNotFoundError(
            f"no run found under {root}; run `python -m dvoc_bench` first or set {RUN_DIR_ENV}=<run dir>"
        )
    return run


# ------------------------------------------------------------------------------------------------ scenes


@lru_cache(maxsize=256)
def scene_meta(task: str, scenes_dir: str | None = None) -> tuple[int | None, int | None, str | None]:
    """``(width, height, instruction)`` of a scene from its definition file, without rendering it."""
    from dvoc_bench.scenes import default_scenes_dir

    root = Path(scenes_dir) if scenes_dir else default_scenes_dir()
    for path in sorted(root.glob(f"*/{task}.yaml")):
        try:
            spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue
        size = spec.get("size") or spec.get("viewport")
        w = h = None
        if isinstance(size, list | tuple) and len(size) == 2:
            w, h = int(size[0]), int(size[1])
        elif isinstance(size, Mapping):
            w, h = int(size.get("width", 0)) or None, int(size.get("height", 0)) or None
        instr = spec.get("instruction")
        return w, h, str(instr) if instr else None
    return None, None, None


def png_size(path: Path) -> tuple[int, int] | None:
    """Width and height from a PNG's header (``None`` if it is not a readable PNG)."""
    try:
        with path.open("rb") as f:
            head = f.read(24)
    except OSError:
        return None
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    w, h = struct.unpack(">II", head[16:24])
    return int(w), int(h)


@lru_cache(maxsize=256)
def legacy_scene_kind(task: str | None, scenes_dir: str | None = None) -> str | None:
    """The kind of scene of a record written before records carried ``scene_kind``: the folder of the
    scene's definition file (``scenes/<kind>/<task>.yaml``); ``None`` when it is not found."""
    from dvoc_bench.scenes import default_scenes_dir

    if not task:
        return None
    root = Path(scenes_dir) if scenes_dir else default_scenes_dir()
    found = sorted(root.glob(f"*/{task}.yaml"))
    return found[0].parent.name if found else None


# ---------------------------------------------------------------------------------------------- flattening


def _xy(v: Any) -> tuple[float | None, float | None]:
    if isinstance(v, list | tuple) and len(v) >= 2:
        return v[0], v[1]
    if isinstance(v, Mapping):
        return v.get("x"), v.get("y")
    return None, None


def flatten_trial(r: Mapping[str, Any]) -> dict[str, Any]:
    """One ``trials.jsonl`` record -> one row of the trials frame (lists flattened)."""
    d = dict(r)
    d["start_x"], d["start_y"] = _xy(d.pop("start", None))
    d["final_x"], d["final_y"] = _xy(d.pop("final_point", None))
    d["drop_x"], d["drop_y"] = _xy(d.pop("drop_point", None))
    box = d.pop("target_box", None)
    if isinstance(box, list | tuple) and len(box) == 4:
        d["target_x0"], d["target_y0"], d["target_x1"], d["target_y1"] = box
    d["target_cx"], d["target_cy"] = _xy(d.pop("target_centre", None))
    d["valid"] = d.get("status") == "ok"
    assumed = d.get("simulated_assumptions")  # a list in the record: text joined with "; " in the frame
    d["simulated_assumptions"] = "; ".join(assumed) if isinstance(assumed, list | tuple) else assumed
    d["scene_kind"] = d.get("scene_kind") or legacy_scene_kind(d.get("task"))
    som = d.pop("som", None)
    if isinstance(som, Mapping):  # Set-of-Mark trials: the nested record becomes som_* columns
        d.update({f"som_{k}": v for k, v in som.items()})
    drag = d.pop("drag", None)
    if isinstance(drag, Mapping):  # two-point (drag) trials: drag_to_hit, drag_to_box, ...
        d.update({f"drag_{k}": json.dumps(v) if isinstance(v, list) else v for k, v in drag.items()})
    sample = d.pop("sample", None)
    if isinstance(sample, Mapping):  # dataset trials: sample_ui_type, sample_group, ...
        d.update({f"sample_{k}": json.dumps(v) if isinstance(v, list) else v for k, v in sample.items()})
    if isinstance(d.get("episode"), Mapping):  # episode trials: the steps as JSON text (analysis.episodes)
        d["episode"] = json.dumps(d["episode"], ensure_ascii=False)
    return _scalars(d, _TRIAL_KNOWN)


_TRIAL_KNOWN = frozenset(TRIAL_COLUMNS)
_STEP_KNOWN = frozenset(STEP_COLUMNS) | frozenset(TEXT_COLUMNS)


def _scalars(d: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Fields this schema does not know that hold lists or mappings become JSON text (typed columns)."""
    for k in d.keys() - known:
        if isinstance(d[k], list | dict):
            d[k] = json.dumps(d[k], ensure_ascii=False)
    return d


def flatten_step(r: Mapping[str, Any]) -> dict[str, Any]:
    """One ``steps.jsonl`` record -> one row of the steps frame."""
    d = dict(r)
    d["draft_x"], d["draft_y"] = _xy(d.pop("draft", None))
    raw = d.pop("values_raw", None) or {}
    d["raw_dx"], d["raw_dy"] = raw.get("dx"), raw.get("dy")
    d["raw_x"], d["raw_y"], d["raw_conf"] = raw.get("x"), raw.get("y"), raw.get("confidence")
    px = d.pop("values_px", None) or {}
    d["px_dx"], d["px_dy"], d["px_x"], d["px_y"] = px.get("dx"), px.get("dy"), px.get("x"), px.get("y")
    d["rep_dx"], d["rep_dy"] = _xy(d.pop("reported_offset_px", None))
    d["step_raw_dx"], d["step_raw_dy"] = _xy(d.pop("step_raw", None))
    d["step_dx"], d["step_dy"] = _xy(d.pop("step_clamped", None))
    d["next_x"], d["next_y"] = _xy(d.pop("next_draft", None))
    d["sent_w"], d["sent_h"] = _xy(d.pop("sent_size", None))
    d["seen_w"], d["seen_h"] = _xy(d.pop("seen_size", None))
    crop = d.pop("crop", None)
    d["crop_x0"], d["crop_y0"] = _xy(crop[:2] if crop else None)
    d["crop_x1"], d["crop_y1"] = _xy(crop[2:] if crop else None)
    calls = d.get("reply_tool_calls")
    d["reply_tool_calls"] = json.dumps(calls, ensure_ascii=False) if calls else None
    return _scalars(d, _STEP_KNOWN)


def attach_trials(steps: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """Copy the trial columns of :data:`TRIAL_TO_STEP` onto the steps; derive ``true_dx/dy`` and
    ``has_task`` where the frame lacks them. Steps of unknown trials are dropped."""
    cols = ["run_dir", "trial_key", *TRIAL_TO_STEP]
    t = trials[cols].rename(columns=TRIAL_TO_STEP)
    base = steps.drop(columns=[c for c in TRIAL_TO_STEP.values() if c in steps.columns])
    merged = base.merge(t, on=["run_dir", "trial_key"], how="inner", validate="many_to_one")
    tdx = merged["target_cx"] - merged["draft_x"]
    tdy = merged["target_cy"] - merged["draft_y"]
    merged["true_dx"] = merged["true_dx"].fillna(tdx) if "true_dx" in merged else tdx
    merged["true_dy"] = merged["true_dy"].fillna(tdy) if "true_dy" in merged else tdy
    return merged


# ------------------------------------------------------------------------------------------------ overrides


def hydra_dir(run_dir: Path) -> Path | None:
    """The Hydra output folder of the run's first invocation: ``.hydra/<time>/`` (one folder per
    invocation; a resume adds one, the earliest describes the run), or ``.hydra/`` itself in run
    directories of the old layout. ``None`` when there is none."""
    root = Path(run_dir) / HYDRA
    if (root / HYDRA_CONFIG).is_file() or (root / HYDRA_OVERRIDES).is_file():
        return root
    if not root.is_dir():
        return None
    subs = sorted(
        p
        for p in root.iterdir()
        if p.is_dir() and ((p / HYDRA_OVERRIDES).is_file() or (p / HYDRA_CONFIG).is_file())
    )
    return subs[0] if subs else None


def read_overrides(run_dir: Path) -> dict[str, Any]:
    """The Hydra overrides of a run (``overrides.yaml`` of :func:`hydra_dir`): key -> value (scalars
    parsed, lists and mappings kept as their text). ``hydra.*`` overrides are left out."""
    folder = hydra_dir(run_dir)
    path = folder / HYDRA_OVERRIDES if folder is not None else None
    if path is None or not path.is_file():
        return {}
    try:
        items = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except yaml.YAMLError:
        return {}
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, str) or "=" not in item:
            continue
        key, _, text = item.partition("=")
        key = key.lstrip("+~")
        if key.startswith("hydra."):
            continue
        try:
            val = yaml.safe_load(text)
        except yaml.YAMLError:
            val = text
        out[key] = val if isinstance(val, str | int | float | bool) or val is None else text
    return out


def job_number(run_dir: Path) -> int | None:
    """The Hydra multirun job number (the directory name under a sweep with ``multirun.yaml``)."""
    if run_dir.name.isdigit() and (run_dir.parent / "multirun.yaml").is_file():
        return int(run_dir.name)
    return None


# ------------------------------------------------------------------------------------------------- reading


_SCHEMA = hashlib.sha256(
    json.dumps([CACHE_VERSION, TRIAL_COLUMNS, STEP_COLUMNS, TEXT_COLUMNS], sort_keys=True).encode()
).hexdigest()[:16]
"""Fingerprint of the schema: a cache written under another schema is rebuilt."""


def _signature(run_dir: Path) -> dict[str, Any]:
    sig: dict[str, Any] = {"schema": _SCHEMA}
    folder = hydra_dir(run_dir)
    overrides = folder / HYDRA_OVERRIDES if folder is not None else run_dir / HYDRA / HYDRA_OVERRIDES
    for name, p in (
        (TRIALS, run_dir / TRIALS),
        (STEPS, run_dir / STEPS),
        (f"{HYDRA}/{HYDRA_OVERRIDES}", overrides),
    ):
        sig[name] = [p.stat().st_size, p.stat().st_mtime_ns] if p.exists() else None
    return sig


def check_unique_trials(run_dir: Path, keys: Iterable[str]) -> None:
    """Refuse a run whose ``trials.jsonl`` holds a trial key more than once (two writers, a copy-paste):
    which line would be right is not for the analysis to guess."""
    seen: set[str] = set()
    dup: list[str] = []
    for k in keys:
        if k in seen:
            dup.append(k)
        seen.add(k)
    if dup:
        n = len(set(dup))
        raise DuplicateTrials(
            f"{run_dir}: {n} trial keys appear more than once in {TRIALS} (e.g. {dup[0]}); "
            f"check the run with `python -m dvoc_bench.doctor {run_dir}` "
            "(`--repair` keeps the first record of each key and moves the rest aside)"
        )


def _image_sizes(run_dir: Path, steps: pd.DataFrame, trials: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Task -> image size: from a frame the model saw, else from the scene definition."""
    sizes: dict[str, tuple[int, int]] = {}
    if len(steps) and "frame_sha" in steps:
        key_task = dict(zip(trials["trial_key"], trials["task"], strict=False))
        firsts = steps.dropna(subset=["frame_sha"]).drop_duplicates("trial_key")
        for key, sha in zip(firsts["trial_key"], firsts["frame_sha"], strict=True):
            task = key_task.get(key)
            if task is None or task in sizes:
                continue
            wh = png_size(shot_path(run_dir, sha))
            if wh:
                sizes[task] = wh
    for task in trials["task"].dropna().unique():
        if task not in sizes:
            w, h, _ = scene_meta(str(task))
            if w and h:
                sizes[str(task)] = (w, h)
    return sizes


def _parse_run(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parse one run directory (no cache): typed trials and steps with the text columns."""
    trials_raw = [flatten_trial(r) for r in read_jsonl(run_dir / TRIALS) if "trial_key" in r]
    check_unique_trials(run_dir, (r["trial_key"] for r in trials_raw))
    keys = {r["trial_key"] for r in trials_raw}
    steps_raw = [flatten_step(r) for r in read_jsonl(run_dir / STEPS) if r.get("trial_key") in keys]
    trials = pd.DataFrame(trials_raw)
    steps = pd.DataFrame(steps_raw)
    rd = str(run_dir)
    trials = coerce(trials.assign(source="run", run_dir=rd), TRIAL_COLUMNS)
    if len(steps):
        steps = steps.assign(source="run", run_dir=rd)
    steps = coerce(steps, {**STEP_COLUMNS, **TEXT_COLUMNS})
    sizes = _image_sizes(run_dir, steps, trials)
    trials["image_w"] = trials["task"].map(lambda t: sizes.get(t, (None, None))[0]).astype("Int64")
    trials["image_h"] = trials["task"].map(lambda t: sizes.get(t, (None, None))[1]).astype("Int64")
    steps = attach_trials(steps, trials)
    # has_task: the task instruction appears in the prompt (known for scenes with a definition file)
    instr = {t: scene_meta(str(t))[2] for t in trials["task"].dropna().unique()}
    # a wording rule or an ask_missing variant prompts with a rewritten instruction (not recorded): unknown
    reworded = pd.Series(False, index=trials.index)
    if "variation" in trials:
        reworded |= trials["variation"].astype("string").str.contains("wording=", regex=False).fillna(False)
    if "absent" in trials:
        reworded |= (trials["absent"].astype("string") == "ask_missing").fillna(False)
    rewritten = set(trials.loc[reworded.astype(bool), "trial_key"])
    if len(steps):
        steps["has_task"] = pd.array(
            [
                pd.NA if (p is pd.NA or instr.get(t) is None or k in rewritten) else instr[t] in p
                for p, t, k in zip(steps["prompt"], steps["task"], steps["trial_key"], strict=True)
            ],
            dtype="boolean",
        )
    steps = coerce(steps, {**STEP_COLUMNS, **TEXT_COLUMNS})
    return trials, steps


def _read_run(run_dir: Path, cache: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    cdir = run_dir / CACHE_DIR
    sig = _signature(run_dir)
    if cache and (cdir / "meta.json").is_file():
        try:
            if load_file(cdir / "meta.json") == sig:
                return pd.read_parquet(cdir / "trials.parquet"), pd.read_parquet(cdir / "steps.parquet")
        except (OSError, ValueError) as e:
            log.info("cache of %s unreadable (%s); re-parsing", run_dir, e)
    trials, steps = _parse_run(run_dir)
    if cache:
        try:
            cdir.mkdir(exist_ok=True)
            tag = f".{os.getpid()}.tmp"  # write aside, then rename: no reader sees half a file
            (cdir / "meta.json").unlink(missing_ok=True)
            for name, df in (("trials.parquet", trials), ("steps.parquet", steps)):
                df.to_parquet(cdir / (name + tag), index=False)
                os.replace(cdir / (name + tag), cdir / name)
            (cdir / ("meta.json" + tag)).write_text(json.dumps(sig))
            os.replace(cdir / ("meta.json" + tag), cdir / "meta.json")
        except (OSError, ValueError, TypeError) as e:  # read-only run dir, or an unserialisable column
            log.info("no analysis cache for %s: %s", run_dir, e)
    return trials, steps


def load_runs(*paths: Path | str, text: bool = False, cache: bool = True) -> Runs:
    """Load run directories (or folders of them, e.g. a Hydra multirun sweep) into one :class:`Runs`.

    ``text=True`` keeps the prompts and raw replies on the steps (large); ``cache=False`` skips the parquet
    cache. Each Hydra job adds ``job`` and one ``override.<key>`` column per override it was run with.
    """
    if not paths:
        raise ValueError("load_runs needs at least one run directory")
    parts_t, parts_s, sources = [], [], []
    settings: dict[str, dict[str, Any]] = {}
    for run_dir in find_run_dirs(paths):
        trials, steps = _read_run(run_dir, cache)
        # the cache keeps the path the run was read by then: the rows name the path given now
        trials["run_dir"] = pd.array([str(run_dir)] * len(trials), dtype="string")
        steps["run_dir"] = pd.array([str(run_dir)] * len(steps), dtype="string")
        if (made_with := read_settings(run_dir)) is not None:
            settings[str(run_dir)] = made_with
        if not text:
            steps = steps.drop(columns=[c for c in TEXT_COLUMNS if c in steps.columns])
        trials["job"] = pd.array([job_number(run_dir)] * len(trials), dtype="Int64")
        overrides = read_overrides(run_dir)
        if overrides:
            trials["overrides"] = " ".join(f"{k}={v}" for k, v in overrides.items())
            for k, v in overrides.items():
                trials[f"override.{k}"] = v
        parts_t.append(trials)
        parts_s.append(steps)
        sources.append(str(run_dir))
    trials = pd.concat(parts_t, ignore_index=True) if parts_t else empty_frame(TRIAL_COLUMNS)
    steps = pd.concat(parts_s, ignore_index=True) if parts_s else empty_frame(STEP_COLUMNS)
    if "label_placement" in trials:  # records made before the knob: the authors' corners, the only placement
        trials["label_placement"] = trials["label_placement"].fillna("corner")
    # records made before the trial key saw every setting carry no settings blocks: known by that column
    has = "model_config" in trials
    full = trials["model_config"].notna() if has else pd.Series(False, index=trials.index)
    trials[FULL_KEY] = full.astype(bool)
    for col, default in SPEC_DEFAULTS.items():  # shown as the defaults, not as a row of their own
        if col in trials:
            trials[col] = trials[col].fillna(default)
    return Runs(trials, steps, sources, settings)


SPEC_DEFAULTS = {
    "adaptive": "-", "sampling": "-", "overlay_style": "-", "image": "-", "retry_rule": "hit",
    "model_config": "-", "drag_start": "source", "episode_knobs": "-", "absent": "off", "offer_absent": False,
    "device": "-", "variation": "-",
}  # fmt: skip
"""The settings blocks of the spec at their defaults (:class:`dvoc_bench.core.records.TrialSpec`): how a
record made before they were spec fields is shown in a table (its real values are unknown: the pooling guard
compares such records' runs by their settings instead, :data:`FULL_KEY`)."""

FULL_KEY = "full_key"
"""Trial column: whether the record's key saw every setting (made since the settings blocks are spec fields);
not exported."""


def read_settings(run_dir: Path) -> dict[str, Any] | None:
    """The settings a run directory was made with (its fingerprint's ``settings`` in ``run_meta.json``,
    written by the runner before its first trial: ``dotted.key -> value``, plus ``models``: the model configs
    as ``name@digest``), or ``None`` when it recorded none or the file is unreadable."""
    meta = read_json(Path(run_dir) / META)
    if meta is None or not isinstance(made_with := meta.get("settings"), dict):
        return None
    lists = meta.get("lists")
    models = lists.get("models") if isinstance(lists, dict) else None
    return {**made_with, "models": list(models)} if isinstance(models, list) else dict(made_with)
