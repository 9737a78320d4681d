"""The canary (``python -m dvoc_bench experiment=canary model=NAME``): a fixed small set of bundled scenes run
first, each model config's answers compared with the answers stored for it, so that a change of the serving
stack (an engine release, a quantisation, a processor default) that moves a model's answers is seen before a
sweep's numbers are trusted.

The stored answers of a model config are ``conf/canary/<name>.json``: ``{"model", "tolerance_px",
"source", "answers": {"<task>|<method>": {"final": [x, y] | null, "hit": bool}}}``. A trial drifts when
its verdict (``hit``) differs from the stored one, when one of the two has a final point and the other none,
or when its final point lies more than ``tolerance_px`` (default :data:`TOLERANCE_PX`) from the stored one.
:func:`check` compares a run's trials; :func:`write` records the result in the run directory
(``canary.json``, which the report reads) and this run's own answers (``canary/<name>.json``, to store as
the expected ones with ``cp``). The canary never fails the run: a drift is a loud warning and a report
section.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dvoc_bench.core.jsonread import load_file
from dvoc_bench.models.config import default_conf_dir

TOLERANCE_PX = 5.0
"""How far a final point may move from the stored one before it is a drift (a file may state its own)."""
RESULT = "canary.json"
"""The canary's result in the run directory."""


def canary_dir() -> Path:
    """Where the stored answers are: ``conf/canary/``."""
    return default_conf_dir() / "canary"


@dataclass
class ModelCanary:
    """One model config's canary."""

    model: str
    """The model config's name."""
    status: str
    """``ok`` (every answer within tolerance), ``drift`` or ``no_expected`` (nothing stored for it)."""
    tolerance_px: float
    """The tolerance applied."""
    compared: int = 0
    """Trials compared with a stored answer."""
    drifts: list[dict[str, Any]] = field(default_factory=list)
    """Each drifting trial: ``key``, ``expected``, ``got`` (final points), ``expected_hit``, ``hit``,
    ``moved_px`` (``null`` when one side had no point), ``why``."""
    missing: list[str] = field(default_factory=list)
    """Stored answers this run has no trial for, and trials with no stored answer."""
    simulated: bool = False
    """True when the model is the simulator (its canary checks the harness, not a serving stack)."""


def answers(trials: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """``model -> "<task>|<method>|<start index>" -> {"final", "hit"}`` of the trials that ran (first
    repeat only)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for t in trials:
        if t.get("status") == "skipped" or int(t.get("rep") or 0) != 0:
            continue
        key = f"{t['task']}|{t['method']}|{t.get('start_index') or 0}"
        final = t.get("final_point")
        out.setdefault(str(t["model"]), {}).setdefault(
            key, {"final": [round(float(v), 3) for v in final] if final else None, "hit": bool(t.get("hit"))}
        )
    return out


def _compare(model: str, got: dict[str, dict[str, Any]], stored: Mapping[str, Any]) -> ModelCanary:
    tol = float(stored.get("tolerance_px", TOLERANCE_PX))
    expected: Mapping[str, Any] = stored.get("answers") or {}
    res = ModelCanary(model, "ok", tol)
    res.missing = sorted(set(expected) ^ set(got))
    for key in sorted(set(expected) & set(got)):
        e, g = expected[key], got[key]
        res.compared += 1
        ef, gf = e.get("final"), g.get("final")
        moved = None if ef is None or gf is None else math.dist(ef, gf)
        why = []
        if bool(e.get("hit")) != bool(g.get("hit")):
            why.append("verdict changed")
        if (ef is None) != (gf is None):
            why.append("point appeared" if ef is None else "no point any more")
        elif moved is not None and moved > tol:
            why.append(f"moved {moved:.1f} px > {tol:g} px")
        if why:
            res.drifts.append({"key": key, "expected": ef, "got": gf, "expected_hit": bool(e.get("hit")),
                               "hit": bool(g.get("hit")), "why": "; ".join(why),
                               "moved_px": None if moved is None else round(moved, 2)})  # fmt: skip
    if res.drifts:
        res.status = "drift"
    return res


def check(trials: Iterable[Mapping[str, Any]], stored_dir: Path | None = None) -> list[ModelCanary]:
    """Each model's canary: its trials' answers against ``stored_dir/<model>.json`` (default
    :func:`canary_dir`)."""
    folder = stored_dir or canary_dir()
    trials = list(trials)
    sim = {str(t["model"]) for t in trials if t.get("simulated")}
    out = []
    for model, got in sorted(answers(trials).items()):
        path = folder / f"{model}.json"
        if not path.is_file():
            out.append(ModelCanary(model, "no_expected", TOLERANCE_PX, missing=sorted(got)))
        else:
            out.append(_compare(model, got, load_file(path)))
        out[-1].simulated = model in sim
    return out


def write(run_dir: Path, results: list[ModelCanary], trials: Iterable[Mapping[str, Any]]) -> None:
    """``canary.json`` (the comparison) and ``canary/<model>.json`` (this run's answers, storable)."""
    run_dir = Path(run_dir)
    (run_dir / RESULT).write_text(json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8")
    mine = run_dir / "canary"
    mine.mkdir(exist_ok=True)
    for model, got in answers(trials).items():
        body = {"model": model, "tolerance_px": TOLERANCE_PX, "source": f"run {run_dir.name}", "answers": got}
        (mine / f"{model}.json").write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")


def lines(results: list[ModelCanary], run_dir: Path) -> list[str]:
    """The console lines: loud for a drift."""
    out = []
    for r in results:
        if r.status == "drift":
            out.append(f"WARNING: CANARY DRIFT: {r.model}: {len(r.drifts)} of {r.compared} answers moved "
                       f"beyond {r.tolerance_px:g} px or changed verdict; the serving stack answers "
                       "differently from the stored run. Do not compare this run's numbers with older ones "
                       f"before reading {run_dir / RESULT}.")  # fmt: skip
            out += [f"  {d['key']}: {d['why']} (expected {d['expected']}, got {d['got']})" for d in r.drifts]
        elif r.status == "no_expected":
            out.append(f"canary: {r.model}: no stored answers (conf/canary/{r.model}.json); to store this "
                       f"run's: cp {run_dir / 'canary' / (r.model + '.json')} conf/canary/")  # fmt: skip
        else:
            out.append(f"canary: {r.model}: {r.compared} answers within {r.tolerance_px:g} px of the stored "
                       "ones, same verdicts")  # fmt: skip
    return out
