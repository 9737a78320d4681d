"""The variation axes (issue 55): knobs validated with one-line errors, applied to a task by pure rules,
keyed only off their defaults, seeded as the unvaried twin, read back as paired drops."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dvoc_bench.analysis.variation import drops, drops_figure, skipped
from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.geometry import Size
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.plan import build_plan
from dvoc_bench.runner.settings import load_settings
from dvoc_bench.scenes.desktop.apps import device_box
from dvoc_bench.scenes.desktop.settings import Desktop
from dvoc_bench.scenes.web.page import WebTask
from dvoc_bench.scenes.web.variation import WebVariation, vary_task, zoomed_side


@pytest.mark.parametrize(
    ("override", "key"),
    [({"web": {"zoom": 2.5}}, "web.zoom"), ({"web": {"zoom": 0.4}}, "web.zoom"),
     ({"web": {"device_scale_factor": 5}}, "web.device_scale_factor"),
     ({"web": {"viewport": [10, 10]}}, "web.viewport"), ({"web": {"font_scale": 3}}, "web.font_scale"),
     ({"web": {"color_scheme": "sepia"}}, "web.color_scheme"),
     ({"desktop": {"gdk_scale": 4}}, "desktop.gdk_scale"),
     ({"desktop": {"gdk_dpi_scale": 0.1}}, "desktop.gdk_dpi_scale"),
     ({"wording": "poetic"}, "wording")],
)  # fmt: skip
def test_an_out_of_range_axis_is_one_line_naming_its_key(override, key):
    with pytest.raises(ConfigError) as e:
        load_settings(override)
    assert str(e.value).startswith(f"{key}:") and "\n" not in str(e.value)


def test_the_cli_refuses_a_zoom_out_of_range_with_exit_2():
    from tests.support import run_cli

    p = run_cli("web.zoom=3", "run.plan_only=true", timeout=120)
    assert p.returncode == 2 and "config error: web.zoom:" in p.stderr


TASK = WebTask(id="W", page=Path("/x.html"), instruction="Click", selector="#a", viewport=Size(1280, 720))


def test_zoom_is_a_narrower_css_viewport_at_a_larger_pixel_ratio_in_the_same_window():
    t = vary_task(TASK, WebVariation(zoom=1.5))
    assert t.scale == 1.5 and t.viewport == Size(852, 480)  # 1280 / 1.5 = 853.3: 852 x 1.5 is whole
    assert abs(t.image_size.width - 1280) <= 2 and t.image_size.height == 720
    half = vary_task(TASK, WebVariation(zoom=0.5))
    assert half.viewport == Size(2560, 1440) and half.image_size == Size(1280, 720)
    assert zoomed_side(1000, 1.25, 1.0) * 1.25 == int(zoomed_side(1000, 1.25, 1.0) * 1.25)


def test_viewport_orientation_scale_scheme_and_fonts_reach_the_task():
    t = vary_task(TASK, WebVariation(viewport=(1024, 640), orientation="portrait", device_scale_factor=2.0,
                                     color_scheme="dark", font_scale=1.5))  # fmt: skip
    assert t.viewport == Size(640, 1024) and t.scale == 2.0 and t.image_size == Size(1280, 2048)
    assert (t.color_scheme, t.font_scale) == ("dark", 1.5)
    assert vary_task(TASK, WebVariation()) == TASK


def test_gtk_axes_become_the_programs_environment_and_gdk_scale_the_unit_of_its_boxes():
    assert Desktop().program_env() == {}
    env = Desktop(gtk_theme="dark", gdk_scale=2, gdk_dpi_scale=1.5).program_env()
    assert env == {"GTK_THEME": "Adwaita:dark", "GDK_SCALE": "2", "GDK_DPI_SCALE": "1.5"}
    # AT-SPI's [322, 219, 406, 252] under GDK_SCALE=2 is the Yes button at [644, 438, 813, 505] on screen
    assert device_box([322, 219, 406, 252], 2).as_list() == [644, 438, 813, 505]
    assert device_box([3, 4, 5, 6]).as_list() == [3, 4, 5, 6]


PLAIN = Size(800, 600)


def _plan(*overrides: str, kind: str = "web", unvaried: dict[str, tuple[str, Size]] | None = None,
          size: Size = PLAIN):  # fmt: skip
    setup = quick_setup(["models=[sim-ideal]", "tasks=[S1,S2]", "methods=[dvoc,oneshot]", "starts=random:2",
                         *overrides])  # fmt: skip
    scenes = {t: (f"hash-{t}-{'v' if unvaried else 'u'}", size) for t in setup.swept.tasks}
    return build_plan(setup, scenes, dict.fromkeys(setup.swept.tasks, kind), (), unvaried)


UNVARIED = {"S1": ("hash-S1-u", PLAIN), "S2": ("hash-S2-u", PLAIN)}


def test_an_axis_enters_the_key_only_off_its_default_and_only_on_its_kind_of_screen():
    base = _plan()
    assert {s.variation for s in base} == {"-"}
    assert [s.trial_key for s in _plan("web.zoom=1")] == [s.trial_key for s in base]
    zoomed = _plan("web.zoom=1.5")
    assert {s.variation for s in zoomed} == {"web.zoom=1.5"}
    assert not {s.trial_key for s in zoomed} & {s.trial_key for s in base}
    assert {s.variation for s in _plan("web.zoom=1.5", kind="desktop")} == {"-"}
    assert {s.variation for s in _plan("desktop.gdk_scale=2", kind="desktop")} == {"desktop.gdk_scale=2"}
    visual = {s.variation for s in _plan("wording=visual", kind="synthetic")}
    assert visual == {'wording="visual"'}  # values as compact JSON, as every settings block


def test_a_varied_trial_is_seeded_as_its_unvaried_twin():
    base = {(s.task, s.method, s.start_index, s.rep): s for s in _plan()}
    varied = _plan("web.zoom=1.5", unvaried=UNVARIED)
    for s in varied:
        twin = base[(s.task, s.method, s.start_index, s.rep)]
        assert s.trial_key != twin.trial_key and s.seed == twin.seed
    alone = _plan("web.zoom=1.5")  # the twin's scene unknown: its own seed
    assert {s.seed for s in alone} != {s.seed for s in base.values()}


@pytest.mark.parametrize(("axis", "size"), [("web.device_scale_factor=2", Size(1600, 1200)),
                                             ("web.orientation=portrait", Size(600, 800))])  # fmt: skip
def test_a_size_changing_axis_keeps_the_twins_seed_and_the_relative_start(axis, size):
    """A DVOC trial on a screen of another size starts from the same relative point in the varied screen's
    pixels, and is seeded as its twin started on the unvaried screen (the start is keyed: planned on the
    varied size, the twin's key and seed were another's)."""
    base = {(s.task, s.method, s.start_index, s.rep): s for s in _plan()}
    varied = _plan(axis, unvaried=UNVARIED, size=size)
    assert {s.method for s in varied} == {"dvoc", "oneshot"}
    for s in varied:
        twin = base[(s.task, s.method, s.start_index, s.rep)]
        assert s.seed == twin.seed, (s.method, s.task, s.start_index)
        if s.method == "dvoc":
            assert s.start != twin.start  # the varied screen's own pixels
            sides = zip(s.start, twin.start, (size.width, size.height), (800, 600), strict=True)
            for v, u, side_v, side_u in sides:
                assert abs(v / (side_v - 1) - u / (side_u - 1)) < 0.01  # the same relative point


def _trials() -> pd.DataFrame:
    rows = []
    for variation, hits in (("-", [1, 1, 1, 1, 1, 1]), ("web.zoom=0.5", [0, 0, 1, 1, 0, 1])):
        for i, hit in enumerate(hits):
            rows.append(dict(trial_key=f"{variation}{i}", model="m", method="oneshot", task=f"W{i % 3}",
                             start_index=i // 3 + 1, rep=0, variation=variation, valid=True, hit=bool(hit),
                             simulated=False, simulated_assumptions=[], protocol="v1", status="ok",
                             error_class=None, error=None))  # fmt: skip
    return pd.DataFrame(rows)


def test_the_drop_is_the_paired_comparison_unvaried_minus_varied():
    t = _trials()
    d = drops(t)
    assert len(d) == 1
    row = d.iloc[0]
    assert (row["variation"], row["pairs"], row["samples"]) == ("web.zoom=0.5", 6, 3)
    assert row["rate_unvaried"] == 1.0 and row["rate_varied"] == pytest.approx(0.5)
    assert row["drop"] == pytest.approx(0.5) and row["lo"] < 0.5 < row["hi"]
    assert (row["unvaried_only"], row["varied_only"]) == (3, 0)
    from dvoc_bench.analysis.honest import mcnemar_exact

    assert row["mcnemar_p"] == pytest.approx(mcnemar_exact(3, 0))
    fig = drops_figure(d)
    assert len(fig.axes) == 1 and "points" in fig.axes[0].get_ylabel()


def test_another_knob_the_run_varied_splits_the_drops_instead_of_emptying_them():
    """A run that also swept the protocol: each protocol's trials pair with their own unvaried twins (before,
    each side held two trials, no pair formed and the table came back empty)."""
    a, b = _trials(), _trials()
    b["protocol"], b["trial_key"] = "paper", "p" + b["trial_key"]
    b.loc[b["variation"] != "-", "hit"] = True  # under paper the zoom costs nothing
    d = drops(pd.concat([a, b], ignore_index=True))
    assert sorted(d["method"]) == ["oneshot protocol=paper", "oneshot protocol=v1"]
    assert dict(zip(d["method"], d["drop"], strict=True)) == {"oneshot protocol=v1": pytest.approx(0.5),
                                                 "oneshot protocol=paper": 0.0}  # fmt: skip
    assert set(d["pairs"]) == {6}


def test_skipped_wordings_are_counted_per_variation_and_task():
    t = _trials()
    why = "W0: wording=visual: no visual wording"
    t.loc[len(t)] = dict(t.iloc[0]) | dict(trial_key="s1", variation="wording=visual",
                                           status="skipped", error_class="wording", valid=False, error=why)
    s = skipped(t)
    assert s.to_dict("records") == [
        dict(variation="wording=visual", task="W0", trials=1, reason=why)
    ]
