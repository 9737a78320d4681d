"""Build a Model from its config (the only place that knows every model kind)."""

from __future__ import annotations

from collections.abc import Callable

from dvoc_bench.config import ConfigError, ModelConfig
from dvoc_bench.models.base import Model
from dvoc_bench.scenes.types import SceneTruth


def build_model(cfg: ModelConfig, truth: Callable[[str], SceneTruth]) -> Model:
    """A ready model for ``cfg``; ``truth`` looks up scene ground truth (used by the simulator only)."""
    if cfg.kind == "simulator":
        from dvoc_bench.models.simulator import SimProfile, SimulatedModel

        if "sim" not in cfg.raw:
            raise ConfigError(f"model {cfg.name}: a simulator config needs a 'sim' block")
        try:
            profile = SimProfile.from_mapping(cfg.raw["sim"])
        except (KeyError, TypeError, ValueError) as e:
            raise ConfigError(f"model {cfg.name}: bad 'sim' block: {e}") from e
        return SimulatedModel(cfg.name, profile, truth)
    raise ConfigError(f"model {cfg.name}: kind {cfg.kind!r} is not available")
