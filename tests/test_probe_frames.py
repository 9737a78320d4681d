"""The frame probe checks a full declaration (docs/frames.md): it sends the image at the size the declared
resize gives, and a model answering in pixels of that image agrees with a ``pixel`` + resize declaration;
three calls are enough for a verdict."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.support import ROOT, run_cli


def _models(tmp_path, **files):
    models = tmp_path / "model"
    models.mkdir()
    for name, (base, frame) in files.items():
        doc = yaml.safe_load((ROOT / "conf" / "model" / f"{base}.yaml").read_text(encoding="utf-8"))
        (models / f"{name}.yaml").write_text(yaml.safe_dump({**doc, "name": name, "coord_frame": frame}))
    return models


@pytest.mark.e2e
def test_three_calls_check_a_resized_pixel_frame_and_a_0_999_one(tmp_path):
    smart = {"units": "pixel", "resize": "smart_resize", "factor": 28, "max_pixels": 200_704}
    models = _models(
        tmp_path,
        qwenlike=("sim-ideal", smart),
        asis=("sim-ideal", "pixel"),
        glmlike=("sim-gemma-4-26b", "norm999"),
    )
    r = run_cli(
        "experiment=frame_probe", "models=[qwenlike,asis,glmlike]", f"paths.models={models}",
        "tasks=[S1,S3,S5]", "probe.repeats=1", f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    verdicts = {v["model"]: v for v in json.loads((tmp_path / "run" / "probe.json").read_text())}
    # 200704 = 256 * 28^2: an 800x600 scene is sent at 504x364, and the simulator answers in its pixels
    q = verdicts["qwenlike"]
    assert q["verdict"] == "pixel_sent" and q["expected"] == "pixel_sent" and q["agrees"] is True, q
    assert "smart_resize(factor=28" in q["frame_rule"]
    assert verdicts["asis"]["verdict"] == "pixel" and verdicts["asis"]["agrees"] is True
    g = verdicts["glmlike"]
    assert g["verdict"] == "norm1000" and g["expected"] == "norm1000" and g["agrees"] is True, g
    assert sum(1 for _ in (tmp_path / "run" / "probe.jsonl").open()) == 9  # three calls a model
