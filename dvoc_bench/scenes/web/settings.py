"""The ``web:`` block of the config, declared once: the settings of web scenes and bring-your-own pages
(docs/web.md). :func:`dvoc_bench.runner.settings.load_settings` validates it with the rest of the config;
:meth:`dvoc_bench.scenes.web.source.WebOptions.from_settings` turns the validated block into what the
source runs with (task files resolved, the inline page read, origins normalised)."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from dvoc_bench.core.declare import Declared, PosFloat


class WebCustom(Declared):
    """One inline bring-your-own page (task id ``custom``)."""

    page: str | None = None
    """A local HTML file, ``file://`` URL, or ``http://127.0.0.1:PORT/path`` (``web.allow_origins``)."""
    selector: str | None = None
    """Playwright selector of the target (CSS, ``text=``, ``role=``, ``>> nth=N``...)."""
    instruction: str | None = None
    """The task text shown to the model."""
    setup: list[dict[str, Any]] = []
    """Actions before the snapshot, e.g. ``[{click: '#menu'}]``."""
    viewport: list[int] | dict[str, float] = [1280, 720]
    """``[width, height]``, or ``{width, height, device_scale_factor}`` (2: high-DPI frames)."""
    root: str | None = None
    """Asset root: local files resolving inside it load (default: the page's folder)."""
    wait_for: str | None = None
    """Selector that must be visible before the snapshot (a JavaScript-built control)."""
    scroll_to: str | None = None
    """Selector scrolled into view before the snapshot."""


class Web(Declared):
    """Web scenes W1-W5 and bring-your-own pages (docs/web.md)."""

    verify_click: bool = False
    """Also click each final point in a fresh load of the page; records ``clicked_target``."""
    chromium: str | None = None
    """Chromium binary; default: Playwright's own, ``$DVOC_CHROMIUM``, ``/usr/bin/chromium``, ..."""
    timeout_s: PosFloat = 30.0
    """Browser launch, page load and each set-up action, seconds."""
    task_files: list[str] = []
    """Your own task YAMLs (schema of ``scenes/web/W1.yaml``); use their ids in ``tasks=[...]``."""
    custom: WebCustom = WebCustom()
    """``task=custom web.custom.page=... web.custom.selector=... web.custom.instruction=...``."""
    allow_origins: list[str] = []
    """Loopback dev servers pages may load from, e.g. ``[http://127.0.0.1:8000]`` (anything else refused)."""

    @field_validator("chromium")
    @classmethod
    def _chromium(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError(f"must be a path to a Chromium binary, got {v!r}")
        return v
