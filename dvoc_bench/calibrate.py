"""``python -m dvoc_bench.calibrate --upstream DIR --out conf/model/``: fit the simulator's profiles to the
authors' recorded replies and write them; ``--validate`` also runs the out-of-sample check.

The fit reads step-level records only (one row per model call); the validation simulates the authors'
sweeps under ``protocol=paper`` and compares trial outcomes. See :mod:`dvoc_bench.calibration`.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dvoc_bench.calibration import CalibrationData


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m dvoc_bench.calibrate",
        description="Fit the simulator's profiles to the authors' recorded replies (step level) and validate "
        "them out of sample (trial level, protocol=paper).",
    )
    p.add_argument(
        "--upstream",
        required=True,
        help="the authors' records: their repository's clone (or its artifacts/previous_runs, or the tree)",
    )
    p.add_argument("--out", default="conf/model", help="where to write sim-<model>.yaml (default conf/model)")
    p.add_argument(
        "--models", nargs="*", default=None, help="models to fit (default: every model with enough data)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the replays and of the validation sweeps")
    p.add_argument("--replay-reps", type=int, default=4, help="simulated draws per recorded step (default 4)")
    p.add_argument("--refine-rounds", type=int, default=3, help="rounds of the zero / axis-drop refinement")
    p.add_argument("--n-boot", type=int, default=300, help="bootstrap draws of the step-level intervals")
    p.add_argument("--validate", action="store_true", help="also simulate the paper's sweeps and compare")
    p.add_argument("--repeats", type=int, default=3, help="repeats per start point in the validation sweeps")
    p.add_argument(
        "--instances",
        type=int,
        default=None,
        help="simulated instances per model to pool (default 1 for --validate, 4 for --predictive)",
    )
    p.add_argument("--no-web", action="store_true", help="validate on S1-S6 only")
    p.add_argument("--runs", default="runs/calibration", help="validation run directories (resumable)")
    p.add_argument("--dry-run", action="store_true", help="fit and print, write no profile")
    p.add_argument(
        "--check",
        action="store_true",
        help="fit, write nothing, and exit 1 when a profile in --out differs from what the fit writes",
    )
    p.add_argument(
        "--validate-only", action="store_true", help="no fit: validate the profiles already in --out"
    )
    p.add_argument(
        "--predictive",
        action="store_true",
        help="no fit: the recorded and published success counts against the simulated 95 %% predictive "
        "intervals (protocol=paper, S1-S6, radius rule; --instances, default 4 here, x --repeats per cell)",
    )
    p.add_argument(
        "--repeat-check",
        action="store_true",
        help="no fit: run the paper sweep with seeds 0 and 1 on the profiles in --out and compare identical "
        "first replies with the fitted repeat rate and identical final points with the records",
    )
    p.add_argument(
        "--cross-validate",
        action="store_true",
        help="no profile written: leave out each ablation arm, main-benchmark (model, method) cell and scene "
        "S1-S6, refit on every other record, predict it; simulator vs two naive baselines",
    )
    p.add_argument("--cv-only", nargs="*", default=None, help="held-out units to run (default: every one)")
    p.add_argument("--cv-instances", type=int, default=2, help="simulated instances per fold (default 2)")
    p.add_argument("--cv-draws", type=int, default=2000, help="predictive draws per fold (default 2000)")
    p.add_argument(
        "--cv-write",
        default=None,
        help="write the per-scene p-values here (default: the package's scene_validation.json when every "
        "scene fold ran)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from dvoc_bench import calibration as cal
    from dvoc_bench.analysis.markdown import md_table

    no_fit = [f for f, on in (("--predictive", args.predictive), ("--repeat-check", args.repeat_check)) if on]
    if args.check and no_fit:  # these run without a fit: a --check would silently check nothing
        print(
            f"error: --check fits and compares; {no_fit[0]} runs on the profiles without a fit",
            file=sys.stderr,
        )
        return 2
    upstream = Path(args.upstream)
    if not upstream.exists():
        print(f"error: --upstream {upstream} does not exist", file=sys.stderr)
        return 2
    try:
        data = cal.load_calibration_data(upstream)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    fittable = cal.fittable_models(data)
    models = args.models or fittable
    missing = [m for m in models if m not in fittable]
    if missing:
        print(
            f"error: not enough records to fit {', '.join(missing)} (fittable: {', '.join(fittable)})",
            file=sys.stderr,
        )
        return 2
    if args.cross_validate:
        return _cross_validate(upstream, models, args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stale: list[str] = []
    for model in [] if args.validate_only or args.repeat_check or args.predictive else models:
        t0 = time.perf_counter()
        c = cal.calibrate_model(
            data,
            model,
            refine_rounds=args.refine_rounds,
            replay_reps=args.replay_reps,
            seed=args.seed,
            n_boot=args.n_boot,
        )
        g = cal.goodness_summary(c.steps)
        inside = int(g["within"].sum())
        scored = int(g["rec_lo"].notna().sum())
        path = out / f"{cal.sim_name(model)}.yaml"
        if args.check:
            old = path.read_text(encoding="utf-8") if path.is_file() else ""
            diff = _diff_lines(old, c.text)
            stale += [f"{path}: {diff} lines differ from the fit"] if diff else []
            where = "(check: " + (f"{diff} lines differ)" if diff else "identical)")
        elif not args.dry_run:
            path.write_text(c.text, encoding="utf-8")
            where = str(path)
        else:
            where = "(dry run)"
        print(
            f"{model}: {inside} of {scored} step statistics inside the records' 95 % interval "
            f"({time.perf_counter() - t0:.0f} s) -> {where}"
        )
    if args.validate or args.validate_only:
        v = cal.validate(
            data,
            args.runs,
            models_dir=out,
            models=models,
            repeats=args.repeats,
            instances=args.instances or 1,
            web=False if args.no_web else None,
            seed=args.seed,
        )
        text = ["# Simulator validation (SIMULATED vs the authors' records)", "", v.note, ""]
        text += ["## Main benchmark, protocol=paper", "", md_table(cal.validation_table(v.main)), ""]
        if v.predict is not None:
            text += [
                "## Predict-mode ablation (Gemini 3.1 FL)",
                "",
                md_table(cal.validation_table(v.predict)),
                "",
            ]
        text += [f"Simulated runs: {', '.join(v.run_dirs.values())}"]
        report = Path(args.runs) / "validation.md"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text("\n".join(text) + "\n", encoding="utf-8")
        print("\n".join(text))
        print(f"\nreport: {report}")
    if args.predictive:
        _predictive(data, models, out, args)
    if args.repeat_check:
        from dvoc_bench.calibration.repeats import repeat_check

        rc = repeat_check(data, models, args.runs, models_dir=out, repeats=args.repeats)
        print("\n# Repeats as samples: seeds 0 and 1 of the paper sweep (SIMULATED; rate / records)\n")
        print(md_table(rc))
    if stale:
        print("\n".join(["stale profiles (re-run python -m dvoc_bench.calibrate):", *stale]), file=sys.stderr)
        return 1
    return 0


def _predictive(data: CalibrationData, models: list[str], out: Path, args: argparse.Namespace) -> None:
    """Print the validation table of docs/simulator.md: the recorded counts of ``models`` and Gemini's
    published ablation counts against the simulated predictive intervals
    (:mod:`dvoc_bench.calibration.predictive`)."""
    from dvoc_bench import calibration as cal
    from dvoc_bench.analysis.markdown import md_table
    from dvoc_bench.calibration import predictive as pr

    inst = args.instances or 4
    kw = {"repeats": args.repeats, "instances": inst, "models_dir": out, "seed": args.seed}
    root = Path(args.runs) / "predictive"
    sim = pr.simulate_instances("paper_main", models, cal.SYNTHETIC_TASKS, root, **kw)
    print(
        f"\n# Recorded counts vs SIMULATED 95 % predictive intervals "
        f"({inst} instances x {args.repeats} repeats)\n"
    )
    print(md_table(pr.check_recorded(data, sim, models=models)))
    if "gemini-3.1-flash-lite" in models:
        exps = ("ablation_predict", "ablation_overlay", "ablation_alpha")
        sims = {
            e: pr.simulate_instances(e, ["gemini-3.1-flash-lite"], cal.SYNTHETIC_TASKS, root, **kw)
            for e in exps
        }
        print("\n# Published Gemini counts (Tables 5.1-5.3) vs SIMULATED 95 % predictive intervals\n")
        print(md_table(pr.check_published(sims)))


def _cross_validate(upstream: Path, models: list[str], args: argparse.Namespace) -> int:
    """Print the leave-one-out table (:mod:`dvoc_bench.calibration.crossval`) and, when every scene fold ran,
    write the per-scene p-values the per-task tables are marked from (:mod:`dvoc_bench.core.scene_check`)."""
    from dvoc_bench.analysis.markdown import md_table
    from dvoc_bench.calibration import crossval as cv
    from dvoc_bench.core import scene_check

    models = [m for m in models if m in cv.CALIBRATED_MODELS]
    data = cv.load_all_records(upstream)
    settings = cv.FitSettings(seed=args.seed)
    t0 = time.perf_counter()

    def progress(f: cv.Fold) -> None:
        print(
            f"fold {f.unit.kind} {f.unit.name}: refit {', '.join(f.refitted) or '-'} {f.fit_s:.0f} s, "
            f"simulate {f.sim_s:.0f} s",
            flush=True,
        )

    folds, full_s = cv.cross_validate(
        data,
        Path(args.runs) / "crossval",
        models=models,
        only=args.cv_only,
        settings=settings,
        instances=args.cv_instances,
        repeats=args.repeats,
        n_draw=args.cv_draws,
        seed=args.seed,
        progress=progress,
    )
    total = time.perf_counter() - t0
    per = [f.fit_s + f.sim_s for f in folds]
    print(
        f"\n# Leave-one-out cross-validation (SIMULATED vs the authors' records; hit radius, S1-S6)\n\n"
        f"{len(folds)} folds; fit on every record {full_s:.0f} s; per fold {min(per, default=0):.0f}-"
        f"{max(per, default=0):.0f} s (mean {sum(per) / max(len(per), 1):.0f} s); total {total:.0f} s. "
        f"Each fold: refit ({settings.refine_rounds} refinement round, {settings.replay_reps} replay per "
        f"step; "
        f"the profiles use 3 and 4), {args.cv_instances} simulated instances x {args.repeats} repeats, "
        f"{args.cv_draws} predictive draws. Log scores in nats (higher is better).\n"
    )
    print(md_table(cv.cv_table(folds)))
    notes = [f"- {f.unit.kind} {f.unit.name}: {f.note}" for f in folds if f.note]
    if notes:
        print("\nNotes:\n" + "\n".join(notes))
    pvals = cv.scene_pvalues(folds)
    target = Path(args.cv_write) if args.cv_write else None
    if target is None and set(pvals) == set(cv.SYNTHETIC_TASKS) and args.cv_only is None:
        target = scene_check.DATA
    if target is not None:
        scene_check.write(target, pvals, records=data.digest, table=cv.fold_records(folds))
        print(f"\nper-scene p-values -> {target}")
    return 0


def _diff_lines(a: str, b: str) -> int:
    """Lines added or removed between two texts."""
    import difflib

    return sum(
        1
        for line in difflib.unified_diff(a.splitlines(), b.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    )


if __name__ == "__main__":
    sys.exit(main())
