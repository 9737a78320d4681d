"""Compose the Hydra config outside ``@hydra.main`` (benchmarks, notebooks, tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.models.config import default_conf_dir
from dvoc_bench.runner.setup import SweepSetup, setup_from_config


def compose(overrides: Sequence[str] = ()) -> tuple[dict[str, Any], dict[str, Any]]:
    """The resolved config (without the ``hydra`` node) and Hydra's group choices."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    from dvoc_bench.runner.block_keys import with_block_keys
    from dvoc_bench.runner.settings import register_defaults

    check_shorthands(overrides)
    overrides = with_block_keys(overrides)
    register_defaults()
    with initialize_config_dir(config_dir=str(default_conf_dir()), version_base="1.3"):
        cfg = hydra_compose("config", overrides=list(overrides), return_hydra_config=True)
    choices = dict(cfg.hydra.runtime.choices)
    OmegaConf.set_struct(cfg, False)
    del cfg["hydra"]
    plain = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(plain, dict)
    # OmegaConf types keys as any DictKeyType; a composed Hydra config's keys are the YAML's strings
    return cast("dict[str, Any]", plain), choices


SHORTHANDS = (("task", "tasks"), ("model", "models"))
"""The one-item shorthands and the lists they stand for: both given at once is refused."""


def check_shorthands(overrides: Sequence[str]) -> None:
    """Refuse ``task=`` with ``tasks=`` (or ``model=`` with ``models=``) among the command-line overrides:
    one would silently win. A preset's own list is no conflict (the shorthand narrows it)."""
    given: dict[str, str] = {}
    for o in overrides:
        key, eq, value = o.lstrip("+~").partition("=")
        if eq and value.strip() not in ("null", "~"):
            given.setdefault(key.strip(), o)
    for one, many in SHORTHANDS:
        if one in given and many in given:
            raise ConfigError(
                f"{one}: given together with {many} ({given[one]} {given[many]}); give one: "
                f"{one}=X is the shorthand of {many}=[X]"
            )


def experiment_name(choices: Mapping[str, Any]) -> str:
    """The experiment a run is named after: Hydra's ``experiment`` group choice (``custom`` without one)."""
    return str(choices.get("experiment") or "custom")


def model_choice(choices: Mapping[str, Any]) -> str | None:
    """The ``model=<name>`` shorthand from Hydra's group choices (``None`` when not used)."""
    model = choices.get("model")
    return None if model in (None, "null") else str(model)


def setup_with_choices(cfg: dict[str, Any], choices: dict[str, Any]) -> SweepSetup:
    """Validate a resolved config; Hydra's group choices name the experiment and the ``model=`` shorthand."""
    return setup_from_config(cfg, experiment_name(choices), model_choice(choices))


def quick_setup(overrides: Sequence[str] = ()) -> SweepSetup:
    """A validated sweep setup from command-line style overrides."""
    return setup_with_choices(*compose(overrides))
