"""The OCR baseline (``conf/model/ocr-tesseract.yaml``, ``kind: ocr``): a real, truth-blind grounding model
that runs offline. :mod:`.labels` reads the label from the prompt, :mod:`.tesseract` runs Tesseract,
:mod:`.match` finds the label among the words, :mod:`.model` answers the tools. Its measurements are
benchmarks (``python -m dvoc_bench.bench ocr-measure|ocr-docs|ocr-results``; docs/ocr.md)."""
