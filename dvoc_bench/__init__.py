"""dvoc-bench: a benchmark for UI grounding with vision-language models (DVOC, one-shot, Set-of-Mark)."""

__version__ = "0.1.0"
