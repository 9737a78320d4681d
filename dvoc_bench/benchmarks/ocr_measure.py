"""``python -m dvoc_bench.bench ocr-measure``: how the page segmentation mode and the upscale were chosen.

For each setting (``--psm`` list x ``--upscale`` list) it OCRs the clean screenshot of every task given
(default: S1-S6 and W1-W5), finds the instruction's label (:mod:`~dvoc_bench.models.ocr.labels`) and reports
how many labelled targets the best match lands in (by the scene's target box: measurement only, the model
never sees it), the words read, and the median seconds per OCR call. Each setting runs on a fresh engine (no
cache). Prints one Markdown table.

``--engine rapidocr`` measures PP-OCR (RapidOCR, the ``ocr`` extra) the same way (one row: it has no psm or
upscale); ``--engine tesseract,rapidocr`` puts both in one table (Tesseract's rows at each ``--psm`` x
``--upscale``), which is how docs/ocr.md compares the two engines' label recall on the same screens.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

from dvoc_bench.models.ocr.labels import target_of
from dvoc_bench.models.ocr.match import best_match
from dvoc_bench.models.ocr.tesseract import OcrEngine

DEFAULT_TASKS = ("S1", "S2", "S3", "S4", "S5", "S6", "W1", "W2", "W3", "W4", "W5")


def measure(
    tasks: Sequence[str],
    psms: Sequence[int],
    upscales: Sequence[int | str],
    overrides: Sequence[str] = (),
    engines: Sequence[str] = ("tesseract",),
) -> list[tuple]:
    """Rows ``(engine, psm, upscale, labelled, landed, words, median_s)`` over ``tasks`` (``-`` for the psm
    and upscale of RapidOCR)."""
    from dvoc_bench.models.ocr.rapid import RapidOcrEngine
    from dvoc_bench.runner.compose import quick_setup

    setup = quick_setup(["model=sim-ideal", f"tasks=[{','.join(tasks)}]", *overrides])
    snaps = [setup.registry.snapshot(t) for t in tasks]
    rows = []
    settings: list[tuple[str, Any, Any]] = []
    for engine in engines:
        if engine == "rapidocr":
            settings.append(("rapidocr", "-", "-"))
        else:
            settings += [("tesseract", psm, up) for psm in psms for up in upscales]
    for engine, psm, up in settings:
        eng: RapidOcrEngine | OcrEngine = (
            RapidOcrEngine() if engine == "rapidocr" else OcrEngine(psm=psm, upscale=up)
        )
        labelled = landed = n_words = 0
        times = []
        for s in snaps:
            t0 = time.perf_counter()
            words = eng.words(s.image)
            times.append(time.perf_counter() - t0)
            n_words += len(words)
            tgt = target_of(f"Instruction: {s.instruction}")
            if tgt.label is None:
                continue
            labelled += 1
            m = best_match(words, tgt.label, tgt.anchor)
            if m is not None and s.target_box.contains(m.box.centre):
                landed += 1
        rows.append((engine, psm, up, labelled, landed, n_words, statistics.median(times)))
    setup.registry.close()
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dvoc_bench.bench ocr-measure", description=__doc__)
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    p.add_argument("--psm", default="3,6,11,12")
    p.add_argument("--upscale", default="1,2,auto")
    p.add_argument("--engine", default="tesseract", help="tesseract, rapidocr or both, comma-separated")
    p.add_argument("overrides", nargs="*", help="config overrides (e.g. web.task_files=[...])")
    a = p.parse_args(argv)
    rows = measure(
        a.tasks.split(","), [int(v) for v in a.psm.split(",")],
        [v if v == "auto" else int(v) for v in a.upscale.split(",")], a.overrides, a.engine.split(","),
    )  # fmt: skip
    print(
        "| engine | psm | upscale | labelled targets | match lands in target | words read | median s/call |"
    )
    print("|---|---|---|---|---|---|---|")
    for engine, psm, up, lab, hit, nw, med in rows:
        print(f"| {engine} | {psm} | {up} | {lab} | {hit} | {nw} | {med:.2f} |")
    return 0
