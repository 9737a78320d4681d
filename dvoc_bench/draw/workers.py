"""The sweep's render pool: frame drawing and PNG encoding, off the event loop.

All trials of a sweep share one asyncio loop. Drawing a frame and encoding its PNG cost a millisecond or
more of CPU per model call; on the loop they stall every other trial in flight. A :class:`FrameRenderer`
runs them in a small thread pool instead (Pillow, numpy and zlib release the GIL for the heavy parts),
and the methods await the result (:meth:`TrialEnv.render <dvoc_bench.methods.common.TrialEnv.render>`).

Threads, not processes: a process pool was built and measured too (the screenshot shared once through
shared memory, the frame and its PNG sent back through a per-worker shared block, the pipes read by the
event loop itself). It was slower (docs/benchmarks.md: 8 trials in flight at 1.8-2.0x the ideal against
1.3x with threads on the same machine), its workers take about a second to start, and it needs the
``if __name__ == "__main__"`` guard in every script that runs a sweep.

The records do not depend on the pool: a frame is a pure function of its inputs, its file is named by
its content, and each trial awaits its own frames in order. ``run.render_workers=0`` draws inline on the
loop and gives the same records.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from dvoc_bench.draw.render import encode_png

Draw = Callable[..., np.ndarray]
"""``draw(screenshot, *args, **kwargs) -> frame``: a pure function that returns a new array."""

T = TypeVar("T")

THREAD_PREFIX = "dvoc-render"
"""Name prefix of the pool's threads."""


def default_workers() -> int:
    """One render thread per core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def make_frame(
    base: np.ndarray, draw: Draw | None, args: tuple, kwargs: dict[str, Any]
) -> tuple[np.ndarray, bytes]:
    """``(frame, png)``: ``draw(base, *args, **kwargs)`` (``None``: the screenshot itself) and its PNG."""
    image = base if draw is None else draw(base, *args, **kwargs)
    return image, encode_png(image, base=base)  # only the bands the drawing touched are deflated


class FrameRenderer:
    """Draws, encodes and stores frames for a sweep in ``workers`` threads, or inline when ``workers=0``.

    ``workers=None`` means one thread per core, or inline when the sweep runs one trial at a time
    (``in_flight=1``): the loop has nothing else to do meanwhile, and the two thread hand-offs per frame
    only add latency. Created once per sweep; the threads start with the first frames (a sweep of
    baselines starts none) and end at :meth:`close`.
    """

    def __init__(self, workers: int | None = None, *, in_flight: int | None = None):
        if workers is None:  # one per core, but none for one trial at a time: nothing to overlap with
            workers = 0 if in_flight == 1 else default_workers()
        self.workers = workers
        """Pool size; 0 means inline on the caller's thread."""
        self._pool = (
            ThreadPoolExecutor(self.workers, thread_name_prefix=THREAD_PREFIX) if self.workers > 0 else None
        )
        self._lock = threading.Lock()
        self._closed = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the pool (inline without one), awaited."""
        if self._closed:
            raise RuntimeError("the render pool is closed")
        if self._pool is None:
            return fn(*args)
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def store(self, save_shot: Callable[[bytes], str], png: bytes) -> str:
        """``save_shot(png)``, one call at a time (a frame store need not be thread-safe)."""
        with self._lock:
            return save_shot(png)

    def close(self) -> None:
        """Wait for running frames and end the threads (idempotent)."""
        self._closed = True
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> FrameRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
