"""The run directory's contract, in one place: its layout, how its JSONL files are read and written, how a
torn tail is cut, which lines count as records, and what ``run.json`` says about the stored shots.

Layout (docs/run-directory.md)::

    <run_dir>/.lock                  LOCK: the holder of the directory's lock (PID, host, since)
    <run_dir>/.hydra/<time>/         HYDRA: one Hydra output folder per invocation
    <run_dir>/plan.jsonl             PLAN: every planned trial (TrialSpec)
    <run_dir>/trials.jsonl           TRIALS: one line per finished trial
    <run_dir>/steps.jsonl            STEPS: one line per model call of the finished trials
    <run_dir>/superseded.jsonl       SUPERSEDED: trial lines of trials run again (a resume, a merge)
    <run_dir>/superseded_steps.jsonl SUPERSEDED_STEPS: their steps
    <run_dir>/frames/<sha256>.png    SHOTS: the shots (every image a model was sent), content-addressed
    <run_dir>/run.json               RUN: counts, run.frames, the fingerprint digest (shard, merge sources)
    <run_dir>/summary.md             SUMMARY: the printed table
    <run_dir>/run_meta.json          META: the fingerprint a resume is checked against
    <run_dir>/shard.json             SHARD: a shard's record (run.shard=I/N)
    <run_dir>/merge.json             MERGE: a merged directory's account
    <run_dir>/probe.jsonl, probe.md, probe.json   the frame probe's answers, table and verdicts
    <run_dir>/doctor/<time>/         DOCTOR: what ``doctor --repair`` moved aside
    <run_dir>/report/, <run_dir>/view/   REPORT, VIEW: the report's and the viewer's default output

The word: a *frame* is the coordinate frame an answer is read in (docs/frames.md); the stored images are
*shots*. Only the folder keeps its old name, ``frames/`` (and the config key ``run.frames``, recorded in
``run.json`` as ``frames``), so every run directory written before still reads.

Nothing else in ``dvoc_bench/`` spells a run directory's file name (``tests/test_rundir_home.py``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvoc_bench.core.jsonread import MAX_LINE_BYTES, bounded_lines, load_file, loads
from dvoc_bench.core.records import to_jsonable

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------------ layout

PLAN = "plan.jsonl"
"""Every planned trial (a ``TrialSpec`` per line, with its ``trial_key``)."""
TRIALS = "trials.jsonl"
"""One line per finished trial (a ``TrialRecord``)."""
STEPS = "steps.jsonl"
"""One line per model call of the finished trials (a ``Step``)."""
SUPERSEDED = "superseded.jsonl"
"""Trial lines of trials that were run again (moved out of :data:`TRIALS`, never deleted)."""
SUPERSEDED_STEPS = "superseded_steps.jsonl"
"""The steps of the trials in :data:`SUPERSEDED`."""
SHOTS = "frames"
"""The folder of the shots, ``<sha256>.png`` each (its name on disk predates the word *shot*)."""
RUN = "run.json"
"""What the run says of itself: planned and finished counts, ``frames`` (``run.frames``), fingerprint."""
SUMMARY = "summary.md"
"""The table the run printed."""
META = "run_meta.json"
"""The fingerprint (settings, swept lists, scene hashes) a resume is checked against."""
SHARD = "shard.json"
"""A shard's record: the shard, the whole plan's size and key digest, the fingerprint."""
MERGE = "merge.json"
"""A merged run directory's account of every merge."""
LOCK = ".lock"
"""The lock file (holds the PID, host and start time of the current holder)."""
HYDRA = ".hydra"
"""Hydra's output folders, one per invocation (``.hydra/<time>/``; old runs: ``.hydra/`` itself)."""
HYDRA_OVERRIDES = "overrides.yaml"
"""The command line's overrides, in a Hydra output folder."""
HYDRA_CONFIG = "config.yaml"
"""The resolved config, in a Hydra output folder."""
PROBE_ANSWERS = "probe.jsonl"
"""``experiment=frame_probe``: one answer per line."""
PROBE_TABLE = "probe.md"
"""``experiment=frame_probe``: the verdicts as a table."""
PROBE_VERDICTS = "probe.json"
"""``experiment=frame_probe``: the verdicts."""
DOCTOR = "doctor"
"""Where ``doctor --repair`` moves what it takes out (``doctor/<time>/``)."""
REJECTED = ".rejected.jsonl"
"""Suffix of a file's rejected lines in a doctor folder (``trials.rejected.jsonl``)."""
REASONS = "reasons.jsonl"
"""Why each line and file of a doctor folder was moved aside."""
REPORT = "report"
"""The report's default output folder inside a run directory."""
VIEW = "view"
"""The run viewer's default output folder inside a run directory."""
TMP = ".tmp"
"""Suffix of the temporary file of an atomic write (a stray one is left by an interrupted write)."""

RECORD_FILES = (PLAN, TRIALS, STEPS)
"""The JSONL files whose every line is a keyed record."""
PAID_STEP_FILES = (STEPS, SUPERSEDED_STEPS)
"""The files of a run directory whose calls have been paid for."""

SHOT_NAME = re.compile(r"^[0-9a-f]{64}\.png$")
"""A shot's file name: the sha256 of its content."""


def shot_name(sha: str) -> str:
    """The file name of the shot whose content hashes to ``sha``."""
    return f"{sha}.png"


def shot_rel(sha: str) -> str:
    """A shot's path relative to the run directory (``frames/<sha>.png``)."""
    return f"{SHOTS}/{shot_name(sha)}"


def shot_path(run_dir: Path | str, sha: str) -> Path:
    """A shot's path."""
    return Path(run_dir) / SHOTS / shot_name(sha)


def is_run_dir(path: Path | str) -> bool:
    """A folder that holds finished trials (``trials.jsonl``)."""
    return (Path(path) / TRIALS).is_file()


def trial_files(root: Path | str) -> Iterator[Path]:
    """Every ``trials.jsonl`` at or below ``root`` (unordered)."""
    return Path(root).rglob(TRIALS)


def read_json(path: Path) -> dict[str, Any] | None:
    """A JSON object file (``run.json``, ``shard.json``, ...), ``None`` when absent, unreadable or not an
    object."""
    try:
        data = load_file(path)
    except (OSError, ValueError):  # JsonError: not JSON, nested too deeply, too large
        return None
    return data if isinstance(data, dict) else None


def read_run_info(run_dir: Path | str) -> dict[str, Any]:
    """``run.json`` (``{}`` when absent or unreadable)."""
    return read_json(Path(run_dir) / RUN) or {}


def write_run_info(run_dir: Path | str, info: dict[str, Any]) -> None:
    """Write ``run.json``."""
    (Path(run_dir) / RUN).write_text(json.dumps(info, indent=1), encoding="utf-8")


def shots_mode(run_dir: Path | str) -> str | None:
    """``run.frames`` as the run recorded it in ``run.json`` (``all | sent | none``: which shots were
    stored), ``None`` when the run does not say."""
    mode = read_run_info(run_dir).get("frames")
    return str(mode) if mode else None


# ----------------------------------------------------------------------------------------------- writing


def dumps(obj: object) -> str:
    """One JSONL line (without the newline) for a record or a plain value."""
    return json.dumps(to_jsonable(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def rewrite_lines(path: Path, lines: Iterable[str | bytes], tmp_suffix: str = TMP) -> None:
    """Replace ``path`` atomically by ``lines`` (written as given; text as UTF-8), through
    ``<name><tmp_suffix>``, fsynced before the rename."""
    tmp = path.with_name(path.name + tmp_suffix)
    with tmp.open("wb") as f:
        f.writelines(x.encode("utf-8") if isinstance(x, str) else x for x in lines)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_jsonl(path: Path, rows: Iterable[object]) -> None:
    """Replace a JSONL file atomically by ``rows``, one :func:`dumps` line each."""
    rewrite_lines(path, (dumps(r) + "\n" for r in rows))


def append_lines(path: Path, lines: Iterable[str]) -> None:
    """Append lines as written (fsynced); nothing happens for none."""
    lines = list(lines)
    if not lines:
        return
    with path.open("a", encoding="utf-8") as f:
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())


def repair_tail(path: Path) -> None:
    """Cut a torn last line (a write interrupted by a kill): everything after the last newline."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 1))
        if f.read(1) == b"\n":
            return
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


# ----------------------------------------------------------------------------------------------- reading


@dataclass
class Line:
    """One line of a JSONL file, as on disk."""

    number: int
    """1-based line number."""
    raw: bytes
    """The bytes exactly as on disk, with the newline when the line has one (of a line longer than
    :data:`~dvoc_bench.core.jsonread.MAX_LINE_BYTES`, only its first bytes: see :attr:`whole`)."""
    obj: dict[str, Any] | None = None
    """The record, when a reader checked it (``None``: torn, unreadable, or failing its check)."""
    why: str | None = None
    """Set by the doctor when the line is to be moved aside."""
    offset: int = 0
    """Where the line starts in its file (bytes)."""
    size: int = -1
    """Its length on disk in bytes (``-1``: ``len(raw)``)."""

    @property
    def whole(self) -> bool:
        """``raw`` is the whole line (else it was too long to hold: copy it by ``offset`` and ``size``)."""
        return self.size < 0 or self.size == len(self.raw)

    @property
    def complete(self) -> bool:
        """The line ends with its newline (a last line without one is a torn write); a line too long to
        hold is never complete."""
        return self.whole and self.raw.endswith(b"\n")


def parse_line(raw: bytes | str, where: str = "line") -> Any:
    """The JSON value of a line, read by the bounded reader (:mod:`dvoc_bench.core.jsonread`); raises its
    ``JsonError`` (a ``ValueError``) when it is not JSON, not UTF-8, nested too deeply or too long."""
    return loads(raw, where, max_bytes=MAX_LINE_BYTES)


def record_of(raw: bytes | str) -> dict[str, Any] | None:
    """The line's record: a JSON object, else ``None`` (blank, torn, not an object, nested too deeply, too
    long)."""
    try:
        obj = parse_line(raw)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def read_lines(path: Path) -> Iterator[Line]:
    """Every line of a JSONL file (blank ones included), in order; nothing when the file is absent. A line
    longer than :data:`~dvoc_bench.core.jsonread.MAX_LINE_BYTES` is never held whole (its ``raw`` is its
    first bytes, ``whole`` is false)."""
    if not path.is_file():
        return
    with path.open("rb") as f:
        for n, (offset, raw, size) in enumerate(bounded_lines(f), 1):
            yield Line(n, raw, offset=offset, size=size)


def read_jsonl(path: Path | str) -> Iterator[dict[str, Any]]:
    """The records of a JSONL file, in order. Blank lines are passed over; a line that does not parse (a
    torn write), nested too deeply or too long is skipped with a warning naming it."""
    path = Path(path)
    for ln in read_lines(path):
        text = ln.raw.strip()
        if not text:
            continue
        if not ln.whole:
            log.warning("%s:%d: skipped a line of %d bytes (at most %d are read)", path, ln.number, ln.size,
                        MAX_LINE_BYTES)  # fmt: skip
            continue
        try:
            yield parse_line(text, f"{path}:{ln.number}")
        except ValueError as e:  # a torn write, not UTF-8, or nested too deeply
            log.warning("skipped a line that does not parse (a torn write?): %s", e)


def complete_records(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(line as written, record) of every complete line that is a JSON object; stops at a torn last line
    (no newline), so what is copied on is only what a writer finished."""
    for ln in read_lines(path):
        if not ln.complete:
            return
        rec = record_of(ln.raw)
        if rec is not None:
            yield ln.raw.decode("utf-8", "replace"), rec


# ----------------------------------------------------------------------------------------- line checks


def plan_key(o: dict[str, Any]) -> Any:
    """A plan line's trial key (``trial_key``; ``key`` in run dirs written before the typed records)."""
    return o.get("trial_key", o.get("key"))


def plan_line_ok(o: dict[str, Any]) -> bool:
    """A plan line is a record with its trial key."""
    return isinstance(plan_key(o), str)


def trial_line_ok(o: dict[str, Any]) -> bool:
    """A trial line is a record with its ``trial_key``."""
    return isinstance(o.get("trial_key"), str)


def step_line_ok(o: dict[str, Any]) -> bool:
    """A step line is a record with its ``trial_key`` and ``index``."""
    return isinstance(o.get("trial_key"), str) and isinstance(o.get("index"), int)


LINE_OK: dict[str, Callable[[dict[str, Any]], bool]] = {
    PLAN: plan_line_ok,
    TRIALS: trial_line_ok,
    STEPS: step_line_ok,
}
"""The check each record file's lines must pass."""


def checked_lines(path: Path, ok: Callable[[dict[str, Any]], bool]) -> list[Line]:
    """Every line of a record file with its record, ``obj`` ``None`` for a line that is torn (a last line
    without its newline, even if it parses), blank, unreadable, not an object or failing ``ok``."""
    out = []
    for ln in read_lines(path):
        rec = record_of(ln.raw) if ln.complete else None
        ln.obj = rec if rec is not None and ok(rec) else None
        out.append(ln)
    return out
