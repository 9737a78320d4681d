"""What the app's entry point and the Hydra job share, kept light (``--help`` imports it)."""

from __future__ import annotations

EXIT_CODES_ENV = "DVOC_EXIT_CODES"
"""A file every multirun job appends its exit code to (set by ``entry``; jobs in other processes too)."""

_started: list[bool] = []


def mark_started() -> None:
    """Called when a job body begins."""
    _started.append(True)


def job_started() -> bool:
    """True once a job body began (errors before it are Hydra's: composing, creating the run dir)."""
    return bool(_started)
