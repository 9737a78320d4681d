"""Grounding methods. Each is ``async run(spec, env) -> TrialResult``, registered with
:func:`dvoc_bench.methods.registry.method` in its own module, and never raises for model failures.

Importing this package registers the built-in methods (in this order: the order ``--help`` and errors
list them); a new method is one new module imported here.
"""

# isort: skip_file
from dvoc_bench.methods import dvoc, oneshot, baselines, som, som_dvoc, zoom  # noqa: F401  (they register)
