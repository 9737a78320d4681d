"""Truth-blindness: on a page whose target selector disagrees with the instruction (``#alpha`` targeted,
"Click the Beta button" asked) the OCR model lands on Beta, the simulator (which reads the truth) on Alpha;
when selector and instruction agree the OCR model hits. A bring-your-own page (``web.custom``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.models.ocr.tesseract import find_tesseract
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium
from tests.support import need

try:
    find_tesseract()
except ConfigError as e:  # pragma: no cover - CI installs both
    need("TESSERACT", str(e), module=True)
try:
    find_chromium()
except ChromiumNotFoundError as e:  # pragma: no cover
    need("CHROMIUM", str(e), module=True)

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body { margin: 0; font-family: "DVOC Sans"; background: #f8fafc; }
button { font: inherit; font-size: 18px; position: absolute; width: 160px; height: 56px; border: 0;
         border-radius: 8px; background: #2563eb; color: #fff; }
</style></head><body>
<button id="alpha" style="left: 180px; top: 200px">Alpha</button>
<button id="beta" style="left: 520px; top: 330px">Beta</button></body></html>"""


def _sweep(tmp_path: Path, name: str, model: str, selector: str) -> list[dict]:
    page = tmp_path / "two.html"
    page.write_text(PAGE, encoding="utf-8")
    setup = quick_setup(
        [f"model={model}", "task=custom", "methods=[oneshot]", "starts=random:1",
         "web.custom.viewport=[800,500]", f"web.custom.page={page}", f'web.custom.selector="{selector}"',
         "web.custom.instruction='Click the Beta button'"]
    )  # fmt: skip
    res = run_sweep(setup, tmp_path / name)
    setup.registry.close()
    assert {t["status"] for t in res.trials} == {"ok"}
    if model.startswith("ocr"):  # the evidence is in the records: the words it matched, and how sure it was
        steps = (tmp_path / name / "steps.jsonl").read_text(encoding="utf-8")
        assert "OCR found 'Beta' for 'Beta'" in steps and "OCR confidence" in steps
    return res.trials


@pytest.mark.e2e
def test_ocr_reads_the_page_while_the_simulator_reads_the_truth(tmp_path: Path) -> None:
    ocr = _sweep(tmp_path, "ocr", "ocr-tesseract", "#alpha")
    sim = _sweep(tmp_path, "sim", "sim-ideal", "#alpha")
    for t in ocr:
        assert t["simulated"] is False and t["hit"] is False and t["hit_element"] == "button#beta", t
    for t in sim:
        assert t["simulated"] is True and t["hit"] is True and t["hit_element"] == "button#alpha", t
    consistent = _sweep(tmp_path, "consistent", "ocr-tesseract", "#beta")
    for t in consistent:
        assert t["hit"] is True and t["hit_element"] == "button#beta", t
