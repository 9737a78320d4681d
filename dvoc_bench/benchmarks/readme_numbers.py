"""The numbers README.md and docs/ quote, regenerated (``python -m dvoc_bench.bench readme``): from simulated
runs, from the cross-validation file and from the authors' records (the headline, ``$DVOC_UPSTREAM``).

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
        per_model: dict[str, list[bool]] = {}
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


STORY = "the story above the default table (What the default run does)"


def _span(rates: list[float]) -> str:
    lo, hi = (f"{100 * v:.0f}" for v in (min(rates), max(rates)))
    return f"{hi} %" if lo == hi else f"{lo}–{hi} %"


def story_text(run: Path, upstream: Path | None = None) -> str:
    """Three lines above the default table: what the default run (its trials in ``run``) shows, what the
    paper claimed (its printed Table 4.1) and what the frame finding changes (the authors' records, found
    at ``upstream``, else ``$DVOC_UPSTREAM``); :data:`NO_RECORDS` without the records."""
    from dvoc_bench.analysis.headline import PAPER_THREE, SLICES, point_table
    from dvoc_bench.analysis.paper import PUBLISHED
    from dvoc_bench.analysis.upstream import default_upstream_dir, discover_upstream, load_upstream

    where = upstream if upstream is not None else default_upstream_dir()
    if where is None:
        return NO_RECORDS
    trials = [t for t in read_jsonl(run / TRIALS) if t["simulated"]]
    models = sorted({t["model"] for t in trials})
    ran = {m: [_hit_rate(run, model=x, method=m) for x in models] for m in ("dvoc", "oneshot")}
    assumed = sorted({a for t in trials for a in t.get("simulated_assumptions") or []})
    table = PUBLISHED["4.1"].items()
    claimed = {m: [float(v["proto_rate"].rstrip("%")) / 100 for (_, x), v in table if x == m] for m in ran}
    roles = discover_upstream(where)
    one = point_table(load_upstream(roles["tree"])).set_index(["answers", "slice", "model"])
    found = {
        sl: [float(one.loc[("one-shot", sl, m), "norm_radius"] / one.loc[("one-shot", sl, m), "n"])
             for m in PAPER_THREE]
        for sl in (SLICES[2], SLICES[1])
    }  # fmt: skip
    marks = " and ".join(f"`{m}`" for m in assumed)
    wins = sum(d > o for d, o in zip(ran["dvoc"], ran["oneshot"], strict=True))
    verdict = f"DVOC beats one-shot for {f'{wins} of {len(models)} models' if wins else 'no model'}"
    return "\n".join(
        [
            f"- **What the default run shows** [SIMULATED]: with the answer frame stated (protocol `v1`), "
            f"one-shot hits {_span(ran['oneshot'])} of the targets and DVOC {_span(ran['dvoc'])}; {verdict}. "
            f"A row marked {marks} rests on the simulator's guess of how that model answers v1's frame "
            "request: the authors' records never made one.",
            f"- **What the paper claimed**: DVOC grounds where one-shot fails (Table 4.1, valid trials: DVOC "
            f"{_span(claimed['dvoc'])}, one-shot {_span(claimed['oneshot'])}).",
            f"- **What the frame finding changes**: those one-shot answers were 0–1000 units read as pixels; "
            f"read as 0–1000, {_span(found[SLICES[2]])} land within the paper's radius "
            f"({_span(found[SLICES[1]])} of the retries, whose prompt carried the task).",
        ]
    )


HEADLINE = "the authors' records (Coordinate frames; docs/paper.md)"
NO_RECORDS = "(no authors' records: set DVOC_UPSTREAM to their folder)"


def headline_text(upstream: Path | None = None) -> str:
    """The headline tables from the authors' records (:func:`dvoc_bench.analysis.headline.headline_block`),
    found at ``upstream``, else ``$DVOC_UPSTREAM``."""
    from dvoc_bench.analysis.headline import headline_block
    from dvoc_bench.analysis.upstream import default_upstream_dir

    where = upstream if upstream is not None else default_upstream_dir()
    if where is None:
        return NO_RECORDS
    return headline_block(where)


CROSSVAL = "simulator cross-validation (docs/simulator.md, Cross-validation)"
CROSSVAL_USE = "what the simulator can be used for (README, Every number from a simulated model)"


def _crossval_numbers(doc: dict) -> dict:
    """Counts and widths behind both cross-validation blocks."""
    import statistics

    from dvoc_bench.calibration.crossval import interval_kind, pooled_baselines, verdict
    from dvoc_bench.core import scene_check

    recs = doc.get("table", [])
    verdicts = [verdict(r) for r in recs]
    bad = sorted(scene_check.unvalidated_in(doc))

    def width(key: str) -> float:
        return statistics.median(r[key]["hi"] - r[key]["lo"] for r in recs)

    return {
        "recs": recs,
        "verdicts": verdicts,
        "n": len(recs),
        "agree": sum(v.startswith("agrees") for v in verdicts),
        "reject": sum(v.startswith("disagrees") for v in verdicts),
        "point": sum(interval_kind(r) == "point" for r in recs),
        "near": sum(interval_kind(r) == "near-point" for r in recs),
        "pooled": sum(bool(pooled_baselines(r)) for r in recs),
        "bad": bad,
        "scene_p": ", ".join(f"{t} p={doc['scene_p'][t]:.3f}" for t in bad) or "none",
        "widths": (width("sim"), width("rate_model_method"), width("rate_scene")),
    }


NO_CV = "(no cross-validation: run python -m dvoc_bench.calibrate --upstream <clone> --cross-validate)"


def crossval_block(doc: dict | None = None) -> str:
    """docs/simulator.md's leave-one-out table, rendered from ``dvoc_bench/core/scene_validation.json``
    (written by ``python -m dvoc_bench.calibrate --upstream <clone> --cross-validate``, a pure function of
    the records, the fit and the seed), point and near-point intervals marked, and its summary."""
    from dvoc_bench.calibration.crossval import NEAR_POINT_WIDTH, interval_kind
    from dvoc_bench.core import scene_check

    doc = doc if doc is not None else scene_check.load()
    c = _crossval_numbers(doc)
    if not c["recs"]:
        return NO_CV

    def iv(r: dict, key: str) -> str:
        v = r[key]
        mark = f" **{interval_kind(r)}**" if key == "sim" and interval_kind(r) else ""
        return f"[{int(v['lo'])}, {int(v['hi'])}]{mark} p={v['p']:.2f}"

    lines = [
        "| held out | recorded | SIMULATED 95 % | rate per model+method 95 % | rate per scene 95 % "
        "| log score sim / m+m / scene | verdict |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, v in zip(c["recs"], c["verdicts"], strict=True):
        logs = " / ".join(f"{r[k]['log_score']:.1f}" for k in ("sim", "rate_model_method", "rate_scene"))
        lines.append(
            f"| {r['kind']} {r['unit']} | {r['k']}/{r['n']} | {iv(r, 'sim')} | {iv(r, 'rate_model_method')} "
            f"| {iv(r, 'rate_scene')} | {logs} | {v} |"
        )
    lines += [
        "",
        f"Success = the paper's radius rule, valid S1–S6 trials. {c['n']} held-out units: the recorded count "
        f"is inside the SIMULATED 95 % interval in {c['n'] - c['reject']}, outside (p < 0.05) in "
        f"{c['reject']}. **point** (zero width) and **near-point** (at most {NEAR_POINT_WIDTH} counts wide) "
        f"intervals, {c['point']} and {c['near']} of them: there the count is fixed by which trials can hit "
        "at all (0–1000 answers read as pixels hit only S4, near the top-left corner; a wide target is hit "
        "whatever the noise), so they test the frame conversion and the target sizes, not the simulator's "
        f"noise, and are not counted as agreement. In {c['pooled']} units a baseline's held-out group had "
        "no training trials and it fell back to the pooled rate: it is named in the verdict and not "
        "counted. Agreement (inside an interval with width, and a better log score "
        f"than every baseline fitted on the group's own kind, at least one): {c['agree']} of {c['n']}. "
        f"Scenes not validated (marked `{scene_check.MARKER}` in per-task tables of simulated models): "
        f"{c['scene_p']}.",
    ]
    return "\n".join(lines)


def crossval_use_block(doc: dict | None = None) -> str:
    """The README's table of what the simulator can and cannot be used for (numbers from the same file)."""
    from dvoc_bench.core import scene_check

    doc = doc if doc is not None else scene_check.load()
    c = _crossval_numbers(doc)
    if not c["recs"]:
        return NO_CV
    sim_w, mm_w, sc_w = c["widths"]
    return "\n".join(
        [
            "| use | can the simulator be used? | the numbers behind it |",
            "|---|---|---|",
            "| offline development of the harness (plan, loop, store, report) | yes | runs offline and "
            "seeded: the same records, profile and seed give the same table "
            "(`tests/calibration/test_crossval.py`) |",
            "| smoke tests and CI | yes | a deterministic stand-in; its accuracy does not matter there |",
            f"| power planning (how many trials a comparison needs) | as a rough guide only | median width "
            f"of the 95 % interval of a held-out count: SIMULATED {sim_w:.0f}, constant rate per "
            f"model+method {mm_w:.0f}, per scene {sc_w:.0f} |",
            f"| per-scene or per-target-size conclusions | not on {', '.join(c['bad']) or 'no scene'} | "
            f"leave-one-scene-out p-values: {c['scene_p']} |",
            f"| claims about a real model | no | of {c['n']} held-out units: agreement (an interval with "
            f"width, better than the baselines fitted on the unit's own kind) in {c['agree']}; point or "
            f"near-point intervals (test the frame conversion, not the noise) in {c['point'] + c['near']}; "
            f"outside the interval in {c['reject']} |",
        ]
    )


def blocks() -> dict[str, str]:
    """Name -> the text README.md must contain verbatim."""
    with tempfile.TemporaryDirectory(prefix="dvoc-readme-") as tmp:
        d = Path(tmp)
        return {
            "default run (What the default run does)": default_run_block(d),
            STORY: story_text(d / "default"),
            "one-shot and declare_frame (Coordinate frames)": frames_lines(d),
            "experiment=frames (The finding, plainly)": frames_sentence(d),
            HEADLINE: headline_text(),
            CROSSVAL: crossval_block(),
            CROSSVAL_USE: crossval_use_block(),
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
