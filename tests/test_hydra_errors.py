"""Hydra's composition errors as the one line ``<key>: <what>; allowed: ...`` (in process)."""

from __future__ import annotations

import pytest

from dvoc_bench.app.hydra_errors import config_error_line
from dvoc_bench.runner.compose import compose
from tests.support import ROOT


def _line(override: str) -> str:
    with pytest.raises(Exception) as e:
        compose([override])
    line = config_error_line(e.value)
    assert line is not None, e.value
    return line


def test_unknown_preset_lists_every_preset_baselines_included():
    line = _line("experiment=nope")
    presets = sorted(p.stem for p in (ROOT / "conf" / "experiment").glob("*.yaml"))
    assert "baselines" in presets
    assert line == f"experiment: unknown value 'nope'; allowed: {', '.join(presets)}"


def test_unknown_detector_hides_the_internal_bases():
    allowed = "cv, helper, omniparser, onnx, oracle, rknn"
    assert _line("detector=yolo") == f"detector: unknown value 'yolo'; allowed: {allowed}"


# --- a model file's blocks (issue 52 item 7): `model.ocr.engine=X` as docs/ocr.md writes it


def test_a_known_block_key_is_set_without_plus_whether_or_not_the_file_wrote_it():
    cfg, _ = compose(["model=ocr-tesseract", "model.ocr.lang=deu", "model.ocr.psm=6"])
    ocr = cfg["model"]["ocr"]
    assert ocr["lang"] == "deu"  # not in conf/model/ocr-tesseract.yaml
    assert ocr["psm"] == 6  # in it
    assert ocr["passes"] == ["dark", "light"]  # the rest of the file's block kept
    cfg, _ = compose(["model=sim-ideal", "model.sim.perception.knows_crosshair=false"])
    assert cfg["model"]["sim"]["perception"]["knows_crosshair"] is False


def test_a_plus_on_a_key_the_file_has_is_our_one_line():
    with pytest.raises(Exception) as e:
        compose(["model=ocr-tesseract", "+model.ocr.psm=6"])
    assert config_error_line(e.value) == (
        "model.ocr.psm: already set; override it without '+' (model.ocr.psm=V) or with '++'"
    )


def test_a_key_no_block_knows_stays_unknown_and_lists_the_blocks_keys():
    from dvoc_bench.models.ocr.model import OCR_KEYS

    with pytest.raises(Exception) as e:
        compose(["model=ocr-tesseract", "model.ocr.bogus=1"])
    assert config_error_line(e.value) == f"model.ocr.bogus: unknown key; allowed: {', '.join(OCR_KEYS)}"


def test_the_app_takes_both_forms_as_a_user_types_them():
    from tests.support import run_cli

    ok = run_cli("model=ocr-rapidocr", "model.ocr.use_cls=true", "task=S3", "methods=[oneshot]",
                 "run.plan_only=true")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    bad = run_cli("model=ocr-tesseract", "+model.ocr.psm=6", "run.plan_only=true")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "config error: model.ocr.psm: already set; override it without '+' (model.ocr.psm=V) or with '++'"
    ]


def test_a_model_override_without_the_model_shorthand_is_refused_not_ignored():
    from dvoc_bench.core.declare import ConfigError
    from dvoc_bench.runner.compose import quick_setup

    with pytest.raises(ConfigError) as e:
        quick_setup(["models=[ocr-tesseract]", "model.ocr.engine=rapidocr"])
    assert str(e.value) == (
        "model.ocr: a model.* override applies to the model=<name> shorthand; give model=<name> "
        "(models=[...] reads each file as it is)"
    )
    setup = quick_setup(["model=ocr-rapidocr", "model.ocr.use_cls=true", "run.plan_only=true"])
    assert setup.models[0].ocr == {"engine": "rapidocr", "min_score": 75, "use_cls": True}
