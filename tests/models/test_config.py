"""Model and provider files are validated once, like the settings: defaults for keys written without a
value, one line naming the file's key for a bad one, and copies that stay true to their file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.models.config import load_model_config
from dvoc_bench.runner.setup import model_digest
from tests.support import ROOT


def _conf(tmp_path: Path, model: dict, provider: dict | None = None) -> Path:
    models = tmp_path / "conf" / "model"
    models.mkdir(parents=True)
    (models / "m.yaml").write_text(yaml.safe_dump({"name": "m", **model}), encoding="utf-8")
    prov = tmp_path / "conf" / "provider"
    prov.mkdir()
    (prov / "p.yaml").write_text(yaml.safe_dump(provider or {"name": "p", "rpm": 60}), encoding="utf-8")
    return models


BASE = {"kind": "litellm", "model_id": "openai/x", "provider": "p", "coord_frame": "pixel"}


def test_keys_without_a_value_and_a_zero_timeout_take_their_defaults(tmp_path):
    cfg = load_model_config(
        "m", _conf(tmp_path, {**BASE, "description": None, "params": None, "send_seed": None, "timeout_s": 0})
    )
    assert (cfg.description, cfg.params, cfg.send_seed, cfg.timeout_s) == ("", {}, True, None)


@pytest.mark.parametrize(
    ("provider", "line"),
    [
        ({"name": "p", "rpm": True}, "provider p: rpm: must be a positive number or null, got True"),
        ({"name": "p", "rpm": 0}, "provider p: rpm: must be greater than 0, got 0"),
        ({"name": "p", "colour": 1}, "provider p: colour: unknown key; allowed: name, key_env"),
        ({"name": "p", "key_required": True}, "model m: provider p requires a key but names no key_env"),
    ],
)
def test_a_bad_provider_file_is_one_line(tmp_path, provider, line):
    with pytest.raises(ConfigError) as e:
        load_model_config("m", _conf(tmp_path, BASE, provider))
    assert str(e.value).startswith(line) and "\n" not in str(e.value)


def test_a_copy_is_what_its_file_would_be(tmp_path):
    """``updated`` keeps the limits the file leaves unset (the provider's stand) and its digest follows the
    change, so a resume cannot mistake the copy for the original."""
    cfg = load_model_config("gemma-4-26b", ROOT / "conf" / "model", check_key=False)
    copy = cfg.updated(api_base="http://127.0.0.1:9/v1")
    assert copy.gate_limits == cfg.gate_limits and cfg.gate_limits["max_concurrent"] is not None
    assert copy.api_base == "http://127.0.0.1:9/v1" and model_digest(copy) != model_digest(cfg)
    assert model_digest(cfg.updated()) == model_digest(cfg)
    with pytest.raises(ConfigError, match="^model gemma-4-26b: timeout_s: must be greater than 0"):
        cfg.updated(timeout_s=-1)


def test_every_shipped_file_reads_as_omegaconf_resolves_it():
    """A file without interpolations skips OmegaConf (0.1 s per calibrated profile); the values are the
    ones OmegaConf would give, and an interpolation is still resolved."""
    from omegaconf import OmegaConf

    from dvoc_bench.core import yamlio
    from dvoc_bench.models import config

    files = sorted((ROOT / "conf" / "model").glob("*.yaml")) + sorted(
        (ROOT / "conf" / "provider").glob("*.yaml")
    )
    assert files
    for p in files:
        d = yamlio.safe_load(p.read_text(encoding="utf-8")) or {}
        assert d == yaml.safe_load(p.read_text(encoding="utf-8")), p  # libyaml reads what PyYAML reads
        assert config._resolve(d, p.stem) == OmegaConf.to_container(OmegaConf.create(d), resolve=True), p
    d = {"a": [{"b": "${oc.env:DVOC_TEST_UNSET_VAR,fallback}"}], "c": 1}
    assert config._resolve(d, "x") == {"a": [{"b": "fallback"}], "c": 1}
    shared = {"a": [1]}
    out = config._resolve({"s": shared}, "x")
    out["s"]["a"].append(2)
    assert shared == {"a": [1]}  # a copy, as OmegaConf's is
