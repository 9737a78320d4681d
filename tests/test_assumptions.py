"""The assumed-knob registry (issue 16 item 3, made general for issue 20): a profile declares the knobs it
was fitted for; any other registered knob value marks the row in the summary, the report and the plots."""

from __future__ import annotations

import pandas as pd
import pytest

from dvoc_bench.analysis import honest, plots
from dvoc_bench.analysis.markdown import summary_view
from dvoc_bench.core import assumptions as A
from dvoc_bench.models.simulator import assumed_knobs
from dvoc_bench.runner.summary import simulated_label

FITTED = {"fitted_for": {"protocols": ["paper"], "overlays": ["full"], "overlay_style": "default"}}


def test_a_new_knob_is_marked_unless_the_profile_lists_it() -> None:
    A.register_assumed_knob("zoom_test", "zoom effect assumed", fitted_key="zooms", default_fitted=("none",))
    A.register_assumed_knob("zoom_test", "zoom effect assumed", fitted_key="zooms", default_fitted=("none",))
    with pytest.raises(ValueError, match="already registered"):
        A.register_assumed_knob("zoom_test", "other label", fitted_key="zooms")
    kw = {"protocol": "paper", "overlay": "full"}
    assert assumed_knobs(FITTED, **kw, extra={"zoom_test": "none"}) == []
    assert assumed_knobs(FITTED, **kw, extra={"zoom_test": "2x"}) == ["zoom effect assumed"]
    fitted_zoom = {"fitted_for": {**FITTED["fitted_for"], "knobs": {"zooms": ["none", "2x"]}}}
    assert assumed_knobs(fitted_zoom, **kw, extra={"zoom_test": "2x"}) == []
    with pytest.raises(KeyError, match="not a registered"):
        assumed_knobs(FITTED, **kw, extra={"unknown_knob": "x"})


def test_marker_reads_lists_text_and_nothing() -> None:
    assert A.marker(False, ["frame request assumed"]) == ""
    assert A.marker(True, []) == "SIMULATED"
    cells = [["overlay effect assumed"], "frame request assumed; overlay effect assumed", None, ""]
    assert A.marker(True, cells) == "SIMULATED; frame request assumed; overlay effect assumed"


def _trials() -> pd.DataFrame:
    rows = []
    for overlay, assumed in (("full", ""), ("none", "overlay effect assumed")):
        for i in range(4):
            rows.append(
                {
                    "model": "sim-x", "method": "dvoc", "task": "S1", "protocol": "paper", "overlay": overlay,
                    "predict": "relative", "start_x": float(i), "start_y": 0.0, "status": "ok", "valid": True,
                    "hit": i % 2 == 0, "within_eps": True, "hit_radius": True, "final_dist_px": 3.0,
                    "iterations": 2, "model_calls": 2, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0,
                    "simulated": True, "simulated_assumptions": assumed, "target_inferred": False,
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_report_table_and_the_plot_title_carry_the_marker() -> None:
    t = _trials()
    s = honest.summary(t, "hit", by=("model", "method", "overlay"), n_boot=50)
    view = summary_view(s).set_index("overlay")
    assert view.loc["none", "model"] == "sim-x [SIMULATED; overlay effect assumed]"
    assert view.loc["full", "model"] == "sim-x [SIMULATED]"
    title = plots.title_of(plots.success_bars(s))
    assert title.startswith("SIMULATED; overlay effect assumed:")
    only_full = honest.summary(t[t["overlay"] == "full"], "hit", n_boot=50)
    assert plots.title_of(plots.success_bars(only_full)).startswith("SIMULATED:")
    assert simulated_label([{"simulated": True, "simulated_assumptions": ["overlay effect assumed"]}]) == (
        " [SIMULATED; overlay effect assumed]"
    )


def test_the_plan_marks_zoom_crops_and_screens_the_profiles_were_not_fitted_on(tmp_path) -> None:
    """Issue 20 item 3: a calibrated profile's zoom trials and its trials on web, desktop or dataset screens
    rest on assumptions; its plain trials on the drawn scenes carry none beyond the frame request."""
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import plan
    from dvoc_bench.scenes.dataset_fixture import write_fixture

    base = ["models=[sim-gemma-4-26b,sim-ideal]", "protocols=[paper]", "repeats=1"]
    specs = plan(quick_setup([*base, "methods=[dvoc,zoom]", "tasks=[S1]"]))
    by = {(s.model, s.method): s.simulated_assumptions for s in specs}
    assert by["sim-gemma-4-26b", "dvoc"] == []  # fitted: paper protocol, full overlay, drawn scenes
    assert by["sim-gemma-4-26b", "zoom"] == ["crops/zoom assumed"]
    assert by["sim-ideal", "zoom"] == []  # a hand-set profile declares nothing
    write_fixture(tmp_path, "manifest", screens=1, per_screen=1)
    ds = quick_setup([*base, "methods=[dvoc]", "dataset=manifest", f"dataset.root={tmp_path}"])
    marks = {s.model: s.simulated_assumptions for s in plan(ds)}
    assert marks == {"sim-gemma-4-26b": ["screen kind assumed"], "sim-ideal": []}
