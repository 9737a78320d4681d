"""Model and provider configs (``conf/model/<name>.yaml``, ``conf/provider/<name>.yaml``) as pydantic models:
read, interpolations resolved, validated once; a bad value is one line naming the file and the key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from dvoc_bench.core import yamlio
from dvoc_bench.core.declare import ConfigError, Declared, NonNegFloat, PosFloat, PosInt, validate
from dvoc_bench.core.frames import FrameRule, PromptStyle, frame_rule_of
from dvoc_bench.core.geometry import FrameName


def default_conf_dir() -> Path:
    """The repository's ``conf/`` directory."""
    return Path(__file__).resolve().parents[2] / "conf"


ImageTokenRule = Literal["gemini", "openai", "anthropic", "patch28", "none"]
"""How the plan estimates an image's prompt tokens (the rules of :mod:`dvoc_bench.models.pricing`)."""
IMAGE_TOKEN_RULES: tuple[str, ...] = get_args(ImageTokenRule)


class ProviderConfig(Declared):
    """A provider (one rate gate, one key) as declared in ``conf/provider/<name>.yaml``."""

    name: str
    """Provider name (the ``provider:`` of model configs)."""
    key_env: str | None = None
    """Name of the environment variable holding the API key (never the key itself)."""
    key_required: bool = False
    """True when a call cannot succeed without the key (checked when a model config is loaded)."""
    rpm: PosFloat | None = None
    """Requests per minute the provider allows (``None``: unlimited); used by the scheduler."""
    rpd: PosFloat | None = None
    """Requests per day (``None``: unlimited)."""
    max_concurrent: PosInt | None = None
    """Calls in flight at once (``None``: no cap)."""
    timeout_s: PosFloat = 120.0
    """Default timeout of one call, seconds."""
    description: str = ""
    """One line for humans."""
    image_tokens: ImageTokenRule = "patch28"
    """How the plan estimates an image's prompt tokens."""

    @field_validator("key_env", mode="before")
    @classmethod
    def _empty_is_none(cls, v: Any) -> Any:
        return v or None

    @field_validator("timeout_s", "image_tokens", mode="before")
    @classmethod
    def _null_is_default(cls, v: Any, info: Any) -> Any:
        return cls.model_fields[info.field_name].default if v is None else v

    @field_validator("rpm", "rpd", "max_concurrent", "timeout_s", mode="before")
    @classmethod
    def _no_bool(cls, v: Any) -> Any:
        if isinstance(v, bool):
            raise ValueError(f"must be a positive number or null, got {v!r}")
        return v


class Limits(Declared):
    """A model's own quota (``limits:``): overrides its provider's (Gemini quotas are per model)."""

    rpm: PosFloat | None = None
    """Requests per minute."""
    rpd: PosFloat | None = None
    """Requests per day."""
    max_concurrent: PosInt | None = None
    """Calls in flight at once."""


class Pricing(Declared):
    """A model config's ``pricing:`` block, USD."""

    input_per_mtok: NonNegFloat
    """Per million prompt tokens (image tokens included, as providers report them)."""
    output_per_mtok: NonNegFloat
    """Per million completion tokens."""
    per_image: NonNegFloat = 0.0
    """Per image sent, for providers that charge images apart from their tokens."""

    def cost(self, tokens_in: int | None, tokens_out: int | None, images: int = 1) -> float | None:
        """Cost of one call; ``None`` when the reply reported no token counts."""
        if tokens_in is None and tokens_out is None:
            return None
        return (
            (tokens_in or 0) * self.input_per_mtok / 1e6
            + (tokens_out or 0) * self.output_per_mtok / 1e6
            + images * self.per_image
        )


ModelKind = Literal["simulator", "litellm", "ocr", "parse", "none"]
"""``none`` is only the stand-in of the model-free baselines; a config file cannot declare it."""
MODEL_KINDS = tuple(k for k in get_args(ModelKind) if k != "none")
"""The kinds a model file may declare."""


class ModelConfig(Declared):
    """A model as declared in ``conf/model/<name>.yaml``: every key a model file may have, validated once
    (a bad value is one line ``model <name>: <key>: ...``). Kind-specific blocks (``sim:``, ``ocr:``,
    ``image:``) are checked by their own models where they are used."""

    name: str
    """Config name."""
    kind: ModelKind
    """``simulator``, ``litellm``, ``ocr`` (the OCR baseline, :mod:`dvoc_bench.models.ocr`) or ``parse`` (the
    screen parser: detector + OCR, :mod:`dvoc_bench.models.ocr.parser`)."""
    model_id: str
    """Provider model id or simulator profile id."""
    provider: str
    """Provider (rate gate) name."""
    coord_frame: FrameName
    """Declared answer units (``pixel``, ``norm1000``, ``norm999``, ``norm1``, ``touch1000``). The file may
    write ``coord_frame:`` as a mapping (:class:`~dvoc_bench.core.frames.FrameRule`: units, axes, resize); its
    units land here and the whole rule in :attr:`frame_rule`."""
    frame_rule: FrameRule | None = None
    """The full answer frame when the file wrote ``coord_frame:`` as a mapping (set by
    :func:`split_frame`, not a key of the file); ``None``: the one word's meaning (see :attr:`frame`)."""
    prompt_style: PromptStyle = "tool_call"
    """How one-shot grounding asks and reads (:mod:`dvoc_bench.protocol.native`): ``tool_call`` (the
    harness's ``click_at`` tool) or the family's own format (``qwen25vl``, ``qwen3vl``, ``uitars15``,
    ``gemini_point``, ``claude``, ``glm``, ``seeclick``, ``showui``, ``pyautogui``, ``openai_cua``, ``holo``,
    ``osatlas``). DVOC's offset prompt always keeps the tool call."""
    api_base: str | None = None
    """Endpoint override."""
    description: str = ""
    """One line for humans."""
    simulated: bool = False
    """True for the in-process simulator and for configs marked ``simulated: true`` (``local-sim``, an HTTP
    server answering from the simulator): every result is labelled simulated."""
    params: dict[str, Any] = {}
    """Sampling parameters sent with every call (temperature, max_tokens, ...)."""
    send_seed: bool = True
    """Send the per-call ``seed`` (LiteLLM drops it for providers that do not take one)."""
    tool_choice: Literal["auto", "required", "none"] | None = None
    """Default ``tool_choice`` when the request has none."""
    timeout_s: PosFloat | None = None
    """Timeout of one call, seconds (``None``: the provider's)."""
    limits: Limits | None = None
    """The model's own quota, over its provider's."""
    cost_model: str | None = None
    """LiteLLM price-map entry to price the calls with when LiteLLM does not know ``model_id``."""
    pricing: Pricing | None = None
    """Prices every call from its token counts (before LiteLLM's map)."""
    image: dict[str, Any] | None = None
    """The model's own input limits over the global ``image:``
    (:func:`dvoc_bench.models.options.model_image`)."""
    sim: dict[str, Any] | None = None
    """The simulator profile (``kind: simulator``, and the profile a ``serve`` model answers from)."""
    fit: dict[str, Any] | None = None
    """Provenance of a calibrated profile (ignored by the simulator)."""
    ocr: dict[str, Any] | None = None
    """The OCR baseline's options (``kind: ocr``)."""
    parse: dict[str, Any] | None = None
    """The screen parser's options (``kind: parse``: ``detector``, ``ocr``, ``min_score``, ``disk_cache``)."""
    provider_config: ProviderConfig | None = None
    """The provider's settings (``conf/provider/<provider>.yaml``), ``None`` when it has no file; attached
    by :func:`load_model_config`, not read from the model file."""
    declared: dict[str, Any] = Field(default={}, repr=False, exclude=True)
    """The model file as read (interpolations resolved): what :func:`dvoc_bench.runner.setup.model_digest`
    hashes, so a run's fingerprint does not depend on how the fields are typed here."""

    @field_validator("description", "params", "send_seed", "simulated", "timeout_s", mode="before")
    @classmethod
    def _null_is_default(cls, v: Any, info: Any) -> Any:
        """A key written without a value (``description:``), or a zero timeout, means the default."""
        if v is None or (info.field_name == "timeout_s" and v == 0 and not isinstance(v, bool)):
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)
        return v

    @property
    def frame(self) -> FrameRule:
        """The answer frame in full (a one-word ``coord_frame``: those units, x-y, no resize)."""
        if self.frame_rule is not None and self.frame_rule.units == self.coord_frame:
            return self.frame_rule
        if self.frame_rule is not None:  # declare_frame / an override changed the units only
            return self.frame_rule.model_copy(update={"units": self.coord_frame})
        return frame_rule_of(self.coord_frame)

    @model_validator(mode="after")
    def _simulator_is_simulated(self) -> ModelConfig:
        if self.kind == "simulator" and not self.simulated:
            object.__setattr__(self, "simulated", True)
        return self

    def updated(self, **changes: Any) -> ModelConfig:
        """A copy with ``changes``, validated like a file (a bad value: one line naming the key): what the
        file would be with these keys, so its digest and its limits are those of that file."""
        declared = {**self.declared, **changes}
        fields = {
            **split_frame(declared, f"model {self.name}"),
            "name": self.name,
            "provider_config": self.provider_config,
        }
        return validate(ModelConfig, {**fields, "declared": declared}, f"model {self.name}: ")

    @property
    def identity(self) -> str:
        """What makes two configs the same model for hashing and caching."""
        return f"{self.model_id}@{self.api_base or ''}"

    @property
    def gate_limits(self) -> dict[str, Any]:
        """Rate limits of this model's gate: the provider's ``rpm``, ``rpd``, ``max_concurrent``, overridden
        by the model's own ``limits:`` block."""
        p = self.provider_config
        out: dict[str, Any] = {
            "rpm": p.rpm if p else None,
            "rpd": p.rpd if p else None,
            "max_concurrent": p.max_concurrent if p else None,
        }
        if self.limits is not None:
            out.update(self.limits.model_dump(exclude_unset=True))
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
            data = yamlio.safe_load(f) or {}
    declared = d = _resolve(dict(data), f"model {name}")
    for key in ("kind", "provider"):  # needed before the whole file is validated
        if key not in d:
            raise ConfigError(f"model {name}: {key}: required, not given")
    if d["kind"] not in MODEL_KINDS:
        raise ConfigError(
            f"model {name}: kind {d['kind']!r} is not available; allowed: {', '.join(MODEL_KINDS)}"
        )
    d = split_frame(d, f"model {name}")
    if declare_frame:
        d = {**d, "coord_frame": declare_frame}
    provider = load_provider_config(str(d["provider"]), providers_dir(models_dir))
    if provider is None and d["kind"] != "simulator":
        raise ConfigError(
            f"model {name}: provider {d['provider']!r} has no file conf/provider/{d['provider']}.yaml"
        )
    if check_key and provider is not None:
        require_key(name, provider)
    fields = {**d, "name": name, "provider": str(d["provider"]), "provider_config": provider}
    if "model_id" in d:
        fields["model_id"] = str(d["model_id"])
    return validate(ModelConfig, {**fields, "declared": declared}, f"model {name}: ")


def split_frame(d: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A model file's fields with a mapping ``coord_frame:`` split into its units (``coord_frame``) and
    the validated rule (``frame_rule``); a bad rule is one line ``<where>: coord_frame.<key>: ...``."""
    out = dict(d)
    if "frame_rule" in out:
        raise ConfigError(f"{where}: frame_rule: unknown key; write coord_frame: as a mapping instead")
    raw = out.get("coord_frame")
    if isinstance(raw, Mapping):
        rule = validate(FrameRule, dict(raw), f"{where}: coord_frame.")
        out["coord_frame"], out["frame_rule"] = rule.units, rule
    return out


def _resolve(d: Any, where: str) -> Any:
    """Resolve OmegaConf interpolations (``${oc.env:DVOC_SIM_URL,http://...}``) in a plain mapping."""
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(d).__name__}")
    if _plain(d):  # nothing to resolve: OmegaConf would only copy it (0.1 s for a calibrated profile)
        return _copy(d)
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        out = OmegaConf.to_container(OmegaConf.create(d), resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{where}: cannot resolve an interpolation: {e}".splitlines()[0]) from None
    assert isinstance(out, dict)
    return out


_SCALARS = (str, int, float, bool, type(None))


def _plain(v: Any) -> bool:
    """Plain YAML data with no ``${`` anywhere (keys included), which OmegaConf returns as it is."""
    if isinstance(v, dict):
        return all(isinstance(k, str) and "${" not in k and _plain(x) for k, x in v.items())
    if isinstance(v, list):
        return all(_plain(x) for x in v)
    return isinstance(v, _SCALARS) and not (isinstance(v, str) and "${" in v)


def _copy(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    return [_copy(x) for x in v] if isinstance(v, list) else v


def providers_dir(models_dir: Path) -> Path:
    """``conf/provider/`` beside the models directory, else the repository's."""
    beside = models_dir.parent / "provider"
    return beside if beside.is_dir() else default_conf_dir() / "provider"


def load_provider_config(name: str, directory: Path) -> ProviderConfig | None:
    """Read ``<directory>/<name>.yaml``; ``None`` when there is no such file."""
    path = directory / f"{name}.yaml"
    if not path.exists():
        return None
    with path.open(encoding="utf-8") as f:
        d = _resolve(yamlio.safe_load(f) or {}, f"provider {name}")
    return validate(ProviderConfig, {**d, "name": name}, f"provider {name}: ")


def require_key(model: str, provider: ProviderConfig) -> None:
    """Fail with one line naming the variable when ``provider`` needs a key that is not set."""
    if provider.key_required and not provider.key_env:
        raise ConfigError(f"model {model}: provider {provider.name} requires a key but names no key_env")
    if provider.key_required and provider.key_env and not os.environ.get(provider.key_env):
        raise ConfigError(
            f"model {model}: provider {provider.name} needs an API key in the environment variable "
            f"{provider.key_env}, which is not set"
        )
