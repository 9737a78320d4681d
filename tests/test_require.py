"""Skips that cannot hide in CI (tests/support.py ``need``, tests/conftest.py): every test that skips for a
missing dependency does it through one helper, which fails instead under ``DVOC_REQUIRE_<NAME>=1``;
``.ci/run`` sets the switch of every dependency it installs; under ``CI=true`` a skip whose reason names
such a dependency fails, whichever way it was raised; docs/testing.md lists the switches."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import BY_DESIGN, DEPENDENCIES, ROOT, ci_dependency_in, import_or_need, need

CI_RUN = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _exported_by_ci() -> set[str]:
    names = set(re.findall(r"export DVOC_REQUIRE_([A-Z]+)=1", CI_RUN))
    for loop in re.findall(r"for dep in ([A-Z ]+); do\s+export \"DVOC_REQUIRE_\$dep=1\"", CI_RUN):
        names |= set(loop.split())
    return names


def test_ci_sets_the_switch_of_every_dependency_it_provides_and_the_docs_list_them():
    ci = {n for n, d in DEPENDENCIES.items() if d.ci}
    assert _exported_by_ci() == ci, _exported_by_ci() ^ ci
    assert 'export CI="${CI:-true}"' in CI_RUN
    testing = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert all(f"DVOC_REQUIRE_{n}" in testing for n in DEPENDENCIES), [
        n for n in DEPENDENCIES if f"DVOC_REQUIRE_{n}" not in testing
    ]


@pytest.mark.parametrize("name", list(DEPENDENCIES))
def test_need_skips_naming_the_dependency_or_fails_when_required(name, monkeypatch):
    monkeypatch.delenv(f"DVOC_REQUIRE_{name}", raising=False)
    need(name, None)  # present: nothing happens
    with pytest.raises(pytest.skip.Exception) as skipped:
        need(name, "not here")
    reason = str(skipped.value)
    assert DEPENDENCIES[name].what in reason and "not here" in reason and f"DVOC_REQUIRE_{name}=1" in reason
    assert (ci_dependency_in(reason) is not None) == DEPENDENCIES[name].ci  # the CI hook sees it
    monkeypatch.setenv(f"DVOC_REQUIRE_{name}", "1")
    with pytest.raises(pytest.fail.Exception, match=f"DVOC_REQUIRE_{name} is set"):
        need(name, "not here")
    monkeypatch.setenv(f"DVOC_REQUIRE_{name}", "0")
    with pytest.raises(pytest.skip.Exception):
        need(name, "not here")


def test_import_or_need_imports_or_skips(monkeypatch):
    assert import_or_need("ONNX", "json").__name__ == "json"
    monkeypatch.delenv("DVOC_REQUIRE_ONNX", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cannot import no_such_module_dvoc"):
        import_or_need("ONNX", "no_such_module_dvoc")
    monkeypatch.setenv("DVOC_REQUIRE_ONNX", "1")
    with pytest.raises(pytest.fail.Exception):
        import_or_need("ONNX", "no_such_module_dvoc")


@pytest.mark.parametrize(
    ("reason", "name"),
    [
        ("Skipped: web tests need a Chromium: none found", "CHROMIUM"),  # a skip raised by hand
        ("tesseract is not installed", "TESSERACT"),
        ("needs Xvfb for desktop scenes", "XVFB"),
        ("could not import 'onnxruntime': No module named 'onnxruntime'", "ONNX"),  # importorskip's words
        ("needs: root or unprivileged user namespaces (unshare -rn: denied)", "NETNS"),
        ("no jupyter beside /usr/bin/python3", "JUPYTER"),
        ("the authors' records are not at /x", "UPSTREAM"),
        ("rknnlite may really be installed on aarch64", None),  # a platform, not a dependency
        ("rustdoc: rustup's rust-docs component not installed", None),  # not provided by CI
        (f"{BY_DESIGN[0]} needs: xvfb — README.md:L10: python -m dvoc_bench ...", None),  # never run
    ],
)
def test_the_ci_hook_recognises_a_dependency_in_a_skip_reason(reason, name):
    assert ci_dependency_in(reason) == name


SKIPPY = """
import pytest

def test_hand_skip():
    pytest.skip("needs a Chromium: none on this machine")

def test_by_design():
    pytest.skip("README command marked needs: xvfb")

def test_platform():
    pytest.skip("rknnlite may really be installed on aarch64")
"""


MODULE_SKIP = """
import pytest

pytest.skip("needs Xvfb: not on PATH", allow_module_level=True)

def test_never_collected():
    pass
"""


def _run_hooked(tmp_path: Path, ci: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_skippy.py").write_text(SKIPPY, encoding="utf-8")
    (tmp_path / "test_modskip.py").write_text(MODULE_SKIP, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "CI": ci, "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "--continue-on-collection-errors", "test_skippy.py", "test_modskip.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_in_ci_a_skip_for_a_provided_dependency_fails(tmp_path):
    """tests/conftest.py's hooks on a real pytest run: CI=true turns the Chromium skip (in a test) and the
    Xvfb skip (of a whole module) into failures and leaves the by-design and platform skips alone; without
    CI all four skip."""
    r = _run_hooked(tmp_path, "true")
    assert r.returncode in (1, 2), r.stdout[-3000:]
    assert re.search(r"FAILED test_skippy.py::test_hand_skip", r.stdout), r.stdout[-3000:]
    assert "skipped in CI (CI=true), which provides a Chromium" in r.stdout
    assert re.search(r"ERROR test_modskip.py", r.stdout) and "which provides Xvfb" in r.stdout, r.stdout[
        -3000:
    ]
    assert re.search(r"1 failed, 2 skipped, 1 error", r.stdout), r.stdout[-2000:]
    r = _run_hooked(tmp_path, "")
    assert r.returncode == 0 and "4 skipped" in r.stdout, r.stdout[-2000:]


ALLOWED = {
    "tests/test_readme.py": 'pytest.skip(f"README command marked needs:',  # by design (BY_DESIGN)
    "tests/detect/test_backends.py": '@pytest.mark.skipif(platform.machine() == "aarch64"',  # a platform
}


def test_every_skip_in_the_tests_goes_through_need():
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("tests/support.py", "tests/test_require.py"):
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            skips = re.search(r"pytest\.skip\(|importorskip\(|mark\.skip(if)?\b|skip\.Exception", line)
            if skips and not (rel in ALLOWED and ALLOWED[rel] in line):
                bad.append(f"{rel}:{i}: {line.strip()}")
    assert not bad, "skip through tests.support.need instead:\n" + "\n".join(bad)
