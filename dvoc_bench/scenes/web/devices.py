"""Phones and tablets for web scenes: Playwright's device descriptors by their Playwright names, and a
``custom`` device whose viewport, scale and input are knobs (``web.device``, ``web.custom_device``;
docs/phones.md).

A device sets the page's viewport (CSS pixels, portrait as Playwright gives it), its device scale factor
(screenshot pixels per CSS pixel), ``is_mobile`` (the meta viewport is honoured, as on a phone), ``has_touch``
(touch events; the harness then taps instead of clicking) and the user agent. Every descriptor runs in the
one Chromium the web scenes use: those Playwright lists for WebKit (the iPhones) keep their viewport, scale
and touch, which is all a screenshot and a tap depend on.

The descriptors are read from the installed Playwright (``playwright.devices``), once per process, on a
thread of their own (Playwright's sync API refuses to start inside a running asyncio loop).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from dvoc_bench.core.geometry import Size

CUSTOM_DEVICE = "custom"
"""``web.device`` value of the device described by ``web.custom_device``."""


@dataclass(frozen=True)
class Device:
    """A phone (or tablet) a web page is shown on."""

    name: str
    """Playwright's name (``Pixel 7``) or ``custom``."""
    viewport: Size
    """Layout viewport in CSS pixels (portrait for the phones)."""
    scale: float
    """Device scale factor: screenshot pixels per CSS pixel."""
    is_mobile: bool
    """The page's ``<meta name=viewport>`` is honoured (a page without one lays out at 980 CSS px)."""
    has_touch: bool
    """Touch events are on; a verifying click is a ``touchscreen.tap``."""
    user_agent: str | None = None
    """The descriptor's user agent (``None``: Chromium's own)."""

    @property
    def image_size(self) -> Size:
        """Screenshot size in pixels (``viewport × scale``, rounded as Chromium rounds it)."""
        return Size(round(self.viewport.width * self.scale), round(self.viewport.height * self.scale))

    def context_options(self) -> dict[str, Any]:
        """What Playwright's ``new_context`` takes besides the viewport and the scale."""
        out: dict[str, Any] = {"is_mobile": self.is_mobile, "has_touch": self.has_touch}
        if self.user_agent:
            out["user_agent"] = self.user_agent
        return out


def _read_descriptors() -> dict[str, dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        return {name: dict(d) for name, d in pw.devices.items()}


@lru_cache(maxsize=1)
def playwright_devices() -> Mapping[str, Mapping[str, Any]]:
    """Playwright's device descriptors by name (``playwright.devices``), read once per process."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["out"] = _read_descriptors()
        except BaseException as e:  # handed to the caller
            box["err"] = e

    t = threading.Thread(target=run, name="dvoc-devices", daemon=True)
    t.start()
    t.join(timeout=120)
    if "err" in box:
        raise box["err"]
    if "out" not in box:
        raise RuntimeError("Playwright did not list its devices within 120 s")
    return box["out"]


def device_names() -> list[str]:
    """Every name ``web.device`` takes: Playwright's descriptors, then ``custom``."""
    return [*playwright_devices(), CUSTOM_DEVICE]


def unknown_device_message(name: str) -> str:
    """One line naming the bad value and every known device."""
    return f"unknown device {name!r}; known: {', '.join(device_names())}"


def check_device_name(name: str) -> str:
    """``name`` when it is a Playwright device or ``custom``; ``ValueError`` (one line listing the known
    ones) otherwise."""
    if name == CUSTOM_DEVICE or name in playwright_devices():
        return name
    raise ValueError(unknown_device_message(name))


def from_descriptor(name: str, d: Mapping[str, Any]) -> Device:
    """A :class:`Device` of one Playwright descriptor."""
    vp = d["viewport"]
    return Device(
        name=name,
        viewport=Size(int(vp["width"]), int(vp["height"])),
        scale=float(d.get("device_scale_factor") or 1.0),
        is_mobile=bool(d.get("is_mobile", False)),
        has_touch=bool(d.get("has_touch", False)),
        user_agent=d.get("user_agent") or None,
    )


def resolve_device(name: str | None, custom: Any = None) -> Device | None:
    """The device ``web.device`` names (``None``: none, the desktop viewport of each task). ``custom``
    is the ``web.custom_device`` block (width, height, device_scale_factor, is_mobile, has_touch)."""
    if name is None:
        return None
    if name == CUSTOM_DEVICE:
        if custom is None:
            raise ValueError("web.custom_device: required with web.device=custom")
        return Device(
            name=CUSTOM_DEVICE,
            viewport=Size(int(custom.width), int(custom.height)),
            scale=float(custom.device_scale_factor),
            is_mobile=bool(custom.is_mobile),
            has_touch=bool(custom.has_touch),
        )
    check_device_name(name)
    return from_descriptor(name, playwright_devices()[name])


def device_label(name: str | None, custom: Any = None) -> str:
    """What a trial key records of the device: ``-`` for none, the Playwright name, or for ``custom`` its
    numbers (``custom:412x839@2.625,mobile,touch``). Needs no browser: a name stands for its descriptor."""
    if name is None:
        return "-"
    if name != CUSTOM_DEVICE or custom is None:
        return name
    flags = [f for f, on in (("mobile", custom.is_mobile), ("touch", custom.has_touch)) if on]
    return f"custom:{custom.width}x{custom.height}@{custom.device_scale_factor:g}" + "".join(
        "," + f for f in flags
    )
