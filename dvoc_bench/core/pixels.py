"""Images decoded with bounded memory: every image we read (a dataset's screenshot, ``mark``'s input, a
request's PNG, a stored frame) is opened, its pixel count read from the header, and decoded only when it
holds at most :data:`MAX_PIXELS` pixels (Pillow's own decompression-bomb limit, applied here whatever
Pillow's global setting: a 420 KB PNG of 12000x12000 pixels inflates to 432 MB of RGB, and more in the
steps after). A larger image raises :class:`TooManyPixels` before a single pixel is inflated.
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

MAX_PIXELS = 89_478_485
"""Most pixels an image may hold to be decoded (Pillow's default ``Image.MAX_IMAGE_PIXELS``)."""

Source = str | Path | bytes | IO[bytes]


class TooManyPixels(ValueError):
    """An image whose header states more than :data:`MAX_PIXELS` pixels (it is not decoded)."""


def too_many(width: int, height: int) -> str | None:
    """Why an image of this size is refused, or ``None`` when it may be decoded."""
    if width * height <= MAX_PIXELS:
        return None
    return (
        f"the image is {width}x{height} = {width * height:,} pixels, more than {MAX_PIXELS:,} "
        "(the decompression-bomb limit); not decoded"
    )


@contextlib.contextmanager
def open_checked(source: Source) -> Iterator[Any]:
    """The opened (not decoded) PIL image of ``source``, its pixel count checked: :class:`TooManyPixels`
    when too large; Pillow's own errors (unreadable, truncated) as Pillow raises them."""
    from PIL import Image

    src = io.BytesIO(source) if isinstance(source, bytes) else source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we refuse it ourselves below
        try:
            im = Image.open(src)
        except Image.DecompressionBombError as e:  # over twice the limit: Pillow refuses at open
            said = re.search(r"\((\d+) pixels\)", str(e))
            count = f"{int(said[1]):,} pixels" if said else "over twice that many pixels"
            raise TooManyPixels(
                f"the image has {count}, more than {MAX_PIXELS:,} (the decompression-bomb limit); not decoded"
            ) from None
    with im:
        why = too_many(*im.size)
        if why is not None:
            raise TooManyPixels(why)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            yield im


def decode_rgb(source: Source) -> np.ndarray:
    """``source`` decoded as an ``HxWx3`` uint8 RGB array, when it holds at most :data:`MAX_PIXELS`
    pixels (:class:`TooManyPixels` otherwise, before decoding)."""
    with open_checked(source) as im:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)
