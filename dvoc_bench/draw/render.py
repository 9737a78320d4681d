"""Overlays drawn on a scene screenshot, PNG encoding and the pinned font.

Everything here is a pure function on ``HxWx3`` uint8 numpy arrays: no file is written, no global state
except the font cache and the encoder's cache of clean screenshots; both are thread-safe, so frames can
be drawn and encoded in the sweep's render pool (:mod:`dvoc_bench.draw.workers`). Text is drawn with
matplotlib's bundled DejaVu Sans through :func:`dejavu` and Pillow's basic layout engine, so a frame has
the same pixels on every machine with the same Pillow.

Differences from the authors' renderer, on purpose:

- The crosshair centre is ``(round(x), round(y))``; the authors truncated with ``int()``. Rounding puts the
  drawn centre on the pixel nearest the draft, so the error a model can see is at most half a pixel
  instead of up to one pixel, always toward the top-left.
- The crosshair is drawn last, on top of the circle and the labels, so its centre pixels are exactly
  ``crosshair_color`` wherever the draft is (the authors drew the circle over it).
- The overlay mode is ``full | crosshair | none`` (the authors spelled the second ``crosshair-only``).
- The labels can be placed away from the crosshair and off the screen's content (``labels="away"``,
  :func:`place_labels`); the
  default ``corner`` is the authors' placement (step label top-left, position label bottom-right).

Finding the crosshair again: the mean position of all ``crosshair_color`` pixels is the exact centre while
the whole crosshair is inside the image. Within ``crosshair_arm`` px of an edge an arm is clipped and that
mean is biased into the image (about 3.7 px for a centre on the first column with the default style);
:func:`find_crosshair` uses the densest row and column bands instead and stays within 1 px.
"""

from __future__ import annotations

import functools
import hashlib
import os
import struct
import threading
import zlib
from typing import Literal, get_args

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from dvoc_bench.core.declare import RGB, Declared, NonNegInt
from dvoc_bench.core.geometry import Point
from dvoc_bench.core.memo import Memo
from dvoc_bench.core.pixels import decode_rgb

Color = tuple[int, int, int]

OVERLAY_MODES = ("full", "crosshair", "none")
"""``full``: crosshair + circle + labels. ``crosshair``: crosshair + labels. ``none``: untouched copy."""

LabelPlacement = Literal["corner", "away"]
"""Where the two labels of a DVOC frame go (:func:`label_corners`)."""

LABEL_PLACEMENTS: tuple[str, ...] = get_args(LabelPlacement)

_FONT_RELPATH = os.path.join("fonts", "ttf", "DejaVuSans.ttf")


# --------------------------------------------------------------------------------------------- font


def mpl_data_dir() -> str:
    """matplotlib's ``mpl-data/`` folder (what ``matplotlib.get_data_path()`` returns), found without
    importing matplotlib: 0.1-0.25 s a sweep does not need."""
    import importlib.util

    spec = importlib.util.find_spec("matplotlib")
    locations = spec.submodule_search_locations if spec is not None else None
    return os.path.join(locations[0], "mpl-data") if locations else ""


@functools.lru_cache(maxsize=1)
def dejavu_path() -> str:
    """Path of the DejaVu Sans file bundled with matplotlib; raises if it is missing (no fallback)."""
    path = os.path.join(mpl_data_dir(), _FONT_RELPATH)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"DejaVu Sans not found at {path}; the scenes need matplotlib's bundled font "
            "(reinstall matplotlib) and never fall back to another font"
        )
    return path


def dejavu(size: int) -> ImageFont.FreeTypeFont:
    """DejaVu Sans at ``size`` pixels, cached per size and per thread.

    The basic layout engine is forced so the result does not depend on whether libraqm is installed.
    Each thread gets its own font object: a FreeType face must not be used by two threads at once, and
    frames are drawn in the sweep's render pool (:mod:`dvoc_bench.draw.workers`). The glyphs are the same.
    """
    return _dejavu(size, threading.get_ident())


@functools.lru_cache(maxsize=128)
def _dejavu(size: int, thread: int) -> ImageFont.FreeTypeFont:
    if size <= 0:
        raise ValueError(f"font size must be positive, got {size}")
    return ImageFont.truetype(dejavu_path(), size, layout_engine=ImageFont.Layout.BASIC)


# the cache is the per-thread helper's; a function attribute is not something mypy models
dejavu.cache_clear = _dejavu.cache_clear  # type: ignore[attr-defined]


# -------------------------------------------------------------------------------------------- style


class OverlayOptions(Declared):
    """What the overlay shows besides its style (``overlay:`` in the config)."""

    label_placement: LabelPlacement = "corner"
    """``corner``: the authors' fixed corners (step label top-left, position label bottom-right), which
    can cover a target in a corner (S4). ``away``: each label in a corner clear of the crosshair and its
    circle where it covers the least of the screenshot's content (:func:`place_labels`).
    ``protocol=paper`` always draws ``corner``; part of the trial key only when not ``corner``."""


class OverlayStyle(Declared):
    """Colours and sizes of the overlay (the authors' values by default; all configurable)."""

    crosshair_color: RGB = (255, 0, 0)
    """RGB of the crosshair; pure red so :func:`find_crosshair` can match it exactly."""
    crosshair_width: NonNegInt = 3
    """Thickness of both crosshair bars in pixels."""
    crosshair_arm: NonNegInt = 15
    """Length of each arm from the centre pixel, so a bar spans ``2 * arm + 1`` pixels."""
    circle_color: RGB = (0, 100, 255)
    """RGB of the circle outline (mode ``full`` only)."""
    circle_radius: NonNegInt = 30
    """Circle radius in pixels around the crosshair centre."""
    circle_width: NonNegInt = 3
    """Circle outline thickness in pixels (drawn inward from the radius)."""
    label_fg: RGB = (255, 255, 255)
    """Text colour of the labels."""
    label_bg: RGB = (0, 0, 0)
    """Background box colour of the labels."""
    label_font_size: NonNegInt = 12
    """DejaVu Sans size of the label text in pixels."""


# ------------------------------------------------------------------------------------------ overlay


def crosshair_centre(draft: Point) -> tuple[int, int]:
    """The pixel where the crosshair for ``draft`` is centred: the nearest pixel (rounded, not truncated)."""
    return int(round(draft.x)), int(round(draft.y))


def _bar_span(centre: int, width: int) -> tuple[int, int]:
    """Inclusive pixel span of a bar ``width`` thick around ``centre`` (odd widths are symmetric)."""
    lo = centre - (width - 1) // 2
    return lo, lo + width - 1


Corner = tuple[Literal["top", "bottom"], Literal["left", "right"]]


CORNERS: tuple[Corner, ...] = (("top", "left"), ("bottom", "right"), ("top", "right"), ("bottom", "left"))
"""The four corners; the first two are the authors' (step label, position label)."""


def _background(image: np.ndarray) -> int:
    """The screenshot's most common colour (packed ``0xRRGGBB``), from every 4th pixel of every 4th row."""
    sub = image[::4, ::4].reshape(-1, 3).astype(np.int32)
    packed = (sub[:, 0] << 16) | (sub[:, 1] << 8) | sub[:, 2]
    values, counts = np.unique(packed, return_counts=True)
    return int(values[np.argmax(counts)])


def _covered(image: np.ndarray, box: tuple[int, int, int, int], background: int) -> int:
    """Pixels inside ``box`` (inclusive, clipped to the image) that are not the background colour."""
    h, w = image.shape[:2]
    x0, y0, x1, y1 = max(box[0], 0), max(box[1], 0), min(box[2], w - 1), min(box[3], h - 1)
    if x1 < x0 or y1 < y0:
        return 0
    region = image[y0 : y1 + 1, x0 : x1 + 1].reshape(-1, 3).astype(np.int32)
    packed = (region[:, 0] << 16) | (region[:, 1] << 8) | region[:, 2]
    return int((packed != background).sum())


def _gap(box: tuple[int, int, int, int], cx: int, cy: int) -> float:
    """Distance from the pixel ``(cx, cy)`` to the nearest pixel of ``box`` (0 inside it)."""
    dx = max(box[0] - cx, 0, cx - box[2])
    dy = max(box[1] - cy, 0, cy - box[3])
    return float(np.hypot(dx, dy))


def place_labels(
    image: np.ndarray, cx: int, cy: int, texts: list[str], placement: str, style: OverlayStyle
) -> list[tuple[Corner, tuple[int, int], tuple[int, int, int, int]]]:
    """Corner, text origin and box (:func:`label_box`) of each label of ``texts`` (the step label first)
    for a crosshair centred on ``(cx, cy)``; at most two labels.

    ``corner``: top-left, then bottom-right, whatever the frame shows (the authors'). ``away``: each label,
    in turn, in the free corner where it covers the fewest pixels of anything but the screenshot's
    background (its most common colour), among the corners whose box keeps clear of the crosshair and its
    circle (``max(circle_radius, crosshair_arm) + 2`` px from the centre; every corner if none does); ties
    go to the corner farther from the crosshair, then to the order of :data:`CORNERS`. Only the pixels of
    ``image`` and the crosshair decide: never where the target is.
    """
    if placement not in LABEL_PLACEMENTS:
        raise ValueError(f"unknown label placement {placement!r} (known: {', '.join(LABEL_PLACEMENTS)})")
    if len(texts) > 2:
        raise ValueError(f"at most two labels, got {len(texts)}")
    size = (image.shape[1], image.shape[0])
    if placement == "corner":
        return [(c, *label_box(t, size, c, style)) for t, c in zip(texts, CORNERS, strict=False)]
    clear = max(style.circle_radius, style.crosshair_arm) + 2
    background = _background(image)
    out: list[tuple[Corner, tuple[int, int], tuple[int, int, int, int]]] = []
    for text in texts:
        free = [c for c in CORNERS if c not in {o[0] for o in out}]
        boxes = {c: label_box(text, size, c, style) for c in free}
        eligible = [c for c in free if _gap(boxes[c][1], cx, cy) > clear] or free
        ranks = {
            c: (_covered(image, boxes[c][1], background), -_gap(boxes[c][1], cx, cy), CORNERS.index(c))
            for c in eligible
        }
        best = min(eligible, key=ranks.__getitem__)
        out.append((best, *boxes[best]))
    return out


def label_box(
    text: str, size: tuple[int, int], corner: Corner, style: OverlayStyle
) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """Where a label in ``corner`` is drawn: the text origin and its black box ``[x0, y0, x1, y1]``
    (inclusive pixels).

    The text's ink starts 10 px from a left/top edge (the origin at (10, 10) for top-left, as the authors)
    or ends 10 px from a right/bottom edge; the box extends 2 px around the text's bounding box (leaving
    about 8 px to the image edge).
    """
    left, top, right, bottom = _text_bbox(text, style.label_font_size)
    x = 10 if corner[1] == "left" else size[0] - 10 - right
    y = 10 if corner[0] == "top" else size[1] - 10 - bottom
    return (x, y), (x + left - 2, y + top - 2, x + right + 1, y + bottom + 1)


def _fill(out: np.ndarray, box: tuple[int, int, int, int], color: Color) -> None:
    """Fill the inclusive ``[x0, y0, x1, y1]`` of ``out`` with ``color``, clipped to the image (Pillow's
    ``rectangle(fill=...)``)."""
    h, w = out.shape[:2]
    x0, y0, x1, y1 = max(box[0], 0), max(box[1], 0), min(box[2], w - 1), min(box[3], h - 1)
    if x0 <= x1 and y0 <= y1:
        out[y0 : y1 + 1, x0 : x1 + 1] = color


def _paste(out: np.ndarray, patch: np.ndarray, x: int, y: int) -> None:
    """Copy ``patch`` into ``out`` with its top-left pixel at ``(x, y)``, clipped to the image."""
    h, w = out.shape[:2]
    ph, pw = patch.shape[:2]
    x0, y0, x1, y1 = max(x, 0), max(y, 0), min(x + pw, w), min(y + ph, h)
    if x0 < x1 and y0 < y1:
        out[y0:y1, x0:x1] = patch[y0 - y : y1 - y, x0 - x : x1 - x]


@functools.lru_cache(maxsize=4096)
def _text_bbox(text: str, font_size: int) -> tuple[int, int, int, int]:
    """Pillow's ``getbbox`` of ``text`` in DejaVu Sans at ``font_size`` (cached: a frame asks it per label
    and corner)."""
    left, top, right, bottom = dejavu(font_size).getbbox(text)
    return int(left), int(top), int(right), int(bottom)


@functools.lru_cache(maxsize=4096)
def _label_patch(text: str, font_size: int, fg: Color, bg: Color) -> np.ndarray:
    """A label's pixels, read-only: its box (:func:`label_box`) filled with ``bg`` and the text drawn on it
    in ``fg``. Drawn on the box alone, as the whole frame would draw it: the box is filled first, so nothing
    beneath shows through, and the text's ink lies inside the box (2 px from its edges)."""
    left, top, right, bottom = _text_bbox(text, font_size)
    pil = Image.new("RGB", (right - left + 4, bottom - top + 4), bg)
    ImageDraw.Draw(pil).text((2 - left, 2 - top), text, fill=fg, font=dejavu(font_size))
    patch = np.array(pil, dtype=np.uint8)
    patch.flags.writeable = False
    return patch


def _draw_circle(out: np.ndarray, cx: int, cy: int, style: OverlayStyle) -> None:
    """The circle outline, drawn by Pillow on the crop of ``out`` around it (the same pixels as on the
    whole image: the outline never leaves its bounding box, and an integer shift moves it whole)."""
    h, w = out.shape[:2]
    r = style.circle_radius
    x0, y0, x1, y1 = max(cx - r, 0), max(cy - r, 0), min(cx + r, w - 1), min(cy + r, h - 1)
    if x0 > x1 or y0 > y1:
        return
    pil = Image.fromarray(out[y0 : y1 + 1, x0 : x1 + 1])
    box = [cx - r - x0, cy - r - y0, cx + r - x0, cy + r - y0]
    ImageDraw.Draw(pil).ellipse(box, outline=style.circle_color, width=style.circle_width)
    out[y0 : y1 + 1, x0 : x1 + 1] = np.asarray(pil, dtype=np.uint8)


def draw_overlay(
    image: np.ndarray,
    draft: Point,
    *,
    mode: str,
    iteration: int,
    position_label: str | None,
    style: OverlayStyle,
    labels: str = "corner",
) -> np.ndarray:
    """Return a new ``HxWx3`` uint8 frame with the overlay for ``draft``; ``image`` is not modified.

    ``full`` draws circle, labels, then crosshair; ``crosshair`` draws labels then crosshair; ``none``
    returns an unchanged copy (no labels either). The step label reads ``iter {iteration}``, the position
    label ``position_label`` (skipped when ``None``), in the corners ``labels`` places them
    (:func:`place_labels`, decided on ``image`` before anything is drawn: top-left and bottom-right for
    ``corner``). The crosshair is centred on
    :func:`crosshair_centre` and is drawn last, so it is never hidden. Parts outside the image are clipped;
    a draft far outside leaves no crosshair at all.
    """
    if mode not in OVERLAY_MODES:
        raise ValueError(f"unknown overlay mode {mode!r} (known: {', '.join(OVERLAY_MODES)})")
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 image, got shape {image.shape} dtype {image.dtype}")
    if mode == "none":
        return image.copy()
    out = np.array(image, dtype=np.uint8, order="C")  # a copy: the input stays untouched
    cx, cy = crosshair_centre(draft)
    if mode == "full":
        _draw_circle(out, cx, cy, style)
    texts = [f"iter {iteration}"] + ([position_label] if position_label is not None else [])
    for text, (_, _, box) in zip(texts, place_labels(image, cx, cy, texts, labels, style), strict=True):
        patch = _label_patch(text, style.label_font_size, tuple(style.label_fg), tuple(style.label_bg))
        _paste(out, patch, box[0], box[1])
    arm, (y0, y1), (x0, x1) = style.crosshair_arm, *(_bar_span(c, style.crosshair_width) for c in (cy, cx))
    _fill(out, (cx - arm, y0, cx + arm, y1), style.crosshair_color)  # horizontal bar
    _fill(out, (x0, cy - arm, x1, cy + arm), style.crosshair_color)  # vertical bar
    return out


def _band_centre(counts: np.ndarray, length: int, width: int | None) -> float:
    """Centre of the band of indices with the maximal count; corrected for clipping when ``width`` is known.

    A band touching index 0 or ``length - 1`` that is thinner than ``width`` was clipped: its centre is then
    recovered from the edge that is still inside the image.
    """
    idx = np.flatnonzero(counts == counts.max())
    lo, hi = int(idx[0]), int(idx[-1])
    if width is not None and hi - lo + 1 < width:
        if lo == 0 and hi < length - 1:
            return float(hi - (width - 1) + (width - 1) // 2)
        if hi == length - 1 and lo > 0:
            return float(lo + (width - 1) // 2)
    return (lo + hi) / 2


def find_crosshair(
    image: np.ndarray, color: Color = (255, 0, 0), *, width: int | None = None
) -> Point | None:
    """Locate the crosshair centre from the pixels alone; ``None`` when no pixel has ``color``.

    The horizontal bar is the band of rows holding the most matching pixels, the vertical bar the band of
    columns holding the most; the centre is the middle of each band. This survives clipping at the image
    edges, where the plain mean of matching pixels is biased toward the image (one arm is cut off).
    Without ``width`` a clipped band is off by at most ``(width - 1) / 2`` px (1 px for the default 3 px
    bars); with the bar ``width`` given, a band clipped at an edge is corrected to the exact centre.
    """
    # Per-channel comparisons (~10x faster than np.all(image == color, axis=-1) on 800x600), and the
    # other two channels compared only on the rows where the first one matches somewhere: about 3x faster
    # on a screenshot with few red pixels, as fast as comparing everything when every row has some.
    r, g, b = (int(c) for c in color)
    h, w = image.shape[:2]
    first = image[..., 0] == r
    rows = np.flatnonzero(first.any(axis=1))
    if rows.size == 0:
        return None
    sub = image if rows.size == h else image[rows]
    mask = (first if rows.size == h else first[rows]) & (sub[..., 1] == g) & (sub[..., 2] == b)
    cols = mask.sum(axis=0)
    if not cols.any():
        return None
    row_counts = np.zeros(h, dtype=cols.dtype)
    row_counts[rows] = mask.sum(axis=1)
    return Point(_band_centre(cols, w, width), _band_centre(row_counts, h, width))


# ------------------------------------------------------------------------------------------ encoding


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


BAND_ROWS = 32
"""Rows per independently compressed band of a PNG (see :func:`encode_png`)."""

_ADLER_BASE = 65521


def _adler32_combine(a1: int, a2: int, len2: int) -> int:
    """Adler-32 of ``data1 + data2`` from the checksums of both parts (zlib's ``adler32_combine``)."""
    rem = len2 % _ADLER_BASE
    s1 = a1 & 0xFFFF
    s2 = (rem * s1) % _ADLER_BASE
    s1 += (a2 & 0xFFFF) + _ADLER_BASE - 1
    s2 += (a1 >> 16) + (a2 >> 16) + _ADLER_BASE - rem
    s1 %= _ADLER_BASE
    s2 %= _ADLER_BASE
    return s1 | (s2 << 16)


def _filtered_band(flat: np.ndarray) -> bytes:
    """PNG scanlines of one band: the first row with filter None, the others with Up (within the band),
    so the bytes of a band depend on its own rows only."""
    rows = np.empty((flat.shape[0], 1 + flat.shape[1]), dtype=np.uint8)
    rows[0, 0], rows[0, 1:] = 0, flat[0]
    rows[1:, 0] = 2
    np.subtract(flat[1:], flat[:-1], out=rows[1:, 1:])
    return rows.tobytes()


def _band(flat: np.ndarray, last: bool) -> tuple[bytes, int, int]:
    """One band as (raw deflate segment, adler32 of its scanlines, their length)."""
    data = _filtered_band(flat)
    c = zlib.compressobj(1, zlib.DEFLATED, -15)
    seg = c.compress(data) + c.flush(zlib.Z_FINISH if last else zlib.Z_FULL_FLUSH)
    return seg, zlib.adler32(data), len(data)


_BASE_BANDS: Memo[tuple[np.ndarray, list[tuple[bytes, int, int]]]] = Memo(16)
"""The bands of the last clean screenshots by ``id``, each with the array itself (so no other array can take
that id while the entry lives); ``encode_png`` runs in the render pool's threads."""


def _base_bands(base: np.ndarray) -> list[tuple[bytes, int, int]]:
    """The bands of a clean screenshot, computed once while it is cached."""

    def bands() -> tuple[np.ndarray, list[tuple[bytes, int, int]]]:
        h = base.shape[0]
        flat = base.reshape(h, -1)
        return base, [_band(flat[r : r + BAND_ROWS], r + BAND_ROWS >= h) for r in range(0, h, BAND_ROWS)]

    return _BASE_BANDS.get((id(base), base.shape), bands)[1]  # the entry holds ``base``: its id is its own


def encode_png(image: np.ndarray, *, base: np.ndarray | None = None) -> bytes:
    """Encode an ``HxWx3`` uint8 image as an 8-bit RGB PNG; same pixels -> same bytes.

    Written directly with numpy and zlib (about twice as fast as Pillow's encoder): zlib level 1, and the
    file holds only IHDR, one IDAT and IEND (no metadata, no timestamp). The image is cut into bands of
    :data:`BAND_ROWS` rows, each filtered (None for its first row, Up for the others) and deflated on its
    own, ending on a full flush; the segments are joined into one zlib stream whose Adler-32 is combined
    from the bands'. A band's bytes therefore depend only on its own pixels, so with ``base`` (the clean
    screenshot an overlay was drawn on) only the bands the overlay changed are compressed again: the output
    is byte-identical with or without ``base``, only faster. The bytes depend only on the pixels and the
    zlib build.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"expected an HxWx3 uint8 image, got shape {image.shape} dtype {image.dtype}")
    h, w, _ = image.shape
    if h == 0 or w == 0:
        raise ValueError(f"cannot encode an empty image of shape {image.shape}")
    flat = image.reshape(h, 3 * w)
    reuse = _base_bands(base) if base is not None and base.shape == image.shape else None
    segs, adler = [], 1
    for i, r in enumerate(range(0, h, BAND_ROWS)):
        band = flat[r : r + BAND_ROWS]
        if reuse is not None and base is not None and np.array_equal(
            band, base.reshape(h, 3 * w)[r : r + BAND_ROWS]
        ):
            seg, a, n = reuse[i]
        else:
            seg, a, n = _band(band, r + BAND_ROWS >= h)
        segs.append(seg)
        adler = _adler32_combine(adler, a, n)
    idat = b"\x78\x01" + b"".join(segs) + struct.pack(">I", adler)
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)  # 8-bit, truecolour, deflate, no interlace
    return _PNG_SIGNATURE + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def decode_png(data: bytes) -> np.ndarray:
    """Decode PNG bytes to an ``HxWx3`` uint8 array (inverse of :func:`encode_png`); more pixels than the
    decompression-bomb limit raise :class:`~dvoc_bench.core.pixels.TooManyPixels` before decoding."""
    return np.array(decode_rgb(data), dtype=np.uint8)


def png_sha256(data: bytes) -> str:
    """Full sha256 hex digest of encoded bytes (the content address of a stored frame)."""
    return hashlib.sha256(data).hexdigest()
