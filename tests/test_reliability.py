"""Nothing mixed, nothing silent: the resume fingerprint, the end-of-run summary and its exit codes,
Ctrl-C, a multirun's worst code, an unwritable run dir, knobs no method uses (issue: reliability)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dvoc_bench.core.rundir import read_jsonl
from tests.support import HANG_S, ROOT, run_cli

pytestmark = pytest.mark.e2e

QUICK = ("smoke=true", "run.quiet=true")


def test_resume_with_other_settings_is_refused_and_changes_nothing(tmp_path):
    """Issue failure 2: resuming a finished quick dir with seed=1 methods=[dvoc] mixed 270 + 120 trials."""
    run = tmp_path / "run"
    assert run_cli(*QUICK, f"hydra.run.dir={run}").returncode == 0

    def files() -> dict[Path, bytes]:  # the lock file holds the last holder's pid: not the run's content
        return {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and ".hydra" not in p.parts
                and p.name != ".lock"}  # fmt: skip

    before = files()
    r = run_cli(*QUICK, "seed=1", "methods=[dvoc]", f"hydra.run.dir={run}")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(
        "config error: hydra.run.dir: this run was made with other settings (seed: 0 -> 1)"
    )
    assert files() == before
    assert len(list((run / ".hydra").iterdir())) == 1  # the refused invocation left no folder either
    r = run_cli(*QUICK, "loop.epsilon=20", "oneshot.max_attempts=3", f"hydra.run.dir={run}")
    assert (
        r.returncode == 2 and "loop.epsilon: 30.0 -> 20.0" in r.stderr and "oneshot.max_attempts" in r.stderr
    )


def test_resume_may_run_a_subset_and_adds_trials_only_on_purpose(tmp_path):
    run = tmp_path / "run"
    assert run_cli(*QUICK, "methods=[dvoc,oneshot]", f"hydra.run.dir={run}").returncode == 0
    planned = [p["trial_key"] for p in read_jsonl(run / "plan.jsonl")]
    # a subset: allowed, says what it leaves out, and the plan keeps the whole run
    r = run_cli(*QUICK, "methods=[dvoc]", f"hydra.run.dir={run}")
    assert (
        r.returncode == 0 and "not run now: methods: oneshot" in r.stdout and "0 run by this call" in r.stdout
    )
    assert [p["trial_key"] for p in read_jsonl(run / "plan.jsonl")] == planned
    # more trials: refused unless asked for; then the plan grows and says so
    r = run_cli(*QUICK, "methods=[dvoc,oneshot,centre]", f"hydra.run.dir={run}")
    assert r.returncode == 2 and "methods +centre" in r.stderr and "resume.allow_new_trials=true" in r.stderr
    r = run_cli(
        *QUICK, "methods=[dvoc,oneshot,centre]", "resume.allow_new_trials=true", f"hydra.run.dir={run}"
    )
    assert r.returncode == 0 and "plan grew (resume.allow_new_trials): methods: centre" in r.stdout
    plan = [p["trial_key"] for p in read_jsonl(run / "plan.jsonl")]
    trials = list(read_jsonl(run / "trials.jsonl"))
    assert plan[: len(planned)] == planned and len(plan) == len(trials) > len(planned)
    assert len({t["trial_key"] for t in trials}) == len(trials)
    # free to change on resume: run.*, scheduler.*, retry.*, cache.*, resume.*
    r = run_cli(*QUICK, "methods=[dvoc,oneshot,centre]", "run.max_in_flight=2", "retry.transient_retries=1",
                "scheduler.rate_split=2", f"hydra.run.dir={run}")  # fmt: skip
    assert r.returncode == 0, r.stderr
    meta = json.loads((run / "run_meta.json").read_text())
    assert meta["lists"]["methods"] == ["dvoc", "oneshot", "centre"] and meta["settings"]["seed"] == 0


@pytest.fixture
def dead_server_models(tmp_path):
    """A model config pointing at a local port nobody listens on (every call fails: connection)."""
    d = tmp_path / "models"
    d.mkdir()
    cfg = yaml.safe_load((ROOT / "conf" / "model" / "local-sim.yaml").read_text())
    cfg["api_base"] = "http://127.0.0.1:9/v1"  # the discard port: connection refused
    (d / "local-sim.yaml").write_text(yaml.safe_dump(cfg))
    (d / "sim-ideal.yaml").write_text((ROOT / "conf" / "model" / "sim-ideal.yaml").read_text())
    return d


def test_a_run_where_every_call_fails_says_why_and_exits_3(tmp_path, dead_server_models):
    """Issue failure 7: every model call failed, exit 0, '-' in every column and no reason."""
    r = run_cli(
        "models=[local-sim]", f"paths.models={dead_server_models}", "tasks=[S1]", "methods=[oneshot]",
        "starts=random:2", "retry.transient_retries=0", "cache.enabled=false", "run.quiet=true",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert r.returncode == 3, r.stdout + r.stderr
    assert "trials: 2 (0 ok, 2 error, 0 skipped)" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("error: connection x2: "))
    assert len(line) > len("error: connection x2: ") + 10  # the most common message, not empty
    assert "model calls: 2 (2 asked " in r.stdout and "; 0 answered by the response cache)" in r.stdout


def test_model_free_runs_exit_0_and_the_cache_line_counts_cached_calls(tmp_path, sim_url):
    r = run_cli("methods=[centre,random]", "run.quiet=true", f"hydra.run.dir={tmp_path / 'a'}")
    assert r.returncode == 0 and "model calls: 0 (0 asked a provider; 0 answered" in r.stdout
    common = ("model=local-sim", "tasks=[S2]", "methods=[oneshot]", "starts=random:2", "run.quiet=true",
              f"cache.dir={tmp_path / 'cache'}", "cache.enabled=true")  # fmt: skip
    first = run_cli(*common, f"hydra.run.dir={tmp_path / 'b'}")
    again = run_cli(*common, f"hydra.run.dir={tmp_path / 'c'}")
    calls = int(first.stdout.split("model calls: ")[1].split()[0])
    assert f"model calls: {calls} ({calls} asked local-sim; 0 answered by the response cache)" in first.stdout
    assert calls > 0 and f"(0 asked a provider; {calls} answered by the response cache)" in again.stdout


SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]


@pytest.mark.parametrize(("sig", "code"), SIGNALS, ids=["ctrl-c", "sigterm"])
def test_ctrl_c_saves_what_finished_prints_the_resume_command_and_that_command_finishes(
    tmp_path, slow_sim, sig, code
):
    run = tmp_path / "run"
    # 20 trials of about 0.4 s, 2 at a time: the sweep runs about 4 s after its first trial is written, time
    # for the signal to land mid-sweep on a loaded machine (with 8, CI once saw the sweep end first)
    args = ["model=local-sim", "tasks=[S1,S2]", "methods=[dvoc]", "starts=random:10", "run.max_in_flight=2",
            "cache.enabled=false", "run.quiet=true", f"hydra.run.dir={run}"]  # fmt: skip
    env = {**os.environ, "HYDRA_FULL_ERROR": "0", "DVOC_SIM_URL": slow_sim}
    # as from an interactive terminal: SIGINT at its default. A process started in the background of a
    # non-interactive shell (`bash .ci/run &`) ignores SIGINT, so does what it starts, and Python then
    # installs no Ctrl-C handler; one of the two pytest workers was seen so, the other not (this test then
    # passed or failed by which worker ran it)
    p = subprocess.Popen([sys.executable, "-m", "dvoc_bench", *args], cwd=ROOT, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # fmt: skip
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(1 for _ in read_jsonl(run / "trials.jsonl")) < 1:
        time.sleep(0.2)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, out + err
    assert "Traceback" not in err
    done = list(read_jsonl(run / "trials.jsonl"))
    assert 0 < len(done) < 20
    cmd = err.split("resume with: ")[1].strip()
    assert cmd.startswith("python -m dvoc_bench ") and f"hydra.run.dir={run}" in cmd
    r = subprocess.run(cmd.replace("python -m", f"{sys.executable} -m", 1), shell=True, cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=HANG_S)  # fmt: skip
    assert r.returncode == 0, r.stderr
    trials = list(read_jsonl(run / "trials.jsonl"))
    assert len(trials) == 20 == len({t["trial_key"] for t in trials})
    assert {t["trial_key"] for t in done} <= {t["trial_key"] for t in trials}


def test_a_multirun_runs_every_job_and_exits_with_the_worst_code(tmp_path, dead_server_models):
    r = run_cli(
        "-m", "models=[local-sim],[sim-ideal]", f"paths.models={dead_server_models}", "tasks=[S1]",
        "methods=[oneshot]", "starts=random:1", "retry.transient_retries=0", "cache.enabled=false",
        "run.quiet=true", f"hydra.sweep.dir={tmp_path / 'sweep'}",
    )  # fmt: skip
    assert r.returncode == 3, r.stdout + r.stderr
    assert (tmp_path / "sweep" / "1" / "trials.jsonl").exists()  # the second job ran after the failing one


def test_an_unwritable_run_dir_is_one_line(tmp_path):
    r = run_cli("methods=[centre]", "hydra.run.dir=/proc/dvoc-cannot-write")
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("config error: hydra.run.dir: "), (
        r.stderr
    )


def test_knobs_no_method_uses_are_warned_in_one_line(tmp_path):
    r = run_cli("methods=[oneshot]", "alphas=[decay,constant]", "detector=cv", "smoke=true", "run.quiet=true",
                f"hydra.run.dir={tmp_path}")  # fmt: skip
    assert r.returncode == 0
    warn = [ln for ln in (r.stdout + r.stderr).splitlines() if "has no effect" in ln]
    assert len(warn) == 2 and any("alphas=" in w for w in warn) and any("detector=cv" in w for w in warn)


def test_the_calls_line_says_which_provider_was_asked():
    """Issue 33 item 9: after 39 real HTTP calls the line said "no provider asked" (it meant the cached
    ones); it now says how many calls asked each provider and how many the cache answered."""
    from dvoc_bench.runner.summary import calls_line

    trials = [
        {"provider": "local-sim", "model_calls": 30, "cached_calls": 0},
        {"provider": "local-sim", "model_calls": 9, "cached_calls": 4},
        {"provider": "simulator", "model_calls": 2, "cached_calls": 0},
        {"provider": "gemini", "model_calls": 3, "cached_calls": 3},
    ]
    assert calls_line(trials) == (
        "model calls: 44 (35 asked local-sim, 2 asked simulator; 7 answered by the response cache)"
    )
    assert calls_line(trials[3:]) == "model calls: 3 (0 asked a provider; 3 answered by the response cache)"


@pytest.mark.e2e
def test_a_killed_run_leaves_no_exit_code_file_behind(tmp_path):
    """The multirun exit-code file lives only as long as the process (Linux: an unlinked file reached
    through /proc): a run killed with SIGKILL leaves nothing in the temporary folder."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    p = subprocess.Popen(
        [sys.executable, "-m", "dvoc_bench", "model=sim-ideal", "tasks=[S1]",
         f"hydra.run.dir={tmp_path / 'run'}"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
    )  # fmt: skip
    deadline = time.monotonic() + HANG_S
    while not (tmp_path / "run").exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # the job has started: the exit-code file was made before it
    p.send_signal(signal.SIGKILL)
    assert p.wait() == -signal.SIGKILL  # killed while it ran, not ended on its own
    assert (tmp_path / "run").exists()
    assert not [f.name for f in tmp.iterdir() if f.name.startswith("dvoc-exit-codes-")]
