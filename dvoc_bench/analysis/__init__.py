"""Analysis: run directories and the authors' records -> pandas frames -> tables and figures.

- :func:`load_runs` reads our run directories (and Hydra multirun sweeps) into :class:`Runs`.
- :func:`load_upstream` reads the DVOC authors' JSON records into the same schema.
- :mod:`~dvoc_bench.analysis.paper` rebuilds the paper's tables with the authors' exact rules.
- :mod:`~dvoc_bench.analysis.honest` gives the same tables under one explicit rule, with intervals, paired
  comparisons, the coordinate-frame audit and the cost per successful click.
- :mod:`~dvoc_bench.analysis.plots` draws the figures (simulated data is labelled SIMULATED).
- :mod:`~dvoc_bench.analysis.budget`, :mod:`~dvoc_bench.analysis.compare` and
  :mod:`~dvoc_bench.analysis.equal_cost` compare methods at equal cost (accuracy at a call budget, stop
  rules, paired differences, cost per success); :mod:`~dvoc_bench.analysis.export` writes and reads the
  per-trial export.

This package imports pandas; ``import dvoc_bench`` does not import it.
"""

from dvoc_bench.analysis.loaders import default_run_dir, find_run_dirs, load_runs, newest_run
from dvoc_bench.analysis.schema import STEP_COLUMNS, TRIAL_COLUMNS, Runs
from dvoc_bench.analysis.upstream import default_upstream_dir, discover_upstream, load_upstream

__all__ = [
    "STEP_COLUMNS",
    "TRIAL_COLUMNS",
    "Runs",
    "default_run_dir",
    "default_upstream_dir",
    "discover_upstream",
    "find_run_dirs",
    "load_runs",
    "load_upstream",
    "newest_run",
]
