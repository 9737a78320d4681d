"""The simulator behind an OpenAI-compatible HTTP server (the machinery of ``python -m dvoc_bench.serve``):
``wire`` reads requests and shapes answers, ``backend`` answers them with the simulator, ``server`` is the
bounded HTTP server with its limits and injected faults."""
