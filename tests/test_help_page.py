"""``python -m dvoc_bench --help`` without Hydra: the page built from the files, fast, whole, no internals."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dvoc_bench.app import help_page
from tests.support import ROOT


def test_help_lists_are_generated_from_the_files(tmp_path, monkeypatch):
    (tmp_path / "conf" / "experiment").mkdir(parents=True)
    (tmp_path / "conf" / "model").mkdir()
    (tmp_path / "conf" / "hydra" / "help").mkdir(parents=True)
    (tmp_path / "scenes" / "synthetic").mkdir(parents=True)
    (tmp_path / "conf" / "experiment" / "mine.yaml").write_text("# @package _global_\n# My sweep. More.\n")
    (tmp_path / "conf" / "model" / "m.yaml").write_text("kind: simulator\ncoord_frame: norm1\n")
    (tmp_path / "conf" / "model" / "base_m.yaml").write_text("kind: simulator\n")
    (tmp_path / "conf" / "hydra" / "help" / "x.yaml").write_text("template: x\n")
    (tmp_path / "scenes" / "synthetic" / "S9.yaml").write_text("id: S9\ninstruction: Click $5 off\n")
    monkeypatch.setattr(help_page, "_ROOT", tmp_path)
    assert help_page.help_section("presets") == "mine               My sweep"
    assert help_page.help_section("models") == ("simulated, in process (offline): base_m (?), m (norm1)")
    assert help_page.help_section("tasks") == "S9   Click $$5 off (synthetic)"  # string.Template-safe
    assert help_page.help_section("groups") == "experiment: mine\nmodel: m"  # no hydra/, no base_*
    with pytest.raises(ValueError, match="unknown section"):
        help_page.help_section("nope")


def test_preset_blurbs_are_whole_and_internal_bases_hidden():
    page = help_page.render()
    presets = page.split("Presets (experiment=<name>)\n")[1].split("\n\n")[0]
    assert "…" not in presets
    flat = " ".join(presets.split())
    for p in sorted((ROOT / "conf" / "experiment").glob("*.yaml")):
        assert f"{p.stem} {help_page._comment(p)}" in flat, p.stem  # the whole first sentence
    groups = dict(
        line.split(": ", 1)
        for line in page.split("Config groups (group=option)\n")[1].split("\n\n")[0].splitlines()
    )
    assert groups["detector"] == "cv, helper, omniparser, onnx, oracle, rknn"
    assert "baselines" in groups["experiment"].split(", ")
    assert "hydra" not in groups and "base_cv" not in page


@pytest.mark.parametrize(
    ("argv", "fast"),
    [
        (["--help"], True),
        (["-h"], True),
        (["model=sim-ideal", "--help"], True),
        (["--help", "hydra.help.app_name=x"], False),
        (["--hydra-help"], False),
        (["smoke=true"], False),
    ],
)
def test_which_invocations_take_the_fast_page(argv, fast):
    assert help_page.wants_fast_help(argv) is fast


def test_help_imports_neither_hydra_nor_the_settings(tmp_path):
    """The page is printed before Hydra, OmegaConf, pydantic or numpy are imported (the 2.7 s of #33)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dvoc_bench", "--help"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.startswith("dvoc-bench: UI grounding") and "Config groups" in p.stdout
    imported = {ln.split("|")[-1].strip() for ln in p.stderr.splitlines() if ln.startswith("import time:")}
    heavy = {"hydra", "omegaconf", "pydantic", "numpy", "dvoc_bench.runner.settings"}
    assert not heavy & imported, sorted(heavy & imported)
