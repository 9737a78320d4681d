"""Provider gates: one rate gate per provider (or per model with its own quota), its limits resolved from
the provider file, the model's ``limits:`` block and ``timeout_s``, the config's ``scheduler.providers``
overrides and the process split (``scheduler.rate_split``, at least the shard count of ``run.shard``;
:mod:`dvoc_bench.runner.scheduler` runs the gates)."""

from __future__ import annotations

from typing import Any

from dvoc_bench.models.config import ModelConfig
from dvoc_bench.runner.scheduler import ProviderLimits, RateGate
from dvoc_bench.runner.settings import Settings
from dvoc_bench.runner.shard import rate_split


def provider_limits(model: ModelConfig, settings: Settings) -> ProviderLimits:
    """The gate limits of a model: its provider file, its own ``limits:`` block (Gemini quotas are per
    model), its own ``timeout_s``, the config's ``scheduler.providers`` overrides, then the process split."""
    d: dict[str, Any] = dict(model.gate_limits)
    pc = model.provider_config
    d["timeout_s"] = model.timeout_s or (pc.timeout_s if pc else None)
    own = settings.scheduler.providers.get(model.provider)
    if own is not None:
        d.update(own.model_dump(exclude_none=True))
    return ProviderLimits(**d).split(rate_split(settings.run.shard_of_sweep, settings.scheduler.rate_split))


def gate_key(model: ModelConfig) -> str:
    """One gate per provider; a model with its own ``limits:`` block (a per-model quota) gets its own."""
    own = model.limits is not None and bool(model.limits.model_fields_set)
    return f"{model.provider}:{model.name}" if own else model.provider


def build_gates(models: list[ModelConfig], settings: Settings) -> dict[str, RateGate]:
    """The sweep's gates, keyed by :func:`gate_key`."""
    gates: dict[str, RateGate] = {}
    for m in models:
        key = gate_key(m)
        if key not in gates:
            gates[key] = RateGate(key, provider_limits(m, settings))
    return gates
