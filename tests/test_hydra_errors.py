"""Hydra's composition errors as the one line ``<key>: <what>; allowed: ...`` (in process)."""

from __future__ import annotations

import pytest

from dvoc_bench.app.hydra_errors import config_error_line
from dvoc_bench.runner.compose import compose
from tests.support import ROOT


def _line(override: str) -> str:
    with pytest.raises(Exception) as e:
        compose([override])
    line = config_error_line(e.value)
    assert line is not None, e.value
    return line


def test_unknown_preset_lists_every_preset_baselines_included():
    line = _line("experiment=nope")
    presets = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
    assert "baselines" in presets
    assert line == f"experiment: unknown value 'nope'; allowed: {', '.join(presets)}"


def test_unknown_detector_hides_the_internal_bases():
    allowed = "cv, helper, omniparser, onnx, oracle, rknn"
    assert _line("detector=yolo") == f"detector: unknown value 'yolo'; allowed: {allowed}"
