"""The main door's Hydra job (``python -m dvoc_bench``): terminal output, progress, exit codes, the
one-line config errors and the run-folder names."""
