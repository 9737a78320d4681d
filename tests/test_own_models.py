"""``model=<name> paths.models=DIR`` works like ``models=[<name>] paths.models=DIR`` (a config outside
``conf/model/``), and ``model.*`` overrides such as ``+model.pricing={...}`` apply to it."""

from __future__ import annotations

import pytest
import yaml

from dvoc_bench.app.own_models import with_own_model_dir
from dvoc_bench.runner.compose import quick_setup
from tests.support import ROOT, run_cli


@pytest.fixture
def own(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    cfg = yaml.safe_load((ROOT / "conf" / "model" / "sim-ideal.yaml").read_text(encoding="utf-8"))
    cfg["name"] = "my-sim"
    (d / "my-sim.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return d


def test_the_shorthand_finds_a_model_outside_conf_model(own):
    pricing = "+model.pricing={input_per_mtok: 1.5, output_per_mtok: 2}"
    argv = with_own_model_dir(["model=my-sim", f"paths.models={own}", pricing, "task=S1"])
    assert argv[-1].startswith("hydra.searchpath=[file://")
    setup = quick_setup(argv)
    (m,) = setup.models
    assert m.name == "my-sim" and m.kind == "simulator"
    assert m.pricing is not None and (m.pricing.input_per_mtok, m.pricing.output_per_mtok) == (1.5, 2.0)
    same = quick_setup(["models=[my-sim]", f"paths.models={own}", "task=S1"])
    assert same.models[0].model_id == m.model_id and same.swept == setup.swept


def test_a_shipped_name_or_a_missing_file_is_left_to_hydra(own):
    assert with_own_model_dir(["model=sim-ideal", f"paths.models={own}"]) == [
        "model=sim-ideal",
        f"paths.models={own}",
    ]
    assert with_own_model_dir(["model=nope", f"paths.models={own}"]) == ["model=nope", f"paths.models={own}"]
    assert with_own_model_dir(["model=my-sim"]) == ["model=my-sim"]


@pytest.mark.e2e
def test_the_door_runs_it(own, tmp_path):
    p = run_cli("model=my-sim", f"paths.models={own}", "task=S1", "methods=[dvoc]", "smoke=true",
                f"hydra.run.dir={tmp_path / 'run'}", "run.quiet=true")  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert "my-sim" in p.stdout and (tmp_path / "run" / "trials.jsonl").is_file()
