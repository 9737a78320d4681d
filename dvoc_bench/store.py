"""The run directory (§6): append-only JSONL records, content-addressed frames, resume.

Layout::

    <run_dir>/plan.jsonl       every planned TrialSpec (rewritten at each start; same plan, same file)
    <run_dir>/trials.jsonl     one line per finished trial (written after its steps; flushed at once,
                               fsynced at most once a second and at close)
    <run_dir>/steps.jsonl      one line per model call of finished trials
    <run_dir>/frames/<sha256>.png

Crash safety: a trial's steps and then its trial line are appended only when the trial ends, so a kill
loses at most the trials in flight. On open, a torn last line (no trailing newline) is cut off, and
steps whose trial line never made it are dropped, so a resumed trial's steps are not duplicated.

Resume: ``ok`` trials are done. ``skipped`` trials (a provider died) are always run again, ``error``
trials only with ``retry_errors=True``. The record and steps of a trial that is run again are moved to
``superseded.jsonl`` / ``superseded_steps.jsonl`` (nothing is lost), so ``trials.jsonl`` keeps exactly one
line per trial.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dvoc_bench.records import dumps as _dumps
from dvoc_bench.records import read_jsonl

PLAN, TRIALS, STEPS, FRAMES = "plan.jsonl", "trials.jsonl", "steps.jsonl", "frames"


def _repair_tail(path: Path) -> None:
    """Cut a torn last line (a write interrupted by a kill)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return
        # Find the last newline; everything after it is a partial line.
        pos = size
        while pos > 0:
            step = min(65536, pos)
            f.seek(pos - step)
            chunk = f.read(step)
            i = chunk.rfind(b"\n")
            if i >= 0:
                f.truncate(pos - step + i + 1)
                return
            pos -= step
        f.truncate(0)


def _rewrite(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Replace a JSONL file atomically."""
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.writelines(_dumps(r) + "\n" for r in rows)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class RunStore:
    """Reads and appends the records of one run directory."""

    def __init__(self, run_dir: Path | str, *, retry_errors: bool = False):
        self.dir = Path(run_dir)
        self.frames_dir = self.dir / FRAMES
        self.frames_dir.mkdir(parents=True, exist_ok=True)
        for name in (TRIALS, STEPS):
            _repair_tail(self.dir / name)
        rows = [r for r in read_jsonl(self.dir / TRIALS) if "trial_key" in r]
        done = {"ok", "error"} if not retry_errors else {"ok"}
        self.finished: set[str] = {r["trial_key"] for r in rows if r.get("status", "ok") in done}
        rerun = [r for r in rows if r["trial_key"] not in self.finished]
        if rerun:
            self._supersede(rows, rerun)
        self._compact_steps()
        self._known_frames: set[str] = set()
        self.fsync_every_s = 1.0
        """Trial lines are flushed at once and fsynced at most this often (and at close)."""
        self._last_sync = 0.0
        self._trials = (self.dir / TRIALS).open("a", encoding="utf-8")
        self._steps = (self.dir / STEPS).open("a", encoding="utf-8")

    def _supersede(self, rows: list[dict[str, Any]], rerun: list[dict[str, Any]]) -> None:
        """Move the records (and steps) of trials to be run again out of the live files."""
        keys = {r["trial_key"] for r in rerun}
        steps = list(read_jsonl(self.dir / STEPS))
        with (self.dir / "superseded.jsonl").open("a", encoding="utf-8") as f:
            f.writelines(_dumps(r) + "\n" for r in rerun)
        with (self.dir / "superseded_steps.jsonl").open("a", encoding="utf-8") as f:
            f.writelines(_dumps(r) + "\n" for r in steps if r.get("trial_key") in keys)
        _rewrite(self.dir / TRIALS, [r for r in rows if r["trial_key"] not in keys])

    def _compact_steps(self) -> None:
        path = self.dir / STEPS
        if not path.exists():
            return
        rows = list(read_jsonl(path))
        keep = [r for r in rows if r.get("trial_key") in self.finished]
        if len(keep) == len(rows):
            return
        _rewrite(path, keep)

    def write_plan(self, specs: Iterable[Any]) -> None:
        """Write the plan (atomically)."""
        tmp = self.dir / (PLAN + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.writelines(_dumps(s) + "\n" for s in specs)
        os.replace(tmp, self.dir / PLAN)

    def save_frame(self, png: bytes) -> str:
        """Store a PNG under its sha256 (once) and return the hash."""
        sha = hashlib.sha256(png).hexdigest()
        if sha in self._known_frames:
            return sha
        path = self.frames_dir / f"{sha}.png"
        if not path.exists():
            tmp = path.with_name(f".{sha}.tmp")
            tmp.write_bytes(png)
            os.replace(tmp, path)
        self._known_frames.add(sha)
        return sha

    def append_trial(self, record: dict[str, Any], steps: Iterable[Any]) -> None:
        """Append a finished trial: its steps first, then its line (flushed and fsynced)."""
        lines = [_dumps(s) + "\n" for s in steps]
        if lines:
            self._steps.writelines(lines)
            self._steps.flush()
        self._trials.write(_dumps(record) + "\n")
        self._trials.flush()  # in the OS now: a killed process loses nothing written
        now = time.monotonic()
        if now - self._last_sync >= self.fsync_every_s:  # against a machine crash, at most once a second
            os.fsync(self._trials.fileno())
            self._last_sync = now
        self.finished.add(record["trial_key"])

    def trials(self) -> list[dict[str, Any]]:
        """All trial records written so far."""
        return list(read_jsonl(self.dir / TRIALS))

    def close(self) -> None:
        for f in (self._steps, self._trials):
            f.flush()
            os.fsync(f.fileno())
        self._trials.close()
        self._steps.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
