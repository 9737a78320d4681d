"""Errors Hydra raises while composing the config, turned into the one-line ``<key>: <what>; allowed: ...``
of every bad input (the app prints ``config error: `` before it and exits with code 2)."""

from __future__ import annotations

import re

from dvoc_bench.core.declare import _model_at

_MISSING_RE = re.compile(r"Could not find '([^']+)'")
_OVERRIDE_RE = re.compile(r"Could not (?:override|append to config\.) '([^']+)'")
_KEY_RE = re.compile(r"full_key: (\S+)")
_PARSE_RE = re.compile(r"Error parsing override '([^']*)'")
_APPEND_RE = re.compile(r"Could not append to config\. An item is already at '([^']+)'")


def _first_line(e: BaseException) -> str:
    return next((ln.strip() for ln in str(e).splitlines() if ln.strip()), type(e).__name__)


def _allowed_keys(key: str) -> str:
    from dvoc_bench.runner.settings import Settings

    parts = tuple(key.split("."))
    if parts[0] == "detector" and len(parts) == 2:  # the chosen backend's settings
        import sys

        from dvoc_bench.detect.config import DETECTOR_SETTINGS

        chosen = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("detector=")]
        model = DETECTOR_SETTINGS.get(chosen[-1] if chosen else "oracle")
        return f"; allowed: {', '.join(model.model_fields)}" if model is not None else ""
    if parts[0] == "model" and len(parts) > 1:  # a model file's block (runner/block_keys.py)
        from dvoc_bench.runner.block_keys import block_keys

        keys = block_keys(parts[1:-1])
        return f"; allowed: {', '.join(keys)}" if keys else ""
    owner = _model_at(Settings, parts[:-1]) if len(parts) > 1 else Settings
    return f"; allowed: {', '.join(owner.model_fields)}" if owner is not None else ""


def config_error_line(e: BaseException) -> str | None:
    """The one line for a Hydra / OmegaConf composition error; ``None`` for anything else."""
    from hydra.errors import HydraException, MissingConfigException, OverrideParseException
    from omegaconf.errors import OmegaConfBaseException

    if isinstance(e, MissingConfigException):
        m = _MISSING_RE.search(str(e))
        missing = m.group(1) if m else str(e.missing_cfg_file or "")
        group, _, value = missing.rpartition("/")
        # detector/base_<backend> are internal (the declared defaults), not options to choose
        options = [o for o in (e.options or []) if not o.startswith("base_")]
        allowed = f"; allowed: {', '.join(sorted(options))}" if options else ""
        if group:
            return f"{group.replace('/', '.')}: unknown value {value!r}{allowed}"
        return f"{missing}: config not found{allowed}"
    if isinstance(e, OverrideParseException):
        m = _PARSE_RE.search(str(e))
        bad = m.group(1) if m else _first_line(e)
        return f"override: cannot parse {bad!r} (Hydra override grammar; quote lists: 'methods=[a,b]')"
    if isinstance(e, HydraException | OmegaConfBaseException):
        msg = "\n".join(str(x) for x in (e, e.__cause__) if x is not None)
        if m := _APPEND_RE.search(msg):  # `+key=V` on a key the config (or the model file) already has
            return f"{m.group(1)}: already set; override it without '+' ({m.group(1)}=V) or with '++'"
        m = _OVERRIDE_RE.search(msg) or _KEY_RE.search(msg)
        if m and "not in struct" in msg:
            return f"{m.group(1)}: unknown key{_allowed_keys(m.group(1))}"
        if m:
            return f"{m.group(1)}: {_detail(msg)}"
        return _first_line(e)
    return None


def _detail(msg: str) -> str:
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    return lines[-1] if lines else msg
