"""``run.frames``: which shots (the images a model was sent) a sweep stores in the run directory's
``frames/`` folder (and how many bytes it wrote). The setting and the folder keep their old names
(docs/run-directory.md, Words).

A 4K shot is a few MB; 1,581 ScreenSpot-Pro samples x several steps is tens of GB. Three modes:

- ``all``: every shot a model was sent, and the full-resolution screenshot of each task when a model's
  input limits (``image.max_side``/``max_pixels``) downscale it (the default for the paper's scenes, web
  pages and desktop scenes);
- ``sent``: only what a model saw: the shots as sent (the harness draws every overlay on the downscaled
  image, :mod:`dvoc_bench.draw.sending`, so they are stored at the sent size) (the default for datasets);
- ``none``: nothing is written; every step still records the ``frame_sha`` of the shot it used.

The step's ``frame_sha`` always names the stored file when there is one (``frames/<sha>.png``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

SHOT_MODES = ("all", "sent", "none")
"""Values of ``run.frames`` once ``auto`` is resolved."""


class ShotSaver:
    """``save(png) -> sha`` for :class:`~dvoc_bench.methods.common.TrialEnv`, per ``run.frames``, counting
    the files and bytes this sweep wrote."""

    def __init__(self, save: Callable[[bytes], str], mode: str = "all") -> None:
        if mode not in SHOT_MODES:
            raise ValueError(f"run.frames: unknown value {mode!r}; allowed: {', '.join(SHOT_MODES)}")
        self._save, self.mode = save, mode
        self.files = 0
        """Shots written by this sweep (a shot already stored is not counted again)."""
        self.bytes = 0
        """Their bytes."""
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, png: bytes) -> str:
        if self.mode == "none":
            return hashlib.sha256(png).hexdigest()
        sha = self._save(png)
        with self._lock:
            if sha not in self._seen:
                self._seen.add(sha)
                self.files += 1
                self.bytes += len(png)
        return sha

    def line(self, samples: int) -> str:
        """The end-of-run line: files, bytes, bytes per task (``samples``: tasks of the run)."""
        per = f", {self.bytes / max(samples, 1) / 1e6:.2f} MB per task" if self.mode != "none" else ""
        return f"frames: {self.files} written, {self.bytes / 1e6:.1f} MB (run.frames={self.mode}){per}"
