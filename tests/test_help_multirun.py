"""``python -m dvoc_bench --help`` is the app's own help; multirun works with the default sweep folder.

Hydra 1.3 resolves ``hydra.sweep.dir`` before any HydraConfig exists, so ``${hydra:runtime.choices...}``
there broke every ``-m`` command that did not pass ``hydra.sweep.dir=``; these runs pass none and check
where the jobs land (cwd = a temporary folder, so ``runs/`` is created there).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support import ROOT, run_cli

pytestmark = pytest.mark.e2e


def run(args: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    return run_cli(*args, cwd=cwd, timeout=timeout, full_error=True)


# ------------------------------------------------------------------------------------------------- --help


def test_help_is_the_apps_help_not_a_config_dump(tmp_path):
    p = run(["--help"], tmp_path, timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("dvoc-bench: UI grounding with vision-language models")
    for text in ("Main overrides", "models=[a,b]", "alphas=[...]", "smoke=true", "-m KEY=A,B"):
        assert text in out, text
    presets = sorted(x.stem for x in (ROOT / "conf" / "experiment").glob("*.yaml"))
    models = sorted(x.stem for x in (ROOT / "conf" / "model").glob("*.yaml"))
    assert presets and all(f"\n  {name} " in out for name in presets)
    assert all(name in out for name in models)
    for task in ("S1", "S6", "W1", "W5"):
        assert f"\n  {task} " in out
    assert "Click the Edit button in Bob Martinez's row" in out  # the task's own instruction
    for cmd in ("report RUN_DIR", "dvoc_bench.serve", "dvoc_bench.calibrate", "dvoc_bench.bench", "doctor"):
        assert f"python -m {cmd}" in out or cmd in out, cmd
    # not Hydra's generic text, and no config dump
    assert "is powered by Hydra" not in out and "== Config ==" not in out
    assert "crosshair_color" not in out and "overlay_style:" not in out and "max_in_flight: 16" not in out


def test_the_door_and_hydra_render_one_page(tmp_path):
    """The door answers --help itself; an override of hydra.help goes through Hydra's help, same page."""
    fast = run(["--help"], tmp_path, timeout=60)
    slow = run(["--help", "hydra.help.app_name=dvoc-bench"], tmp_path, timeout=120)
    assert fast.returncode == slow.returncode == 0, slow.stderr
    assert fast.stdout == slow.stdout


# ------------------------------------------------------------------------------------------------ multirun


def _jobs(sweep: Path) -> list[Path]:
    return sorted(p for p in sweep.iterdir() if p.is_dir() and (p / "trials.jsonl").is_file())


@pytest.mark.parametrize(
    ("args", "folder"),
    [
        (["alphas=[decay],[adaptive]"], "quick"),
        (["experiment=ablation_alpha", "alphas=[decay],[constant]"], "ablation_alpha"),
        (["alphas=[decay],[adaptive]", "hydra/launcher=joblib"], "quick"),
        (["experiment=baselines,frames"], "baselines+frames"),  # the preset itself swept: one folder
    ],
    ids=["basic", "preset", "joblib", "swept-preset"],
)
def test_multirun_lands_in_one_sweep_folder_without_hydra_sweep_dir(tmp_path, args, folder):
    p = run(["-m", *args, "smoke=true", "run.quiet=true"], tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "HydraConfig was not set" not in p.stderr
    sweeps = list((tmp_path / "runs" / folder / "multirun").iterdir())
    assert len(sweeps) == 1, list((tmp_path / "runs").rglob("*"))
    sweep = sweeps[0]
    assert (sweep / "multirun.yaml").is_file()
    jobs = _jobs(sweep)
    assert [j.name for j in jobs] == ["0", "1"]
    assert sorted((tmp_path / "runs").iterdir()) == [tmp_path / "runs" / folder]  # nothing elsewhere
    for j in jobs:
        assert f"run dir: {j}" in p.stdout


def test_a_single_run_is_named_after_its_preset(tmp_path):
    p = run(["experiment=baselines", "smoke=true", "run.quiet=true"], tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    (run_dir,) = list((tmp_path / "runs" / "baselines").iterdir())
    assert (run_dir / "trials.jsonl").is_file()
