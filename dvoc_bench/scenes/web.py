"""Web scenes: HTML pages rendered in a real Chromium, targets measured from the DOM (DESIGN §9).

A web task is a YAML file (``scenes/web/W1.yaml``)::

    id: W1                      # scene id (equal to the file stem inside scenes/web/)
    name: login-form            # optional short name
    difficulty: easy            # optional: easy | medium | hard
    page: W1.html               # the HTML file: relative to this YAML, absolute, or a file:// URL
    instruction: Click the Sign In button
    selector: "#sign-in"        # CSS selector of the target: exactly one visible element, fully on screen
    viewport: [1280, 720]       # optional, default 1280x720
    setup:                      # optional actions before the snapshot, in order
      - click: "#menu-toggle"   #   click | hover: <selector>;  fill: {selector: <css>, value: <text>}

Bring your own page: the same file anywhere, listed in ``web.task_files``; or one inline task with id
``custom`` from ``web.custom.{page, selector, instruction, setup, viewport}``. Only local pages: a page
given as ``http(s)://`` is refused, and in the browser every request that is not a ``file:`` URL of the page
or its directory (or the pinned fonts) is blocked and counted.

Each page is rendered once per registry (load, pin fonts, set up, measure, screenshot) and kept open on
the shared browser for hit tests: :meth:`WebScenes.probe` reports the DOM element under a point
(``document.elementFromPoint``) and whether it is the target or inside it; with ``verify_click`` it also
clicks the point in a fresh copy of the page and reports whether the target's click listener fired.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import yaml

from dvoc_bench.config import ConfigError
from dvoc_bench.geometry import Point, Size
from dvoc_bench.records import Probe
from dvoc_bench.scenes.synthetic import DIFFICULTIES, content_hash, yaml_error_line
from dvoc_bench.scenes.types import Element, SceneTruth, Snapshot
from dvoc_bench.web.browser import WebBrowser, url_to_path
from dvoc_bench.web.page import PageError, PageRender, WebTask, setup_actions

if TYPE_CHECKING:
    from dvoc_bench.scenes import SceneSource

log = logging.getLogger(__name__)

DEFAULT_VIEWPORT = Size(1280, 720)
"""The paper's web viewport."""

CUSTOM_ID = "custom"
"""Scene id of the inline bring-your-own task (``web.custom``)."""

_TASK_KEYS = ("id", "name", "difficulty", "page", "instruction", "selector", "viewport", "setup")
_REQUIRED = ("page", "instruction", "selector")
_CUSTOM_KEYS = ("page", "selector", "instruction", "setup", "viewport")
_OPTION_KEYS = ("verify_click", "chromium", "timeout_s", "task_files", "custom")


# ------------------------------------------------------------------------------------- task specs


def resolve_page(value: Any, base: Path, where: str) -> Path:
    """A page given as a path (relative to ``base``) or ``file://`` URL -> an existing absolute file."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: must be a path or file:// URL of a local HTML file")
    value = value.strip()
    scheme = urlsplit(value).scheme
    if scheme == "file":
        path = url_to_path(value)
        if path is None:
            raise ConfigError(f"{where}: {value!r} is not a local file:// URL")
    elif scheme and len(scheme) > 1:  # "c:" style drive letters are one character
        raise ConfigError(f"{where}: {value!r}: only local files; web scenes never touch the network")
    else:
        path = Path(value).expanduser()
        if not path.is_absolute():
            path = base / path
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"{where}: file not found: {path}")
    return path


def task_from_mapping(raw: Any, *, base: Path, where: str, default_id: str | None = None) -> WebTask:
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
    try:
        setup = setup_actions(raw.get("setup") or [], f"{where}: setup")
    except ValueError as e:
        raise ConfigError(str(e)) from e
    return WebTask(
        id=task_id.strip(),
        page=resolve_page(raw["page"], base, f"{where}: page"),
        instruction=raw["instruction"].strip(),
        selector=raw["selector"].strip(),
        viewport=_viewport(raw.get("viewport"), where),
        setup=setup,
        name=str(raw.get("name") or ""),
        difficulty=difficulty,
    )


def _viewport(value: Any, where: str) -> Size:
    if value is None:
        return DEFAULT_VIEWPORT
    try:
        w, h = (int(v) for v in value)
        ok = all(float(v) == int(v) for v in value)
    except (TypeError, ValueError):
        ok = False
    if not ok or not (64 <= w <= 4096 and 64 <= h <= 4096):
        raise ConfigError(f"{where}: viewport must be [width, height] in 64..4096, got {value!r}")
    return Size(w, h)


def load_task(path: str | Path, default_id: str | None = None) -> WebTask:
    """Read and validate one task YAML (``page`` resolves relative to the file)."""
    path = Path(path).resolve()
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"{path}: cannot read web task: {e}") from e
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {yaml_error_line(e)}") from None
    return task_from_mapping(raw, base=path.parent, where=str(path), default_id=default_id or path.stem)


# ---------------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class WebOptions:
    """The ``web:`` block of the config."""

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

    @classmethod
    def from_mapping(cls, raw: Mapping[str, Any] | None, cwd: Path | None = None) -> WebOptions:
        """Validate the ``web:`` config block; relative paths resolve against ``cwd`` (default: the CWD)."""
        raw = dict(raw or {})
        cwd = Path.cwd() if cwd is None else cwd
        unknown = sorted(set(raw) - set(_OPTION_KEYS))
        if unknown:
            raise ConfigError(f"web: unknown key(s) {unknown}; allowed: {', '.join(_OPTION_KEYS)}")
        verify = raw.get("verify_click", False)
        if not isinstance(verify, bool):
            raise ConfigError(f"web.verify_click: must be true or false, got {verify!r}")
        chromium = raw.get("chromium")
        if chromium is not None and (not isinstance(chromium, str) or not chromium.strip()):
            raise ConfigError(f"web.chromium: must be a path to a Chromium binary, got {chromium!r}")
        try:
            timeout = float(raw.get("timeout_s", 30.0) if raw.get("timeout_s") is not None else 30.0)
        except (TypeError, ValueError):
            timeout = -1.0
        if timeout <= 0:
            raise ConfigError(f"web.timeout_s: must be a positive number, got {raw.get('timeout_s')!r}")
        files = raw.get("task_files") or []
        if isinstance(files, str):
            files = [files]
        task_files = []
        for i, f in enumerate(files):
            p = Path(str(f)).expanduser()
            p = (p if p.is_absolute() else cwd / p).resolve()
            if not p.is_file():
                raise ConfigError(f"web.task_files[{i}]: file not found: {p}")
            task_files.append(p)
        return cls(
            verify_click=verify,
            chromium=chromium.strip() if chromium else None,
            timeout_s=timeout,
            task_files=tuple(task_files),
            custom=_custom_task(raw.get("custom"), cwd),
        )


def _custom_task(raw: Any, cwd: Path) -> WebTask | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(f"web.custom: must be a mapping with keys {', '.join(_CUSTOM_KEYS)}")
    unknown = sorted(set(raw) - set(_CUSTOM_KEYS))
    if unknown:
        raise ConfigError(f"web.custom: unknown key(s) {unknown}; allowed: {', '.join(_CUSTOM_KEYS)}")
    given = {k: v for k, v in raw.items() if v not in (None, "", [])}
    if not given.get("page"):
        if given.get("selector") or given.get("instruction"):
            raise ConfigError("web.custom.page: required when web.custom.selector/instruction is set")
        return None
    return task_from_mapping({**given, "id": CUSTOM_ID}, base=cwd, where="web.custom")


# ------------------------------------------------------------------------------------ the source


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
        self.browser = WebBrowser(self.options.chromium, self.options.timeout_s)
        """The shared browser (launched on the first render, closed by :meth:`close`)."""
        self._scenes: dict[str, WebScene] = {}
        self._lock = threading.Lock()
        self._preparsed: dict[Path, WebTask] = {}
        extra: dict[str, Path] = {}
        pairs = [(p, load_task(p)) for p in self.options.task_files]
        if self.options.custom is not None:
            pairs.append((self.options.custom.page, self.options.custom))
        for key, t in pairs:
            if t.id in extra:
                raise ConfigError(f"web: task id {t.id!r} is defined twice ({extra[t.id]} and {key})")
            extra[t.id] = key
            self._preparsed[key] = t
        self.extra = extra
        """Bring-your-own scene ids -> the file the registry hands to :meth:`load`."""

    def source(self) -> SceneSource:
        """This object as a registry :class:`~dvoc_bench.scenes.SceneSource` (``*.yaml`` in ``web/``)."""
        from dvoc_bench.scenes import SceneSource

        return SceneSource(
            "*.yaml",
            self.load,
            probe=self.probe,
            close=self.close,
            extra=dict(self.extra),
            backend=self,
            kind="web",
        )

    # ---------------------------------------------------------------------------------- loading

    def task(self, path: Path) -> WebTask:
        """The task a registry path stands for (a pre-parsed bring-your-own task, or a YAML file)."""
        return self._preparsed.get(Path(path).resolve()) or load_task(path)

    def load(self, path: Path) -> Snapshot:
        """Render a task once: load, pin fonts, set up, measure the DOM, screenshot; keep the page open."""
        task = self.task(path)
        return self.render(task).snapshot

    def render(self, task: WebTask) -> WebScene:
        """Render ``task`` now (replacing an earlier render of the same id) and keep its page open."""
        from dvoc_bench.web.page import render

        def job(session: Any) -> PageRender:
            old = session.state.pop(("live", task.id), None)
            if old is not None:
                old.close()
            result, live = render(session, task, keep=True)
            session.state[("live", task.id)] = live
            return result

        try:
            result = self.browser.run(job)
        except PageError as e:
            raise ConfigError(str(e)) from e
        if result.blocked:
            log.warning(
                "%s: blocked %d network request(s) of the page: %s",
                task.id,
                len(result.blocked),
                ", ".join(result.blocked[:5]),
            )
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
        from dvoc_bench.web.page import hit_test, new_task_page, render, verify_click

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
            clicked, blocked = verify_click(clicker, task, point)
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
        Element(id=e.id, label=e.label, box=e.box, role=e.role, interactive=True) for e in r.elements
    )
    truth = SceneTruth(
        scene_id=task.id,
        size=task.viewport,
        instruction=task.instruction,
        target_id=r.target.id,
        target_box=r.target.box,
        elements=elements,
    )
    return Snapshot(truth=truth, image=r.image, content_hash=content_hash(r.image, truth))


def web_source(options: Mapping[str, Any] | WebOptions | None = None) -> SceneSource:
    """A fresh web :class:`~dvoc_bench.scenes.SceneSource` with its own browser (one per registry)."""
    opts = options if isinstance(options, WebOptions) else WebOptions.from_mapping(options)
    return WebScenes(opts).source()
