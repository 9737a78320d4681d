"""Build a Model from its config (the only place that knows every model kind)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dvoc_bench.config import ConfigError, ModelConfig
from dvoc_bench.models.base import Model
from dvoc_bench.scenes.types import SceneTruth


def model_options(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """``build_model`` keyword arguments from the resolved global config (its ``cache:`` and ``image:``)."""
    from dvoc_bench.models.cache import CacheOptions
    from dvoc_bench.models.litellm_client import ImageOptions

    return {
        "cache": CacheOptions.from_mapping(cfg.get("cache")),
        "image": ImageOptions.from_mapping(cfg.get("image")),
    }


def build_model(
    cfg: ModelConfig,
    truth: Callable[[str], SceneTruth],
    *,
    cache: Any = None,
    image: Any = None,
    wrap: Callable[[Model], Model] | None = None,
) -> Model:
    """A ready model for ``cfg``; ``truth`` looks up scene ground truth (used by the simulator only).

    ``cache`` (:class:`~dvoc_bench.models.cache.CacheOptions`) wraps a real model in the response cache when
    enabled; ``image`` (:class:`~dvoc_bench.models.litellm_client.ImageOptions`) sets the resizing of the
    images a LiteLLM model is sent (a model config's own ``image:`` block wins). ``wrap`` (the sweep's
    provider gate with its retries) goes around the provider client, inside the cache: the chain is
    ``cache -> wrap -> client``, so a cache hit never waits in the gate.
    """
    wrap = wrap or (lambda m: m)
    if cfg.kind == "litellm":
        from dvoc_bench.models.litellm_client import LiteLLMModel

        model: Model = wrap(LiteLLMModel(cfg, image))
        if cache is not None and cache.enabled:
            from dvoc_bench.models.cache import CachedModel, ResponseCache

            model = CachedModel(model, ResponseCache(cache.dir), cfg.identity)
        return model
    if cfg.kind == "simulator":
        from dvoc_bench.models.simulator import SimProfile, SimulatedModel

        if "sim" not in cfg.raw:
            raise ConfigError(f"model {cfg.name}: a simulator config needs a 'sim' block")
        # a bad value is a ConfigError of one line: "model <name>: sim.<dotted key>: ..."
        profile = SimProfile.from_mapping(cfg.raw["sim"], prefix=f"model {cfg.name}: sim.")
        return wrap(SimulatedModel(cfg.name, profile, truth))
    raise ConfigError(f"model {cfg.name}: kind {cfg.kind!r} is not available")
