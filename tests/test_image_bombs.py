"""Issue 51, item 8: an image's pixel count is checked before it is decoded, on every path that reads one.

Before: ``python -m dvoc_bench.mark`` on a 420 KB PNG of 12000x12000 pixels decoded it (Pillow only warns
below twice its limit) and took 14.4 GB; a dataset screenshot of that size was decoded for its sample.
The PNGs here are real and valid (zlib-compressed zero rows, written in a stream: a few hundred KB).
"""

from __future__ import annotations

import resource
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from dvoc_bench.core.geometry import Box
from dvoc_bench.core.pixels import MAX_PIXELS, TooManyPixels, decode_rgb
from dvoc_bench.draw.render import decode_png, encode_png
from dvoc_bench.scenes.dataset_source import ImageCache, SampleError, sample_snapshot
from dvoc_bench.scenes.datasets import Sample
from tests.support import ROOT

SIDE = 9500
"""9500 x 9500 = 90,250,000 pixels: just above the limit (89,478,485), below twice it (where Pillow itself
refuses): the case Pillow lets through with a warning."""


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def bomb_png(path: Path, width: int = SIDE, height: int = SIDE) -> Path:
    """A valid all-black RGB PNG of ``width x height`` pixels, compressed row by row."""
    z = zlib.compressobj(9)
    row = b"\x00" * (1 + 3 * width)
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    return bomb_png(tmp_path_factory.mktemp("bomb") / "bomb.png")


def _limit_memory() -> None:
    gb = 3 << 30  # the interpreter with numpy and Pillow fits easily; decoding the bomb does not
    resource.setrlimit(resource.RLIMIT_AS, (gb, gb))


def test_mark_refuses_a_bomb_in_one_line_naming_the_file_exit_2(bomb):
    r = subprocess.run(
        [sys.executable, "-m", "dvoc_bench.mark", str(bomb), "--detector", "cv"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, preexec_fn=_limit_memory,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: ") and str(bomb) in lines[0], lines
    assert f"{SIDE}x{SIDE}" in lines[0] and "pixels" in lines[0]


def test_a_dataset_sample_with_a_bomb_fails_its_own_trials_before_decoding(bomb, tmp_path):
    sample = Sample("s1", bomb, Box(10, 10, 50, 50), "Click the thing", None)
    with pytest.raises(SampleError, match=f"{SIDE}x{SIDE}") as e:
        sample_snapshot(sample, ImageCache())
    assert "pixels" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(SampleError, match="pixels"):  # the decoder refuses it too (a sample read lazily)
        ImageCache().get(bomb)


def test_every_decoding_path_checks_the_pixel_count(bomb):
    data = bomb.read_bytes()
    for decode in (decode_rgb, decode_png):
        with pytest.raises(TooManyPixels, match=f"{SIDE * SIDE:,} pixels"):
            decode(data)
    from dvoc_bench.app.simserve.wire import HTTPError, decode

    with pytest.raises(HTTPError, match="pixels"):
        decode(data)
    ok = encode_png(__import__("numpy").zeros((20, 30, 3), dtype="uint8"))
    assert decode_png(ok).shape == (20, 30, 3)  # an ordinary image still decodes
    assert SIDE * SIDE > MAX_PIXELS > (SIDE - 100) ** 2
