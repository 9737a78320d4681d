"""Validated views of the Hydra config: knob lists, model configs. Bad values fail naming the key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dvoc_bench.declare import ConfigError
from dvoc_bench.geometry import Frame

MODEL_KINDS = ("simulator", "litellm", "ocr")


def default_conf_dir() -> Path:
    """The repository's ``conf/`` directory."""
    return Path(__file__).resolve().parents[1] / "conf"


@dataclass(frozen=True)
class ProviderConfig:
    """A provider (one rate gate, one key) as declared in ``conf/provider/<name>.yaml``."""

    name: str
    """Provider name (the ``provider:`` of model configs)."""
    key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    key_required: bool = False
    """True when a call cannot succeed without the key (checked when a model config is loaded)."""
    rpm: float | None = None
    """Requests per minute the provider allows (``None``: unlimited); used by the scheduler."""
    rpd: float | None = None
    """Requests per day (``None``: unlimited)."""
    max_concurrent: int | None = None
    """Calls in flight at once (``None``: no cap)."""
    timeout_s: float = 120.0
    """Default timeout of one call, seconds."""
    description: str = ""
    """One line for humans."""
    image_tokens: str = "patch28"
    """How the plan estimates an image's prompt tokens (a rule of :data:`dvoc_bench.pricing.IMAGE_RULES`)."""


@dataclass(frozen=True)
class ModelConfig:
    """A model as declared in ``conf/model/<name>.yaml``."""

    name: str
    """Config name."""
    kind: str
    """``simulator``, ``litellm`` or ``ocr`` (the Tesseract baseline, :mod:`dvoc_bench.models.ocr`)."""
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
    provider_config: ProviderConfig | None = None
    """The provider's settings (``conf/provider/<provider>.yaml``), ``None`` when it has no file."""

    @property
    def identity(self) -> str:
        """What makes two configs the same model for hashing and caching."""
        return f"{self.model_id}@{self.api_base or ''}"

    @property
    def simulated(self) -> bool:
        """True for the in-process simulator and for configs marked ``simulated: true`` (``local-sim``)."""
        return self.kind == "simulator" or bool(self.raw.get("simulated", False))

    @property
    def limits(self) -> dict[str, Any]:
        """Rate limits of this model's gate: the provider's ``rpm``, ``rpd``, ``max_concurrent``, overridden
        by the model's own ``limits:`` block (Gemini quotas are per model)."""
        p = self.provider_config
        out: dict[str, Any] = {
            "rpm": p.rpm if p else None,
            "rpd": p.rpd if p else None,
            "max_concurrent": p.max_concurrent if p else None,
        }
        own = self.raw.get("limits") or {}
        out.update({k: v for k, v in own.items() if k in out})
        return out


def model_names(models_dir: Path) -> list[str]:
    return sorted(p.stem for p in models_dir.glob("*.yaml"))


def load_model_config(
    name: str,
    models_dir: Path,
    declare_frame: str | None = None,
    *,
    check_key: bool = True,
    data: Mapping[str, Any] | None = None,
) -> ModelConfig:
    """Read and check ``<models_dir>/<name>.yaml``; ``declare_frame`` overrides its ``coord_frame``.
    ``data``: the file's content when the caller already has it (Hydra composed ``model=<name>`` into the
    config), so a model config is read once.

    ``${oc.env:VAR,default}`` interpolations are resolved (OmegaConf). The provider's file
    (``conf/provider/<provider>.yaml``) is attached; with ``check_key`` a provider that needs a key fails
    here, naming the unset variable, so a sweep stops before its first trial.
    """
    path = models_dir / f"{name}.yaml"
    if data is None:
        if not path.exists():
            allowed = ", ".join(model_names(models_dir))
            raise ConfigError(f"models: unknown model {name!r}; allowed: {allowed}")
        with path.open(encoding="utf-8") as f:
            data = yaml.safe_load(f) or {}
    d = _resolve(dict(data), f"model {name}")
    for key in ("kind", "model_id", "provider", "coord_frame"):
        if key not in d:
            raise ConfigError(f"model {name}: missing key {key!r} in {path.name}")
    if d["kind"] not in MODEL_KINDS:
        raise ConfigError(
            f"model {name}: kind {d['kind']!r} is not available; allowed: {', '.join(MODEL_KINDS)}"
        )
    frame = declare_frame or d["coord_frame"]
    _check_one("coord_frame", frame, [f.value for f in Frame])
    provider = load_provider_config(str(d["provider"]), providers_dir(models_dir))
    if provider is None and d["kind"] != "simulator":
        raise ConfigError(
            f"model {name}: provider {d['provider']!r} has no file conf/provider/{d['provider']}.yaml"
        )
    if check_key and provider is not None:
        require_key(name, provider)
    return ModelConfig(
        name=name,
        kind=d["kind"],
        model_id=str(d["model_id"]),
        provider=str(d["provider"]),
        coord_frame=frame,
        api_base=d.get("api_base"),
        description=d.get("description", ""),
        raw=d,
        provider_config=provider,
    )


def _resolve(d: Any, where: str) -> Any:
    """Resolve OmegaConf interpolations (``${oc.env:DVOC_SIM_URL,http://...}``) in a plain mapping."""
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(d).__name__}")
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        out = OmegaConf.to_container(OmegaConf.create(d), resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{where}: cannot resolve an interpolation: {e}".splitlines()[0]) from None
    assert isinstance(out, dict)
    return out


def providers_dir(models_dir: Path) -> Path:
    """``conf/provider/`` beside the models directory, else the repository's."""
    beside = models_dir.parent / "provider"
    return beside if beside.is_dir() else default_conf_dir() / "provider"


_PROVIDER_KEYS = (
    "name", "key_env", "key_required", "rpm", "rpd", "max_concurrent", "timeout_s", "description",
    "image_tokens",
)  # fmt: skip
IMAGE_TOKEN_RULES = ("gemini", "openai", "anthropic", "patch28", "none")
"""Names of the image-token rules (described in :mod:`dvoc_bench.pricing`)."""


def load_provider_config(name: str, directory: Path) -> ProviderConfig | None:
    """Read ``<directory>/<name>.yaml``; ``None`` when there is no such file."""
    path = directory / f"{name}.yaml"
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as f:
        d = _resolve(yaml.safe_load(f) or {}, f"provider {name}")
    for key in d:
        if key not in _PROVIDER_KEYS:
            raise ConfigError(f"provider {name}: unknown key {key!r}; allowed: {', '.join(_PROVIDER_KEYS)}")

    def num(key: str, kind: type = float) -> Any:
        v = d.get(key)
        if v is None:
            return None
        try:
            x = kind(v)
        except (TypeError, ValueError):
            x = None
        if x is None or isinstance(v, bool) or x <= 0:
            raise ConfigError(f"provider {name}: {key} must be a positive number or null, got {v!r}")
        return x

    rule = str(d.get("image_tokens") or "patch28")
    if rule not in IMAGE_TOKEN_RULES:
        raise ConfigError(
            f"provider {name}: image_tokens: unknown value {rule!r}; allowed: {', '.join(IMAGE_TOKEN_RULES)}"
        )
    return ProviderConfig(
        name=name,
        key_env=d.get("key_env") or None,
        key_required=bool(d.get("key_required", False)),
        rpm=num("rpm"),
        rpd=num("rpd"),
        max_concurrent=num("max_concurrent", int),
        timeout_s=num("timeout_s") or 120.0,
        description=str(d.get("description", "")),
        image_tokens=rule,
    )


def require_key(model: str, provider: ProviderConfig) -> None:
    """Fail with one line naming the variable when ``provider`` needs a key that is not set."""
    if provider.key_required and provider.key_env and not os.environ.get(provider.key_env):
        raise ConfigError(
            f"model {model}: provider {provider.name} needs an API key in the environment variable "
            f"{provider.key_env}, which is not set"
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


def parse_starts(spec: Any, dataset: bool = False) -> tuple[str, int]:
    """``paper | scaled | centre | oneshot | auto`` or ``random:N`` -> (kind, N); ``auto`` is ``scaled``
    on a dataset, else ``paper``."""
    s = str(spec)
    if s == "auto":
        s = "scaled" if dataset else "paper"
    if s in ("paper", "scaled"):
        return s, 5
    if s in ("centre", "oneshot"):
        return s, 1
    if s.startswith("random:"):
        try:
            n = int(s.split(":", 1)[1])
        except ValueError:
            n = 0
        if n > 0:
            return "random", n
    raise ConfigError(
        f"starts: unknown value {s!r}; allowed: auto, paper, scaled, centre, oneshot, random:N (N >= 1)"
    )
