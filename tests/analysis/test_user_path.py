"""A relative path in DVOC_RUN_DIR / DVOC_UPSTREAM is read from where the command was typed ($PWD), not
from the kernel's working directory (nbconvert starts it in analysis/)."""

from __future__ import annotations

from dvoc_bench.analysis.loaders import default_run_dir, user_path
from dvoc_bench.analysis.upstream import default_upstream_dir


def test_a_relative_run_dir_is_read_from_where_the_command_was_typed(tmp_path, monkeypatch):
    run = tmp_path / "runs" / "quick" / "t"
    run.mkdir(parents=True)
    (tmp_path / "up").mkdir()
    (tmp_path / "analysis").mkdir()
    monkeypatch.chdir(tmp_path / "analysis")  # the kernel's cwd
    monkeypatch.setenv("PWD", str(tmp_path))  # the shell's, inherited
    monkeypatch.setenv("DVOC_RUN_DIR", "runs/quick/t")
    monkeypatch.setenv("DVOC_UPSTREAM", "up")
    assert default_run_dir() == run
    assert default_upstream_dir() == tmp_path / "up"


def test_absolute_paths_and_the_working_directory_still_work(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(tmp_path / "elsewhere"))  # gone or stale: not a directory
    assert user_path("here") == tmp_path / "here"
    assert user_path(tmp_path / "x") == tmp_path / "x"
    monkeypatch.setenv("PWD", str(tmp_path / "here"))
    assert user_path("missing") == tmp_path / "here" / "missing"  # the error names where it looked
