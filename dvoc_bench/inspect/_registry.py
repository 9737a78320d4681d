"""What Inspect finds through the ``inspect_ai`` entry point: the tasks, solvers and the ``dvoc`` provider."""

from dvoc_bench.inspect.provider import DvocModelAPI
from dvoc_bench.inspect.scorers import calls, distance, hit, hit_radius, tokens_in, tokens_out, within_eps
from dvoc_bench.inspect.solvers import dvoc, oneshot, som, zoom
from dvoc_bench.inspect.tasks import dataset, real_screens, synthetic, web

__all__ = [
    "DvocModelAPI",
    "calls",
    "dataset",
    "distance",
    "dvoc",
    "hit",
    "hit_radius",
    "oneshot",
    "real_screens",
    "som",
    "synthetic",
    "tokens_in",
    "tokens_out",
    "web",
    "within_eps",
    "zoom",
]
