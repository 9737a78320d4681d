"""The browser side of web scenes: Chromium discovery, one shared Playwright browser, page tasks.

Playwright is imported only when a browser actually starts. See :mod:`dvoc_bench.scenes.web.source` for how
web
tasks become scenes, and docs/web.md.
"""

from dvoc_bench.scenes.web.browser import NetworkGuard, Session, WebBrowser, request_allowed
from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium, resolve_chromium
from dvoc_bench.scenes.web.page import MeasuredElement, PageError, PageRender, SetupAction, WebTask

__all__ = [
    "ChromiumNotFoundError",
    "MeasuredElement",
    "NetworkGuard",
    "PageError",
    "PageRender",
    "Session",
    "SetupAction",
    "WebBrowser",
    "WebTask",
    "find_chromium",
    "request_allowed",
    "resolve_chromium",
]
