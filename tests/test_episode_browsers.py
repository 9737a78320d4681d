"""Episodes in flight are spread over several browsers (each its own Chromium on its own thread), so one
episode's capture never waits behind another's click (issue #54: at 4 in flight every page call queued on
one browser thread). No browser is started here: a browser starts on a page's first call."""

from __future__ import annotations

from dvoc_bench.scenes.miniwob import source as source_mod
from dvoc_bench.scenes.miniwob.source import MiniwobSource
from dvoc_bench.scenes.web.browser import WebBrowser
from tests.support import miniwob_or_skip


def test_pages_go_to_the_browser_with_the_fewest_open(monkeypatch) -> None:
    miniwob_or_skip()
    monkeypatch.setattr(source_mod, "BROWSERS", 3)
    src = MiniwobSource()
    try:
        assert len(src.browsers) == 3 and src.browsers[0] is src.browser
        one = src.page("miniwob.click-test")
        assert one.browser is src.browsers[0]
        one.close()  # one episode at a time stays in the first browser
        a = src.page("miniwob.click-test")
        b = src.page("miniwob.enter-text")
        c = src.page("miniwob.click-checkboxes")
        assert [p.browser for p in (a, b, c)] == src.browsers
        b.close()
        b.close()  # closing twice frees the browser once
        d = src.page("miniwob.click-test-2")
        e = src.page("miniwob.click-test-2")
        assert d.browser is src.browsers[1] and e.browser is src.browsers[0]
        assert not any(x.running for x in src.browsers)  # nothing launched by handing out pages
    finally:
        src.close()


def test_a_given_browser_is_the_only_one() -> None:
    miniwob_or_skip()
    shared = WebBrowser()
    src = MiniwobSource(browser=shared)
    assert src.browsers == [shared]
    assert src.page("miniwob.click-test").browser is shared
