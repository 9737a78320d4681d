"""Hydra glue: the run / sweep folder name, resolved the same way in single runs and multiruns.

Hydra 1.3's sweepers resolve ``hydra.sweep.dir`` before any ``HydraConfig`` exists, so
``${hydra:runtime.choices.experiment}`` there fails ("HydraConfig was not set") on every ``-m`` command.
``conf/config.yaml`` uses ``${dvoc_run_name:}`` instead:

- in a single run: the ``experiment`` preset chosen (``quick`` by default);
- in a multirun: the preset of the sweep (the :class:`SweepName` callback reads it from the sweep's own
  config before the sweeper starts); when ``experiment`` itself is swept (``-m experiment=a,b``), the
  swept presets joined with ``+``, so every job of one sweep lands in one folder.

The value is cached (``use_cache``): Hydra copies the sweep's resolver cache into every job's config, so
a job in another process (``hydra/launcher=joblib``) gets the same folder as its sweep. The resolver is
registered on import; the callback (and ``python -m dvoc_bench``) import this module. ``${dvoc_help:...}``
fills the generated parts of ``python -m dvoc_bench --help`` (``conf/hydra/help/dvoc.yaml``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

RESOLVER = "dvoc_run_name"
DEFAULT = "default"
_sweep: dict[str, str] = {}


def _choice(hydra_node: Any) -> str:
    value = OmegaConf.select(hydra_node, "runtime.choices.experiment", default=None)
    return str(value) if value else DEFAULT


def run_name() -> str:
    """The folder name of this run or sweep (see the module docstring)."""
    if "name" in _sweep:
        return _sweep["name"]
    if HydraConfig.initialized():
        return _choice(HydraConfig.get())
    return DEFAULT


def sweep_name(cfg: DictConfig) -> str:
    """The folder name of a multirun from its sweep-level config: the swept presets, or the preset."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    task = list(cfg.hydra.overrides.get("task", []) or [])
    for o in OverridesParser.create().parse_overrides(task):
        if o.key_or_group == "experiment" and o.is_sweep_override():
            return "+".join(str(v) for v in o.sweep_string_iterator())
    return _choice(cfg.hydra)


class SweepName(Callback):
    """Records the sweep's folder name before the sweeper resolves ``hydra.sweep.dir``."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _sweep["name"] = sweep_name(config)


# ------------------------------------------------------------------------------------------------- --help

_ROOT = Path(__file__).resolve().parents[2]


def _first_sentence(text: str, limit: int = 92) -> str:
    text = " ".join(text.split()).split(". ")[0].rstrip(".")
    return text if len(text) <= limit else text[: limit - 1].rstrip(" ,;:") + "…"


def _comment(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            lines.append(line.lstrip("# "))
    return _first_sentence(" ".join(lines))


def _presets() -> list[str]:
    return [f"{p.stem:<18} {_comment(p)}" for p in sorted((_ROOT / "conf" / "experiment").glob("*.yaml"))]


def _models() -> list[str]:
    import textwrap

    import yaml

    sims, served, real = [], [], []
    for p in sorted((_ROOT / "conf" / "model").glob("*.yaml")):
        doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
        frame = doc.get("coord_frame", "?")
        if doc.get("kind") == "simulator":
            sims.append(f"{p.stem} ({frame})")
        elif p.stem.startswith("local-sim"):
            served.append(f"{p.stem} ({frame})")
        else:
            real.append(f"{p.stem} ({frame}, {doc.get('provider', '?')})")
    groups = (
        ("simulated, in process (offline): ", sims),
        ("simulated behind `python -m dvoc_bench.serve`: ", served),
        ("real (an API key or a local server): ", real),
    )
    return [
        textwrap.fill(head + ", ".join(names), 100, subsequent_indent="    ", break_on_hyphens=False)
        for head, names in groups
        if names
    ]


def _tasks() -> list[str]:
    import yaml

    out = []
    for kind in ("synthetic", "web", "desktop"):
        for p in sorted((_ROOT / "scenes" / kind).glob("*.yaml")):
            doc = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
            extra = {"web": ", needs Chromium", "desktop": ", needs Xvfb + Tk"}.get(kind, "")
            out.append(f"{doc.get('id', p.stem):<4} {doc.get('instruction', '')} ({kind}{extra})")
    return out


def help_section(name: str) -> str:
    """Generated lines of ``python -m dvoc_bench --help`` (``${dvoc_help:presets|models|tasks}`` in
    ``conf/hydra/help/dvoc.yaml``), read from ``conf/`` and ``scenes/`` so they never drift."""
    fns = {"presets": _presets, "models": _models, "tasks": _tasks}
    if name not in fns:
        raise ValueError(f"dvoc_help: unknown section {name!r}; allowed: {', '.join(fns)}")
    try:
        lines = fns[name]()
    except Exception as e:  # a broken file must not break --help
        lines = [f"(could not list {name}: {type(e).__name__}: {e})"]
    # the help template is a string.Template after OmegaConf: a literal dollar is written $$
    return "\n  ".join(x.replace("$", "$$") for x in lines)


def register() -> None:
    """Register ``${dvoc_run_name:}`` and ``${dvoc_help:...}`` (idempotent)."""
    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_new_resolver(RESOLVER, run_name, use_cache=True)
    if not OmegaConf.has_resolver("dvoc_help"):
        OmegaConf.register_new_resolver("dvoc_help", help_section)


register()
