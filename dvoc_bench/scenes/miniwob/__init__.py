"""MiniWoB++ episodes: the task pages of the installed ``miniwob`` package (never copied into the
repository), driven in the shared headless Chromium with real mouse and keyboard input, each page's own
verdict read back (``WOB_RAW_REWARD_GLOBAL``, ``WOB_DONE_GLOBAL``), and the oracle planners that read each
task from its page (docs/episodes.md).

Nothing here imports Playwright or the ``miniwob`` package at import time: the pages are found on disk
(:mod:`dvoc_bench.scenes.miniwob.pages`) and the browser starts on the first episode.
"""

from dvoc_bench.scenes.miniwob.pages import MiniwobMissing, html_dir, task_names, task_page

__all__ = ["MiniwobMissing", "html_dir", "task_names", "task_page"]

from dvoc_bench.scenes.miniwob import widget_planners as _widget_planners  # noqa: E402,F401  (registers them)
