"""The resume fingerprint across releases: a run made before a setting existed resumes when the setting is
at its default, and is refused when it is not (the run could not have been made with that value)."""

from __future__ import annotations

import json

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.runner.runmeta import META, check_resume, fingerprint
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
