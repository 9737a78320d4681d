"""The run directory's writer: append-only JSONL records, content-addressed shots, resume. The layout and
the file names are :mod:`dvoc_bench.core.rundir`'s.

Layout::

    <run_dir>/plan.jsonl       every planned TrialSpec (rewritten at each start; same plan, same file)
    <run_dir>/trials.jsonl     one line per finished trial (written after its steps; flushed at once,
                               fsynced at most once a second and at close)
    <run_dir>/steps.jsonl      one line per model call of finished trials
    <run_dir>/frames/<sha256>.png  the shots (images sent to a model), stored once each

Crash safety: a trial's steps and then its trial line are appended only when the trial ends, so a kill
loses at most the trials in flight. On open, a torn last line (no trailing newline) is cut off, and
steps whose trial line never made it are dropped, so a resumed trial's steps are not duplicated.

Every string of a record passes the redactor (:mod:`dvoc_bench.core.redaction`) before it is written, except
the hashes and keys of :data:`EXACT_FIELDS`.

Resume: ``ok`` trials are done. ``skipped`` trials (a provider died) are always run again, ``error``
trials only with ``retry_errors=True``. The record and steps of a trial that is run again are moved to
``superseded.jsonl`` / ``superseded_steps.jsonl`` (nothing is lost), so ``trials.jsonl`` keeps exactly one
line per trial.

One writer: the store holds an exclusive lock on ``<run_dir>/.lock`` (``fcntl.flock``) from before it
touches anything (tail repair, supersede, compaction) until :meth:`RunStore.close`. A second process (or
a second store in the same process) on the same directory fails at once with :class:`RunDirBusy`, whose
one-line message names the holder's PID and host. The lock file stays (removing it would race); the lock
itself dies with its process, so a killed run never leaves the directory locked. ``flock`` is not reliable
on every network file system: keep run directories on a local disk.

The lock holds the directory, not its name: records and shots are written through the locked directory's
descriptor, and before each write (and, through :meth:`RunStore.verify`, at the end) the path is checked to
still be that directory (device and inode). A directory replaced under a running writer (moved, copied
over) stops it with :class:`RunStopped`, one line saying where the locked directory is now; so does a full
disk (``ENOSPC``, ``EDQUOT``; :func:`disk_full`), after which nothing more is written: the trials not
finished are not recorded, and what the disk cut short (a torn tail, orphan steps) is cut on the next open.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.records import to_jsonable
from dvoc_bench.core.redaction import redact_value
from dvoc_bench.core.rundir import (
    HYDRA,
    LOCK,
    PLAN,
    SHOTS,
    STEPS,
    SUPERSEDED,
    SUPERSEDED_STEPS,
    TRIALS,
    dumps,
    read_jsonl,
    repair_tail,
    rewrite_lines,
    shot_name,
    write_jsonl,
)

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The errors of a disk that cannot take more (no space left, quota exceeded)."""


class RunStopped(RuntimeError):
    """The run directory cannot be written on (its disk is full, or it was replaced while the run wrote it):
    not a trial's failure. The sweep stops at once; the trials not finished are not recorded (a resume
    completes them); the message is one line naming the path."""


def _mount_of(path: Path) -> Path:
    """The mount point of the file system ``path`` is on (the disk to free space on)."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return p


RUN_THEN = (
    "the run stops, the trials not finished are not recorded: free space and run the same command again to "
    "finish them"
)
"""What a run does on a full disk (:func:`disk_full`'s default)."""


def disk_full(e: BaseException, path: Path | str, then: str = RUN_THEN) -> RunStopped | None:
    """The one-line stop for an ``OSError`` of a full disk (``ENOSPC``, ``EDQUOT``) met writing ``path``
    (``then``: what happens now and what to do), else ``None``."""
    if not isinstance(e, OSError) or e.errno not in DISK_FULL:
        return None
    path = Path(path)
    why = "no space left" if e.errno == errno.ENOSPC else "disk quota exceeded"
    where = _mount_of(path)
    return RunStopped(f"{path}: the disk is full ({why} on the file system mounted at {where}); {then}")


class RunDirBusy(RuntimeError):
    """Another process (or another store of this one) holds the run directory's lock."""

    def __init__(self, run_dir: Path, holder: dict[str, Any] | None):
        self.run_dir = run_dir
        """The contested run directory."""
        self.holder = holder or {}
        """What the holder wrote into the lock file (``pid``, ``host``, ``since``), if readable."""
        h = self.holder
        who = f"pid {h.get('pid', '?')} on host {h.get('host', '?')}" if h else "another process"
        since = f" since {h['since']}" if h.get("since") else ""
        super().__init__(
            f"{run_dir} is in use by {who}{since}; wait for it to finish or choose another run dir"
        )


def _plausible(info: dict[str, Any]) -> bool:
    """False for a record left by a previous holder of this host that is gone (the new holder is about
    to overwrite it)."""
    if info.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(info["pid"]), 0)
    except ProcessLookupError:
        return False
    except (OSError, ValueError, TypeError):
        return True
    return True


def _read_holder(path: Path, wait_s: float = 1.0) -> dict[str, Any] | None:
    """The holder's record in the lock file (it is written just after the lock is taken: wait briefly)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            info = load_file(path)
            if isinstance(info, dict) and "pid" in info and _plausible(info):
                return info
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


class RunDirLock:
    """Exclusive, non-blocking lock on a run directory: ``fcntl.flock`` on the directory itself (a file a
    user can delete cannot let a second writer in), plus ``<run_dir>/.lock`` naming the holder.

    ``acquire`` raises :class:`RunDirBusy` at once when another open lock exists, in any process. Use as a
    context manager, or ``acquire()`` / ``release()``. The lock is not re-entrant.
    """

    def __init__(self, run_dir: Path | str):
        self.dir = Path(run_dir)
        """The locked directory."""
        self.path = self.dir / LOCK
        """The lock file."""
        self._fd: int | None = None
        self._dir_fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    @property
    def dir_fd(self) -> int:
        """The locked directory's file descriptor (what the store writes through)."""
        if self._dir_fd is None:
            raise RuntimeError(f"{self.dir}: the lock is not held")
        return self._dir_fd

    def replaced(self) -> str | None:
        """``None`` while ``dir`` is still the directory locked (same device and inode), else one line
        saying what happened and where the locked directory is now (it was moved, or deleted)."""
        held = os.fstat(self.dir_fd)
        try:
            now = os.stat(self.dir)
            if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                return None
        except OSError:
            pass
        try:
            where = os.readlink(f"/proc/self/fd/{self.dir_fd}")  # Linux: the locked directory's path now
        except OSError:
            where = "unknown"
        return (
            f"{self.dir} was replaced while this run wrote it (moved, copied over or deleted): the run stops "
            f"so that no second writer shares it; its records are in the directory it locked, now {where}"
        )

    def acquire(self) -> RunDirLock:
        if self._fd is not None:
            raise RuntimeError(f"{self.path}: already held by this object")
        self.dir.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(self.dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(dir_fd)
            raise RunDirBusy(self.dir, _read_holder(self.path)) from None
        except BaseException:
            os.close(dir_fd)
            raise
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except BaseException:
            os.close(dir_fd)
            raise
        self._dir_fd = dir_fd
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        data = (json.dumps(info) + "\n").encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock up (the file stays; its content names the last holder)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)
        dir_fd, self._dir_fd = self._dir_fd, None
        if dir_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(dir_fd, fcntl.LOCK_UN)
            os.close(dir_fd)

    def __enter__(self) -> RunDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def lock_holder(run_dir: Path | str) -> dict[str, Any] | None:
    """The holder's record (``.lock``) when another process holds the run directory's lock, else ``None``.

    Read-only: a shared lock is tried (and dropped at once) on the directory; nothing is created or
    written."""
    try:
        fd = os.open(Path(run_dir), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            info = _read_holder(Path(run_dir) / LOCK)
            return info if isinstance(info, dict) else {}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def discard_output_subdir(run_dir: Path | str, subdir: str | None) -> None:
    """Remove a refused invocation's own fresh Hydra output folder (``.hydra/<time>/``), and ``.hydra``
    itself if that leaves it empty. Never touches anything else: a ``subdir`` that is not strictly inside
    the run directory's ``.hydra`` (e.g. the old layout, ``.hydra`` itself) is left alone."""
    if not subdir:
        return
    run_dir = Path(run_dir).resolve()
    target = (run_dir / subdir).resolve()
    hydra = run_dir / HYDRA
    if target.parent != hydra or not target.is_dir():
        return
    shutil.rmtree(target, ignore_errors=True)
    with contextlib.suppress(OSError):
        hydra.rmdir()  # only when empty


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte (a short write, as a nearly full disk makes, goes on where it stopped)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


EXACT_FIELDS = frozenset(
    {"key", "trial_key", "frame_sha", "request_sha", "reply_sha256", "sha256", "scene_hash"}
)
"""Fields written as they are: hashes and keys that must match exactly (no text, no key can hide there)."""


def _clean_dumps(obj: Any) -> str:
    """A record line with every string through the redactor (no key reaches a record, whatever echoed it)."""
    return dumps(redact_value(to_jsonable(obj), EXACT_FIELDS))


class RunStore:
    """Reads and appends the records of one run directory."""

    def __init__(
        self,
        run_dir: Path | str,
        *,
        retry_errors: bool = False,
        on_locked: Callable[[Path], None] | None = None,
    ):
        """``on_locked(run_dir)`` runs once the lock is held and before anything is changed (the resume
        check); an exception from it releases the lock and leaves the directory as it was."""
        self.dir = Path(run_dir)
        self.stopped: RunStopped | None = None
        """Why the store stopped writing (a full disk, the directory replaced): later writes raise it."""
        self.lock = RunDirLock(self.dir).acquire()  # before anything of the directory is touched
        """The run directory's lock, held until :meth:`close` (:class:`RunDirBusy` if someone has it)."""
        try:
            if on_locked is not None:
                on_locked(self.dir)
            self._open(retry_errors)
        except BaseException as e:
            self.lock.release()
            stop = disk_full(e, getattr(e, "filename", None) or self.dir)
            if stop is not None:
                raise stop from None
            raise

    def _open(self, retry_errors: bool) -> None:
        self.shots_dir = self.dir / SHOTS
        self.shots_dir.mkdir(parents=True, exist_ok=True)
        for name in (TRIALS, STEPS):
            repair_tail(self.dir / name)
        rows = [r for r in read_jsonl(self.dir / TRIALS) if "trial_key" in r]
        done = {"ok", "error"} if not retry_errors else {"ok"}
        self.finished: set[str] = {r["trial_key"] for r in rows if r.get("status", "ok") in done}
        rerun = [r for r in rows if r["trial_key"] not in self.finished]
        if rerun:
            self._supersede(rows, rerun)
        self._compact_steps()
        self._known_shots: set[str] = set()
        self.fsync_every_s = 1.0
        """Trial lines are flushed at once and fsynced at most this often (and at close)."""
        self._last_sync = 0.0
        # everything from now on is written through the locked directory's descriptor, never by its name
        dfd = self.lock.dir_fd
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        self._trials_fd: int | None = os.open(TRIALS, flags, 0o644, dir_fd=dfd)
        self._steps_fd: int | None = os.open(STEPS, flags, 0o644, dir_fd=dfd)
        self._shots_fd: int | None = os.open(SHOTS, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dfd)

    def _supersede(self, rows: list[dict[str, Any]], rerun: list[dict[str, Any]]) -> None:
        """Move the records (and steps) of trials to be run again out of the live files."""
        keys = {r["trial_key"] for r in rerun}
        steps = list(read_jsonl(self.dir / STEPS))
        with (self.dir / SUPERSEDED).open("a", encoding="utf-8") as f:
            f.writelines(dumps(r) + "\n" for r in rerun)
        with (self.dir / SUPERSEDED_STEPS).open("a", encoding="utf-8") as f:
            f.writelines(dumps(r) + "\n" for r in steps if r.get("trial_key") in keys)
        write_jsonl(self.dir / TRIALS, [r for r in rows if r["trial_key"] not in keys])

    def _compact_steps(self) -> None:
        path = self.dir / STEPS
        if not path.exists():
            return
        rows = list(read_jsonl(path))
        keep = [r for r in rows if r.get("trial_key") in self.finished]
        if len(keep) == len(rows):
            return
        write_jsonl(path, keep)

    def write_plan(self, specs: Iterable[Any]) -> None:
        """Write the plan (atomically)."""
        rewrite_lines(self.dir / PLAN, (_clean_dumps(s) + "\n" for s in specs))

    def _stop(self, stop: RunStopped) -> RunStopped:
        self.stopped = stop
        return stop

    def _check(self) -> None:
        """Raise :attr:`stopped`, or stop when the path is no longer the directory locked."""
        if self.stopped is not None:
            raise self.stopped
        why = self.lock.replaced()
        if why is not None:
            raise self._stop(RunStopped(why))

    def save_shot(self, png: bytes) -> str:
        """Store a shot (PNG) under its sha256 (once), in the locked directory, and return the hash.
        :class:`RunStopped` when its disk is full or the directory was replaced."""
        sha = hashlib.sha256(png).hexdigest()
        if sha in self._known_shots:
            return sha
        self._check()
        name, tmp, sfd = shot_name(sha), f".{sha}.tmp", self._shots_fd
        try:
            os.stat(name, dir_fd=sfd)
        except FileNotFoundError:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644, dir_fd=sfd)
                try:
                    _write_all(fd, png)
                finally:
                    os.close(fd)
                os.replace(tmp, name, src_dir_fd=sfd, dst_dir_fd=sfd)
            except OSError as e:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=sfd)
                stop = disk_full(e, self.shots_dir / name)
                if stop is None:
                    raise
                raise self._stop(stop) from None
        self._known_shots.add(sha)
        return sha

    def append_trial(self, record: dict[str, Any], steps: Iterable[Any]) -> None:
        """Append a finished trial: its steps first, then its line (fsynced at most once a second), through
        the locked directory. :class:`RunStopped`, with nothing more written, once the disk is full (what a
        full disk cut short is a torn tail and orphan steps, which the next open cuts); when the path was
        replaced, this trial is still written into the locked directory (its shots are there), then it
        stops."""
        if self.stopped is not None:
            raise self.stopped
        replaced = self.lock.replaced()
        steps_blob = "".join(_clean_dumps(s) + "\n" for s in steps).encode("utf-8")
        line = (_clean_dumps(record) + "\n").encode("utf-8")
        assert self._steps_fd is not None and self._trials_fd is not None, "the store is closed"
        try:
            name = STEPS
            _write_all(self._steps_fd, steps_blob)
            name = TRIALS
            _write_all(self._trials_fd, line)  # in the OS now: a killed process loses nothing written
            now = time.monotonic()
            if now - self._last_sync >= self.fsync_every_s:  # against a machine crash, at most once a second
                os.fsync(self._trials_fd)
                self._last_sync = now
        except OSError as e:
            stop = disk_full(e, self.dir / name)
            if stop is None:
                raise
            raise self._stop(stop) from None
        self.finished.add(record["trial_key"])
        if replaced is not None:
            raise self._stop(RunStopped(replaced))

    def verify(self) -> None:
        """At the end of a run: :class:`RunStopped` when the store stopped, or when the path it was opened
        by is no longer the directory it locked (nothing more is written then)."""
        self._check()

    def trials(self) -> list[dict[str, Any]]:
        """All trial records written so far."""
        return list(read_jsonl(self.dir / TRIALS))

    def close(self) -> None:
        """Fsync and close the records, then release the lock. Safe to call twice."""
        try:
            for attr in ("_steps_fd", "_trials_fd", "_shots_fd"):
                fd = getattr(self, attr, None)
                if fd is not None:
                    setattr(self, attr, None)
                    try:
                        if attr != "_shots_fd" and self.stopped is None:
                            os.fsync(fd)
                    finally:
                        os.close(fd)
        finally:
            self.lock.release()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
