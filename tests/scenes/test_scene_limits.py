"""Issue 14, failure 6 (scenes): an oversized scene and a broken scene file end in one line and exit 2.

Before the fix a 100000x100000 scene died with MemoryError (after trying to allocate 30 GB) and a malformed
scene YAML printed a traceback with exit 1. The CLI runs here under an address-space limit, so a
regression fails with MemoryError instead of eating the machine.
"""

import resource
import shutil
from pathlib import Path

import pytest
import yaml

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.synthetic import load_spec
from tests.support import run_cli

SYNTHETIC = default_scenes_dir() / "synthetic"
AS_LIMIT = 3 * 1024**3
"""Address-space cap of the CLI child: a 30 GB canvas cannot be allocated under it."""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def scenes_with_s1(tmp_path: Path, text: str | None = None, **changes) -> Path:
    root = tmp_path / "scenes"
    (root / "synthetic").mkdir(parents=True)
    if text is None:
        raw = yaml.safe_load((SYNTHETIC / "S1.yaml").read_text(encoding="utf-8"))
        raw.update(changes)
        text = yaml.safe_dump(raw)
    (root / "synthetic" / "S1.yaml").write_text(text, encoding="utf-8")
    return root


def cli_lines(tmp_path: Path, scenes: Path, *extra: str):
    r = run_cli(
        f"paths.scenes={scenes}",
        "tasks=[S1]",
        "methods=[centre]",
        f"hydra.run.dir={tmp_path / 'run'}",
        *extra,
        preexec_fn=_limit_memory,
    )
    return r, [ln for ln in r.stderr.splitlines() if ln.strip()]


def test_a_huge_synthetic_scene_is_one_config_error_line(tmp_path):
    scenes = scenes_with_s1(tmp_path, size=[100000, 100000])
    r, lines = cli_lines(tmp_path, scenes)
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1, lines
    assert lines[0].startswith("config error: ") and "S1.yaml" in lines[0]
    assert "size" in lines[0] and "scenes.max_side" in lines[0] and "8192" in lines[0]
    assert "MemoryError" not in r.stderr and "Traceback" not in r.stderr


@pytest.mark.e2e
def test_scenes_max_side_is_a_config_knob(tmp_path):
    scenes = scenes_with_s1(tmp_path)  # 800x600
    r, lines = cli_lines(tmp_path, scenes, "scenes.max_side=640")
    assert r.returncode == 2 and len(lines) == 1 and "scenes.max_side = 640" in lines[0], r.stderr
    r, _ = cli_lines(tmp_path, scenes, "scenes.max_side=800")
    assert r.returncode == 0, r.stderr[-2000:]
    r, lines = cli_lines(tmp_path, scenes, "scenes.max_side=0")
    assert r.returncode == 2 and lines[0].startswith("config error: scenes.max_side"), r.stderr


def test_a_malformed_scene_yaml_is_one_config_error_line(tmp_path):
    text = (SYNTHETIC / "S1.yaml").read_text(encoding="utf-8").replace("size: [800, 600]", "size: [800, 600")
    r, lines = cli_lines(tmp_path, scenes_with_s1(tmp_path, text=text))
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("config error: "), lines
    assert "S1.yaml" in lines[0] and "not valid YAML" in lines[0] and "line " in lines[0]
    assert "Traceback" not in r.stderr


def test_a_scene_schema_error_names_the_file_and_the_key(tmp_path):
    r, lines = cli_lines(tmp_path, scenes_with_s1(tmp_path, colour=[1, 2, 3]))
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("config error: "), lines
    assert "S1.yaml" in lines[0] and "'colour'" in lines[0]


def test_the_size_is_checked_before_anything_is_allocated(tmp_path, monkeypatch):
    import PIL.Image

    def no_alloc(*a, **k):
        raise AssertionError("Image.new called for an oversized scene")

    monkeypatch.setattr(PIL.Image, "new", no_alloc)
    scenes = scenes_with_s1(tmp_path, size=[100000, 100000])
    with pytest.raises(ConfigError, match="scenes.max_side = 8192"):
        load_spec(scenes / "synthetic" / "S1.yaml")
    reg = SceneRegistry(scenes)
    with pytest.raises(ConfigError, match="S1.yaml"):
        reg.snapshot("S1")


def test_the_registry_limit_applies_and_can_be_raised(tmp_path):
    root = tmp_path / "scenes"
    (root / "synthetic").mkdir(parents=True)
    shutil.copy(SYNTHETIC / "S1.yaml", root / "synthetic" / "S1.yaml")
    with pytest.raises(ConfigError, match="scenes.max_side = 700"):
        SceneRegistry(root, max_side=700).snapshot("S1")
    assert SceneRegistry(root, max_side=800).snapshot("S1").size.width == 800
    with pytest.raises(ConfigError, match="^scenes.max_sides: unknown key; allowed: max_side"):
        quick_setup(["+scenes.max_sides=800"])
