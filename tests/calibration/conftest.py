"""The authors' records, loaded once for the calibration tests that need them."""

from __future__ import annotations

import pytest

from dvoc_bench import calibration as cal
from tests.support import UPSTREAM, need_upstream


@pytest.fixture(scope="session")
def data() -> cal.CalibrationData:
    """The authors' records (skips, or fails under ``DVOC_REQUIRE_UPSTREAM=1``, without them)."""
    need_upstream()
    return cal.load_calibration_data(UPSTREAM)
