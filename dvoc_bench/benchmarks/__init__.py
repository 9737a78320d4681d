"""Every benchmark and measurement script; run them through ``python -m dvoc_bench.bench NAME``."""
