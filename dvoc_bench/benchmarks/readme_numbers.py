"""The numbers README.md quotes from simulated runs, regenerated (``python -m dvoc_bench.bench readme``).

Every number the README takes from a simulated run is deterministic (the simulator is seeded from the
request and the trial seed), so it is not typed by hand: :func:`blocks` runs the commands the README
shows, each in a subprocess exactly as a reader would type it (into a temporary run directory), and
returns the text the README must contain verbatim. ``tests/test_readme.py`` checks that it does; after a
change to the simulator or the tables, paste the printed blocks into the README.

Timings are never quoted here: the README writes them as ranges and no test checks them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from dvoc_bench.core.rundir import TRIALS, read_jsonl

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR_SHOWN = "runs/quick/<YYYY-MM-DD_HH-MM-SS>"
ONESHOT = "python -m dvoc_bench model=sim-gemma-4-26b methods=[oneshot]"


def _dvoc(run_dir: Path, *overrides: str) -> str:
    """Run ``python -m dvoc_bench *overrides`` into ``run_dir``; its standard output."""
    p = subprocess.run(
        [sys.executable, "-m", "dvoc_bench", *overrides, f"hydra.run.dir={run_dir}", "run.quiet=true"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    if p.returncode != 0:
        raise RuntimeError(f"python -m dvoc_bench {' '.join(overrides)} failed:\n{p.stderr[-2000:]}")
    return p.stdout


def _hit_rate(run_dir: Path, **match: str) -> float:
    trials = list(read_jsonl(run_dir / TRIALS))
    ok = [t for t in trials if t["status"] == "ok" and all(t.get(k) == v for k, v in match.items())]
    return sum(bool(t["hit"]) for t in ok) / len(ok)


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def default_run_block(d: Path) -> str:
    """What ``python -m dvoc_bench`` prints (its table, the note and the run directory; not the log line)."""
    run = d / "default"
    out = _dvoc(run)
    lines = [x for x in out.splitlines() if not x.startswith("[")]  # Hydra's timestamped log line
    return "\n".join(lines).strip().replace(str(run), RUN_DIR_SHOWN)


def frames_lines(d: Path) -> str:
    """The two one-shot commands of "Coordinate frames", each with its measured hit rate."""
    own = _hit_rate(_run(d / "own", "model=sim-gemma-4-26b", "methods=[oneshot]"))
    pixel_dir = _run(d / "pixel", "model=sim-gemma-4-26b", "methods=[oneshot]", "declare_frame=pixel")
    pixel = _hit_rate(pixel_dir)
    hit_tasks = sorted(
        {
            t["task"]
            for t in read_jsonl(pixel_dir / TRIALS)
            if t["status"] == "ok" and t["hit"]
        }
    )
    which = f": only {', '.join(hit_tasks)}, whose target sits near the top-left corner" if hit_tasks else ""
    a = f"{ONESHOT}"
    b = f"{ONESHOT} declare_frame=pixel"
    width = len(b) + 2
    return "\n".join(
        [
            f"{a:<{width}}# {_pct(own)} hit [SIMULATED]",
            f"{b:<{width}}# {_pct(pixel)} hit [SIMULATED]{which}",
        ]
    )


def _run(run_dir: Path, *overrides: str) -> Path:
    _dvoc(run_dir, *overrides)
    return run_dir


def frames_sentence(d: Path) -> str:
    """The one-shot hit rates of ``experiment=frames`` under each protocol, as the README words them."""
    run = _run(d / "experiment-frames", "experiment=frames")
    trials = list(read_jsonl(run / TRIALS))
    rates = {}
    for proto in ("paper", "v1"):
        per_model = {}
        for t in trials:
            if t["method"] == "oneshot" and t["protocol"] == proto and t["status"] == "ok":
                per_model.setdefault(t["model"], []).append(bool(t["hit"]))
        vals = sorted(sum(v) / len(v) for v in per_model.values())
        lo, hi = _pct(vals[0]).replace(" %", ""), _pct(vals[-1])
        rates[proto] = hi if lo == hi.replace(" %", "") else f"{lo}–{hi}"
    return (
        f"one-shot hits {rates['paper']} of the targets under `protocol=paper` and {rates['v1']} under "
        "`v1` [SIMULATED]"
    )


CROSSVAL = "simulator cross-validation (Every number from a simulated model)"


def crossval_block(doc: dict | None = None) -> str:
    """The README's validation tables, rendered from ``dvoc_bench/core/scene_validation.json`` (written by
    ``python -m dvoc_bench.calibrate --upstream <clone> --cross-validate``, a pure function of the records,
    the fit and the seed): the leave-one-out table and what the simulator can and cannot be used for."""
    import statistics

    from dvoc_bench.calibration.crossval import verdict
    from dvoc_bench.core import scene_check

    doc = doc if doc is not None else scene_check.load()
    recs = doc.get("table", [])
    if not recs:
        return "(no cross-validation: run python -m dvoc_bench.calibrate --upstream <clone> --cross-validate)"

    def iv(r: dict, key: str) -> str:
        v = r[key]
        return f"[{int(v['lo'])}, {int(v['hi'])}] p={v['p']:.2f}"

    lines = [
        "| held out | recorded | SIMULATED 95 % | rate per model+method 95 % | rate per scene 95 % "
        "| log score sim / m+m / scene | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for r in recs:
        v = verdict(r)
        verdicts.append(v)
        logs = " / ".join(f"{r[k]['log_score']:.1f}" for k in ("sim", "rate_model_method", "rate_scene"))
        lines.append(
            f"| {r['kind']} {r['unit']} | {r['k']}/{r['n']} | {iv(r, 'sim')} | {iv(r, 'rate_model_method')} "
            f"| {iv(r, 'rate_scene')} | {logs} | {v} |"
        )
    n = len(recs)
    agree = sum(v.startswith("agrees") for v in verdicts)
    reject = sum(v.startswith("disagrees") for v in verdicts)
    inside = n - reject
    bad = sorted(scene_check.unvalidated_in(doc))
    scene_p = ", ".join(f"{t} p={doc['scene_p'][t]:.3f}" for t in bad) or "none"

    def width(key: str) -> float:
        return statistics.median(r[key]["hi"] - r[key]["lo"] for r in recs)

    sim_w, mm_w, sc_w = width("sim"), width("rate_model_method"), width("rate_scene")
    lines += [
        "",
        f"{n} held-out units: the recorded count is inside the SIMULATED 95 % interval in {inside}, outside "
        f"(p < 0.05) in {reject}; the simulator beats both naive baselines' log score, the only case "
        f"counted as agreement, in {agree}. Scenes not validated (marked `{scene_check.MARKER}` in "
        f"per-task tables of simulated models): {scene_p}.",
        "",
        "| use | can the simulator be used? | the numbers behind it |",
        "|---|---|---|",
        "| offline development of the harness (plan, loop, store, report) | yes | runs offline and seeded: "
        "the same records, profile and seed give the same table "
        "(`tests/calibration/test_crossval.py`) |",
        "| smoke tests and CI | yes | a deterministic stand-in; its accuracy does not matter there |",
        f"| power planning (how many trials a comparison needs) | as a rough guide only | "
        f"median width of the "
        f"95 % interval of a held-out count: SIMULATED {sim_w:.0f}, constant rate per model+method "
        f"{mm_w:.0f}, per scene {sc_w:.0f} |",
        f"| per-scene or per-target-size conclusions | not on {', '.join(bad) or 'no scene'} | "
        f"leave-one-scene-out p-values: {scene_p} |",
        f"| claims about a real model | no | agreement (inside the interval and better than both naive "
        f"baselines) in {agree} of {n} held-out units; outside the interval in {reject} |",
    ]
    return "\n".join(lines)


def blocks() -> dict[str, str]:
    """Name -> the text README.md must contain verbatim."""
    with tempfile.TemporaryDirectory(prefix="dvoc-readme-") as tmp:
        d = Path(tmp)
        return {
            "default run (What the default run does)": default_run_block(d),
            "one-shot and declare_frame (Coordinate frames)": frames_lines(d),
            "experiment=frames (The finding, plainly)": frames_sentence(d),
            CROSSVAL: crossval_block(),
        }


SEPARATOR = "==> {} <=="


def render(bl: dict[str, str]) -> str:
    return "\n\n".join(f"{SEPARATOR.format(name)}\n{text}" for name, text in bl.items()) + "\n"


def parse(text: str) -> dict[str, str]:
    """The blocks back from :func:`render`'s output."""
    out: dict[str, str] = {}
    name = None
    for line in text.splitlines():
        if line.startswith("==> ") and line.endswith(" <=="):
            name = line[4:-4]
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return {k: v.strip("\n") for k, v in out.items()}
