"""Merge shard run directories (``run.shard=I/N``, :mod:`dvoc_bench.runner.shard`) into one run directory
that the report, the viewer and the doctor read like any run.

:func:`merge_runs` takes run directories (or folders above them, e.g. a multirun sweep dir) and an output
run directory:

- every input must have the same fingerprint (``run_meta.json``; the differing keys are named) and, for
  shards, the same shard count and whole-plan digest; an input held by a running process (its run-dir
  lock) is refused, naming the holder; inputs are held under a shared lock while they are read, so no
  shard resumes into them mid-merge; the output is held under its exclusive lock;
- a trial key is written once: a finished (``ok``/``error``) record already in the output stays; a
  ``skipped`` one is superseded (moved to ``superseded.jsonl`` with its steps, as a resume does) when a
  shard has finished the trial since; each trial's steps come with it, from the same input, as written;
- shots are copied once, by content (``frames/<sha256>.png``, checked against their name; a corrupt one
  is not copied and is reported); the inputs' ``superseded*.jsonl`` lines are kept once each, so the
  budget's spend of the merged dir is every shard's;
- ``plan.jsonl`` is the union of the inputs' plans; ``run.json`` says the whole plan's size, the trials
  present and the shards merged; ``merge.json`` keeps every merge's account.

An output that is an ordinary run (not an earlier merge's output) is refused unless asked (``into_run``,
``--into-run``). A partial merge (a shard missing or unfinished) is allowed, and said. Merging again
after a shard resumed adds only what is new.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.rundir import (
    HYDRA,
    HYDRA_CONFIG,
    HYDRA_OVERRIDES,
    MERGE,
    META,
    PLAN,
    SHOTS,
    STEPS,
    SUMMARY,
    SUPERSEDED,
    SUPERSEDED_STEPS,
    TMP,
    TRIALS,
    append_lines,
    complete_records,
    read_json,
    read_run_info,
    repair_tail,
    rewrite_lines,
    shot_name,
    trial_line_ok,
    write_run_info,
)
from dvoc_bench.runner.shard import read_shard_file
from dvoc_bench.runner.store import RunDirBusy, RunDirLock, lock_holder

FINISHED = ("ok", "error")
"""Statuses a merge never replaces (``skipped`` trials are replaced by a finished record)."""
SUPERSEDED_FILES = (SUPERSEDED, SUPERSEDED_STEPS)


@dataclass
class Source:
    """One input run directory, read."""

    dir: Path
    shard: str | None
    """``I/N`` from its ``shard.json``; ``None`` for a whole run."""
    trials: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    """Trial key -> (the line as written, the record)."""
    steps: dict[str, list[str]] = field(default_factory=dict)
    """Trial key -> its step lines as written."""
    plan: list[tuple[str, str]] = field(default_factory=list)
    """(trial key, plan line) in order."""
    added: int = 0
    """Trials this merge took from it."""


@dataclass
class MergeReport:
    """What :func:`merge_runs` did and found."""

    out: Path
    planned: int
    """Trials of the whole sweep's plan."""
    present: int = 0
    """Trials in the merged ``trials.jsonl`` after the merge."""
    finished: int = 0
    """Of them, ``ok`` or ``error``."""
    added: int = 0
    """Trials this merge wrote."""
    superseded: int = 0
    """``skipped`` records of the output replaced by a finished one."""
    frames_copied: int = 0
    """Shots this merge copied (named as in ``merge.json``)."""
    corrupt_shots: list[str] = field(default_factory=list)
    """Input shots whose content does not match their name (not copied)."""
    shards: dict[str, str] = field(default_factory=dict)
    """Shard label -> input directory (``whole`` for a whole run)."""
    missing_shards: list[str] = field(default_factory=list)
    """Shards of the sweep no input is (and no earlier merge brought)."""
    sources: list[Source] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return self.present < self.planned or self.finished < self.present

    def lines(self) -> list[str]:
        out = [
            f"merged {len(self.sources)} run dirs into {self.out}: {self.present} of {self.planned} planned "
            f"trials present ({self.finished} finished ok/error), {self.added} added by this merge"
            + (f", {self.superseded} skipped ones replaced" if self.superseded else "")
            + f"; frames: {self.frames_copied} copied"
        ]
        out += [f"  {s.dir} (shard {s.shard or 'whole'}): {s.added} trials added" for s in self.sources]
        if self.corrupt_shots:
            n, eg = len(self.corrupt_shots), self.corrupt_shots[0]
            out.append(f"  {n} corrupt frames not copied (content does not match the name), e.g. {eg}")
        if self.partial:
            why = []
            if self.missing_shards:
                why.append(f"shards {', '.join(self.missing_shards)} not merged")
            if self.present < self.planned:
                why.append(f"{self.planned - self.present} planned trials not present")
            if self.finished < self.present:
                why.append(f"{self.present - self.finished} skipped")
            out.append(
                "partial merge: " + "; ".join(why) + "; resume the shards, then merge again (adds only what "
                "is new)"
            )
        return out


def find_inputs(paths: Iterable[Path | str], out: Path) -> list[Path]:
    """The run directories named by ``paths``: each path itself when it is a run directory
    (``run_meta.json`` or ``trials.jsonl``), else its sub-directories that are (a sweep dir, in job
    order); never ``out``, nor a merged directory."""
    found: list[Path] = []
    out_r = out.resolve()

    def is_run(d: Path) -> bool:
        return (d / META).is_file() or (d / TRIALS).is_file()

    for p in map(Path, paths):
        if not p.is_dir():
            raise ConfigError(f"SHARD_DIR: no such directory: {p}")
        if is_run(p):
            cands = [p]
        else:
            subs = [d for d in p.iterdir() if d.is_dir() and is_run(d) and not (d / MERGE).is_file()]
            cands = sorted(subs, key=lambda d: (int(d.name) if d.name.isdigit() else 1 << 30, d.name))
            if not cands:
                raise ConfigError(f"SHARD_DIR: {p} is no run directory and holds none")
        for c in cands:
            if c.resolve() == out_r:
                if c is p:
                    raise ConfigError(f"--out: {out} is also an input; merge into another directory")
                continue
            if c.resolve() not in {f.resolve() for f in found}:
                found.append(c)
    return found


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The keys in which two ``run_meta.json`` fingerprints differ, as ``key: a -> b``."""
    out: list[str] = []
    for part in ("settings", "lists", "scenes"):
        x, y = a.get(part) or {}, b.get(part) or {}
        for k in sorted(set(x) | set(y)):
            if x.get(k) != y.get(k):
                name = f"scene {k}" if part == "scenes" else k
                was, now = json.dumps(x.get(k), default=str), json.dumps(y.get(k), default=str)
                out.append(f"{name}: {was} -> {now}")
    return out


def _meta(d: Path) -> dict[str, Any]:
    try:
        data = load_file(d / META)
    except (OSError, ValueError):
        raise ConfigError(f"SHARD_DIR: {d} has no readable {META} (not a dvoc_bench run directory)") from None
    return data if isinstance(data, dict) else {}


@contextlib.contextmanager
def _shared_lock(d: Path) -> Iterator[None]:
    """Hold a shared lock on a run directory while it is read: refused when a writer holds it (naming it);
    a writer starting meanwhile is refused (nothing in the directory is written)."""
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(f"SHARD_DIR: {RunDirBusy(d, lock_holder(d))}") from None
        yield
    finally:
        os.close(fd)


def _read_source(d: Path) -> Source:
    info = read_shard_file(d)
    src = Source(d, None if info is None else str(info.get("shard")))
    for raw, r in complete_records(d / TRIALS):
        k = r.get("trial_key")
        if isinstance(k, str) and k not in src.trials:
            src.trials[k] = (raw, r)
    for raw, r in complete_records(d / STEPS):
        k = r.get("trial_key")
        if k in src.trials:  # steps of a trial whose line never made it (a kill) are not the trial's
            src.steps.setdefault(k, []).append(raw)
    src.plan = [(r["trial_key"], raw) for raw, r in complete_records(d / PLAN) if trial_line_ok(r)]
    return src


def _copy_shots(src: Path, dst: Path, have: set[str], rep: MergeReport) -> None:
    folder = src / SHOTS
    if not folder.is_dir():
        return
    for f in sorted(folder.glob(shot_name("*"))):
        sha = f.stem
        if sha in have:
            continue
        data = f.read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            rep.corrupt_shots.append(str(f))
            continue
        tmp = dst / f".{sha}{TMP}"
        tmp.write_bytes(data)
        os.replace(tmp, dst / f.name)
        have.add(sha)
        rep.frames_copied += 1


def _copy_hydra(src: Path, out: Path) -> None:
    """The first input's first Hydra folder, as the merged run's (``run.shard`` left out of it): the
    analysis reads a run's overrides there."""
    root = src / HYDRA
    subs = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    if not subs or (out / HYDRA).exists():
        return
    dst = out / HYDRA / subs[0].name
    shutil.copytree(subs[0], dst)
    ov = dst / HYDRA_OVERRIDES
    if ov.is_file():
        items = yaml.safe_load(ov.read_text(encoding="utf-8")) or []
        kept = [i for i in items if not (isinstance(i, str) and i.lstrip("+~").startswith("run.shard="))]
        ov.write_text(yaml.safe_dump(kept, default_flow_style=False), encoding="utf-8")
    cfg = dst / HYDRA_CONFIG
    if cfg.is_file():
        data = yaml.safe_load(cfg.read_text(encoding="utf-8")) or {}
        if isinstance(data.get("run"), dict):
            data["run"]["shard"] = None
            cfg.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _planned_total(sources: list[Source], old: dict[str, Any]) -> tuple[int, int | None, str | None]:
    """The whole plan's size, the shard count and the plan digest; inputs that disagree are refused."""
    infos = [(s.dir, read_shard_file(s.dir)) for s in sources]
    shards = [(d, i) for d, i in infos if i is not None]
    total = int(old.get("planned") or 0)
    count, digest = old.get("count"), old.get("plan_digest")
    for d, i in shards:
        if count is not None and i.get("count") != count:
            raise ConfigError(f"SHARD_DIR: {d} is shard {i.get('shard')}, of a split into {count} shards")
        if digest is not None and i.get("plan_digest") != digest:
            raise ConfigError(f"SHARD_DIR: {d} has another plan than the other shards (plan digest differs)")
        count, digest, total = i.get("count"), i.get("plan_digest"), int(i.get("planned_total") or 0)
    whole = {k for s in sources for k, _ in s.plan}
    return max(total, len(whole)), count, digest


def merge_runs(inputs: Iterable[Path | str], out: Path | str, *, into_run: bool = False) -> MergeReport:
    """Merge the run directories ``inputs`` (module docstring) into ``out``; raises :class:`ConfigError`
    (one line naming the input) when they cannot be merged, and then changes nothing. An ``out`` that is a
    run of its own (run records and no ``merge.json``) is refused unless ``into_run``."""
    out = Path(out)
    own_run = any((out / f).is_file() for f in (META, TRIALS, PLAN)) and not (out / MERGE).is_file()
    if own_run and not into_run:
        raise ConfigError(
            f"--out: {out} is a run of its own, not a merge's output; merging adds the shards' trials to it "
            "and rewrites its plan: pass --into-run to do that, or give another --out"
        )
    dirs = find_inputs(inputs, out)
    if not dirs:
        raise ConfigError("SHARD_DIR: no run directory given")
    with contextlib.ExitStack() as stack:
        for d in dirs:  # first: a shard being written is refused as such, whatever it holds yet
            stack.enter_context(_shared_lock(d))
        metas = [_meta(d) for d in dirs]
        for d, m in zip(dirs[1:], metas[1:], strict=True):
            if diff := differences(metas[0], m):
                more = f"; and {len(diff) - 6} more" if len(diff) > 6 else ""
                raise ConfigError(
                    f"SHARD_DIR: {d} was made with other settings than {dirs[0]} "
                    f"({'; '.join(diff[:6])}{more}); only shards of one sweep merge"
                )
        out.mkdir(parents=True, exist_ok=True)
        try:
            stack.enter_context(RunDirLock(out))
        except RunDirBusy as e:
            raise ConfigError(f"--out: {e}") from None
        if (out / META).is_file() and (diff := differences(_meta(out), metas[0])):
            raise ConfigError(f"--out: {out} holds a run made with other settings ({'; '.join(diff[:6])})")
        sources = [_read_source(d) for d in dirs]
        old = _read_merge(out)
        if not (out / MERGE).is_file():  # the output is a merge's before anything is written: cut short, it
            (out / MERGE).write_text(json.dumps({"merges": []}), encoding="utf-8")  # is merged again
        planned, count, digest = _planned_total(sources, old)
        rep = MergeReport(out, planned, sources=sources)
        _write(out, sources, metas[0], rep)
        shards = dict(old.get("shards") or {})
        shards.update({s.shard or "whole": str(s.dir) for s in sources})
        rep.shards = shards
        if count and "whole" not in shards:
            rep.missing_shards = [f"{i}/{count}" for i in range(int(count)) if f"{i}/{count}" not in shards]
        _write_accounts(out, sources, rep, old, count, digest)
    return rep


def _read_merge(out: Path) -> dict[str, Any]:
    return read_json(out / MERGE) or {}


def winners(sources: Sequence[Source]) -> dict[str, Source]:
    """Per trial key, the input whose record the merge takes: the first (in input order) whose record is
    finished (``ok``/``error``); a ``skipped`` one, the first, only when no input finished the trial."""
    best: dict[str, Source] = {}
    for s in sources:
        for k, (_, r) in s.trials.items():
            cur = best.get(k)
            was = None if cur is None else cur.trials[k][1].get("status")
            if cur is None or (r.get("status") in FINISHED and was not in FINISHED):
                best[k] = s
    return best


def superseded_keys(have: dict[str, dict[str, Any]], best: dict[str, Source]) -> set[str]:
    """The keys whose record already in the output (``have``) the merge replaces: skipped there and
    finished by the input :func:`winners` chose. A finished record of the output is never replaced."""
    return {
        k for k, s in best.items()
        if k in have and have[k].get("status") not in FINISHED and s.trials[k][1].get("status") in FINISHED
    }  # fmt: skip


def _write(out: Path, sources: list[Source], meta: dict[str, Any], rep: MergeReport) -> None:
    """Trials, steps, superseded lines, shots and the plan of the merge (under the output's lock)."""
    shots = out / SHOTS
    shots.mkdir(exist_ok=True)
    for name in (TRIALS, STEPS, *SUPERSEDED_FILES):
        repair_tail(out / name)
    rows = list(complete_records(out / TRIALS))
    have = {r["trial_key"]: r for _, r in rows if isinstance(r.get("trial_key"), str)}
    # a kill between a trial's steps and its line leaves orphan steps: drop them (as a resume does)
    steps = list(complete_records(out / STEPS))
    if any(r.get("trial_key") not in have for _, r in steps):
        rewrite_lines(out / STEPS, [raw for raw, r in steps if r.get("trial_key") in have])
        steps = [(raw, r) for raw, r in steps if r.get("trial_key") in have]
    best = winners(sources)
    replace = superseded_keys(have, best)
    if replace:  # skipped in the output, finished by a shard since: supersede, as a resume does
        append_lines(out / SUPERSEDED, [raw for raw, r in rows if r.get("trial_key") in replace])
        append_lines(out / SUPERSEDED_STEPS, [raw for raw, r in steps if r.get("trial_key") in replace])
        rewrite_lines(out / STEPS, [raw for raw, r in steps if r.get("trial_key") not in replace])
        rewrite_lines(out / TRIALS, [raw for raw, r in rows if r.get("trial_key") not in replace])
        for k in replace:
            del have[k]
        rep.superseded = len(replace)
    for s in sources:
        for name in SUPERSEDED_FILES:  # every shard's superseded lines, once each
            seen = {raw for raw, _ in complete_records(out / name)}
            append_lines(out / name, [raw for raw, _ in complete_records(s.dir / name) if raw not in seen])
        _copy_shots(s.dir, shots, {p.stem for p in shots.glob(shot_name("*"))}, rep)
    with (out / STEPS).open("a", encoding="utf-8") as st, (out / TRIALS).open("a", encoding="utf-8") as tr:
        for k, s in best.items():
            if k in have:
                continue
            st.writelines(s.steps.get(k, []))  # its steps first, then its line (a kill leaves orphans only)
            st.flush()
            tr.write(s.trials[k][0])
            tr.flush()
            have[k] = s.trials[k][1]
            s.added += 1
            rep.added += 1
        os.fsync(st.fileno())
        os.fsync(tr.fileno())
    plan = {k: raw for k, raw in _lines_keyed(out / PLAN)}
    for s in sources:
        for k, raw in s.plan:
            plan.setdefault(k, raw)
    rewrite_lines(out / PLAN, plan.values())
    rep.present = len(have)
    rep.finished = sum(r.get("status") in FINISHED for r in have.values())
    if not (out / META).is_file():
        (out / META).write_text(json.dumps(meta, indent=1, default=str), encoding="utf-8")
    _copy_hydra(sources[0].dir, out)


def _lines_keyed(path: Path) -> Iterator[tuple[str, str]]:
    for raw, r in complete_records(path):
        if isinstance(r.get("trial_key"), str):
            yield r["trial_key"], raw


def _write_accounts(
    out: Path, sources: list[Source], rep: MergeReport, old: dict[str, Any], count: Any, digest: Any
) -> None:
    """``run.json``, ``summary.md`` and ``merge.json`` of the merged directory."""
    from dvoc_bench.runner.summary import format_table, summarise

    trials = [r for _, r in complete_records(out / TRIALS)]
    first = read_run_info(sources[0].dir)
    meta = _meta(out)
    eps = float((meta.get("settings") or {}).get("loop.epsilon", 30.0))
    (out / SUMMARY).write_text(format_table(summarise(trials), eps) + "\n", "utf-8")
    run = {
        "experiment": first.get("experiment"),
        "planned": rep.planned,
        "finished": len(trials),
        "simulated": any(t.get("simulated") for t in trials),
        "frames": first.get("frames"),
        "fingerprint": first.get("fingerprint") or meta.get("digest"),
        "merged_from": sorted(rep.shards),
    }
    write_run_info(out, run)
    account = {
        "fingerprint": run["fingerprint"],
        "planned": rep.planned,
        "count": count,
        "plan_digest": digest,
        "shards": rep.shards,
        "merges": [
            *(old.get("merges") or []),
            {
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "inputs": [{"dir": str(s.dir), "shard": s.shard, "added": s.added} for s in sources],
                "added": rep.added,
                "superseded": rep.superseded,
                "present": rep.present,
                "frames_copied": rep.frames_copied,
            },
        ],
    }
    tmp = out / (MERGE + TMP)
    tmp.write_text(json.dumps(account, indent=1), encoding="utf-8")
    os.replace(tmp, out / MERGE)


__all__ = ["MergeReport", "differences", "find_inputs", "merge_runs", "superseded_keys", "winners"]
