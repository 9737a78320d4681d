"""Web scenes: HTML pages rendered in a real Chromium, targets measured from the DOM.

A web task is a YAML file (``scenes/web/W1.yaml``)::

    id: W1                      # scene id (equal to the file stem inside scenes/web/)
    name: login-form            # optional short name
    difficulty: easy            # optional: easy | medium | hard
    page: W1.html               # relative to this YAML, absolute, a file:// URL, or http://127.0.0.1:PORT/...
    instruction: Click the Sign In button
    selector: "#sign-in"        # Playwright selector (CSS, text=, role=, >> nth=N, chains)
    viewport: [1280, 720]       # optional; or {width: 640, height: 360, device_scale_factor: 2}
    root: ../..                 # optional asset root: local files resolving inside it load (default: the
                                #   page's folder)
    wait_for: "#copy-path"      # optional: a selector that must be visible before the snapshot
    scroll_to: "a.next"         # optional: scrolled into view before the snapshot
    setup:                      # optional actions before the snapshot, in order
      - click: "#menu-toggle"   #   click | hover: <selector>;  fill: {selector: <css>, value: <text>}

Bring your own page: the same file anywhere, listed in ``web.task_files``; or one inline task with id
``custom`` from ``web.custom.{page, selector, instruction, setup, viewport, root, wait_for, scroll_to}``.
Local pages, and pages of the loopback dev servers named in ``web.allow_origins``; in the browser every
other request is blocked and counted (:mod:`dvoc_bench.scenes.web.browser`).

The target: the selector's one match; among several, the one visible with at least half of its box in the
viewport if exactly one is; it is scored on its part inside the viewport. Anything else (no match, several
candidates, hidden, outside the viewport, covered) is a one-line :class:`SceneError` with the reason.

Each page is rendered once per registry (load, network idle, pin fonts, wait, set up, scroll, measure,
screenshot) and kept open on the shared browser for hit tests: :meth:`WebScenes.probe` reports the DOM
element under a point (``document.elementFromPoint``) and whether it is the target or inside it; with
``verify_click`` it also clicks the point in a fresh copy of the page and reports whether the target's click
listener fired. A page that fails (hangs, navigates away, crashes, no valid target) raises
:class:`SceneError` (``error_class = "scene"``); the sweep records its trials as errors and goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dvoc_bench.core.declare import ConfigError, validate
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.core.records import Probe
from dvoc_bench.core.scene import Element, SceneTruth, Snapshot
from dvoc_bench.scenes.sources import SceneError, SceneFolder
from dvoc_bench.scenes.synthetic import DIFFICULTIES, content_hash, read_task_yaml
from dvoc_bench.scenes.web.browser import BrowserHung, WebBrowser, inside, origin_of, url_to_path
from dvoc_bench.scenes.web.devices import Device, resolve_device
from dvoc_bench.scenes.web.page import IDLE_S, PageError, PageRender, WebTask, setup_actions
from dvoc_bench.scenes.web.settings import Web, WebCustom
from dvoc_bench.scenes.web.variation import WebVariation, vary_task

log = logging.getLogger(__name__)

DEFAULT_VIEWPORT = Size(1280, 720)
"""The paper's web viewport."""

CUSTOM_ID = "custom"
"""Scene id of the inline bring-your-own task (``web.custom``)."""

_TASK_KEYS = (
    "id", "name", "difficulty", "page", "instruction", "selector", "viewport", "setup", "root", "wait_for",
    "scroll_to",
)  # fmt: skip
_REQUIRED = ("page", "instruction", "selector")
_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def check_origins(raw: Any, where: str = "web.allow_origins") -> tuple[str, ...]:
    """Validate ``web.allow_origins``: ``http(s)://`` loopback origins (``127.0.0.1``, ``localhost``,
    ``[::1]``) with an explicit port and no path; normalised by :func:`origin_of`."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    out = []
    for i, value in enumerate(raw):
        w = f"{where}[{i}]"
        parts = urlsplit(str(value).strip())
        try:
            port = parts.port
        except ValueError:
            port = None
        host = parts.netloc.rsplit(":", 1)[0] if parts.netloc else ""
        if parts.scheme not in ("http", "https") or not port or parts.path not in ("", "/") or parts.query:
            raise ConfigError(f"{w}: {value!r} must be an origin like http://127.0.0.1:8000")
        if host not in _LOOPBACK:
            raise ConfigError(f"{w}: {value!r}: only loopback servers (127.0.0.1, localhost, [::1])")
        origin = origin_of(str(value).strip())
        assert origin is not None
        out.append(origin)
    return tuple(out)


# ------------------------------------------------------------------------------------- task specs


def resolve_page(value: Any, base: Path, where: str, origins: tuple[str, ...] = ()) -> Path | str:
    """A page given as a path (relative to ``base``) or ``file://`` URL -> an existing absolute file; an
    ``http://`` URL of an allowed loopback origin (``origins``) -> the URL."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a path or file:// URL of a local HTML file")
    value = value.strip()
    scheme = urlsplit(value).scheme
    if scheme in ("http", "https"):
        origin = origin_of(value)
        if origin is not None and origin in origins:
            return value
        hint = f" (add it to web.allow_origins=[{origin}] if it is a local dev server)" if origin else ""
        raise ConfigError(f"{where}: {value!r}: only local files and web.allow_origins{hint}")
    if scheme == "file":
        path = url_to_path(value)
        if path is None:
            raise ConfigError(f"{where}: {value!r} is not a local file:// URL")
    elif scheme and len(scheme) > 1:  # "c:" style drive letters are one character
        raise ConfigError(f"{where}: {value!r}: only local files and web.allow_origins")
    else:
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = base / path
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"{where}: file not found: {path}")
    return path


def task_from_mapping(
    raw: Any, *, base: Path, where: str, default_id: str | None = None, origins: tuple[str, ...] = ()
) -> WebTask:
    """Validate a task mapping (the YAML schema above); ``ConfigError`` names the bad key."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: a web task must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(_TASK_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {', '.join(_TASK_KEYS)}")
    for key in _REQUIRED:
        if raw.get(key) in (None, ""):
            raise ConfigError(f"{where}: key {key!r} is required")
    task_id = raw.get("id", default_id)
    if not isinstance(task_id, str) or not task_id.strip():
        raise ConfigError(f"{where}: key 'id' must be a non-empty string")
    difficulty = raw.get("difficulty")
    if difficulty is not None and difficulty not in DIFFICULTIES:
        raise ConfigError(f"{where}: difficulty {difficulty!r}; allowed: {', '.join(DIFFICULTIES)}")
    for key in ("instruction", "selector"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise ConfigError(f"{where}: key {key!r} must be a non-empty string")
    for key in ("wait_for", "scroll_to"):
        if raw.get(key) is not None and (not isinstance(raw[key], str) or not raw[key].strip()):
            raise ConfigError(f"{where}: key {key!r} must be a non-empty selector")
    try:
        setup = setup_actions(raw.get("setup") or [], f"{where}: setup")
    except ValueError as e:
        raise ConfigError(str(e)) from e
    page = resolve_page(raw["page"], base, f"{where}: page", origins)
    root = None
    if raw.get("root") not in (None, ""):
        if not isinstance(raw["root"], str):
            raise ConfigError(f"{where}: root: must be a folder path")
        root = Path(raw["root"]).expanduser()
        root = (root if root.is_absolute() else base / root).resolve()
        if not root.is_dir():
            raise ConfigError(f"{where}: root: folder not found: {root}")
        if isinstance(page, Path) and not inside(page, root):
            raise ConfigError(f"{where}: root: {root} does not contain the page {page}")
    viewport, scale = _viewport(raw.get("viewport"), where)
    return WebTask(
        id=task_id.strip(),
        page=page if isinstance(page, Path) else None,
        remote=page if isinstance(page, str) else None,
        instruction=raw["instruction"].strip(),
        selector=raw["selector"].strip(),
        viewport=viewport,
        scale=scale,
        setup=setup,
        name=str(raw.get("name") or ""),
        difficulty=difficulty,
        root=root,
        wait_for=(raw.get("wait_for") or "").strip() or None,
        scroll_to=(raw.get("scroll_to") or "").strip() or None,
        origins=origins,
    )


def _viewport(value: Any, where: str) -> tuple[Size, float]:
    """``[w, h]`` or ``{width, height, device_scale_factor}`` -> (CSS viewport, device pixels per CSS px)."""
    if value is None:
        return DEFAULT_VIEWPORT, 1.0
    scale = 1.0
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"width", "height", "device_scale_factor"})
        if unknown or not {"width", "height"} <= set(value):
            raise ConfigError(
                f"{where}: viewport mapping takes width, height and optional device_scale_factor, got "
                f"{dict(value)!r}"
            )
        try:
            scale = float(value.get("device_scale_factor") or 1.0)
        except (TypeError, ValueError):
            scale = -1.0
        if not 0.5 <= scale <= 4:
            raise ConfigError(f"{where}: viewport.device_scale_factor must be in 0.5..4, got {scale!r}")
        value = [value["width"], value["height"]]
    try:
        w, h = (int(v) for v in value)
        ok = all(float(v) == int(v) for v in value)
    except (TypeError, ValueError):
        ok = False
    if not ok or not (64 <= w <= 4096 and 64 <= h <= 4096):
        raise ConfigError(f"{where}: viewport must be [width, height] in 64..4096, got {value!r}")
    return Size(w, h), scale


def load_task(path: str | Path, default_id: str | None = None, origins: tuple[str, ...] = ()) -> WebTask:
    """Read and validate one task YAML (``page`` resolves relative to the file)."""
    path = Path(path).resolve()
    raw = read_task_yaml(path, "web task")
    return task_from_mapping(
        raw, base=path.parent, where=str(path), default_id=default_id or path.stem, origins=origins
    )


# ---------------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class WebOptions:
    """What the web source runs with: the ``web:`` block (:class:`~dvoc_bench.scenes.web.settings.Web`)
    with its task files resolved, its inline page read and its origins normalised."""

    verify_click: bool = False
    """Also click each trial's final point in a fresh copy of the page (records ``clicked_target``)."""
    chromium: str | None = None
    """Chromium binary; ``None``: Playwright's own, ``$DVOC_CHROMIUM``, then system browsers."""
    timeout_s: float = 30.0
    """Timeout of browser launch, page load and each set-up action."""
    task_files: tuple[Path, ...] = ()
    """Bring-your-own task YAMLs (resolved)."""
    custom: WebTask | None = None
    """The inline bring-your-own task (id ``custom``), if ``web.custom.page`` is set."""
    allow_origins: tuple[str, ...] = ()
    """Loopback dev-server origins pages may load from (and be served by), normalised."""
    device: Device | None = None
    """The phone every page is shown on (``web.device``), ``None`` for each task's own viewport."""
    variation: WebVariation = WebVariation()
    """The variation axes every task is shown under (docs/variation.md)."""

    @classmethod
    def from_settings(cls, settings: Web | Mapping[str, Any] | None, cwd: Path | None = None) -> WebOptions:
        """The options of the validated ``web:`` block (a mapping is validated here, once, by
        :class:`~dvoc_bench.scenes.web.settings.Web`); relative paths resolve against ``cwd`` (default:
        the CWD)."""
        s = settings if isinstance(settings, Web) else validate(Web, settings, "web.")
        cwd = Path.cwd() if cwd is None else cwd
        task_files = []
        for i, f in enumerate(s.task_files):
            p = Path(f).expanduser()
            p = (p if p.is_absolute() else cwd / p).resolve()
            if not p.is_file():
                raise ConfigError(f"web.task_files[{i}]: file not found: {p}")
            task_files.append(p)
        origins = check_origins(s.allow_origins)
        try:
            device = resolve_device(s.device, s.custom_device)
        except ValueError as e:
            raise ConfigError(f"web.device: {e}") from e
        return cls(
            verify_click=s.verify_click,
            chromium=s.chromium.strip() if s.chromium else None,
            timeout_s=s.timeout_s,
            task_files=tuple(task_files),
            custom=_custom_task(s.custom, cwd, origins),
            allow_origins=origins,
            device=device,
            variation=WebVariation(
                zoom=s.zoom,
                device_scale_factor=s.device_scale_factor,
                viewport=(s.viewport[0], s.viewport[1]) if s.viewport else None,
                orientation=s.orientation,
                color_scheme=s.color_scheme,
                font_scale=s.font_scale,
            ),
        )


def on_device(task: WebTask, device: Device | None) -> WebTask:
    """``task`` shown on ``device``: the phone's viewport and scale replace the task's own (the page
    reflows and is measured again there, never scaled from another render)."""
    if device is None:
        return task
    return dataclasses.replace(task, viewport=device.viewport, scale=device.scale, device=device)


def _custom_task(custom: WebCustom, cwd: Path, origins: tuple[str, ...] = ()) -> WebTask | None:
    given = {k: v for k, v in custom.model_dump().items() if v not in (None, "", [])}
    if not given.get("page"):
        if given.get("selector") or given.get("instruction"):
            raise ConfigError("web.custom.page: required when web.custom.selector/instruction is set")
        return None
    return task_from_mapping({**given, "id": CUSTOM_ID}, base=cwd, where="web.custom", origins=origins)


# ------------------------------------------------------------------------------------ the source


def blocked_warning(task: WebTask, blocked: tuple[str, ...] | list[str]) -> str:
    """One line: for blocked local files, first the setting that would allow them (``root=`` the common
    ancestor of the page and the files), then how many requests were blocked and which."""
    return f"{task.id}: {blocked_detail(task, blocked)}"


def blocked_detail(task: WebTask, blocked: tuple[str, ...] | list[str]) -> str:
    """:func:`blocked_warning` without the task id: the actionable setting first (a shortened line keeps
    it), then the count and the first few URLs."""
    files = [p for p in (url_to_path(u) for u in blocked) if p is not None]
    shown = ", ".join(list(blocked)[:3]) + (", ..." if len(blocked) > 3 else "")
    what = f"blocked {len(blocked)} request(s) of the page ({shown})"
    if not files:
        return what
    anchor = [str(task.page)] if task.page is not None else []
    common = os.path.commonpath([os.path.realpath(p) for p in files] + anchor)
    key = "web.custom.root=" if task.id == CUSTOM_ID else "root: "
    return (
        f"{key}{common} would allow the {len(files)} local file(s) the page loads outside the asset root "
        f"{task.asset_root}; {what}"
    )


def with_blocked_hint(task: WebTask, msg: str, blocked: tuple[str, ...] | list[str]) -> str:
    """A scene error of a page whose requests were blocked: the setting that would allow its local files
    first (after the task id), then the error itself (``msg`` starts with the id), then what was blocked."""
    detail = blocked_detail(task, blocked)
    body = msg.removeprefix(f"{task.id}: ")
    if " would allow the " not in detail:  # no local file: nothing to set, the error comes first
        return f"{task.id}: {body}; {detail}"
    hint, rest = detail.split("; ", 1)
    return f"{task.id}: {hint}; {body}; {rest}"


@dataclass
class WebScene:
    """A rendered web scene, kept for hit tests and inspection."""

    task: WebTask
    """The task it was rendered from."""
    render: PageRender
    """What the browser measured (elements, blocked URLs, font status, timings)."""
    snapshot: Snapshot
    """The scene as the harness sees it."""
    clicks_blocked: list[str] = field(default_factory=list)
    """URLs blocked during verifying clicks (the page's load is in ``render.blocked``)."""


class WebScenes:
    """The web scenes of one registry: task files, bring-your-own tasks and one shared, lazy browser."""

    def __init__(self, options: WebOptions | None = None) -> None:
        self.options = options or WebOptions()
        """Validated ``web:`` options."""
        self.browser = WebBrowser(self.options.chromium, self.options.timeout_s, self.options.allow_origins)
        """The shared browser (launched on the first render, closed by :meth:`close`)."""
        self._scenes: dict[str, WebScene] = {}
        self._lock = threading.Lock()
        self._preparsed: dict[Path, WebTask] = {}
        self._failed: dict[str, SceneError] = {}
        origins = self.options.allow_origins
        extra: dict[str, Path] = {}
        pairs = [(p, load_task(p, origins=origins)) for p in self.options.task_files]
        if self.options.custom is not None:
            c = self.options.custom
            pairs.append((c.page if c.page is not None else Path(f"/web.custom/{c.id}"), c))
        for key, t in pairs:
            if t.id in extra:
                raise ConfigError(f"web: task id {t.id!r} is defined twice ({extra[t.id]} and {key})")
            extra[t.id] = key
            self._preparsed[key] = t
        self.extra = extra
        """Bring-your-own scene ids -> the file the registry hands to :meth:`load`."""

    def source(self) -> SceneFolder:
        """This object as a registry :class:`~dvoc_bench.scenes.sources.SceneFolder` (``*.yaml`` in
        ``web/``). A page's canvas is its viewport (``web.viewport``, validated with the web settings), so
        ``scenes.max_side`` does not apply."""
        return SceneFolder(
            "*.yaml",
            lambda path, _max_side: self.load(path),
            probe=self.probe,
            close=self.close,
            remove=lambda path, _max_side: self.load_without_target(path),
            extra=dict(self.extra),
            backend=self,
            kind="web",
        )

    # ---------------------------------------------------------------------------------- loading

    def task(self, path: Path) -> WebTask:
        """The task a registry path stands for (a pre-parsed bring-your-own task, or a YAML file)."""
        path = Path(path)
        task = (
            self._preparsed.get(path)
            or self._preparsed.get(path.resolve())
            or load_task(path, origins=self.options.allow_origins)
        )
        shown = on_device(task, self.options.device)
        return shown if self.options.variation == WebVariation() else vary_task(shown, self.options.variation)

    def load(self, path: Path) -> Snapshot:
        """Render a task once: load, pin fonts, set up, measure the DOM, screenshot; keep the page open.

        A page that cannot be a scene raises :class:`SceneError`; the failure is remembered, so the
        sweep's every trial of it gets the same error at once instead of rendering it again."""
        return self._load(self.task(path))

    def load_without_target(self, path: Path) -> Snapshot:
        """:meth:`load` with the target hidden before the screenshot (``absent.variant=remove``): the
        registry of such a run renders each page this way only."""
        return self._load(dataclasses.replace(self.task(path), hide_target=True))

    def _load(self, task: WebTask) -> Snapshot:
        failed = self._failed.get(task.id)
        if failed is not None:
            raise failed
        try:
            return self.render(task).snapshot
        except SceneError as e:
            self._failed[task.id] = e
            raise

    def render(self, task: WebTask) -> WebScene:
        """Render ``task`` now (replacing an earlier render of the same id) and keep its page open."""
        from dvoc_bench.scenes.web.page import render

        def job(session: Any) -> PageRender:
            old = session.state.pop(("live", task.id), None)
            if old is not None:
                old.close()
            result, live = render(session, task, keep=True)
            session.state[("live", task.id)] = live
            return result

        try:
            result = self.browser.run(job)
        except (PageError, BrowserHung) as e:
            msg = str(e) if isinstance(e, PageError) else f"{task.id}: {e} ({task.where})"
            blocked = getattr(e, "blocked", ())
            if blocked:  # unstyled because its CSS was fenced off? say how to allow it, first
                msg = with_blocked_hint(task, msg, blocked)
            err = SceneError(msg)
            err.size = task.image_size
            raise err from e
        if result.blocked:
            log.warning("%s", blocked_warning(task, result.blocked))
        if not result.idle:
            log.warning("%s: the network did not go idle within %g s of load", task.id, IDLE_S)
        t = result.target
        if t.dom_box is not None and t.dom_box != t.box:
            log.info("%s: target box %s sticks out of the frame; scored on its visible part %s",
                     task.id, t.dom_box.as_list(), t.box.as_list())  # fmt: skip
        log.info("%s: rendered in %.3f s", task.id, result.timings["total"])
        scene = WebScene(task, result, _snapshot(task, result))
        with self._lock:
            self._scenes[task.id] = scene
        return scene

    def scene(self, scene_id: str) -> WebScene:
        """The rendered scene (raises ``KeyError`` before it was loaded)."""
        with self._lock:
            return self._scenes[scene_id]

    def blocked(self, scene_id: str) -> tuple[str, ...]:
        """URLs the page attempted and the guard blocked (load, set-up, hit tests, verify clicks)."""
        s = self.scene(scene_id)
        return s.render.blocked + tuple(s.clicks_blocked)

    # ---------------------------------------------------------------------------------- probing

    def probe(self, scene_id: str, point: Point) -> Probe:
        """The DOM element under ``point``; with ``verify_click`` also the outcome of a real click there."""
        from dvoc_bench.scenes.web.page import hit_test, new_task_page, render, verify_click

        scene = self.scene(scene_id)
        task = scene.task
        verify = self.options.verify_click

        def job(session: Any) -> tuple[str | None, bool, bool | None, tuple[str, ...]]:
            live = session.state.get(("live", task.id))
            if live is None:  # the browser was closed and relaunched: rebuild the same page
                again, live = render(session, task, keep=True)
                if again.elements != scene.render.elements:
                    live.close()
                    raise PageError(f"{task.id}: the page renders differently after a browser restart")
                session.state[("live", task.id)] = live
            element, hit = hit_test(live, task, point)
            if not verify:
                return element, hit, None, ()
            clicker = session.state.get(("click", task.id))
            if clicker is None:
                clicker = session.state[("click", task.id)] = new_task_page(session, task)
            clicked, blocked = verify_click(clicker, task, point, scene.render.target_index)
            return element, hit, clicked, blocked

        element, hit, clicked, blocked = self.browser.run(job)
        with self._lock:
            scene.clicks_blocked.extend(blocked)
        return Probe(
            hit_element=element,
            hit=hit,
            clicked_target=clicked,
            blocked_requests=len(scene.render.blocked) + len(blocked),
        )

    def close(self) -> None:
        """Close the browser (the rendered snapshots stay; a later probe relaunches it)."""
        self.browser.close()


def _snapshot(task: WebTask, r: PageRender) -> Snapshot:
    elements = tuple(
        Element(id=e.id, label=e.label, box=e.box, role=e.role, interactive=True)
        for e in r.elements
        if not (task.hide_target and e.is_target)  # a hidden target is not on the screen
    )
    truth = SceneTruth(
        scene_id=task.id,
        size=task.image_size,
        instruction=task.instruction,
        target_id=r.target.id,
        target_box=r.target.box,
        elements=elements,
        target_full_box=r.target.dom_box if r.target.dom_box not in (None, r.target.box) else None,
        absent="remove" if task.hide_target else None,
    )
    return Snapshot(truth=truth, image=r.image, content_hash=content_hash(r.image, truth))


def web_source(options: Web | Mapping[str, Any] | WebOptions | None = None) -> SceneFolder:
    """A fresh web :class:`~dvoc_bench.scenes.sources.SceneFolder` with its own browser (one per registry)."""
    opts = options if isinstance(options, WebOptions) else WebOptions.from_settings(options)
    return WebScenes(opts).source()
