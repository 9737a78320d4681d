"""Validated views of the Hydra config: knob lists, model configs. Bad values fail naming the key."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dvoc_bench.geometry import Frame

OVERLAYS = ("full", "crosshair", "none")
PREDICT_MODES = ("relative", "absolute")
PROTOCOLS = ("v1", "paper")
RETRY_RULES = ("hit", "hit_radius", "within_eps")
MODEL_KINDS = ("simulator",)


class ConfigError(ValueError):
    """A bad configuration value; the message names the key and the allowed values."""


def default_conf_dir() -> Path:
    """The repository's ``conf/`` directory."""
    return Path(__file__).resolve().parents[1] / "conf"


@dataclass(frozen=True)
class ModelConfig:
    """A model as declared in ``conf/model/<name>.yaml``."""

    name: str
    """Config name."""
    kind: str
    """``simulator`` (more kinds arrive with the LiteLLM client)."""
    model_id: str
    """Provider model id or simulator profile id."""
    provider: str
    """Provider (rate gate) name."""
    coord_frame: str
    """Declared answer frame."""
    api_base: str | None = None
    """Endpoint override."""
    description: str = ""
    """One line for humans."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    """The whole mapping (kind-specific blocks such as ``sim``)."""

    @property
    def identity(self) -> str:
        """What makes two configs the same model for hashing and caching."""
        return f"{self.model_id}@{self.api_base or ''}"

    @property
    def simulated(self) -> bool:
        return self.kind == "simulator"


def model_names(models_dir: Path) -> list[str]:
    return sorted(p.stem for p in models_dir.glob("*.yaml"))


def load_model_config(name: str, models_dir: Path, declare_frame: str | None = None) -> ModelConfig:
    """Read and check ``<models_dir>/<name>.yaml``; ``declare_frame`` overrides its ``coord_frame``."""
    path = models_dir / f"{name}.yaml"
    if not path.exists():
        raise ConfigError(f"models: unknown model {name!r}; allowed: {', '.join(model_names(models_dir))}")
    with path.open(encoding="utf-8") as f:
        d = yaml.safe_load(f) or {}
    for key in ("kind", "model_id", "provider", "coord_frame"):
        if key not in d:
            raise ConfigError(f"model {name}: missing key {key!r} in {path.name}")
    if d["kind"] not in MODEL_KINDS:
        raise ConfigError(
            f"model {name}: kind {d['kind']!r} is not available; allowed: {', '.join(MODEL_KINDS)}"
        )
    frame = declare_frame or d["coord_frame"]
    _check_one("coord_frame", frame, [f.value for f in Frame])
    return ModelConfig(
        name=name,
        kind=d["kind"],
        model_id=str(d["model_id"]),
        provider=str(d["provider"]),
        coord_frame=frame,
        api_base=d.get("api_base"),
        description=d.get("description", ""),
        raw=d,
    )


def _check_one(key: str, value: Any, allowed: Any) -> None:
    if value not in allowed:
        raise ConfigError(f"{key}: unknown value {value!r}; allowed: {', '.join(map(str, allowed))}")


def check_list(key: str, values: Any, allowed: Any) -> list[str]:
    """A non-empty list of allowed values (a bare string is taken as a one-item list)."""
    if isinstance(values, str):
        values = [values]
    values = list(values or [])
    if not values:
        raise ConfigError(f"{key}: empty list; allowed: {', '.join(map(str, allowed))}")
    for v in values:
        _check_one(key, v, allowed)
    return [str(v) for v in values]


def parse_starts(spec: Any) -> tuple[str, int]:
    """``paper`` or ``random:N`` -> (kind, N)."""
    s = str(spec)
    if s == "paper":
        return "paper", 5
    if s.startswith("random:"):
        try:
            n = int(s.split(":", 1)[1])
        except ValueError:
            n = 0
        if n > 0:
            return "random", n
    raise ConfigError(f"starts: unknown value {s!r}; allowed: paper, random:N (N >= 1)")
