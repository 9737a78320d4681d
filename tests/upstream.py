"""Where the authors' records are for the tests, and what a test does without them.

Tests that need ``../shared/upstream`` (or ``$DVOC_UPSTREAM``) call :func:`need_upstream` (directly, or
through the ``upstream`` fixture / the :data:`needs_upstream` marker). Without the data they skip with a
reason, except under ``DVOC_REQUIRE_UPSTREAM=1`` (set by ``.ci/run``), where they FAIL: CI must not go green
on a machine that lacks the data every out-of-sample check rests on.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
UPSTREAM = Path(os.environ.get("DVOC_UPSTREAM") or ROOT.parent / "shared" / "upstream")
"""The authors' records: ``$DVOC_UPSTREAM``, else ``../shared/upstream`` beside the repository."""


def required() -> bool:
    """Whether a missing data folder is a failure (``DVOC_REQUIRE_UPSTREAM=1``) rather than a skip."""
    return os.environ.get("DVOC_REQUIRE_UPSTREAM", "").strip() not in ("", "0")


def need_upstream(sub: str = "responses") -> Path:
    """``UPSTREAM`` when ``UPSTREAM / sub`` exists; otherwise skip (or fail when :func:`required`)."""
    if (UPSTREAM / sub).exists():
        return UPSTREAM
    msg = f"the authors' records are not at {UPSTREAM / sub} (set DVOC_UPSTREAM to their folder)"
    if required():
        pytest.fail(f"{msg}; DVOC_REQUIRE_UPSTREAM is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(msg)


needs_upstream = pytest.mark.usefixtures("upstream")
"""Marker for a test (or, as ``pytestmark``, a module) that needs the authors' records."""
