"""The variation axes on live screens (issue 55): the truth of a varied page is measured again (the DOM's own
hit test lands on the target at its box's centre), and every scene of experiment=variation has a relational
and a visual wording that fits its target alone."""

from __future__ import annotations

import pytest

from dvoc_bench.core.geometry import Size
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.desktop.settings import Desktop
from dvoc_bench.scenes.web.settings import Web
from dvoc_bench.scenes.wording import reword
from tests.support import chromium_or_skip

pytestmark = pytest.mark.e2e

PAGES = ("W1", "W2", "W3", "W4", "W5")
PROGRAMS = ("A01", "A13")  # gtk3-widget-factory, zenity --forms: the two GTK programs of the experiment


def test_a_zoomed_dark_page_is_measured_again_and_its_dom_hit_test_lands_on_the_target():
    chromium_or_skip()
    plain = SceneRegistry(default_scenes_dir())
    varied = SceneRegistry(default_scenes_dir(), options={"web": Web(zoom=1.5, color_scheme="dark")})
    try:
        for page in PAGES:
            a, b = plain.snapshot(page), varied.snapshot(page)
            assert b.target_box != a.target_box and b.content_hash != a.content_hash, page
            probe = varied.probe(page, b.target_box.centre)  # elementFromPoint at (p + 0.5) / 1.5 CSS px
            assert probe.hit is True, (page, probe)
    finally:
        plain.close()
        varied.close()


@pytest.mark.parametrize("wording", ["relational", "visual"])
def test_every_scene_of_the_experiment_has_an_unambiguous_wording(wording):
    chromium_or_skip()
    reg = SceneRegistry(default_scenes_dir(), options={"desktop": Desktop(), "apps": Desktop()})
    try:
        for task in (*PAGES, *PROGRAMS):
            snap = reg.snapshot(task)
            made = reword(snap.truth, snap.image, wording)
            assert made.text is not None, (task, made.reason)
            assert made.text != snap.truth.instruction
    finally:
        reg.close()


def test_a_page_at_twice_the_pixels_plans_dvoc_on_its_unvaried_twins_seed():
    """The sweep's own plan (issue 55): at device scale factor 2 the page's screenshot is twice the size, its
    DVOC trials start from the same relative points in its pixels and keep the seeds of the unvaried
    trials (before, their start was keyed in the varied pixels and the seeds were others)."""
    chromium_or_skip()
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import plan

    common = ["models=[sim-ideal]", "tasks=[W1]", "methods=[dvoc]", "starts=random:2"]
    plain, varied = quick_setup(common), quick_setup([*common, "web.device_scale_factor=2"])
    try:
        base, twice = plan(plain), plan(varied)
        size = plain.registry.snapshot("W1").size
        assert varied.registry.snapshot("W1").size == Size(size.width * 2, size.height * 2)
    finally:
        plain.registry.close()
        varied.registry.close()
    assert len(base) == len(twice) == 2
    for u, v in zip(base, twice, strict=True):
        assert v.variation == "web.device_scale_factor=2.0" and v.trial_key != u.trial_key
        assert v.seed == u.seed
        assert u.start is not None and v.start is not None
        assert all(abs(b - 2 * a) <= 3 for a, b in zip(u.start, v.start, strict=True))  # 5 % margins, rounded
