"""The run viewer's site: every trial's shots, answers and truth as a static, self-contained web page.

:func:`build_site` reads run directories through :func:`~dvoc_bench.analysis.loaders.load_runs` (a run
dir, a multirun sweep, a merged shard dir) and returns the files of the site as ``{relative path: text}``;
the door (``python -m dvoc_bench.view``) writes them. Nothing here touches the network: the data is
embedded as JavaScript files (``data/index.js``, one ``data/trials/<n>.js`` per chunk of
:data:`CHUNK` trials, loaded when a trial is shown), because a page opened from ``file://`` may not
``fetch()``. Shots (the images sent to a model) are not copied: each step names its shot by a path
relative to the site folder, into the run dir's ``frames/``.

What the records lack or break is listed, never hidden (:class:`Skipped`): torn lines, steps of unknown
trials, fields the record types do not know, shots that should be there and are not. Shots absent by
design (``run.frames=none``) are marked as such on every step. The site's data keeps the names the page
reads (``frames``, ``frame_src``, ``frame_state``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from dvoc_bench.analysis.loaders import find_run_dirs, load_runs
from dvoc_bench.analysis.schema import STEP_COLUMNS, TEXT_COLUMNS, TRIAL_COLUMNS, Runs, keep_rows
from dvoc_bench.core.jsonread import loads
from dvoc_bench.core.records import Step, TrialRecord
from dvoc_bench.core.rundir import (
    SHOTS,
    STEPS,
    TRIALS,
    VIEW,
    read_lines,
    record_of,
    shot_path,
    shot_rel,
    shots_mode,
)

CHUNK = 200
"""Trials per ``data/trials/<n>.js`` file (a trial page loads only its chunk)."""
ASSETS = ("index.html", "viewer.js", "viewer.css")
"""The static files of the site (in ``dvoc_bench/analysis/viewer_assets/``)."""
TABLE_COLUMNS = (
    "model", "method", "task", "scene_kind", "protocol", "alpha", "overlay", "predict", "zoom", "detector",
    "label_placement", "start_from", "coord_frame", "start_index", "rep", "job", "status", "stop_reason",
    "error_class", "hit", "within_eps", "hit_radius", "hit_rule", "episode_success", "final_dist_px",
    "iterations", "model_calls", "cost_usd", "simulated",
)  # fmt: skip
"""Trial columns the table holds (plus every ``override.<key>`` of a multirun's jobs)."""
FACETS = (
    "model", "method", "task", "scene_kind", "protocol", "alpha", "overlay", "predict", "zoom", "detector",
    "label_placement", "start_from", "coord_frame", "start_index", "rep", "job", "status", "stop_reason",
    "error_class", "hit", "within_eps", "hit_radius", "hit_rule", "episode_success", "simulated",
)  # fmt: skip
"""Columns the table filters by (those with more than one value; distance is filtered by a range)."""
ALWAYS = ("model", "method", "task", "status", "stop_reason", "hit", "final_dist_px", "model_calls")
"""Table columns shown even when every trial has the same value (others are shown when they vary)."""
KNOWN_TRIAL = frozenset(f.name for f in dataclasses.fields(TrialRecord))
KNOWN_STEP = frozenset(f.name for f in dataclasses.fields(Step))
_DERIVED_TRIAL = frozenset(TRIAL_COLUMNS) | {"overrides"}
_DERIVED_STEP = frozenset(STEP_COLUMNS) | frozenset(TEXT_COLUMNS) | KNOWN_STEP


@dataclass
class Skipped:
    """What a run directory's records lacked or broke (shown on the site's first page)."""

    torn: list[str] = field(default_factory=list)
    """``file:line`` of every line that does not parse (a torn write)."""
    orphan_steps: int = 0
    """Steps whose trial is not in ``trials.jsonl`` (not shown)."""
    no_key: int = 0
    """``trials.jsonl`` lines without a ``trial_key`` (not shown)."""
    unknown_fields: dict[str, int] = field(default_factory=dict)
    """Field -> records holding it that the record types do not know (shown on the trial page as is)."""
    missing_shots: list[str] = field(default_factory=list)
    """Shots a step names that the run's ``frames/`` lacks (the run kept shots)."""
    notes: list[str] = field(default_factory=list)
    """What the source is and where its shots come from, when that is not a run dir (the authors')."""

    def lines(self) -> list[str]:
        out = list(self.notes)
        out += [f"torn line (does not parse), skipped: {t}" for t in self.torn]
        if self.no_key:
            out.append(f"{self.no_key} {TRIALS} lines without a trial_key, skipped")
        if self.orphan_steps:
            out.append(f"{self.orphan_steps} steps of trials not in {TRIALS}, skipped")
        out += [
            f"unknown field `{k}` in {n} records (shown as is)"
            for k, n in sorted(self.unknown_fields.items())
        ]
        if self.missing_shots:
            few = ", ".join(self.missing_shots[:5]) + (" ..." if len(self.missing_shots) > 5 else "")
            out.append(f"{len(self.missing_shots)} frames missing from {SHOTS}/: {few}")
        return out


def scan_run(run_dir: Path) -> Skipped:
    """What :func:`~dvoc_bench.core.rundir.read_jsonl` and the loaders pass over silently, counted."""
    sk = Skipped()
    keys: set[str] = set()
    for name, known in ((TRIALS, KNOWN_TRIAL), (STEPS, KNOWN_STEP)):
        for ln in read_lines(run_dir / name):
            if not ln.raw.strip():
                continue
            rec = record_of(ln.raw)
            if rec is None:
                sk.torn.append(f"{name}:{ln.number}")
                continue
            for k in rec.keys() - known:
                sk.unknown_fields[k] = sk.unknown_fields.get(k, 0) + 1
            if name == TRIALS:
                if "trial_key" in rec:
                    keys.add(rec["trial_key"])
                else:
                    sk.no_key += 1
            elif rec.get("trial_key") not in keys:
                sk.orphan_steps += 1
    return sk


def plain(v: Any) -> Any:
    """A JSON-ready scalar (pandas NA and NaN become ``None``; JSON text of lists stays text)."""
    if v is None or v is pd.NA:
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _json_field(v: Any) -> Any:
    """A list or mapping the loaders stored as JSON text, back as itself."""
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return loads(v)
        except ValueError:
            return v
    return v


def _row(df: pd.DataFrame, i: int, cols: Iterable[str]) -> dict[str, Any]:
    out = {}
    for c in cols:
        v = plain(df.at[i, c])
        if v is not None:
            out[c] = _json_field(v)
    return out


def _js(var: str, payload: Any) -> str:
    text = json.dumps(payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    safe = text.replace("</", "<\\/")  # a "</script>" inside a reply cannot end the script
    return f"{var}({safe});\n"


UPSTREAM_SHOTS = "upstream"
"""The shots mode of the authors' records: a step's image is ``<tree>/<folder>/iter_<step>.png``."""


def _sources(
    paths: Sequence[Path | str], upstream: Sequence[Path | str], out: Path, imported: Sequence[Runs] = ()
) -> tuple[Runs, list[dict[str, Any]]]:
    """Our runs under ``paths`` and the authors' records under ``upstream`` (their clone at any depth, or
    one of their JSON files: :func:`~dvoc_bench.analysis.upstream.discover_upstream`'s ``main``, the
    report's loader) as one :class:`Runs`, and per origin what the site needs (dir, shots mode, skipped)."""
    from dvoc_bench.analysis.upstream import discover_upstream, load_upstream, tree_dirs

    run_dirs = find_run_dirs(paths) if paths else []
    parts = [load_runs(*run_dirs, text=True)] if run_dirs else []
    metas: list[dict[str, Any]] = [
        {"dir": str(r), "frames": shots_mode(r), "rel": os.path.relpath(r.resolve(), out), "sk": scan_run(r)}
        for r in run_dirs
    ]
    for u in upstream:
        roles = discover_upstream(u)
        theirs = load_upstream(roles["main"], text=True)
        origin, tree = Path(theirs.sources[0]), roles.get("tree")
        keys = [str(k) for k in theirs.trials["trial_key"]]
        # each trial's folder in the per-trial tree (where the images are): the trial itself, or the folder
        # whose trial.json equals the aggregate's record
        dirs = {k: k for k in keys} if origin.is_dir() else tree_dirs(origin, tree) if tree else {}
        parts.append(theirs)
        sk = Skipped(notes=[f"the authors' records ({len(keys)} trials of their main benchmark)"])
        if tree is None:
            sk.notes.append("no per-trial tree beside this file: no frames")
        else:
            lost = sum(dirs.get(k) is None for k in keys)
            sk.notes.append(
                f"frames: their iter_<step>.png in {tree}"
                + (f"; {lost} records equal no trial.json there (re-run after they aggregated): no frames"
                   if lost else "")
            )  # fmt: skip
        metas.append(
            {
                "dir": str(origin), "frames": UPSTREAM_SHOTS if tree else "none", "sk": sk,
                "rel": os.path.relpath(Path(tree).resolve(), out) if tree else "", "upstream": dirs,
                "tree": str(tree) if tree else None,
            }
        )  # fmt: skip
    for runs in imported:  # another harness's results (report --import): their trials, no images
        parts.append(runs)
        for rd in dict.fromkeys(str(r) for r in runs.trials["run_dir"]):
            sk = Skipped(notes=[f"imported results: {rd} (another harness's log: no images)"])
            metas.append({"dir": rd, "frames": "none", "sk": sk, "rel": "", "imported": True})
    if not parts:
        raise FileNotFoundError("nothing to show: give a run directory or --upstream PATH")
    return (parts[0] if len(parts) == 1 else Runs.concat(*parts)), metas


def _shot(m: dict[str, Any], st: dict[str, Any], key: str, exists: dict[str, bool]) -> None:
    """Set the step's ``frame_src`` (relative to the site) or ``frame_state`` (why there is none)."""
    if m["frames"] == "none":
        st["frame_state"] = (
            "none: no per-trial tree of the authors' records beside their file" if "upstream" in m
            else "none: an imported log holds no images" if m.get("imported")
            else "none by design (run.frames=none)"
        )  # fmt: skip
        return
    if m["frames"] == UPSTREAM_SHOTS:
        folder = m["upstream"].get(key)
        if folder is None:
            st["frame_state"] = "no trial.json in the authors' tree equals this record (re-run after)"
            return
        name = f"{folder}/iter_{int(st.get('index', 0)):03d}.png"
        p = Path(m["tree"]) / name
        if str(p) not in exists:
            exists[str(p)] = p.is_file()
        if exists[str(p)]:
            st["frame_src"] = f"{m['rel']}/{name}"
        else:
            st["frame_state"] = "the authors' harness saved no image for this step"
        return
    sha = st.get("frame_sha")
    if not sha:
        st["frame_state"] = "no frame (this call sent none)"
        return
    p = shot_path(m["dir"], sha)
    if str(p) not in exists:
        exists[str(p)] = p.is_file()
        if not exists[str(p)]:
            m["sk"].missing_shots.append(f"{sha[:12]}.png")
    if exists[str(p)]:
        st["frame_src"] = f"{m['rel']}/{shot_rel(sha)}"
    else:
        st["frame_state"] = f"missing from {SHOTS}/"


def episode_shots(m: dict[str, Any], episode: dict[str, Any], key: str, exists: dict[str, bool]) -> None:
    """Each step of an episode record with the screenshots it was grounded on and left behind: ``before_src``
    / ``after_src`` (relative to the site), or ``before_state`` / ``after_state`` (why there is none)."""
    for st in episode.get("steps") or []:
        for which in ("before", "after"):
            shot: dict[str, Any] = {"frame_sha": st.get(f"frame_{which}")}
            if shot["frame_sha"]:
                _shot(m, shot, key, exists)
            else:
                shot["frame_state"] = "no screenshot recorded"
            st[f"{which}_src"], st[f"{which}_state"] = shot.get("frame_src"), shot.get("frame_state")


def targets_of(trial: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets a trial's frames are drawn with: its target box (``role`` ``target``), or a two-point
    (drag) trial's two, where the drag starts (``from``: the record's target box) and where it ends
    (``to``: ``drag_to_box``), each with the point that answered it."""
    box = [trial.get(f"target_{c}") for c in ("x0", "y0", "x1", "y1")]
    if any(not isinstance(v, int | float) for v in box):
        return []
    final = [trial.get("final_x"), trial.get("final_y")]
    drop = trial.get("drag_to_box")
    if not (isinstance(drop, list) and len(drop) == 4):
        return [{"role": "target", "box": box, "point": final}]
    return [{"role": "from", "box": box, "point": final},
            {"role": "to", "box": drop, "point": [trial.get("drop_x"), trial.get("drop_y")]}]  # fmt: skip


def build_site(
    paths: Sequence[Path | str],
    out: Path,
    upstream: Sequence[Path | str] = (),
    imported: Sequence[Runs] = (),
) -> dict[str, str]:
    """The site of the runs under ``paths`` (and of the authors' records under ``upstream``) written to
    folder ``out``: relative path -> file text.

    Frame paths are relative to ``out``; raises what :func:`load_runs` and
    :func:`~dvoc_bench.analysis.upstream.discover_upstream` raise (no run directory, no authors' records,
    a trial key twice)."""
    out = Path(out).resolve()
    runs, meta_runs = _sources(paths, upstream, out, imported)
    rd_index = {m["dir"]: n for n, m in enumerate(meta_runs)}
    t = runs.trials.reset_index(drop=True)
    s = runs.steps.sort_values(["run_dir", "trial_key", "index"], kind="stable").reset_index(drop=True)
    extra = sorted(c for c in t.columns if c.startswith("override."))
    varies = {c for c in t.columns if t[c].astype("string").nunique(dropna=False) > 1}
    cols = [c for c in (*TABLE_COLUMNS, *extra) if c in t.columns and (c in varies or c in ALWAYS)]
    rows = [[plain(t.at[i, c]) for c in cols] for i in range(len(t))]
    run_of = [rd_index.get(str(rd), 0) for rd in t["run_dir"]]
    facets = [c for c in cols if (c in FACETS or c in extra) and c in varies]
    steps_by: dict[tuple[str, str], list[int]] = {}
    for j, key in enumerate(zip(s["run_dir"], s["trial_key"], strict=True)):
        steps_by.setdefault((str(key[0]), str(key[1])), []).append(j)
    step_cols = [
        c for c in s.columns if c not in ("source", "run_dir", "trial_key") and not c.startswith("target_")
    ]
    trial_cols = [c for c in t.columns if c not in ("source",)]
    files: dict[str, str] = {}
    chunk: dict[str, Any] = {}
    exists: dict[str, bool] = {}
    for i in range(len(t)):
        m = meta_runs[run_of[i]]
        trial = _row(t, i, trial_cols)
        trial["extra"] = sorted(k for k in trial if k not in _DERIVED_TRIAL and not k.startswith("override."))
        trial["targets"] = targets_of(trial)
        if isinstance(trial.get("episode"), dict):
            trial["extra"] = [k for k in trial["extra"] if k != "episode"]
            episode_shots(m, trial["episode"], str(t.at[i, "trial_key"]), exists)
        steps = []
        for j in steps_by.get((str(t.at[i, "run_dir"]), str(t.at[i, "trial_key"])), []):
            st = _row(s, j, step_cols)
            st["extra"] = sorted(k for k in st if k not in _DERIVED_STEP)
            _shot(m, st, str(t.at[i, "trial_key"]), exists)
            steps.append(st)
        chunk[str(i)] = {"trial": trial, "steps": steps}
        if len(chunk) == CHUNK or i == len(t) - 1:
            files[f"data/trials/{i // CHUNK}.js"] = _js("DVOC.chunk", {"chunk": i // CHUNK, "trials": chunk})
            chunk = {}
    index = {
        "columns": cols,
        "rows": rows,
        "run": run_of,
        "keys": [str(k) for k in t["trial_key"]],
        "facets": facets,
        "chunk": CHUNK,
        "simulated": bool(runs.simulated),
        "runs": [
            {"dir": m["dir"], "frames": m["frames"], "skipped": m["sk"].lines(), "upstream": "upstream" in m}
            for m in meta_runs
        ],
    }
    files["data/index.js"] = _js("DVOC.index", index)
    pkg = resources.files("dvoc_bench.analysis") / "viewer_assets"
    for name in ASSETS:
        files[name] = (pkg / name).read_text(encoding="utf-8")
    return files


def write_site(files: dict[str, str], out: Path) -> Path:
    """Write the site's files under ``out`` (replacing the data of an earlier site); the index page's path."""
    out = Path(out)
    old = out / "data" / "trials"
    if old.is_dir():
        for p in old.glob("*.js"):
            p.unlink()
    for rel, text in files.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return out / "index.html"


def site_of(run_dir: Path | str) -> Path | None:
    """The viewer's site written in a run dir by default (``<run>/view/index.html``), ``None`` if none."""
    index = Path(run_dir) / VIEW / ASSETS[0]
    return index if index.is_file() else None


def failure_links(trials: pd.DataFrame, out: Path, limit: int = 50) -> list[str]:
    """Markdown lines listing each trial that failed (status ``error``), linked to its page in the viewer's
    site of its run (relative to the folder ``out`` the lines are written in) when one was written there;
    for runs without a site, the last line names the command that writes it. At most ``limit`` trials,
    then how many more."""
    from dvoc_bench.analysis.markdown import escape_inline

    lines: list[str] = []
    bad = keep_rows(trials, trials["status"] == "error")
    unlinked: dict[str, None] = {}
    for n, (_, r) in enumerate(bad.iterrows()):
        if n == limit:
            lines.append(f"- ... and {len(bad) - limit} more (the viewer's table, filter `status`)")
            break
        ours = r.get("source", "run") == "run"
        site = site_of(r["run_dir"]) if ours else None
        what = escape_inline(f"{r['method']} · {r['model']} · {r['task']} · start {plain(r['start_index'])}")
        if site is not None:
            what = f"[{what}]({os.path.relpath(site, out)}#key={r['trial_key']})"
        elif ours:
            unlinked[str(r["run_dir"])] = None
        lines.append(
            f"- {what}: `{plain(r['error_class'])}` {escape_inline(plain(r['error']) or '')}".rstrip()
        )
    if unlinked:  # one run, or the folder of a sweep's jobs (the viewer reads a sweep folder whole)
        where = os.path.commonpath(list(unlinked)) if len(unlinked) > 1 else next(iter(unlinked))
        lines.append(f"\n`python -m dvoc_bench.view {where}` writes the viewer's site; then they are linked.")
    return lines
