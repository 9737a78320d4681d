"""A refused invocation runs nothing and leaves nothing: a multirun checks every job before job 0, the
one-item shorthands do not silently lose to their lists, and no empty run folder stays behind."""

from __future__ import annotations

import pytest
from hydra import initialize_config_dir
from omegaconf import OmegaConf

from dvoc_bench.app.prevalidate import BASIC_SWEEPER, first_bad_job, job_overrides
from dvoc_bench.core.declare import ConfigError
from dvoc_bench.models.config import default_conf_dir
from dvoc_bench.runner.compose import check_shorthands, quick_setup
from dvoc_bench.runner.settings import register_defaults
from tests.support import run_cli


def _sweep(*task: str, sweeper: str = BASIC_SWEEPER):
    return OmegaConf.create({"hydra": {"sweeper": {"_target_": sweeper, "params": None},
                                       "overrides": {"task": list(task)}}})  # fmt: skip


def test_the_jobs_are_the_basic_sweepers():
    assert job_overrides(_sweep("alphas=[decay],[adaptive]", "seed=1,2")) == [
        ["alphas=[decay]", "seed=1"],
        ["alphas=[decay]", "seed=2"],
        ["alphas=[adaptive]", "seed=1"],
        ["alphas=[adaptive]", "seed=2"],
    ]
    assert job_overrides(_sweep("seed=1,2", sweeper="hydra_plugins.x.OptunaSweeper")) is None


@pytest.mark.parametrize(
    ("task", "line", "job"),
    [
        (["alphas=[decay],[teleport]", "smoke=true"], "alphas: unknown value 'teleport'", 1),
        (["methods=[dvoc],[teleport]", "smoke=true"], "methods: unknown value 'teleport'", 1),
        (["seed=1,abc", "smoke=true"], "seed: must be a whole number", 1),
        (["smoke=true", "tasks=[S1],[S9]"], "tasks: unknown value 'S9'", 1),
        (["task=S1,S2", "tasks=[S3]"], "task: given together with tasks", 0),
    ],
)
def test_a_bad_later_job_is_found_before_any_job_runs(task, line, job):
    register_defaults()
    with initialize_config_dir(config_dir=str(default_conf_dir()), version_base="1.3"):
        bad = first_bad_job(_sweep(*task), "config")
        assert bad is not None and bad.startswith(line), bad
        assert f"(job {job}: " in bad  # the first bad job is named
        assert first_bad_job(_sweep("alphas=[decay],[adaptive]", "smoke=true"), "config") is None


def test_the_check_renders_the_drawn_tasks_but_no_page_and_starts_nothing(monkeypatch):
    """Issue 55: a multirun of variations checked its jobs by rendering every job's pages twice (the varied
    screen and its unvaried twin) and left each job's browser running through the whole multirun. The
    check renders the drawn tasks only (a canvas over scenes.max_side is still refused before job 0), no
    page, and closes every job's registry."""
    from dvoc_bench.scenes import SceneRegistry

    rendered: list[tuple[SceneRegistry, str]] = []  # the registries themselves: kept alive, their ids unique
    closed: list[SceneRegistry] = []
    snapshot, close = SceneRegistry.snapshot, SceneRegistry.close
    monkeypatch.setattr(SceneRegistry, "snapshot",
                        lambda self, t: rendered.append((self, t)) or snapshot(self, t))  # fmt: skip
    monkeypatch.setattr(SceneRegistry, "close", lambda self: closed.append(self) or close(self))
    register_defaults()
    with initialize_config_dir(config_dir=str(default_conf_dir()), version_base="1.3"):
        ok = _sweep("tasks=[S1,W1]", "web.zoom=1,1.5,2", "web.device_scale_factor=2", "wording=given,visual",
                    "models=[sim-ideal]", "starts=random:1")  # fmt: skip
        assert first_bad_job(ok, "config") is None
        assert {t for _, t in rendered} == {"S1"}  # the drawn task of each job, never the page
        jobs = {id(r) for r, _ in rendered}
        assert len(jobs) == 6 and jobs <= {id(r) for r in closed}  # each closed
        bad = first_bad_job(_sweep("tasks=[W1]", "web.zoom=1.5,3", "models=[sim-ideal]"), "config")
        assert bad is not None and bad.startswith("web.zoom: ") and "(job 1: " in bad, bad
        capped = _sweep("tasks=[S1]", "scenes.max_side=4096,100", "models=[sim-ideal]")
        small = first_bad_job(capped, "config")
        assert small is not None and "exceeds scenes.max_side = 100" in small and "(job 1: " in small, small


@pytest.mark.parametrize(
    "overrides",
    [["task=S1", "tasks=[S2]"], ["models=[sim-ideal]", "model=sim-ideal"], ["+task=S1", "tasks=[S2]"]],
)
def test_a_shorthand_with_its_list_is_refused_in_one_line(overrides):
    with pytest.raises(ConfigError) as e:
        quick_setup(overrides)
    one = overrides[0].lstrip("+").split("=")[0].rstrip("s")
    assert str(e.value).startswith(f"{one}: given together with {one}s (")
    assert "\n" not in str(e.value)


def test_a_shorthand_alone_or_with_other_keys_is_fine():
    check_shorthands(["task=S1", "tasks_extra=1", "model.pricing={a: 1}", "models=[x]"])
    check_shorthands(["model=null", "models=[x]"])
    assert quick_setup(["task=S3", "model=sim-ideal"]).swept.tasks == ("S3",)


# ------------------------------------------------------------------------------------------- end to end


@pytest.mark.e2e
def test_a_multirun_with_a_typo_in_a_later_job_runs_nothing(tmp_path):
    p = run_cli("-m", "alphas=[decay],[teleport]", "run.quiet=true", cwd=tmp_path)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("config error: alphas: unknown value 'teleport'"), lines
    assert "(job 1: alphas=[teleport]" in lines[0]
    assert not (tmp_path / "runs").exists()  # no sweep folder, no job 0 (its 270 trials ran before)
    assert "run dir" not in p.stdout


@pytest.mark.e2e
@pytest.mark.parametrize(
    "args",
    [["seed=abc"], ["methods=[teleport]"], ["task=S1", "tasks=[S2]"], ["loop.eps=3"], ["model=gpt-9"]],
    ids=["bad-value", "unknown-method", "shorthand-conflict", "unknown-key", "unknown-model"],
)
def test_a_refused_run_leaves_no_run_folder(tmp_path, args):
    p = run_cli(*args, "run.quiet=true", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("config error: "), p.stderr[-2000:]
    assert list(tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))
