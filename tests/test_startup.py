"""What a sweep's start-up does not need: matplotlib (the scenes' font is found without importing it)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import ROOT


def test_the_font_is_found_without_importing_matplotlib():
    code = (
        "import os, sys; from dvoc_bench.draw.render import dejavu_path; p = dejavu_path(); "
        "print('matplotlib' in sys.modules); import matplotlib; "
        "print(p == os.path.join(matplotlib.get_data_path(), 'fonts', 'ttf', 'DejaVuSans.ttf'))"
    )
    p = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["False", "True"]  # not imported; the same file matplotlib names
