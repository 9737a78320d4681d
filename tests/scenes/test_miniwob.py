"""MiniWoB++ pages from the installed package: seeded as its own environment seeds them, the task read from
the page, real input, the page's own verdict (issue #54)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dvoc_bench.core.geometry import Point
from dvoc_bench.scenes.miniwob.dom import css_box_to_image
from dvoc_bench.scenes.miniwob.driver import EpisodePage
from dvoc_bench.scenes.miniwob.pages import task_page
from dvoc_bench.scenes.miniwob.planners import PLANNERS
from dvoc_bench.scenes.sources import SceneError
from dvoc_bench.scenes.web.browser import WebBrowser
from tests.support import miniwob_or_skip

SCALE = 4.0


@pytest.fixture(scope="module")
def browser() -> Iterator[WebBrowser]:
    miniwob_or_skip()
    b = WebBrowser()
    yield b
    b.close()


def test_unknown_task_is_one_line_scene_error() -> None:
    miniwob_or_skip()
    with pytest.raises(SceneError, match="'no-such-task' is not in the installed package") as e:
        task_page("no-such-task")
    assert "\n" not in str(e.value)


def test_a_seed_gives_the_same_episode_and_seeds_differ(browser: WebBrowser) -> None:
    page = EpisodePage(browser, "click-checkboxes", SCALE)
    try:
        first = [page.start(seed, 60).query for seed in range(4)]
        again = [page.start(seed, 60).query for seed in range(4)]
        image = page.capture()
    finally:
        page.close()
    assert first == again
    assert len(set(first)) > 1
    assert image.shape == (210 * SCALE, 160 * SCALE, 3)  # the task area at the scale: >= 640 px wide


def test_real_input_on_the_planned_targets_gets_the_pages_verdict(browser: WebBrowser) -> None:
    """Clicking and typing at the planned targets' box centres ends enter-text with the page's reward 1;
    a click beside the button leaves the page without a verdict."""
    page = EpisodePage(browser, "enter-text", SCALE)
    try:
        dom = page.start(3, 60)
        for k in range(5):
            step = PLANNERS["enter-text"](dom, k)
            if step is None or dom.done:
                break
            if step.target is not None:
                el = dom.by_idx(step.target)
                assert el is not None
                page.click(css_box_to_image(el.box, SCALE).centre)
            else:
                page.type(step.text or "")
            dom = page.read()
        assert dom.done and dom.raw_reward == 1.0
        dom = page.start(3, 60)
        button = dom.one(id="subbtn")
        box = css_box_to_image(button.box, SCALE)
        page.click(Point(box.x1 + 8, box.centre.y))  # beside it
        assert not page.read().done
    finally:
        page.close()
