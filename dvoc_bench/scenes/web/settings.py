"""The ``web:`` block of the config, declared once: the settings of web scenes and bring-your-own pages
(docs/web.md). :func:`dvoc_bench.runner.settings.load_settings` validates it with the rest of the config;
:meth:`dvoc_bench.scenes.web.source.WebOptions.from_settings` turns the validated block into what the
source runs with (task files resolved, the inline page read, origins normalised)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from dvoc_bench.core.declare import Declared, PosFloat
from dvoc_bench.scenes.web.devices import check_device_name


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


class CustomDevice(Declared):
    """The phone ``web.device=custom`` stands for (docs/phones.md)."""

    width: int = Field(412, ge=200, le=2048)
    """Viewport width, CSS pixels (portrait: narrower than high)."""
    height: int = Field(839, ge=200, le=4096)
    """Viewport height, CSS pixels."""
    device_scale_factor: float = Field(2.625, ge=1.0, le=5.0)
    """Screenshot pixels per CSS pixel."""
    is_mobile: bool = True
    """Honour the page's ``<meta name=viewport>`` as a phone does."""
    has_touch: bool = True
    """Touch events on; verifying clicks are taps."""


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
    device: str | None = None
    """Show every web page on this phone: a Playwright device name (``Pixel 7``, ``iPhone 13``, ``Galaxy
    S9+``...) or ``custom`` (``web.custom_device``); its viewport, scale, touch and user agent replace the
    task's viewport. ``None``: the task's own (desktop) viewport."""
    custom_device: CustomDevice = CustomDevice()
    """The phone of ``web.device=custom``."""

    @field_validator("device")
    @classmethod
    def _device(cls, v: str | None) -> str | None:
        return None if v is None else check_device_name(v)

    @field_validator("chromium")
    @classmethod
    def _chromium(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError(f"must be a path to a Chromium binary, got {v!r}")
        return v
