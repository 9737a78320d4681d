"""``run.frames``: which frames a sweep writes to ``frames/`` (and how many bytes it wrote).

A 4K frame is a few MB; 1,581 ScreenSpot-Pro samples x several steps is tens of GB. Three modes:

- ``all``: every frame the harness drew, full size (the default for the paper's scenes and web pages);
- ``sent``: what a model saw, downscaled as sent: with ``image.max_side`` set, the frame is stored at the
  size the client sends (the same Lanczos resize, :func:`dvoc_bench.models.litellm_client.resize_png`);
  without it, as drawn (the default for datasets);
- ``none``: nothing is written; every step still records the ``frame_sha`` of the frame it used.

The step's ``frame_sha`` always names the stored file when there is one (``frames/<sha>.png``).
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections.abc import Callable

from PIL import Image

from dvoc_bench.geometry import Size

FRAME_MODES = ("all", "sent", "none")
"""Values of ``run.frames`` once ``auto`` is resolved."""


class FrameSaver:
    """``save(png) -> sha`` for :class:`~dvoc_bench.methods.common.TrialEnv`, per ``run.frames``, counting
    the files and bytes this sweep wrote."""

    def __init__(self, save: Callable[[bytes], str], mode: str = "all", max_side: int | None = None) -> None:
        if mode not in FRAME_MODES:
            raise ValueError(f"run.frames: unknown value {mode!r}; allowed: {', '.join(FRAME_MODES)}")
        self._save, self.mode, self.max_side = save, mode, max_side
        self.files = 0
        """Frames written by this sweep (a frame already stored is not counted again)."""
        self.bytes = 0
        """Their bytes."""
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, png: bytes) -> str:
        if self.mode == "none":
            return hashlib.sha256(png).hexdigest()
        if self.mode == "sent" and self.max_side is not None:
            from dvoc_bench.models.litellm_client import resize_png

            with Image.open(io.BytesIO(png)) as im:
                size = Size(*im.size)
            png, _ = resize_png(png, size, self.max_side)
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
