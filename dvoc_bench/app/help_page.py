"""``python -m dvoc_bench --help``: the app's help page, rendered without Hydra.

Hydra's own ``--help`` composes the whole config, then lists the config groups by rebuilding its config
repository once per group and option (seconds, most of it deep copies of the registered defaults). The page
needs none of that: its template is ``conf/hydra/help/dvoc.yaml`` and its generated parts (presets, models,
tasks, config groups) come from the file names and a few top-level keys of ``conf/`` and ``scenes/``, read
here with libyaml. :func:`render` is what the door prints; Hydra's help (an override of ``hydra.help``)
renders the same template through the ``${dvoc_help:...}`` resolver (:mod:`dvoc_bench.app.hydra_hooks`),
so both show one page.

This module imports neither Hydra nor OmegaConf nor the settings (the door answers ``--help`` before
importing them).
"""

from __future__ import annotations

import functools
import re
import string
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[2]

HELP_FLAGS = ("-h", "--help")
_HYDRA_HELP_KEYS = ("hydra.help", "hydra/help", "+hydra.help", "++hydra.help", "~hydra.help")
_INTERNAL_PREFIX = "base_"
"""Options registered from code for Hydra to compose from (``detector/base_<backend>``), not to choose."""


def _load_yaml(text: str) -> Any:
    from dvoc_bench.core.yamlio import safe_load

    return safe_load(text)


def wants_fast_help(argv: Sequence[str]) -> bool:
    """``-h`` / ``--help`` without an override of Hydra's help config (that one goes through Hydra)."""
    return any(a in HELP_FLAGS for a in argv) and not any(a.startswith(_HYDRA_HELP_KEYS) for a in argv)


def _first_sentence(text: str) -> str:
    """The first sentence of a blurb, whole (the page wraps it, never cuts it)."""
    return " ".join(text.split()).split(". ")[0].rstrip(".")


def _comment(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            lines.append(line.lstrip("# "))
    return _first_sentence(" ".join(lines))


def _presets() -> list[str]:
    out = []
    for p in sorted((_ROOT / "conf" / "experiment").glob("*.yaml")):
        text = textwrap.fill(
            f"{p.stem:<18} {_comment(p)}", 104, subsequent_indent=" " * 19, break_on_hyphens=False
        )
        out.append(text.replace("\n", "\n  "))
    return out


def _models() -> list[str]:
    sims, served, real = [], [], []
    for p in sorted((_ROOT / "conf" / "model").glob("*.yaml")):
        doc = _load_yaml(p.read_text(encoding="utf-8")) or {}
        frame = doc.get("coord_frame", "?")
        if isinstance(frame, dict):  # the full rule: its units
            frame = frame.get("units", "pixel")
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
    out = []
    for kind in ("synthetic", "web", "desktop"):
        for p in sorted((_ROOT / "scenes" / kind).glob("*.yaml")):
            doc = _load_yaml(p.read_text(encoding="utf-8")) or {}
            extra = {"web": ", needs Chromium", "desktop": ", needs Xvfb + Tk"}.get(kind, "")
            out.append(f"{doc.get('id', p.stem):<4} {doc.get('instruction', '')} ({kind}{extra})")
    return out


def config_groups(conf: Path | None = None) -> list[str]:
    """``group: option, ...`` for every config group under ``conf/`` (Hydra's own ``hydra/`` groups and
    the internal ``base_*`` options left out), as Hydra's help lists them."""
    conf = conf or _ROOT / "conf"
    out = []
    for d in sorted(p for p in conf.rglob("*") if p.is_dir()):
        group = d.relative_to(conf).as_posix()
        if group == "hydra" or group.startswith("hydra/"):
            continue
        options = sorted(
            p.stem
            for p in d.iterdir()
            if p.suffix in (".yaml", ".yml") and not p.stem.startswith(_INTERNAL_PREFIX)
        )
        if options:
            out.append(f"{group}: {', '.join(options)}")
    return out


def help_section(name: str) -> str:
    """Generated lines of the help page (``${dvoc_help:presets|models|tasks|groups}`` in
    ``conf/hydra/help/dvoc.yaml``), read from ``conf/`` and ``scenes/`` so they never drift.

    Hydra resolves the template while composing every run (twice), so a section is built once per
    process and root (:func:`_section`)."""
    return _section(name, _ROOT)


@functools.lru_cache(maxsize=16)
def _section(name: str, root: Path) -> str:
    fns = {"presets": _presets, "models": _models, "tasks": _tasks, "groups": config_groups}
    if name not in fns:
        raise ValueError(f"dvoc_help: unknown section {name!r}; allowed: {', '.join(fns)}")
    try:
        lines = fns[name]()
    except Exception as e:  # a broken file must not break --help
        lines = [f"(could not list {name}: {type(e).__name__}: {e})"]
    # the help template is a string.Template after OmegaConf: a literal dollar is written $$
    return ("\n" if name == "groups" else "\n  ").join(x.replace("$", "$$") for x in lines)


_INTERP = re.compile(r"\$\{(hydra\.help\.(\w+)|dvoc_help:(\w+))\}")


def render(help_file: Path | None = None) -> str:
    """The page, as Hydra's help would print it: the template's interpolations filled, then read as a
    ``string.Template`` (``$$`` is a dollar sign)."""
    cfg = _load_yaml(
        (help_file or _ROOT / "conf" / "hydra" / "help" / "dvoc.yaml").read_text(encoding="utf-8")
    )

    def fill(m: re.Match[str]) -> str:
        return str(cfg[m.group(2)]) if m.group(2) else help_section(m.group(3))

    return string.Template(_INTERP.sub(fill, str(cfg["template"]))).substitute()
