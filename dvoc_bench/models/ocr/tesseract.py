"""Tesseract as a subprocess: one image in, word boxes with confidences out (TSV), cached by image hash.

The binary is Debian's ``tesseract`` (packages ``tesseract-ocr`` and ``tesseract-ocr-eng``; the English data
ships with them, nothing is downloaded). pytesseract is not used: it is the same subprocess call plus a
TSV parser, and calling the binary ourselves keeps the timeout, the error line and the parse in one place.

Preprocessing: grey levels, then an integer upscale (``upscale``, Lanczos) so that small text reaches the
x-height Tesseract is trained on; boxes are mapped back to the pixels of the image as sent. ``upscale:
auto`` (the default) enlarges 2x only images whose long side is at most :data:`SMALL_SIDE` px (800x600
scenes, downscaled screenshots): on 1280x720 pages 2x read more words but found no more targets, at about
1.5x the time (docs/ocr.md).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Box, box_iou
from dvoc_bench.core.memo import Memo

__all__ = ["MISSING", "OcrEngine", "Word", "find_tesseract", "parse_tsv"]

SMALL_SIDE = 1000
"""Long side (px) up to which ``upscale: auto`` enlarges an image 2x."""

MISSING = "tesseract not found: install the Debian packages tesseract-ocr tesseract-ocr-eng"
"""The one line said when the binary (or its English data) is missing."""


PASSES = ("dark", "light")
"""The views OCRed: ``dark`` (the grey image: dark text on light ground) and ``light`` (a white top-hat,
inverted: light text on any darker ground, e.g. white labels on coloured buttons)."""


@dataclass(frozen=True)
class Word:
    """One word Tesseract read, in pixels of the image as sent."""

    text: str
    """The word as read."""
    conf: float
    """Tesseract's confidence, 0-100."""
    box: Box
    """Its box (pixels of the image sent)."""
    line: tuple[int, int, int, int]
    """``(page, block, paragraph, line)``: words with equal keys are on one text line."""
    index: int
    """Reading order of the word on the page."""


CHECK_TIMEOUT_S = 30.0
"""How long ``tesseract --list-langs`` may take when the binary is checked."""


def find_tesseract(binary: str = "tesseract", lang: str = "eng", timeout_s: float = CHECK_TIMEOUT_S) -> str:
    """Path of the binary, checked to have ``lang`` data; a :class:`ConfigError` of one line otherwise (a
    binary that is missing, does not run, or does not answer within ``timeout_s``, each said as such)."""
    path = shutil.which(binary)
    if path is None:
        raise ConfigError(MISSING)
    try:
        out = subprocess.run([path, "--list-langs"], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ConfigError(f"tesseract at {path} did not answer --list-langs within {timeout_s:g} s") from None
    except OSError as e:
        raise ConfigError(f"tesseract at {path} does not run: {e.strerror or e}") from None
    langs = {s.strip() for s in (out.stdout + out.stderr).splitlines()}
    if lang not in langs:
        raise ConfigError(
            f"tesseract has no '{lang}' data: install the Debian packages tesseract-ocr tesseract-ocr-{lang}"
        )
    return path


def parse_tsv(tsv: str, scale: float = 1.0) -> list[Word]:
    """Words of a ``tesseract ... tsv`` output (level-5 rows with text), boxes divided by ``scale``."""
    words: list[Word] = []
    for row in tsv.splitlines()[1:]:
        f = row.split("\t")
        if len(f) < 12 or f[0] != "5":
            continue
        text = f[11].strip()
        if not text:
            continue
        try:
            left, top, w, h = (int(v) for v in f[6:10])
            conf = float(f[10])
            key = (int(f[1]), int(f[2]), int(f[3]), int(f[4]))
        except ValueError:
            continue
        box = Box(left / scale, top / scale, (left + w) / scale, (top + h) / scale)
        words.append(Word(text, conf, box, key, len(words)))
    return words


class OcrEngine:
    """Runs Tesseract on RGB images; results cached by image hash (and settings) for the engine's life."""

    def __init__(
        self,
        psm: int = 11,
        upscale: int | str = "auto",
        lang: str = "eng",
        binary: str = "tesseract",
        timeout_s: float = 60.0,
        cache_size: int = 512,
        passes: tuple[str, ...] = PASSES,
    ):
        bad = [p for p in passes if p not in PASSES]
        if bad or not passes:
            raise ValueError(f"passes: {bad or list(passes)} not allowed; allowed: {', '.join(PASSES)}")
        self.path = find_tesseract(binary, lang)
        """The binary's path."""
        self.psm = psm
        """Page segmentation mode (11: sparse text, chosen by measurement, see the README)."""
        if upscale != "auto" and (isinstance(upscale, bool) or not isinstance(upscale, int) or upscale < 1):
            raise ValueError(f"upscale: {upscale!r} is not 'auto' or a whole number >= 1")
        self.upscale = upscale
        """Integer factor the image is enlarged by before OCR (1: as sent), or ``auto`` (2x small images)."""
        self.lang = lang
        """Tesseract language."""
        self.timeout_s = timeout_s
        """Seconds one OCR may take."""
        self.passes = tuple(passes)
        """Views OCRed per image (:data:`PASSES`), words merged."""
        self.calls = 0
        """Tesseract runs (cache misses)."""
        self._cache: Memo[list[Word]] = Memo(cache_size)
        """Words of the last ``cache_size`` images (least recently used dropped first; 0: none kept)."""

    def key(self, image: np.ndarray) -> str:
        h = hashlib.sha256(f"{image.shape}|{self.psm}|{self.upscale}|{self.lang}|{self.passes}".encode())
        h.update(np.ascontiguousarray(image).tobytes())
        return h.hexdigest()

    def words(self, image: np.ndarray) -> list[Word]:
        """Every word read on ``image`` (``HxWx3`` uint8), from the cache when this image was read before."""
        return self._cache.get(self.key(image), lambda: self._run(image))

    def _run(self, image: np.ndarray) -> list[Word]:
        words: list[Word] = []
        for view in views(image, self.passes):
            words = merge(words, self._tesseract(view))
        return words

    def _tesseract(self, gray: np.ndarray) -> list[Word]:
        from PIL import Image

        img = Image.fromarray(gray)
        up = self.factor(gray.shape[1], gray.shape[0])
        if up > 1:
            img = img.resize((img.width * up, img.height * up), Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        img.save(buf, format="PNG", compress_level=1)
        cmd = [self.path, "stdin", "stdout", "--psm", str(self.psm), "-l", self.lang, "tsv"]
        try:
            out = subprocess.run(
                cmd, input=buf.getvalue(), capture_output=True, timeout=self.timeout_s,
                env={**os.environ, "OMP_THREAD_LIMIT": "1"},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"tesseract took more than {self.timeout_s:g} s") from None
        if out.returncode != 0:
            msg = out.stderr.decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"tesseract failed: {msg[-1] if msg else out.returncode}")
        self.calls += 1
        return parse_tsv(out.stdout.decode("utf-8", "replace"), float(up))

    def factor(self, width: int, height: int) -> int:
        """The upscale of a ``width`` x ``height`` image."""
        if self.upscale == "auto":
            return 2 if max(width, height) <= SMALL_SIDE else 1
        return int(self.upscale)


def _remove_lines(gray: np.ndarray, min_len: int = 30) -> np.ndarray:
    """``gray`` with straight dark runs of at least ``min_len`` px whitened: box outlines and rules that make
    Tesseract take the text they enclose for a picture."""
    dark = gray < 128
    out = gray.copy()
    for axis in (0, 1):
        d = dark if axis == 1 else dark.T
        c = np.cumsum(np.pad(d, ((0, 0), (1, 0))).astype(np.int32), axis=1)
        full = (c[:, min_len:] - c[:, :-min_len]) == min_len  # window [j, j+min_len) all dark
        line = np.zeros_like(d)
        for k in range(min_len):  # spread each full window over its pixels
            line[:, k : k + full.shape[1]] |= full
        if axis == 1:
            out[line] = 255
        else:
            out[line.T] = 255
    return out


def views(image: np.ndarray, passes: tuple[str, ...] = PASSES, size: int = 7) -> list[np.ndarray]:
    """The grey images Tesseract reads for ``image`` (RGB), one per pass, box outlines removed."""
    from PIL import Image, ImageFilter

    g = Image.fromarray(np.asarray(image, dtype=np.uint8)).convert("L")
    out = []
    for p in passes:
        if p == "dark":
            v = np.asarray(g, dtype=np.uint8)
        elif p == "light":
            opened = g.filter(ImageFilter.MinFilter(size)).filter(ImageFilter.MaxFilter(size))
            top = np.asarray(g, dtype=np.int16) - np.asarray(opened, dtype=np.int16)
            v = (255 - np.clip(top * 2, 0, 255)).astype(np.uint8)
        else:
            raise ValueError(f"unknown OCR pass {p!r}; allowed: {', '.join(PASSES)}")
        out.append(_remove_lines(v))
    return out


def merge(first: list[Word], second: list[Word]) -> list[Word]:
    """Words of two passes: a word of ``second`` overlapping one of ``first`` (IoU > 0.3) replaces it only
    with a higher confidence; the others are added. Lines of the second pass get their own keys."""
    kept = list(first)
    base = len(first)
    for w in second:
        w = Word(w.text, w.conf, w.box, (w.line[0] + 1000, *w.line[1:]), base + w.index)
        clash = [i for i, k in enumerate(kept) if box_iou(k.box, w.box) > 0.3]
        if not clash:
            kept.append(w)
        elif all(w.conf > kept[i].conf for i in clash):
            kept = [k for i, k in enumerate(kept) if i not in clash] + [w]
    return kept
