"""``model=<name> paths.models=DIR``: the one-model shorthand for a config outside ``conf/model/``.

``model=<name>`` is a Hydra config group: Hydra composes ``conf/model/<name>.yaml`` into the config (so
``+model.pricing={...}`` and other ``model.*`` overrides apply to it) and refuses a name it cannot find
there, before any of the app runs. ``models=[<name>] paths.models=DIR`` reads ``DIR/<name>.yaml`` in the
set-up instead. So that both spellings work, the door adds ``DIR`` to Hydra's search path for the
``model`` group (a temporary folder whose ``model`` entry links to ``DIR``) when the name is not in
``conf/model/`` but is in ``DIR``; the link is removed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

_CONF_MODELS = Path(__file__).resolve().parents[2] / "conf" / "model"


def _last(argv: Sequence[str], key: str) -> str | None:
    values = [a.split("=", 1)[1] for a in argv if a.lstrip("+").startswith(f"{key}=")]
    return values[-1].strip() if values else None


def with_own_model_dir(argv: Sequence[str]) -> list[str]:
    """``argv``, plus ``hydra.searchpath=[file://<link folder>]`` when ``model=<name>`` names a file of
    ``paths.models=DIR`` that ``conf/model/`` does not have (else unchanged)."""
    argv = list(argv)
    name, models = _last(argv, "model"), _last(argv, "paths.models")
    if not name or not models or "," in name or any(a.startswith("hydra.searchpath") for a in argv):
        return argv
    own = Path(models).expanduser()
    if (_CONF_MODELS / f"{name}.yaml").exists() or not (own / f"{name}.yaml").is_file():
        return argv
    link_dir = Path(tempfile.mkdtemp(prefix="dvoc-models-"))
    os.symlink(own.resolve(), link_dir / "model", target_is_directory=True)
    atexit.register(shutil.rmtree, link_dir, ignore_errors=True)
    return [*argv, f"hydra.searchpath=[file://{link_dir}]"]
