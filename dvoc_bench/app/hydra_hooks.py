"""Hydra glue: the run / sweep folder name, resolved the same way in single runs and multiruns.

Hydra 1.3's sweepers resolve ``hydra.sweep.dir`` before any ``HydraConfig`` exists, so
``${hydra:runtime.choices.experiment}`` there fails ("HydraConfig was not set") on every ``-m`` command.
``conf/config.yaml`` uses ``${dvoc_run_name:}`` instead:

- in a single run: the ``experiment`` preset chosen (``quick`` by default);
- in a multirun: the preset of the sweep (the :class:`SweepName` callback reads it from the sweep's own
  config before the sweeper starts); when ``experiment`` itself is swept (``-m experiment=a,b``), the
  swept presets joined with ``+``, so every job of one sweep lands in one folder.

The value is cached (``use_cache``): Hydra copies the sweep's resolver cache into every job's config, so
a job in another process (``hydra/launcher=joblib``) gets the same folder as its sweep. The resolver is
registered on import; the callback (and ``python -m dvoc_bench``) import this module. ``${dvoc_help:...}``
fills the generated parts of the help page (``conf/hydra/help/dvoc.yaml``) when Hydra renders it; the door
answers ``--help`` itself, without Hydra (:mod:`dvoc_bench.app.help_page`).
"""

from __future__ import annotations

from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

RESOLVER = "dvoc_run_name"
DEFAULT = "default"
_sweep: dict[str, str] = {}


def _choice(hydra_node: Any) -> str:
    value = OmegaConf.select(hydra_node, "runtime.choices.experiment", default=None)
    return str(value) if value else DEFAULT


def run_name() -> str:
    """The folder name of this run or sweep (see the module docstring)."""
    if "name" in _sweep:
        return _sweep["name"]
    if HydraConfig.initialized():
        return _choice(HydraConfig.get())
    return DEFAULT


def sweep_name(cfg: DictConfig) -> str:
    """The folder name of a multirun from its sweep-level config: the swept presets, or the preset."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    task = list(cfg.hydra.overrides.get("task", []) or [])
    for o in OverridesParser.create().parse_overrides(task):
        if o.key_or_group == "experiment" and o.is_sweep_override():
            return "+".join(str(v) for v in o.sweep_string_iterator())
    return _choice(cfg.hydra)


class SweepName(Callback):
    """Records the sweep's folder name before the sweeper resolves ``hydra.sweep.dir``."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _sweep["name"] = sweep_name(config)


def register() -> None:
    """Register ``${dvoc_run_name:}`` and ``${dvoc_help:...}`` (idempotent)."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, run_name, use_cache=True)
    if not OmegaConf.has_resolver("dvoc_help"):
        from dvoc_bench.app.help_page import help_section

        OmegaConf.register_new_resolver("dvoc_help", help_section)


register()
