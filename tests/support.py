"""What the tests share, in one place: the repository paths, the optional dependencies and the one way to
skip for one (:func:`need`), the authors' records, the command line in a subprocess, the simulator behind a
real HTTP server, the session's real runs, a Chromium check, and the scripted model and trial helpers of
the method tests.

- A missing dependency (:data:`DEPENDENCIES`: a Chromium, Tesseract, the docs pages, ...) skips the test
  with the reason, or FAILS it under ``DVOC_REQUIRE_<NAME>=1`` (``.ci/run`` sets every one it provides;
  docs/testing.md lists them). Under ``CI=true``, conftest.py fails any skip whose reason names such a
  dependency (:func:`ci_dependency_in`).

- The authors' records (``UPSTREAM``): ``$DVOC_UPSTREAM``, else the clone of their repository at
  ``../shared/upstream/DVOC`` beside this one. Tests that need them call :func:`need_upstream` (directly,
  or through the ``upstream`` fixture / the :data:`needs_upstream` marker). Without the data they skip
  with a reason, except under ``DVOC_REQUIRE_UPSTREAM=1`` (set by ``.ci/run``), where they FAIL: CI must
  not go green on a machine that lacks the data every out-of-sample check rests on. conftest.py exports
  ``DVOC_UPSTREAM`` for the subprocesses and notebooks the tests start.
- Real runs, built once per test session, for the report, notebook and README tests, each made the way a
  researcher makes it (``python -m dvoc_bench ...`` in a subprocess from the repository root, into a
  session temporary folder): ``default_run`` (the default command: ``experiment=quick``, 270 trials, four
  simulated models), ``web_run`` (the same on W1 and W2; needs a Chromium), ``alpha_multirun``
  (``-m alphas=[decay],[adaptive]``: two jobs of 270 trials) and ``one_trial_run`` (a single trial).
  ``RUNS`` names them for ``request.getfixturevalue``; conftest.py imports the fixtures.
- A scripted OpenAI-compatible provider on loopback (:func:`fake_openai`, bodies by :func:`chat_completion`)
  for the tests that need a provider that lies, echoes keys or answers in a family's own format.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.methods.registry import method_info
from dvoc_bench.models.base import ModelRequest, Reply, ToolCall

ROOT = Path(__file__).resolve().parents[1]
"""The repository."""

# ------------------------------------------------------------------------------ optional dependencies


@dataclass(frozen=True)
class Dependency:
    """Something a test needs that a checkout may lack: without it the test skips with the reason, unless
    ``DVOC_REQUIRE_<NAME>=1`` is set, where it FAILS (:func:`need`)."""

    what: str
    """What is needed, in words, and where it comes from."""
    ci: bool
    """``.ci/run`` provides it and sets ``DVOC_REQUIRE_<NAME>=1``: a skip naming it fails in CI."""
    words: tuple[str, ...]
    """Patterns (regular expressions, lower case) by which a skip reason names it."""


DEPENDENCIES: dict[str, Dependency] = {
    "UPSTREAM": Dependency("the authors' records (../shared/upstream/DVOC or $DVOC_UPSTREAM)", True,
                           (r"authors' records",)),
    "CHROMIUM": Dependency("a Chromium (Debian package chromium)", True, (r"chromium",)),
    "TESSERACT": Dependency("Tesseract with its English data (tesseract-ocr, tesseract-ocr-eng)", True,
                            (r"tesseract",)),
    "RAPIDOCR": Dependency("RapidOCR (rapidocr-onnxruntime, the ocr extra)", True, (r"rapidocr",)),
    "OMNIPARSER": Dependency("OmniParser-v2's icon-detector weights (.ci/run downloads them)", True,
                             (r"omniparser",)),
    "ONNX": Dependency("onnx and onnxruntime (the dev and detect extras)", True, (r"\bonnx",)),
    "JUPYTER": Dependency("nbformat, nbclient, ipykernel, nbconvert and jupyter (the dev extra)", True,
                          (r"nbformat", r"nbclient", r"ipykernel", r"nbconvert", r"jupyter")),
    "OPENAI": Dependency("the official openai client (installed with litellm)", True, (r"\bopenai\b",)),
    "XVFB": Dependency("Xvfb and xdotool for desktop scenes (Debian packages xvfb, xdotool)", True,
                       (r"xvfb", r"xdotool")),
    "QT": Dependency("a Qt 5 program (featherpad) and opencv's bundled Qt", True, (r"featherpad", r"\bqt\b")),
    "NETNS": Dependency("a network namespace: unshare and ip (util-linux, iproute2), root or unprivileged "
                        "user namespaces, a veth in it", True, (r"namespace", r"\bunshare\b", r"\bveth\b")),
    "PROC": Dependency("/proc (Linux)", True, (r"/proc\b",)),
    "DOCS": Dependency("documentation pages of Debian packages (nodejs-doc or nodejs, valgrind, libffi-dev, "
                       "python3-dev)", True, (r"docs page", r"debian package")),
    "THIRDPARTY": Dependency("third-party records and screens (../shared/thirdparty, $DVOC_THIRDPARTY)",
                             True, (r"third-party records",)),
    "MOUNT": Dependency("mounting a small tmpfs (as root; not in CI)", False,
                        (r"\btmpfs\b",)),
    "MINIWOB": Dependency("MiniWoB++'s task pages (the PyPI package miniwob, the episodes extra)", True,
                          (r"miniwob",)),
    "INSPECT": Dependency("inspect-ai (the inspect extra: pip install -e \".[inspect]\")", True,
                          (r"inspect-ai", r"inspect_ai")),
    "RUSTDOCS": Dependency("rustup's rust-docs component (no package registry ships it; not in CI)", False,
                           ()),
}  # fmt: skip
"""Every dependency a test may skip on, by the ``<NAME>`` of its ``DVOC_REQUIRE_<NAME>`` switch
(docs/testing.md)."""

BY_DESIGN = ("README command marked",)
"""Skip reasons that name a dependency on purpose and stay skips in CI (a README command tagged
``# needs: xvfb`` is never run by the tests)."""


def required(name: str = "UPSTREAM") -> bool:
    """Whether a missing ``name`` (a key of :data:`DEPENDENCIES`) is a failure (``DVOC_REQUIRE_<NAME>=1``)
    rather than a skip."""
    return os.environ.get(f"DVOC_REQUIRE_{name}", "").strip() not in ("", "0")


def need(name: str, missing: str | None, *, module: bool = False) -> None:
    """The one way a test skips for a missing dependency: nothing when ``missing`` is ``None`` (it is
    here); otherwise skip the caller (the module, with ``module=True``) with a reason naming the dependency
    and why it is missing, or FAIL when ``DVOC_REQUIRE_<NAME>=1`` is set."""
    if missing is None:
        return
    dep = DEPENDENCIES[name]
    reason = f"needs {dep.what}: {missing}"
    if required(name):
        pytest.fail(f"{reason}; DVOC_REQUIRE_{name} is set, so this is a failure, not a skip", pytrace=False)
    pytest.skip(f"{reason} (DVOC_REQUIRE_{name}=1 makes this a failure)", allow_module_level=module)


def import_or_need(name: str, module: str, hint: str = "", *, at_module_level: bool = False) -> Any:
    """``import module`` (returned), or :func:`need` ``name`` naming it (``at_module_level``: skip the
    whole test module)."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        need(name, f"cannot import {module} ({e}){'; ' + hint if hint else ''}", module=at_module_level)
    return None  # pragma: no cover - need() raised


def ci_dependency_in(reason: str) -> str | None:
    """The name of a dependency CI is meant to have that a skip ``reason`` names (``None``: none, or a
    skip :data:`BY_DESIGN`)."""
    text = reason.removeprefix("Skipped: ").strip()
    if text.startswith(BY_DESIGN):
        return None
    low = text.lower()
    for name, dep in DEPENDENCIES.items():
        if dep.ci and (f"dvoc_require_{name.lower()}" in low or any(re.search(w, low) for w in dep.words)):
            return name
    return None


def in_ci() -> bool:
    """Whether the tests run in CI (``CI=true``, as ``.ci/run`` and hosted CI set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


# ---------------------------------------------------------------------------------- the authors' records

UPSTREAM = Path(os.environ.get("DVOC_UPSTREAM") or ROOT.parent / "shared" / "upstream" / "DVOC")
"""The authors' records: ``$DVOC_UPSTREAM``, else their repository as it ships, cloned at
``../shared/upstream/DVOC`` beside this one (records under ``artifacts/previous_runs/``)."""
RECORDS = "artifacts/previous_runs"
"""Where the records lie in the authors' repository."""


def need_upstream(sub: str = RECORDS) -> Path:
    """``UPSTREAM`` when ``UPSTREAM / sub`` exists; else skip (fail under ``DVOC_REQUIRE_UPSTREAM=1``)."""
    if not (UPSTREAM / sub).exists():
        need("UPSTREAM", f"not at {UPSTREAM / sub} (set DVOC_UPSTREAM to their folder)")
    return UPSTREAM


needs_upstream = pytest.mark.usefixtures("upstream")
"""Marker for a test (or, as ``pytestmark``, a module) that needs the authors' records."""

THIRDPARTY = Path(os.environ.get("DVOC_THIRDPARTY") or ROOT.parent / "shared" / "thirdparty")
"""Real third-party records and screens (``$DVOC_THIRDPARTY``, else ``../shared/thirdparty`` beside this
repository; its README says what each folder is)."""


def need_thirdparty(sub: str) -> Path:
    """``THIRDPARTY / sub`` when it exists; otherwise skip, or fail under ``DVOC_REQUIRE_THIRDPARTY=1``."""
    path = THIRDPARTY / sub
    missing = None if path.exists() else f"not at {path} (set DVOC_THIRDPARTY to their folder)"
    need("THIRDPARTY", missing)
    return path


# ------------------------------------------------------------------------------------- the command line


HANG_S = 1800.0
"""How long a test waits for a command before it calls it hung: a guard against a hang, never a check of
speed (speed is measured by ``python -m dvoc_bench.bench``, with the machine's load); under a load of 12 a
viewer build of 10,000 trials once needed more than the 120 s it had."""


def run_cli(
    *args: str,
    timeout: float = HANG_S,
    env_extra: dict[str, str] | None = None,
    cwd: Path = ROOT,
    full_error: bool = False,
    **kw: Any,
) -> subprocess.CompletedProcess:
    """``python -m dvoc_bench *args`` as a user runs it, the package of this checkout (``PYTHONPATH``), from
    ``cwd`` (the repository root); ``full_error``: Hydra's full trace instead of the one-line errors."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "1" if full_error else "0"}
    return subprocess.run(
        [sys.executable, "-m", "dvoc_bench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, **(env_extra or {})},
        **kw,
    )


# --------------------------------------------------------------------------- the simulator over HTTP


@contextlib.contextmanager
def served_simulator(*, warm: bool = True, delay_s: float = 0.0, set_env: bool = True):
    """``dvoc_bench.serve`` on localhost over the synthetic scenes (rendered first when ``warm``; the OCR
    model needs none), each reply ``delay_s`` late; ``DVOC_SIM_URL`` points at it while it runs (when
    ``set_env``). Yields ``(url, server)``."""
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir
    from dvoc_bench.serve import FaultOptions, SimBackend, serve_in_thread

    backend = SimBackend(
        registry=SceneRegistry(default_scenes_dir(), sources=build_sources(names=["synthetic"]))
    )
    if warm:
        backend.warm()
    faults = FaultOptions(delay_s=delay_s) if delay_s else None
    old = os.environ.get("DVOC_SIM_URL")
    with serve_in_thread(faults, backend) as (url, server):
        if set_env:
            os.environ["DVOC_SIM_URL"] = url
        try:
            yield url, server
        finally:
            if set_env and old is None:
                os.environ.pop("DVOC_SIM_URL", None)
            elif set_env:
                os.environ["DVOC_SIM_URL"] = old


# ---------------------------------------------------------------------------------------- Chromium


@functools.cache
def chromium_missing() -> str | None:
    """Why no Chromium can be used here (``None``: one can). Looked up once, when a test first asks: never
    while the tests are collected."""
    from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium

    try:
        find_chromium()
    except ChromiumNotFoundError as e:
        return str(e)
    return None


def miniwob_or_skip() -> None:
    """Skip the calling test, with the reason, without MiniWoB++'s pages or a Chromium (fail under
    ``DVOC_REQUIRE_MINIWOB=1`` / ``DVOC_REQUIRE_CHROMIUM=1``)."""
    from dvoc_bench.scenes.miniwob.pages import MiniwobMissing, html_dir

    try:
        html_dir()
    except MiniwobMissing as e:
        need("MINIWOB", str(e))
    chromium_or_skip()


def chromium_or_skip() -> None:
    """Skip the calling test, with the reason, when there is no Chromium (fail under
    ``DVOC_REQUIRE_CHROMIUM=1``)."""
    need("CHROMIUM", chromium_missing())


# ---------------------------------------------------------------------------------- real runs

RUNS = ("default_run", "web_run", "alpha_multirun", "one_trial_run")


def _trials(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "trials.jsonl").read_text().splitlines() if x.strip()]


def make_run(out: Path, *overrides: str) -> Path:
    p = run_cli(*overrides, f"hydra.run.dir={out}", "run.quiet=true", timeout=600, full_error=True)
    assert p.returncode == 0, p.stderr[-3000:]
    assert f"run dir: {out}" in p.stdout
    return out


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> Path:
    run = make_run(tmp_path_factory.mktemp("runs") / "default")
    assert len(_trials(run)) == 270  # 4 models x 6 scenes x {dvoc, oneshot} x 5 starts + centre x 6 x 5
    return run


@pytest.fixture(scope="session")
def web_run(tmp_path_factory) -> Path:
    chromium_or_skip()
    run = make_run(tmp_path_factory.mktemp("runs") / "web", "tasks=[W1,W2]")
    trials = _trials(run)
    assert len(trials) == 90 and {t["task"] for t in trials} == {"W1", "W2"}
    assert all(t.get("hit_rule") == "dom" for t in trials if t["status"] == "ok")
    return run


@pytest.fixture(scope="session")
def alpha_multirun(tmp_path_factory) -> Path:
    sweep = tmp_path_factory.mktemp("runs") / "alpha_sweep"
    p = run_cli("-m", "alphas=[decay],[adaptive]", f"hydra.sweep.dir={sweep}", "run.quiet=true", timeout=600,
                full_error=True)  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    jobs = sorted(d for d in sweep.iterdir() if (d / "trials.jsonl").is_file())
    assert [j.name for j in jobs] == ["0", "1"] and all(len(_trials(j)) == 270 for j in jobs)
    return sweep


@pytest.fixture(scope="session")
def one_trial_run(tmp_path_factory) -> Path:
    run = make_run(
        tmp_path_factory.mktemp("runs") / "one",
        "model=sim-gemma-4-26b",
        "task=S3",
        "methods=[dvoc]",
        "starts=random:1",
    )
    assert len(_trials(run)) == 1
    return run


# ------------------------------------------------------------------- scripted models and trial helpers


class ScriptedModel:
    """A model that answers with fixed replies in order (the last one repeats), or raises the ones that
    are exceptions; records every request it got."""

    name = "scripted"
    simulated = False

    def __init__(self, *replies: Reply | Exception):
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def complete(self, req: ModelRequest) -> Reply:
        self.requests.append(req)
        r = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(r, Exception):
            raise r
        return r


def tool(name: str, **arguments: Any) -> Reply:
    """A reply holding one tool call with JSON arguments."""
    return Reply(None, [ToolCall(name, json.dumps(arguments))])


def offset(dx: float, dy: float, confidence: float = 0.9) -> Reply:
    """A ``report_offset`` reply."""
    return tool("report_offset", dx=dx, dy=dy, confidence=confidence)


def click(x: float, y: float, confidence: float = 0.9) -> Reply:
    """A ``click_at`` reply."""
    return tool("click_at", x=x, y=y, confidence=confidence)


def make_spec(
    task: str = "S6", method: str = "som", seed: int = 1, frame: str = "pixel", **over: Any
) -> TrialSpec:
    """A trial spec with the default loop settings; ``over`` replaces any field."""
    fields: dict[str, Any] = dict(
        trial_key=f"k-{task}-{method}-{seed}",
        experiment="t",
        model="m",
        model_id="m",
        api_base=None,
        provider="p",
        simulated=True,
        coord_frame=frame,
        task=task,
        scene_hash="h",
        method=method,
        protocol="v1",
        alpha="-",
        overlay="-",
        predict="-",
        start=None,
        start_index=1,
        rep=0,
        seed=seed,
        epsilon=30.0,
        conf_threshold=0.5,
        window=2,
        max_iterations=15,
        max_attempts=5,
        alpha_constant=0.5,
    )
    fields.update(over)
    return TrialSpec(**fields)


class ShotSink:
    """``save_shot`` for tests: keeps every PNG by its sha256."""

    def __init__(self) -> None:
        self.frames: dict[str, bytes] = {}

    def __call__(self, png: bytes) -> str:
        sha = hashlib.sha256(png).hexdigest()
        self.frames[sha] = png
        return sha


def run_method(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run the spec's registered method on ``env``."""
    return asyncio.run(method_info(spec.method).run(spec, env))


# ---------------------------------------------------------------------------------- secrets


FAKE_KEY = "sk-dvocFAKE-9f3b6c1e7a2d4b58e0c1"
"""Recognisable: any appearance of it (or of a long piece of it) anywhere is a leak."""
LOCAL_TOKEN = "dvocLocalVllmToken7c41b9e2a0d3f6"
"""A key of no known provider's shape (a local vLLM token): only the client's own registration of the key
it read can redact it, no pattern does."""
KEYS = [FAKE_KEY, LOCAL_TOKEN]


def leaks(text: str, key: str = FAKE_KEY) -> list[str]:
    pieces = [key, key[3:], key[:14], key[-12:]]
    return [p for p in pieces if p in text]


def tree_text(*roots: Path) -> str:
    out = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                out.append(f"== {p}\n" + p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


# ------------------------------------------------------------------------ the simulator server's requests


def body_for(
    registry: Any,
    scene: str = "S1",
    text: str | None = None,
    png: bytes | None = None,
    tools: tuple[str, ...] = ("point",),
    seed: int = 3,
    model: str = "sim-gemma-4-26b",
) -> dict[str, Any]:
    """A chat-completions body for the simulator server: the scene's instruction and screenshot."""
    from dvoc_bench.draw.render import encode_png
    from dvoc_bench.protocol import tools_for

    snap = registry.snapshot(scene)
    req = ModelRequest(
        text=text if text is not None else f"Task: {snap.instruction}",
        image_png=png if png is not None else encode_png(snap.image),
        image_size=snap.size,
        tools=tools_for(tools[0]) if tools else [],
        scene_id=scene,
        seed=seed,
    )
    return {"model": model, "messages": req.messages(), "tools": req.tools, "seed": seed}


# ------------------------------------------------------------------------------ readable figures


def shown_ticklabels(ax: Any, axis_name: str) -> list:
    """The tick labels matplotlib draws: those whose tick lies within the view limits."""
    lo, hi = sorted(ax.get_xlim() if axis_name == "x" else ax.get_ylim())
    labels = ax.get_xticklabels() if axis_name == "x" else ax.get_yticklabels()
    i = 0 if axis_name == "x" else 1
    span = hi - lo
    return [t for t in labels if lo - 1e-9 * span <= t.get_position()[i] <= hi + 1e-9 * span]


def problems(fig: Any) -> list[str]:
    """Everything that makes ``fig`` hard to read, measured on an Agg draw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.patches import Rectangle

    from dvoc_bench.analysis._layout import overlaps, text_boxes

    FigureCanvasAgg(fig)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    fb = fig.bbox
    out = []

    def inside(name, artist):
        if artist is None or not artist.get_visible() or not artist.get_text().strip():
            return
        b = artist.get_window_extent(r)
        if b.x0 < fb.x0 - 1 or b.y0 < fb.y0 - 1 or b.x1 > fb.x1 + 1 or b.y1 > fb.y1 + 1:
            out.append(f"{name} {artist.get_text()[:40]!r} outside the figure: {b} vs {fb}")

    title = fig._suptitle
    assert title is not None and title.get_text(), "every figure has a title"
    inside("title", title)
    inside("footnote", fig._supxlabel)
    tb = title.get_window_extent(r)
    for ax in fig.axes:
        for axis_name in ("x", "y"):
            labels = shown_ticklabels(ax, axis_name)
            for lab in labels:
                inside(f"{axis_name} tick label", lab)
            boxes = text_boxes(labels, r)
            bad = overlaps(boxes, pad=0.5)
            if bad:
                out.append(f"{len(bad)} overlapping {axis_name} tick labels, e.g. {bad[:3]}")
        inside("x label", ax.xaxis.label)
        inside("y label", ax.yaxis.label)
        if ax.bbox.overlaps(tb) and ax.get_label() != "<colorbar>":
            out.append("the title runs into the axes")
        leg = ax.get_legend()
        if leg is not None:
            lb = leg.get_window_extent(r)
            if lb.x0 < fb.x0 - 1 or lb.y0 < fb.y0 - 1 or lb.x1 > fb.x1 + 1 or lb.y1 > fb.y1 + 1:
                out.append(f"legend outside the figure: {lb} vs {fb}")
            if lb.overlaps(tb):
                out.append("the legend runs into the title")
            bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_height() > 0]
            covered = [p for p in bars if p.get_window_extent(r).overlaps(lb)]
            if covered:
                out.append(f"the legend covers {len(covered)} bars")
            if lb.overlaps(ax.bbox):
                out.append("the legend sits on the axes")
    return out


# ------------------------------------------------------------------------------------- notebooks


def notebook_text(nb: Any) -> str:
    """Everything a notebook's cells printed or displayed."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            data = out.get("data", {})
            parts.append(data.get("text/plain", ""))
            parts.append(data.get("text/html", ""))
            parts.append(data.get("text/markdown", ""))
    return "\n".join(parts)


def run_notebook(path: Path, run_name: str, request: Any, monkeypatch: Any, tmp_path: Path) -> None:
    """Execute the notebook at ``path`` top to bottom on the session's real run ``run_name`` and check what
    it showed (the notebook tests of :mod:`tests.analysis`)."""
    import nbclient
    import nbformat

    run = request.getfixturevalue(run_name)
    monkeypatch.setenv("DVOC_RUN_DIR", str(run))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the kernel imports this checkout, not an installed copy
    monkeypatch.setenv("DVOC_CALIBRATION_RUNS", str(tmp_path / "calibration"))  # not the repository's runs/
    monkeypatch.setenv("DVOC_VALIDATION_REPEATS", "1")  # the validation sweeps once: the code path
    if run_name != "default_run":
        monkeypatch.setenv("DVOC_UPSTREAM", str(tmp_path / "no-upstream"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code)
    text = notebook_text(nb)
    assert str(run) in text  # it read the run it was given
    if path.name == "quickstart.ipynb":
        images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
        assert len(images) >= 4
        assert "[SIMULATED" in text  # the simulated rows say so (with their assumption markers)
        if run_name == "alpha_multirun":  # the settings of the sweep are split, and repeats counted once
            assert "adaptive" in text and "alpha" in text and "270 repeated trials left out" not in text
            assert "150 repeated trials left out" in text
        if run_name == "web_run":
            assert "W1" in text and "dom" in text  # web trials, hit from the DOM


# --------------------------------------------------------------------------- a scripted OpenAI provider

Answer = tuple[int, dict[str, Any], dict[str, str]]
"""What a scripted provider sends: HTTP status, JSON body, extra headers."""
Answerer = Callable[[dict[str, Any], Any], Answer]
"""How a scripted provider answers a request: ``answer(body, headers)`` (the request's headers, looked up
without regard to case: ``headers.get("Authorization")``)."""


def chat_completion(
    model: str,
    *,
    content: str | None = None,
    tool: tuple[str, str] | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An OpenAI chat-completions body: one choice with ``content`` and / or one tool call ``(name,
    arguments JSON)``; ``usage`` as given (``None``: no usage field)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool is not None:
        call = {"id": "c1", "type": "function", "function": {"name": tool[0], "arguments": tool[1]}}
        message["tool_calls"] = [call]
    body: dict[str, Any] = {
        "id": "r1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "finish_reason": "tool_calls" if tool else "stop", "message": message}],
    }  # fmt: skip
    if usage is not None:
        body["usage"] = usage
    return body


class FakeOpenAI(ThreadingHTTPServer):
    """A chat-completions endpoint on 127.0.0.1 answering each POST with ``answer(body, headers)``; counts
    the requests (``requests``) and keeps their bodies (``seen``)."""

    daemon_threads = True
    request_queue_size = 128  # every trial of a sweep may connect at once (the default backlog is 5)

    def __init__(self, answer: Answerer):
        super().__init__(("127.0.0.1", 0), _FakeOpenAIHandler)
        self.answer = answer
        self.requests = 0
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.version: str | None = None
        """What ``GET /version`` answers (``{"version": ...}``, as vLLM does); ``None``: 404."""


class _FakeOpenAIHandler(BaseHTTPRequestHandler):
    server: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802
        found = self.path == "/version" and self.server.version is not None
        raw = json.dumps({"version": self.server.version} if found else {"detail": "Not Found"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with self.server.lock:
            self.server.requests += 1
            self.server.seen.append(body)
        status, out, headers = self.server.answer(body, self.headers)
        raw = json.dumps(out).encode()  # NaN and Infinity as Python writes them
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)


@contextlib.contextmanager
def fake_openai(answer: Answerer) -> Iterator[tuple[str, FakeOpenAI]]:
    """A :class:`FakeOpenAI` serving while the block runs: ``(base URL ending in /v1, server)``."""
    server = FakeOpenAI(answer)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", server
    finally:
        server.shutdown()
        server.server_close()
        t.join(5)
