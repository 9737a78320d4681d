"""PP-OCR through RapidOCR (``ocr.engine: rapidocr``): text lines in, the OCR model's :class:`Word` s out.

The models (PP-OCRv4 detection and recognition, the v2 direction classifier: ONNX, about 15 MB) ship inside
the PyPI wheel ``rapidocr-onnxruntime`` (the ``ocr`` extra: ``pip install -e '.[ocr]'``); they run on
onnxruntime, nothing is downloaded at run time. RapidOCR reads *lines* (a quadrilateral and its text); the
matcher (:mod:`.match`) works on words, so each line is split at its spaces and every word gets the slice
of the line's box its characters span (character counts, proportional; screenshots have upright text, so
the box is the quadrilateral's bounding box). Words of one line share a line key. The direction classifier
is off by default (``use_cls: false``): screenshots have no upside-down text, and it costs time.

Results are cached by image hash (and settings) for the engine's life, as :class:`.tesseract.OcrEngine`'s.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box
from dvoc_bench.core.memo import Memo
from dvoc_bench.models.ocr.tesseract import Word

__all__ = ["MISSING_RAPIDOCR", "RapidOcrEngine", "line_words"]

MISSING_RAPIDOCR = "rapidocr needs the rapidocr-onnxruntime package (PP-OCR models): pip install -e '.[ocr]'"
"""The one line said when the wheel is not installed."""


def _import_rapidocr() -> Any:
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError as e:
        raise ConfigError(f"{MISSING_RAPIDOCR} ({type(e).__name__}: {e})".splitlines()[0]) from None
    return RapidOCR


def line_words(quad: Sequence[Sequence[float]], text: str, conf: float, line: int, start: int) -> list[Word]:
    """The words of one RapidOCR line (``quad``: four corner points; ``conf``: 0-1), each with the slice of
    the line's bounding box its characters span; ``line`` keys the line, ``start`` is the first word's
    reading-order index."""
    xs = [float(p[0]) for p in quad]
    ys = [float(p[1]) for p in quad]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    n = len(text)
    if n == 0 or x1 <= x0 or y1 <= y0:
        return []
    out: list[Word] = []
    i = 0
    for part in text.split(" "):
        if part.strip():
            box = Box(x0 + (x1 - x0) * i / n, y0, x0 + (x1 - x0) * (i + len(part)) / n, y1)
            out.append(Word(part.strip(), round(conf * 100.0, 2), box, (2, line, 0, 0), start + len(out)))
        i += len(part) + 1
    return out


class RapidOcrEngine:
    """RapidOCR (PP-OCR on onnxruntime) on RGB images; results cached by image hash for the engine's life."""

    name = "rapidocr"

    def __init__(
        self,
        threads: int = 2,
        text_score: float = 0.5,
        use_cls: bool = False,
        cache_size: int = 512,
    ) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads: {threads!r} is not a whole number >= 1")
        if not 0.0 <= float(text_score) <= 1.0:
            raise ValueError(f"text_score: {text_score!r} is not in [0, 1]")
        self._cache: Memo[list[Word]] = Memo(cache_size)  # a bad size fails before the models load
        rapid = _import_rapidocr()
        self.threads = threads
        """onnxruntime intra-op threads of each of the three sessions."""
        self.text_score = float(text_score)
        """Lines recognised with a lower score (0-1) are dropped (RapidOCR's ``text_score``)."""
        self.use_cls = bool(use_cls)
        """Whether the direction classifier runs."""
        self._ocr = rapid(
            text_score=self.text_score,
            use_cls=self.use_cls,
            det_intra_op_num_threads=threads,
            rec_intra_op_num_threads=threads,
            cls_intra_op_num_threads=threads,
        )
        self._run_lock = threading.Lock()  # one onnxruntime run at a time: the 2 cores are shared
        self.calls = 0
        """How many images were actually OCRed (cache misses)."""

    def key(self, image: np.ndarray) -> str:
        """Cache key: the image's bytes and shape, and the settings."""
        h = hashlib.sha256(np.ascontiguousarray(image).tobytes())
        h.update(f"{image.shape}|rapidocr|{self.text_score}|{self.use_cls}".encode())
        return h.hexdigest()

    def words(self, image: np.ndarray) -> list[Word]:
        """Words of an ``HxWx3`` uint8 RGB image, in its pixels (cached)."""
        return self._cache.get(self.key(image), lambda: self._run(image))

    def _run(self, image: np.ndarray) -> list[Word]:
        bgr = np.ascontiguousarray(np.asarray(image, dtype=np.uint8)[:, :, ::-1])  # RapidOCR reads BGR arrays
        with self._run_lock:
            try:
                result, _ = self._ocr(bgr)
            except Exception as e:  # onnxruntime / opencv raise their own types
                raise RuntimeError(f"rapidocr failed: {type(e).__name__}: {e}".splitlines()[0]) from e
            self.calls += 1
        words: list[Word] = []
        for n, (quad, text, score) in enumerate(result or []):
            words.extend(line_words(quad, str(text), float(score), n, len(words)))
        return words
