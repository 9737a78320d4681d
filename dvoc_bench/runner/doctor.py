"""The doctor of a run directory (behind ``python -m dvoc_bench.doctor RUN_DIR [--repair]``): check it,
optionally repair it.

Checks:

- **torn lines**: a line of ``plan.jsonl``, ``trials.jsonl`` or ``steps.jsonl`` that is not a JSON object
  with its key (``key``, ``trial_key``, ``trial_key`` + ``index``), or a last line without its newline;
- **duplicates**: a plan key, a trial key or a step (trial key + index) written more than once (two
  writers on one directory);
- **orphan steps**: steps whose trial has no line in ``trials.jsonl``;
- **shots**: a ``frames/<sha256>.png`` whose content does not hash to its name (corrupt), a shot that a
  step references but that is absent (missing; not with ``run.frames=none``, which stores none);
- **plan vs trials**: planned trials without a trial line (not finished: run the same command again to
  finish them), trial lines whose key is not in the plan (not planned: the plan was rewritten by a
  later invocation with another config);
- **incomplete steps**: a trial whose steps do not number ``model_calls``;
- **stray temporary files**: ``*.tmp`` left by an interrupted atomic write.

:func:`diagnose` is read-only: a :class:`Report` (the door prints it; exit 0 when clean, 1 when problems
were found). :func:`repair` takes the run directory's lock (:class:`~dvoc_bench.runner.store.RunDirBusy`
when another process holds it; the door exits 2) and moves what is bad aside, into
``<run_dir>/doctor/<time>/``, never deleting anything: rejected lines go to ``<name>.rejected.jsonl``
(byte for byte, with ``reasons.jsonl`` saying which line of which file and why), corrupt frames and stray
files to ``files/<their path>``. Of each key the first record is kept; for a trial written twice, the steps
kept are the block (indices 0, 1, ...) that matches the kept trial line (its number of calls, tokens and
final point), else the first block. Missing shots, unfinished and unplanned trials and incomplete steps
cannot be repaired here; they are reported. The report of ``repair`` is that of a check after it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.core.jsonread import copy_range
from dvoc_bench.core.rundir import (
    DOCTOR,
    LINE_OK,
    META,
    PLAN,
    REASONS,
    RECORD_FILES,
    REJECTED,
    RUN,
    SHOT_NAME,
    SHOTS,
    STEPS,
    TMP,
    TRIALS,
    Line,
    checked_lines,
    plan_key,
    rewrite_lines,
    shot_rel,
    shots_mode,
)
from dvoc_bench.runner.store import RunDirLock, lock_holder

__all__ = ["Problem", "Report", "diagnose", "repair"]

_SKIP_DIRS = {DOCTOR}

RUN_RECORDS = (PLAN, TRIALS, STEPS, RUN, META)
"""A folder holding none of these is not a run directory (a run writes its plan before its first trial)."""


def _check_dir(run_dir: Path) -> None:
    """``FileNotFoundError`` (one line) for a missing folder or one that holds no run record."""
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no such run directory: {run_dir}")
    if not any((run_dir / name).is_file() for name in RUN_RECORDS):
        raise FileNotFoundError(f"not a run directory (none of {', '.join(RUN_RECORDS)}): {run_dir}")

REPAIRABLE = frozenset(
    {
        "torn_line",
        "duplicate_plan",
        "duplicate_trial",
        "duplicate_step",
        "orphan_step",
        "corrupt_frame",
        "stray_tmp",
        "stray_file",
    }
)
"""Problem kinds ``--repair`` fixes by moving something aside."""

KIND_TEXT = {
    "torn_line": "torn or unreadable lines",
    "duplicate_plan": "duplicate plan lines (a key planned twice)",
    "duplicate_trial": "duplicate trial lines (a trial key seen before)",
    "duplicate_step": "duplicate steps (a trial key + index seen before, or another writer's copy)",
    "orphan_step": "orphan steps (no trial line for their trial)",
    "corrupt_frame": "corrupt frames (content does not hash to the name)",
    "missing_frame": "missing frames (referenced by a step, absent)",
    "stray_tmp": "stray temporary files",
    "stray_file": f"stray files in {SHOTS}/ (not named <sha256>.png)",
    "unfinished_trial": "planned trials not finished (run the same command again to finish them)",
    "unplanned_trial": "trial lines not in the plan (the plan was rewritten by a later invocation)",
    "incomplete_steps": "trials whose steps do not number model_calls",
}


@dataclass(frozen=True)
class Problem:
    """One finding."""

    kind: str
    """One of :data:`KIND_TEXT`."""
    path: str
    """File it concerns, relative to the run directory."""
    detail: str
    """What exactly (a key, a hash)."""
    line: int | None = None
    """1-based line number for line problems."""


@dataclass
class Report:
    """What :func:`diagnose` found (and, after :func:`repair`, what was moved where)."""

    run_dir: Path
    """The directory checked."""
    counts: dict[str, int] = field(default_factory=dict)
    """Lines / keys / files seen: ``plan``, ``trials``, ``steps``, ``frames`` (the shots)."""
    problems: list[Problem] = field(default_factory=list)
    """Everything found, in check order."""
    holder: dict[str, Any] | None = None
    """The lock holder's record when another process is writing the directory (results may be moving)."""
    moved_to: Path | None = None
    """Where :func:`repair` put what it moved aside (``None`` when nothing was moved)."""
    moved: int = 0
    """Lines and files moved aside."""

    @property
    def clean(self) -> bool:
        return not self.problems

    def by_kind(self) -> dict[str, list[Problem]]:
        out: dict[str, list[Problem]] = defaultdict(list)
        for p in self.problems:
            out[p.kind].append(p)
        return dict(out)

    def lines(self, examples: int = 3) -> list[str]:
        """The human report."""
        c = self.counts
        out = [f"doctor: {self.run_dir}"]
        if self.holder:
            out.append(
                f"  note: in use by pid {self.holder.get('pid', '?')} on host {self.holder.get('host', '?')};"
                " a running sweep changes the files while they are read"
            )
        out.append(
            f"  plan {c.get('plan', 0)} trials, {TRIALS} {c.get('trials', 0)} lines, "
            f"{STEPS} {c.get('steps', 0)} lines, frames {c.get('frames', 0)} files"
        )
        for kind, probs in self.by_kind().items():
            fix = "repairable" if kind in REPAIRABLE else "not repairable here"
            out.append(f"  {len(probs)} {KIND_TEXT.get(kind, kind)} [{fix}]")
            for p in probs[:examples]:
                where = f"{p.path}:{p.line}" if p.line is not None else p.path
                out.append(f"      {where}: {p.detail}")
            if len(probs) > examples:
                out.append(f"      ... and {len(probs) - examples} more")
        if self.moved_to is not None:
            out.append(f"  moved {self.moved} lines/files aside into {self.moved_to}")
        out.append("  clean" if self.clean else f"  {len(self.problems)} problems")
        return out


# ------------------------------------------------------------------------------------------- reading


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------- check


@dataclass
class _State:
    """The parsed files and the verdict on every line (``Line.why``)."""

    plan: list[Line]
    trials: list[Line]
    steps: list[Line]
    bad_shots: list[tuple[str, str]]  # (relative path, detail)
    stray: list[str]  # relative paths


def _block_matches(trial: dict[str, Any], block: Sequence[Line]) -> bool:
    """Do these steps belong to this trial line (same number of calls, tokens, parse errors, and a step
    that shows the final point)?"""
    steps = [ln.obj for ln in block if ln.obj is not None]
    if len(steps) != trial.get("model_calls", len(steps)):
        return False
    for name in ("tokens_in", "tokens_out"):
        if name in trial and sum(s.get(name) or 0 for s in steps) != (trial.get(name) or 0):
            return False
    if "parse_errors" in trial and sum(s.get("parse_status") == "parse_error" for s in steps) != trial.get(
        "parse_errors"
    ):
        return False
    final = trial.get("final_point")
    if not steps or not isinstance(final, list) or len(final) != 2:
        return True

    def near(p: Any) -> bool:
        if isinstance(p, dict):
            p = [p.get("x"), p.get("y")]
        return (
            isinstance(p, list)
            and len(p) == 2
            and all(isinstance(v, int | float) for v in p)
            and abs(p[0] - final[0]) < 1e-6
            and abs(p[1] - final[1]) < 1e-6
        )

    return any(near(s.get(k)) for s in steps for k in ("draft", "next_draft", "values_px"))


def _blocks(lines: Iterable[Line]) -> list[list[Line]]:
    """Steps of one trial in file order, cut into runs of indices 0, 1, 2, ... (one per writer)."""
    blocks: list[list[Line]] = []
    prev: int | None = None
    for ln in lines:
        assert ln.obj is not None
        idx = ln.obj["index"]
        if blocks and prev is not None and idx == prev + 1:
            blocks[-1].append(ln)
        else:
            blocks.append([ln])
        prev = idx
    return blocks


def _judge(run_dir: Path, locked: bool = False) -> tuple[_State, Report]:
    rep = Report(run_dir=run_dir)
    rep.holder = None if locked else lock_holder(run_dir)
    plan, trials, steps = (checked_lines(run_dir / name, LINE_OK[name]) for name in RECORD_FILES)
    rep.counts.update(plan=len(plan), trials=len(trials), steps=len(steps))

    def bad(kind: str, name: str, ln: Line, detail: str) -> None:
        ln.why = kind
        rep.problems.append(Problem(kind, name, detail, ln.number))

    # torn lines
    for name, lines in ((PLAN, plan), (TRIALS, trials), (STEPS, steps)):
        for ln in lines:
            if ln.obj is None:
                text = ln.raw[:80].decode("utf-8", "replace").rstrip("\n")
                size = "" if ln.whole else f" (a line of {ln.size} bytes, too long to read)"
                bad("torn_line", name, ln, f"not a complete record{size}: {text!r}")
    # duplicates: the first record of each key is kept
    planned: set[str] = set()
    for ln in plan:
        if ln.obj is not None:
            if plan_key(ln.obj) in planned:
                bad("duplicate_plan", PLAN, ln, f"key {plan_key(ln.obj)} planned before")
            planned.add(plan_key(ln.obj))
    kept_trials: dict[str, dict[str, Any]] = {}
    for ln in trials:
        if ln.obj is not None:
            k = ln.obj["trial_key"]
            if k in kept_trials:
                bad("duplicate_trial", TRIALS, ln, f"trial {k} written before")
            else:
                kept_trials[k] = ln.obj
    # steps: orphans, then per trial the block that belongs to the kept trial line
    by_key: dict[str, list[Line]] = defaultdict(list)
    for ln in steps:
        if ln.obj is None:
            continue
        k = ln.obj["trial_key"]
        if k not in kept_trials:
            bad("orphan_step", STEPS, ln, f"trial {k} has no trial line")
        else:
            by_key[k].append(ln)
    kept_steps: list[dict[str, Any]] = []
    for k, lines in by_key.items():
        blocks = _blocks(lines)
        choice = next((b for b in blocks if _block_matches(kept_trials[k], b)), blocks[0])
        seen: set[int] = set()
        for ln in choice:
            assert ln.obj is not None
            if ln.obj["index"] in seen:
                bad("duplicate_step", STEPS, ln, f"trial {k} step {ln.obj['index']} written before")
            else:
                seen.add(ln.obj["index"])
                kept_steps.append(ln.obj)
        for b in blocks:
            if b is choice:
                continue
            for ln in b:
                assert ln.obj is not None
                bad("duplicate_step", STEPS, ln, f"trial {k} step {ln.obj['index']}: another copy")
    # incomplete steps of kept trials
    n_steps = Counter(s["trial_key"] for s in kept_steps)
    for k, t in kept_trials.items():
        calls = t.get("model_calls")
        if isinstance(calls, int) and calls != n_steps.get(k, 0):
            rep.problems.append(
                Problem(
                    "incomplete_steps", STEPS, f"trial {k}: model_calls {calls}, steps {n_steps.get(k, 0)}"
                )
            )
    # plan vs trials
    if plan:
        for k in [plan_key(ln.obj) for ln in plan if ln.obj is not None and ln.why is None]:
            if k not in kept_trials:
                rep.problems.append(Problem("unfinished_trial", PLAN, f"trial {k} has no trial line"))
        for k in kept_trials:
            if k not in planned:
                rep.problems.append(Problem("unplanned_trial", TRIALS, f"trial {k} is not in {PLAN}"))
    # frames
    shots_dir = run_dir / SHOTS
    bad_shots: list[tuple[str, str]] = []
    strays: list[str] = []
    present: set[str] = set()
    n_shots = 0
    if shots_dir.is_dir():
        for p in sorted(shots_dir.iterdir()):
            if p.is_file() and not SHOT_NAME.match(p.name) and not p.name.endswith(TMP):
                rel = f"{SHOTS}/{p.name}"
                strays.append(rel)
                rep.problems.append(Problem("stray_file", rel, "not a frame (its name is not <sha256>.png)"))
            if not p.is_file() or not SHOT_NAME.match(p.name):
                continue
            n_shots += 1
            sha = _sha256_file(p)
            if sha != p.name[:-4]:
                rel = f"{SHOTS}/{p.name}"
                bad_shots.append((rel, f"content hashes to {sha[:16]}..."))
                rep.problems.append(Problem("corrupt_frame", rel, f"content hashes to {sha[:16]}..."))
            else:
                present.add(p.name[:-4])
    rep.counts["frames"] = n_shots
    corrupt = {rel[len(SHOTS) + 1 : -4] for rel, _ in bad_shots}  # reported above, not twice
    referenced: set[str] = {s["frame_sha"] for s in kept_steps if isinstance(s.get("frame_sha"), str)}
    if shots_mode(run_dir) == "none":  # run.frames=none: steps keep hashes, no file was written
        referenced = set()
    for sha in sorted(referenced - present - corrupt):
        rep.problems.append(Problem("missing_frame", shot_rel(sha), "referenced by a step, absent"))
    # stray temporary files (and the stray files of frames/, found above)
    stray: list[str] = list(strays)
    for root, dirs, files in os.walk(run_dir):
        dirs[:] = [d for d in dirs if not (Path(root) == run_dir and d in _SKIP_DIRS)]
        for f in files:
            if f.endswith(TMP):
                rel = str((Path(root) / f).relative_to(run_dir))
                stray.append(rel)
                rep.problems.append(Problem("stray_tmp", rel, "left by an interrupted write"))
    order = {k: i for i, k in enumerate(KIND_TEXT)}
    rep.problems.sort(key=lambda p: (order.get(p.kind, len(order)), p.path, p.line or 0))
    return _State(plan, trials, steps, bad_shots, stray), rep


def diagnose(run_dir: Path | str) -> Report:
    """Check a run directory without changing anything."""
    run_dir = Path(run_dir)
    _check_dir(run_dir)
    return _judge(run_dir)[1]


# --------------------------------------------------------------------------------------------- repair


def _rewrite_keep(path: Path, lines: list[Line]) -> None:
    """Replace ``path`` atomically by its lines that are kept (bytes unchanged), through a temporary file
    of its own name (a stray ``<name>.tmp`` is moved aside after, not overwritten)."""
    rewrite_lines(path, (ln.raw for ln in lines if ln.why is None), tmp_suffix=".doctor" + TMP)


def repair(run_dir: Path | str) -> Report:
    """Move everything repairable aside into ``<run_dir>/doctor/<time>/`` (under the run directory's lock;
    :class:`~dvoc_bench.runner.store.RunDirBusy` when another process holds it), then check again. Returns the
    report of the check after the repair, with ``moved_to`` and ``moved`` set."""
    run_dir = Path(run_dir)
    _check_dir(run_dir)
    with RunDirLock(run_dir):
        state, before = _judge(run_dir, locked=True)
        moved = 0
        dest: Path | None = None
        if any(p.kind in REPAIRABLE for p in before.problems):
            stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
            dest = run_dir / DOCTOR / stamp
            n = 1
            while dest.exists():
                n += 1
                dest = run_dir / DOCTOR / f"{stamp}_{n}"
            dest.mkdir(parents=True)
            reasons = []
            # 1. copy the rejected lines out, then 2. rewrite the live files without them
            for name, lines in ((PLAN, state.plan), (TRIALS, state.trials), (STEPS, state.steps)):
                rejected = [ln for ln in lines if ln.why is not None]
                if not rejected:
                    continue
                out = dest / (Path(name).stem + REJECTED)
                with out.open("wb") as f:
                    for ln in rejected:
                        if ln.whole:
                            f.write(ln.raw)
                        else:  # a line too long to hold is copied in pieces
                            copy_range(run_dir / name, ln.offset, ln.size, f)
                    f.flush()
                    os.fsync(f.fileno())
                reasons += [{"file": name, "line": ln.number, "kind": ln.why} for ln in rejected]
                moved += len(rejected)
            with (dest / REASONS).open("w", encoding="utf-8") as f:
                f.writelines(json.dumps(r) + "\n" for r in reasons)
                for rel, detail in state.bad_shots:
                    f.write(json.dumps({"file": rel, "kind": "corrupt_frame", "detail": detail}) + "\n")
                for rel in state.stray:
                    kind = "stray_tmp" if rel.endswith(TMP) else "stray_file"
                    f.write(json.dumps({"file": rel, "kind": kind}) + "\n")
            for name, lines in ((PLAN, state.plan), (TRIALS, state.trials), (STEPS, state.steps)):
                if any(ln.why is not None for ln in lines):
                    _rewrite_keep(run_dir / name, lines)
            for rel in [r for r, _ in state.bad_shots] + state.stray:
                target = dest / "files" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(run_dir / rel, target)
                moved += 1
        after = _judge(run_dir, locked=True)[1]
    after.moved_to, after.moved = dest, moved
    return after
