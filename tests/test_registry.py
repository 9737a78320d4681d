"""The registries: a method added in one file runs through validation, planning, a sweep and the summary."""

from __future__ import annotations

import importlib
import sys

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.methods.registry import KNOBS, method, method_info, methods, unregister_method
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.summary import format_table, summarise
from dvoc_bench.runner.sweep import plan, run_sweep
from dvoc_bench.scenes.sources import sources
from tests.support import make_spec


@pytest.fixture
def teleport():
    name = "tests.methods.teleport"
    already = name in sys.modules
    mod = importlib.import_module(name)  # importing the file registers the method
    if already:  # an earlier test unregistered it: register it again
        unregister_method(mod.NAME)
        importlib.reload(mod)
    yield mod.NAME
    unregister_method(mod.NAME)


def test_a_method_in_one_new_file_runs_through_validation_planning_sweep_and_summary(teleport, tmp_path):
    setup = quick_setup(
        [f"methods=[{teleport},centre]", "models=[sim-ideal,sim-gemma-4-26b]", "tasks=[S1,S3]"]
    )
    specs = plan(setup)
    mine = [s for s in specs if s.method == teleport]
    # the registry entry decides the plan: protocol swept, no alpha/overlay/predict, no start point
    assert len(mine) == 2 * 2 * 5 and {s.alpha for s in mine} == {"-"} and {s.start for s in mine} == {None}
    assert {s.protocol for s in mine} == {"v1"} and {s.model for s in mine} == {
        "sim-ideal",
        "sim-gemma-4-26b",
    }
    res = run_sweep(setup, tmp_path)
    assert res.counts == {"ok": len(specs)} and res.ran == len(specs)
    rows = [r for r in summarise(res.trials) if r["method"] == teleport]
    assert len(rows) == 2 and all(r["n"] == 10 for r in rows)
    ideal = next(r for r in rows if r["model"].startswith("sim-ideal"))
    assert ideal["hit"] == 1.0  # the ideal simulator answers click_at on the target
    assert teleport in format_table(summarise(res.trials), 30.0)


def test_an_unregistered_method_is_a_config_error_listing_the_registered_ones(teleport):
    with pytest.raises(ConfigError, match=f"methods: unknown value 'warp'; allowed: .*{teleport}"):
        quick_setup(["methods=[warp]"])
    unregister_method(teleport)
    with pytest.raises(ConfigError, match=f"unknown value '{teleport}'"):
        quick_setup([f"methods=[{teleport}]"])


def test_builtin_entries_and_their_declarations():
    assert list(methods())[:4] == ["dvoc", "oneshot", "centre", "random"]
    assert method_info("dvoc").uses_start and not method_info("oneshot").uses_start
    assert not method_info("centre").calls_model and method_info("som").needs_detector
    assert {n: s.kind for n, s in sources().items()} == {
        "synthetic": "synthetic",
        "web": "web",
        "desktop": "desktop",
        "apps": "desktop",
        "miniwob": "miniwob",
        "gtk_episodes": "desktop",
        **dict.fromkeys(
            ("screenspot", "screenspot_v2", "screenspot_pro", "manifest", "cuactspot", "precision_cua"),
            "dataset",
        ),
    }
    with pytest.raises(ValueError, match="unknown knob"):
        method("bad", knobs=("colour",))
    with pytest.raises(ValueError, match="protocol knob"):
        method("bad", knobs=())
    assert set(KNOBS) == {"protocol", "alpha", "overlay", "predict", "detector", "zoom"}
    assert method_info("zoom").call_bound(make_spec(method="zoom", zoom="2/3/256")) == 4
