"""The viewer's episode page (issue #54): a filmstrip with every step of an episode, the screenshot it was
grounded on with the action drawn (click point, drag arrow, typed text), its grounding frames nested under
it, and the screenshot after. Checked in a real Chromium against the records read here with ``json.loads``;
the drawn click point is measured on the screen, in the screenshot's pixels."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from tests.support import chromium_or_skip, miniwob_or_skip
from tests.test_view import build, records

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def episode_run(tmp_path_factory) -> Path:
    """dvoc with sim-ideal on a click-then-type-then-click task, a drag and a list (one seed each)."""
    miniwob_or_skip()
    from dvoc_bench.runner.compose import quick_setup
    from dvoc_bench.runner.sweep import run_sweep

    out = tmp_path_factory.mktemp("runs") / "episodes"
    tasks = "miniwob.enter-text,miniwob.drag-box,miniwob.choose-list"
    run_sweep(quick_setup(["experiment=episodes", f"tasks=[{tasks}]", "methods=[dvoc]", "repeats=1",
                           "run.quiet=true"]), out)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def page():
    chromium_or_skip()
    from playwright.sync_api import sync_playwright

    from dvoc_bench.scenes.web.chromium import find_chromium

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=find_chromium(), headless=True)
        pg = b.new_page(viewport={"width": 1400, "height": 1000})
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.errors = errors
        yield pg
        b.close()


SHOWN = """k => [...document.querySelectorAll(`.estep[data-estep="${k}"] > .pair .frame img`)]
    .map(i => [i.getAttribute('src'), i.naturalWidth, i.naturalHeight])"""
NESTED = """k => [...document.querySelectorAll(`.estep[data-estep="${k}"] .calls .step img`)]
    .map(i => i.getAttribute('src'))"""
CLICK = """k => { const f = document.querySelector(`.estep[data-estep="${k}"] figure.before .frame`);
    const i = f.querySelector('img').getBoundingClientRect(), c = f.querySelector('circle.click');
    if (!c) return null; const r = c.getBoundingClientRect();
    return [(r.left + r.right) / 2 - i.left, (r.top + r.bottom) / 2 - i.top, i.width, i.height]; }"""


def test_every_step_shows_its_frames_with_the_action_drawn(episode_run: Path, tmp_path: Path, page) -> None:
    index = build(episode_run, tmp_path / "site")
    trials = records(episode_run / "trials.jsonl")
    calls = records(episode_run / "steps.jsonl")
    actions = set()
    for i, t in enumerate(trials):
        ep = t["episode"]
        page.goto(index.as_uri() + f"#trial={i}")
        page.wait_for_selector("#episode-strip")
        page.wait_for_function("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
        assert page.eval_on_selector_all("#episode-strip > .estep", "e => e.length") == len(ep["steps"])
        for s in ep["steps"]:
            k, actions = s["index"], actions | {s["action"]}
            before, after = page.evaluate(SHOWN, k)
            assert before[0].endswith(f"frames/{s['frame_before']}.png")
            assert after[0].endswith(f"frames/{s['frame_after']}.png")
            w, h = Image.open(episode_run / "frames" / f"{s['frame_before']}.png").size
            assert before[1:] == after[1:] == [w, h] == ep["size"]
            mine = [c for c in calls if c["trial_key"] == t["trial_key"] and c["episode_step"] == k]
            nested = page.evaluate(NESTED, k)
            assert len(nested) == len(mine) == s["calls"]
            assert [n.rsplit("/", 1)[-1] for n in nested] == [f"{c['frame_sha']}.png" for c in mine]
            card = f'.estep[data-estep="{k}"] figure.before'
            if s["point"] is None:
                assert page.evaluate(CLICK, k) is None
            else:  # the click point where the record says, in the screenshot's pixels
                cx, cy, sw, sh = page.evaluate(CLICK, k)
                assert [cx * w / sw, cy * h / sh] == pytest.approx(s["point"], abs=2 * w / sw)
            drawn_arrow = page.locator(f"{card} line.drag").count()
            assert drawn_arrow == (1 if s["action"] == "drag" else 0)
            if s["action"] in ("type", "select"):
                assert f'"{s["text"]}"' in page.text_content(f"{card} text.typed")
    assert {"click", "type", "drag", "select"} <= actions
    assert not page.errors
