"""``python -m dvoc_bench.bench NAME [args]``: every benchmark and measurement script, one door.

Figures, not assertions (docs/benchmarks.md lists each target). ``NAME`` picks the script:

- ``overhead``, ``sweep``, ``scheduler``, ``inflight``, ``loader``, ``dataset``, ``hires``, ``overlay``,
  ``readme``: the harness benchmarks (:mod:`dvoc_bench.benchmarks.harness`; ``readme`` prints the numbers
  README.md and docs quote: simulated runs, the cross-validation, the authors' records);
- ``web``, ``desktop``: one-off and per-step costs of page and desktop scenes;
- ``detect``: detector latency per screenshot; ``recall``: detector recall against the DOM;
  ``ultra-agree``: ``detector=omniparser`` against ultralytics' own boxes on held-out screenshots;
- ``ocr-measure``, ``ocr-docs``, ``ocr-results``: the OCR baseline's measurements;
- ``throughput``: samples and model calls per second, CPU per call, peak RSS and bytes per sample of a
  ScreenSpot-Pro-size sweep against an instant model over HTTP, at 16, 64 and 256 in flight, on 1 and 2 cores;
- ``episodes``: harness seconds per MiniWoB episode step against its floor (capture + click), at 1 and 4
  episodes in flight;
- ``view``: the run viewer on a synthetic 10,000-trial run dir: build time, size, open time in Chromium;
- ``limits``: the cost of the guards every input passes (key redaction on a 1.3 KB prompt; ``serve``
  answering while 400 slowloris clients hold connections);
- ``help``: the wall time of ``python -m dvoc_bench --help`` (fresh processes, median);
- ``recorded-calls``: rewrites the table of calls per trial in the authors' records (``run.plan_only``).

``python -m dvoc_bench.bench NAME --help`` shows a script's own options.
"""

from __future__ import annotations

import importlib
import sys

SCRIPTS = {
    "web": "dvoc_bench.benchmarks.web",
    "desktop": "dvoc_bench.benchmarks.desktop",
    "detect": "dvoc_bench.benchmarks.detect",
    "recall": "dvoc_bench.benchmarks.recall",
    "ultra-agree": "dvoc_bench.benchmarks.ultra_agree",
    "ocr-measure": "dvoc_bench.benchmarks.ocr_measure",
    "ocr-docs": "dvoc_bench.benchmarks.ocr_docs",
    "ocr-results": "dvoc_bench.benchmarks.ocr_results",
    "recorded-calls": "dvoc_bench.benchmarks.recorded_calls",
    "help": "dvoc_bench.benchmarks.startup",
    "view": "dvoc_bench.benchmarks.view",
    "episodes": "dvoc_bench.benchmarks.episodes",
    "throughput": "dvoc_bench.benchmarks.throughput",
    "limits": "dvoc_bench.benchmarks.limits",
}
"""Scripts with their own options, by name; every other name goes to the harness benchmarks."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] in SCRIPTS:
        return int(importlib.import_module(SCRIPTS[argv[0]]).main(argv[1:]) or 0)
    from dvoc_bench.benchmarks.harness import main as harness_main

    return harness_main(argv, also=sorted(SCRIPTS))


if __name__ == "__main__":
    sys.exit(main())
