"""Real documentation pages installed on this machine, rendered as their users see them: rustdoc's std
docs and the Rust book (rustup's toolchain), Node's API docs, the Valgrind and libffi manuals and Debian's
Python policy (Debian packages). Each page that is absent is skipped with the reason; under
``DVOC_REQUIRE_DOCS=1`` (``.ci/run``, which installs the Debian packages) an absent Debian page fails, under
``DVOC_REQUIRE_RUSTDOCS=1`` an absent Rust page (tests/support.py).

One sweep runs DVOC and one-shot with the simulator on every page present: the trials are ``ok`` with hits
from the DOM, no local file was blocked once the asset root is set, and every local stylesheet loaded (the
frame is styled). Pages that are absent are left out (all absent: skipped with the reasons); this
machine has all six. Without the root, rustdoc's failure names the 7 blocked files and the setting."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dvoc_bench.benchmarks.ocr_docs import rust_docs
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes.sources import SceneError
from dvoc_bench.scenes.web.browser import url_to_path
from dvoc_bench.scenes.web.source import WebOptions, WebScenes, load_task
from tests.support import chromium_or_skip, need, required

pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True, scope="module")
def _needs_chromium() -> None:
    """Every test here drives a real Chromium: skipped with the reason without one (looked up once, when
    the first test runs, not while the tests are collected)."""
    chromium_or_skip()


RUST = rust_docs()

PAGES = {
    # id: (task, where it comes from)
    "rustdoc": (
        {"page": "std/vec/struct.Vec.html", "root": ".", "selector": "#copy-path", "wait_for": "#copy-path",
         "instruction": "Click the button that copies the item path"},
        RUST, "rustup's rust-docs component (`rustc --print sysroot`)",
    ),
    "rustbook": (
        {"page": "book/ch01-01-installation.html", "root": "book", "selector": 'a[rel~="next"]',
         "scroll_to": 'a[rel~="next"] >> nth=0', "instruction": "Go to the next chapter"},
        RUST, "rustup's rust-docs component",
    ),
    "nodeapi": (
        {"page": "fs.html", "selector": '#column2 >> role=link[name="Buffer"]',
         "instruction": "Open the Buffer documentation"},
        Path("/usr/share/doc/nodejs/api"), "Debian package nodejs-doc (or NodeSource's nodejs)",
    ),
    "valgrind": (
        {"page": "manual-core.html", "selector": 'a[accesskey="n"] >> nth=0',
         "instruction": "Go to the next page of the manual"},
        Path("/usr/share/doc/valgrind/html"), "Debian package valgrind",
    ),
    "libffi": (
        {"page": "Introduction.html", "selector": 'a[accesskey="n"] >> nth=0',
         "instruction": "Click the link to the next section"},
        Path("/usr/share/doc/libffi8/html"), "Debian package libffi-dev",
    ),
    "pypolicy": (
        {"page": "python-policy.html", "root": "/usr/share", "selector": "li.nav-item-this > a",
         "instruction": "Click the documentation title link"},
        Path("/usr/share/doc/python3"), "Debian package python3-dev",
    ),
}  # fmt: skip

_FAILED_SHEETS_JS = """
() => Array.from(document.querySelectorAll('link[rel~="stylesheet"]'))
  .filter(l => l.href.startsWith('file:') && !l.disabled && !l.sheet).map(l => l.href)
"""


def _present() -> dict[str, tuple[dict, Path]]:
    out = {}
    for sid, (task, base, _) in PAGES.items():
        if base is not None and (base / task["page"]).is_file():
            out[sid] = (task, base)
    return out


RUST_PAGES = ("rustdoc", "rustbook")
"""The pages of rustup's docs (no package registry ships them: ``DVOC_REQUIRE_RUSTDOCS``, not set in CI)."""


def _absent(rust: bool) -> list[str]:
    present = _present()
    return [
        f"{sid}: {why} not installed" for sid, (_, _, why) in PAGES.items()
        if sid not in present and (sid in RUST_PAGES) == rust
    ]  # fmt: skip


@pytest.fixture(scope="module")
def task_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    present = _present()
    if (debian := _absent(rust=False)) and (required("DOCS") or not present):
        need("DOCS", "; ".join(debian))  # fails under DVOC_REQUIRE_DOCS=1; skips when no page at all
    if (rust := _absent(rust=True)) and (required("RUSTDOCS") or not present):
        need("RUSTDOCS", "; ".join(rust))
    folder = tmp_path_factory.mktemp("docs")
    files = {}
    for sid, (task, base) in present.items():
        raw = {**task, "id": sid, "page": str(base / task["page"])}
        if "root" in raw:
            raw["root"] = str((base / raw["root"]).resolve())
        files[sid] = folder / f"{sid}.yaml"
        files[sid].write_text(yaml.safe_dump(raw), encoding="utf-8")
    return files


def test_real_docs_pages_run_styled_with_dom_hits(task_files: dict[str, Path], tmp_path: Path) -> None:
    ids = sorted(task_files)
    setup = quick_setup(
        ["model=sim-ideal", f"tasks=[{','.join(ids)}]", "methods=[dvoc,oneshot]", "starts=random:1",
         f"web.task_files=[{','.join(str(task_files[i]) for i in ids)}]", "web.timeout_s=30"]
    )  # fmt: skip
    res = run_sweep(setup, tmp_path / "run")
    web = setup.registry.source("web").backend
    assert len(res.trials) == 2 * len(ids)
    for t in res.trials:
        assert t["status"] == "ok" and t["hit_rule"] == "dom" and t["hit"] is True, t
    for sid in ids:
        scene = web.scene(sid)
        local = [u for u in scene.render.blocked if url_to_path(u) is not None]
        assert local == [], (sid, local)  # the asset root lets every local file of the page through
    # the frames are styled: no local stylesheet failed (checked in a fresh render of each page)
    for sid in ids:
        web.render(load_task(task_files[sid]))
        failed = web.browser.run(lambda s, sid=sid: s.state[("live", sid)].page.evaluate(_FAILED_SHEETS_JS))
        assert failed == [], (sid, failed)
    web.close()


def test_rustdoc_without_root_names_the_blocked_files(task_files: dict[str, Path]) -> None:
    if "rustdoc" not in task_files:
        need("RUSTDOCS", "rustdoc: rustup's rust-docs component not installed")
    raw = yaml.safe_load(task_files["rustdoc"].read_text())
    raw.pop("root")
    raw.pop("wait_for")
    task_files["rustdoc"].with_name("bare.yaml").write_text(yaml.safe_dump({**raw, "id": "bare"}))
    web = WebScenes(WebOptions(timeout_s=30))
    try:
        with pytest.raises(SceneError) as e:
            web.render(load_task(task_files["rustdoc"].with_name("bare.yaml")))
    finally:
        web.close()
    msg = str(e.value)
    assert "target '#copy-path'" in msg and "\n" not in msg
    assert "blocked 7 request(s)" in msg and "7 local file(s) the page loads outside the asset root" in msg
    assert msg.startswith(f"bare: root: {RUST} would allow the 7 local file(s)")  # the setting first
