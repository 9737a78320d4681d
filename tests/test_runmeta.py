"""The resume fingerprint across releases: a run made before a setting existed resumes when the setting is
at its default, and is refused when it is not (the run could not have been made with that value)."""

from __future__ import annotations

import json

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.rundir import META
from dvoc_bench.runner.runmeta import check_resume, fingerprint
from dvoc_bench.runner.settings import Settings


def _old_run(tmp_path, drop: tuple[str, ...]):
    fp = fingerprint(Settings().model_dump(mode="json"), {"seeds": [0]})
    old = {k: v for k, v in fp.settings.items() if not k.startswith(drop)}
    (tmp_path / META).write_text(json.dumps({"lists": fp.lists, "settings": old}))
    return fp


def test_a_setting_newer_than_the_run_resumes_at_its_default_only(tmp_path):
    fp = _old_run(tmp_path, ("desktop.", "dataset."))
    assert any(k.startswith("desktop.") for k in fp.settings)
    check_resume(tmp_path, fp, allow_new_trials=False)  # defaults: the old run behaved like this
    _old_run(tmp_path, ("desktop.", "dataset."))
    changed = Settings().model_dump(mode="json")
    changed["desktop"]["size"] = [1024, 768]
    with pytest.raises(ConfigError, match=r"desktop\.size: null -> \[1024, 768\]"):
        check_resume(tmp_path, fingerprint(changed, {"seeds": [0]}), allow_new_trials=False)
    _old_run(tmp_path, ())  # a setting the run had, changed: refused as always
    changed = Settings().model_dump(mode="json")
    changed["seed"] = 1
    with pytest.raises(ConfigError, match="seed: 0 -> 1"):
        check_resume(tmp_path, fingerprint(changed, {"seeds": [0]}), allow_new_trials=False)


def test_a_changed_scene_is_refused_on_resume_naming_it(tmp_path):
    """A scene edited after the run was made would mix two versions of it in one run: refused in one line
    naming the scene, and nothing changes; the unchanged scene resumes."""
    import shutil

    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep
    from dvoc_bench.scenes import default_scenes_dir

    scenes = tmp_path / "scenes"
    shutil.copytree(default_scenes_dir() / "synthetic", scenes / "synthetic")
    over = [f"paths.scenes={scenes}", "models=[sim-ideal]", "tasks=[S1,S2]", "methods=[oneshot]"]
    over.append("smoke=true")
    run = tmp_path / "run"
    first = run_sweep(quick_setup(over), run)
    assert run_sweep(quick_setup(over), run).ran == 0  # unchanged: a resume with nothing to do
    s1 = scenes / "synthetic" / "S1.yaml"
    text = s1.read_text(encoding="utf-8")
    s1.write_text(text.replace("Click the CLICK ME", "Press the CLICK ME"), encoding="utf-8")
    before = (run / "trials.jsonl").read_bytes()
    with pytest.raises(ConfigError, match=r"^hydra.run.dir: scene S1 changed since this run was made"):
        run_sweep(quick_setup(over), run)
    assert (run / "trials.jsonl").read_bytes() == before and len(first.trials) == 4
