"""Build a Model from its config (the only place that knows every model kind)."""

from __future__ import annotations

from collections.abc import Callable

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.scene import SceneTruth
from dvoc_bench.models.base import MAX_REPLY_CHARS, Model
from dvoc_bench.models.config import ModelConfig
from dvoc_bench.models.options import CacheOptions, ImageOptions


def build_model(
    cfg: ModelConfig,
    truth: Callable[[str], SceneTruth],
    *,
    cache: CacheOptions | None = None,
    image: ImageOptions | None = None,
    max_reply_chars: int = MAX_REPLY_CHARS,
    wrap: Callable[[Model], Model] | None = None,
) -> Model:
    """A ready model for ``cfg``; ``truth`` looks up scene ground truth (used by the simulator only).

    ``cache`` (:class:`~dvoc_bench.models.options.CacheOptions`) wraps a real model in the response cache
    when enabled; ``image`` (:class:`~dvoc_bench.models.options.ImageOptions`) sets the resizing of the
    images a LiteLLM model is sent (a model config's own ``image:`` block wins); ``max_reply_chars`` bounds
    what is kept of every reply (text and each tool call's arguments; the cache stores the same). ``wrap``
    (the sweep's provider gate with its retries) goes around the provider client, inside the cache: the
    chain is ``cache -> wrap -> client``, so a cache hit never waits in the gate.
    """
    wrap = wrap or (lambda m: m)
    if cfg.kind == "litellm":
        from dvoc_bench.models.litellm_client import LiteLLMModel

        model: Model = wrap(LiteLLMModel(cfg, image, max_reply_chars))
        if cache is not None and cache.enabled:
            from dvoc_bench.models.cache import CachedModel, ResponseCache

            model = CachedModel(model, ResponseCache(cache.dir), cfg.identity)
        return model
    if cfg.kind == "simulator":
        from dvoc_bench.models.simulator import SimProfile, SimulatedModel

        if cfg.sim is None:
            raise ConfigError(f"model {cfg.name}: a simulator config needs a 'sim' block")
        # a bad value is a ConfigError of one line: "model <name>: sim.<dotted key>: ..."
        profile = SimProfile.from_mapping(cfg.sim, prefix=f"model {cfg.name}: sim.")
        sim = SimulatedModel(cfg.name, profile, truth)
        sim.max_reply_chars = max_reply_chars
        return wrap(sim)
    if cfg.kind == "ocr":
        from dvoc_bench.models.ocr.model import ocr_model_from_config

        ocr = ocr_model_from_config(cfg.name, cfg.ocr)  # a missing tesseract: one ConfigError line
        ocr.max_reply_chars = max_reply_chars
        return wrap(ocr)
    if cfg.kind == "parse":
        from dvoc_bench.models.ocr.parser import parse_model_from_config

        parser = parse_model_from_config(cfg.name, cfg.parse)  # bad weights or no wheel: one line
        parser.max_reply_chars = max_reply_chars
        return wrap(parser)
    raise ConfigError(f"model {cfg.name}: kind {cfg.kind!r} is not available")
