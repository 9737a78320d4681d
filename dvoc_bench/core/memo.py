"""One in-memory cache for values computed from images (OCR words, screen parses, decoded screenshots, the
simulator's crosshair evidence).

:class:`Memo` keeps the last ``maxsize`` values by key (least recently used dropped first, through
``cachetools.LRUCache``) and is safe to share between threads; ``maxsize`` 0 keeps nothing (every ``get``
computes). The value is computed outside the lock, so a slow miss (an OCR pass, a detector run) never blocks
a hit on another key; two threads that miss the same key at once both compute it and the later one stores
its value (the computations here are deterministic).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cachetools import LRUCache

V = TypeVar("V")


class Memo(Generic[V]):
    """Values by key, the least recently used dropped beyond ``maxsize``; thread-safe."""

    def __init__(self, maxsize: int) -> None:
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 0:
            raise ValueError(f"cache_size: {maxsize!r} is not a whole number >= 0")
        self.maxsize = maxsize
        """How many values are kept (0: none)."""
        self._cache: LRUCache[Hashable, V] = LRUCache(max(maxsize, 1))
        self._lock = threading.Lock()
        self.misses = 0
        """Values computed so far (calls of ``compute``)."""

    def get(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value of ``key``: the cached one (now the most recently used), else ``compute()``, stored.
        An exception from ``compute`` propagates and stores nothing."""
        with self._lock:
            try:
                return self._cache[key]
            except KeyError:
                pass
        value = compute()
        with self._lock:
            self.misses += 1
            if self.maxsize:
                self._cache[key] = value
        return value

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)
