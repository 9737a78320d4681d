"""dvoc-bench inside Inspect (``pip install -e ".[inspect]"``): tasks, solvers, scorers and the ``dvoc``
model provider, a thin layer over the project's floors (docs/inspect.md). Nothing here is imported unless
Inspect (or a user) asks for it: ``import dvoc_bench.inspect`` alone loads nothing of Inspect."""
