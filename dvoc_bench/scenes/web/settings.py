"""The ``web:`` block of the config, declared once: the settings of web scenes and bring-your-own pages
(docs/web.md). :func:`dvoc_bench.runner.settings.load_settings` validates it with the rest of the config;
:meth:`dvoc_bench.scenes.web.source.WebOptions.from_settings` turns the validated block into what the
source runs with (task files resolved, the inline page read, origins normalised)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from dvoc_bench.core.declare import Declared, PosFloat
from dvoc_bench.scenes.web.devices import check_device_name

VARIATION_KNOBS = ("zoom", "device_scale_factor", "viewport", "orientation", "color_scheme", "font_scale")
"""The ``web:`` knobs that vary a page's screen (docs/variation.md): a trial keys the ones set off their
defaults (its ``variation`` field), and the truth is measured again on the varied page, never scaled."""


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

    zoom: float = Field(1.0, ge=0.5, le=2.0)
    """Browser zoom (0.5-2 = 50-200 %), as Chromium's own page zoom does it: the CSS viewport is the window
    divided by the zoom and every CSS pixel covers ``zoom`` times more device pixels, so the screenshot keeps
    the window's size while the page reflows (media queries and all). Not CSS ``zoom``."""
    device_scale_factor: float | None = Field(None, ge=0.5, le=4.0)
    """Device pixels per CSS pixel of every page (0.5-4; ``null``: each task's own, 1 unless it says)."""
    viewport: list[int] = []
    """``[width, height]`` CSS pixels of every page (64-4096 each; ``[]``: each task's own)."""
    orientation: Literal["task", "portrait", "landscape"] = "task"
    """``portrait`` / ``landscape``: the viewport's sides swapped when needed so it is taller / wider than
    wide / tall; ``task``: as the task (or ``web.viewport``) gives it."""
    color_scheme: Literal["light", "dark"] = "light"
    """The ``prefers-color-scheme`` the browser reports (Playwright's media emulation); a page with dark
    styles draws them."""
    font_scale: float = Field(1.0, ge=0.5, le=2.0)
    """Every element's computed font size multiplied by this (0.5-2) before anything is measured."""

    @field_validator("viewport")
    @classmethod
    def _viewport(cls, v: list[int]) -> list[int]:
        if v and not (len(v) == 2 and all(64 <= side <= 4096 for side in v)):
            raise ValueError(f"must be [width, height] in 64..4096, got {v!r}")
        return v

    def variation(self) -> dict[str, Any]:
        """The :data:`VARIATION_KNOBS` set off their defaults, ``{"web.zoom": 1.5, ...}`` (empty: none)."""
        base = Web()
        return {f"web.{k}": getattr(self, k) for k in VARIATION_KNOBS if getattr(self, k) != getattr(base, k)}

    @field_validator("chromium")
    @classmethod
    def _chromium(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError(f"must be a path to a Chromium binary, got {v!r}")
        return v
