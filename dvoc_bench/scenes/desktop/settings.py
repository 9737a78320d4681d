"""The ``desktop:`` block of the config, declared once: the settings of the Tk desktop scenes, the
bring-your-own Tk app and the application tasks (docs/desktop.md). :func:`dvoc_bench.runner.settings.
load_settings` validates it with the rest of the config; :meth:`dvoc_bench.scenes.desktop.source.
DesktopOptions.from_settings` and :meth:`dvoc_bench.scenes.desktop.apps.AppOptions.from_settings` turn the
validated block into what the sources run with (inline tasks read, files resolved)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from dvoc_bench.core.declare import Declared, PosFloat

MIN_SIDE, MAX_SIDE = 200, 4096
"""Range of each side of the virtual screen, px."""

VARIATION_KNOBS = ("gtk_theme", "gdk_scale", "gdk_dpi_scale")
"""The ``desktop:`` knobs that vary a program's screen (docs/variation.md): a trial keys the ones set off
their defaults (its ``variation`` field); the truth is read from AT-SPI again, never scaled."""


class DesktopCustom(Declared):
    """One inline bring-your-own Tk app (task id ``desktop_custom``)."""

    script: str | None = None
    """A Python file that builds a Tk UI (``mainloop`` is hooked by the harness)."""
    target: str | None = None
    """``widget:<Tk path>`` (``widget:.dlg.ok``) or ``canvas:<canvas path>:<tag>`` (``canvas:.c:node1``)."""
    instruction: str | None = None
    """The task text shown to the model."""


class DesktopApp(Declared):
    """One inline application task (task id ``desktop_app``, docs/desktop.md)."""

    command: str | list[str] | None = None
    """The application's command line, e.g. ``gtk3-widget-factory`` or ``zenity --question``."""
    target: str | None = None
    """``ROLE:NAME`` as AT-SPI names it (``push button:OK``); ``ROLE:NAME#N``: the N-th in reading order."""
    instruction: str | None = None
    """The task text shown to the model."""
    wait_for: str | None = None
    """``ROLE:NAME`` that must be showing before the frame is grabbed."""


class Desktop(Declared):
    """Desktop scenes D1-D4 (Tk on a private Xvfb display) and bring-your-own Tk apps
    (docs/desktop.md)."""

    size: list[int] = [1280, 800]
    """``[width, height]`` of the virtual screen; every desktop frame has this size."""
    verify_click: bool = False
    """Also click each final point with the real X pointer in a fresh instance of the scene."""
    timeout_s: PosFloat = 20.0
    """Display start, a scene becoming ready, each query and click, seconds."""
    custom: DesktopCustom = DesktopCustom()
    """``task=desktop_custom desktop.custom.script=app.py desktop.custom.target=widget:.ok
    desktop.custom.instruction=...``."""
    app: DesktopApp = DesktopApp()
    """``task=desktop_app desktop.app.command=... desktop.app.target='ROLE:NAME'
    desktop.app.instruction=...``."""
    app_files: list[str] = []
    """Your own application task YAMLs (schema of ``scenes/apps/A01.yaml``); use their ids in ``tasks=``."""
    gtk_theme: Literal["default", "dark"] = "default"
    """``dark``: GTK programs start with ``GTK_THEME=Adwaita:dark``; ``default``: their own theme."""
    gdk_scale: int = Field(1, ge=1, le=3)
    """``GDK_SCALE`` of GTK programs (1-3: whole-number window scaling); 1 leaves it unset."""
    gdk_dpi_scale: float = Field(1.0, ge=0.5, le=3.0)
    """``GDK_DPI_SCALE`` of GTK programs (0.5-3: text scaling); 1 leaves it unset."""

    def variation(self) -> dict[str, Any]:
        """The :data:`VARIATION_KNOBS` set off their defaults, ``{"desktop.gdk_scale": 2}`` (empty: none)."""
        base = Desktop()
        return {
            f"desktop.{k}": getattr(self, k) for k in VARIATION_KNOBS if getattr(self, k) != getattr(base, k)
        }

    def program_env(self) -> dict[str, str]:
        """The environment variables the variation knobs give a GTK program (empty at the defaults)."""
        env = {}
        if self.gtk_theme == "dark":
            env["GTK_THEME"] = "Adwaita:dark"
        if self.gdk_scale != 1:
            env["GDK_SCALE"] = str(self.gdk_scale)
        if self.gdk_dpi_scale != 1.0:
            env["GDK_DPI_SCALE"] = f"{self.gdk_dpi_scale:g}"
        return env

    @field_validator("size")
    @classmethod
    def _size(cls, v: list[int]) -> list[int]:  # an empty list: the default screen
        if v and not (len(v) == 2 and all(MIN_SIDE <= side <= MAX_SIDE for side in v)):
            raise ValueError(f"must be [width, height] in {MIN_SIDE}..{MAX_SIDE}, got {v!r}")
        return v
