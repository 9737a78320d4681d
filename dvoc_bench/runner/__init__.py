"""The sweep: validated settings -> what the sweep needs (setup) -> the plan -> provider gates -> trials
-> the run directory (store). No terminal output; the doors and :mod:`dvoc_bench.app` print."""
