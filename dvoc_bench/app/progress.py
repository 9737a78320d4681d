"""The sweep's progress: done / error / skipped, calls, cost so far and ETA, on stderr.

On a terminal it is a tqdm bar redrawn in place. When stderr is not a terminal (redirected to a file, a
pipe, a CI log) a redrawn bar is one ever-growing line of ``\\r`` frames, so plain lines are written
instead: one each time another tenth of the trials is done, or ``every_s`` seconds have passed, and a
last one when the sweep ends.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60:02d}:{s % 60:02d}"


class Progress:
    """Counts finished trials; shows them unless ``quiet`` (then it only counts)."""

    def __init__(
        self,
        total: int,
        *,
        quiet: bool = False,
        desc: str = "trials",
        stream: TextIO | None = None,
        every_s: float = 30.0,
    ):
        self.total = total
        self.counts = {"ok": 0, "error": 0, "skipped": 0}
        self.calls = 0
        self.cost: float | None = None
        self.desc = desc
        self._stream = stream if stream is not None else sys.stderr
        self._every_s = every_s
        self._bar = None
        self._plain = False
        self._done = 0
        self._t0 = self._last_t = time.monotonic()
        self._last_tenth = 0
        self._closed = False
        if quiet or not total:
            return
        isatty = getattr(self._stream, "isatty", None)
        if callable(isatty) and isatty():
            from tqdm import tqdm

            self._bar = tqdm(
                total=total, desc=desc, unit="trial", dynamic_ncols=True, leave=True, file=self._stream
            )
        else:
            self._plain = True

    def _postfix(self) -> str:
        cost = "?" if self.cost is None else f"${self.cost:.4f}"
        return (
            f"ok={self.counts['ok']} err={self.counts['error']} skip={self.counts['skipped']} "
            f"calls={self.calls} cost={cost}"
        )

    def line(self) -> str:
        """The plain progress line: ``trials: 27/270 (10%) ok=... elapsed 00:12, eta 01:48``."""
        elapsed = time.monotonic() - self._t0
        eta = elapsed / self._done * (self.total - self._done) if self._done else None
        when = f"elapsed {_clock(elapsed)}" + (f", eta {_clock(eta)}" if eta is not None else "")
        pct = 100 * self._done // self.total if self.total else 100
        return f"{self.desc}: {self._done}/{self.total} ({pct}%) {self._postfix()} {when}"

    def _write(self) -> None:
        self._stream.write(self.line() + "\n")
        self._stream.flush()
        self._last_t = time.monotonic()

    def update(self, record: dict[str, Any]) -> None:
        status = str(record.get("status", "ok"))
        self.counts[status] = self.counts.get(status, 0) + 1
        self.calls += int(record.get("model_calls") or 0)
        if record.get("cost_usd") is not None:
            self.cost = (self.cost or 0.0) + float(record["cost_usd"])
        self._done += 1
        if self._bar is not None:
            self._bar.set_postfix_str(self._postfix(), refresh=False)
            self._bar.update(1)
        elif self._plain:
            tenth = 10 * self._done // self.total
            if (
                self._done == self.total
                or tenth > self._last_tenth
                or time.monotonic() - self._last_t >= self._every_s
            ):
                self._last_tenth = tenth
                self._write()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._plain and not self._closed and self._done < self.total:  # interrupted: where it stopped
            self._write()
        self._closed = True
