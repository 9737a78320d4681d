"""Where a number came from: a real-model sweep records, per call, the model id the server says answered,
its ``system_fingerprint`` and the serving engine and version vLLM's ``GET /version`` states, through the
real path (LiteLLM -> HTTP on loopback -> a provider written here); a server that says nothing leaves them
empty; the leaderboard's entry names them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.models.litellm_client import server_engine
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.support import Answer, chat_completion, fake_openai

CONFIG = """\
name: served
kind: litellm
model_id: hosted_vllm/served-vlm
provider: vllm
api_base: {url}
coord_frame: norm1000
params: {{}}
send_seed: true
"""


def _sweep(tmp_path: Path, version: str | None, fingerprint: str | None) -> list[dict[str, Any]]:
    def answer(body: dict[str, Any], headers: Any) -> Answer:
        usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
        out = chat_completion("org/served-vlm-0425", tool=("click_at", '{"x": 500, "y": 500}'), usage=usage)
        if fingerprint is not None:
            out["system_fingerprint"] = fingerprint
        return 200, out, {}

    with fake_openai(answer) as (url, server):
        server.version = version
        models = tmp_path / "model"
        models.mkdir(exist_ok=True)
        (models / "served.yaml").write_text(CONFIG.format(url=url), encoding="utf-8")
        setup = quick_setup(["models=[served]", f"paths.models={models}", "tasks=[S1]", "methods=[oneshot]",
                             "cache.enabled=false", "retry.transient_retries=0"])  # fmt: skip
        run_sweep(setup, tmp_path / "run")
    return list(read_jsonl(tmp_path / "run" / "steps.jsonl"))


def test_every_call_records_who_served_it(tmp_path):
    steps = _sweep(tmp_path, "0.8.5", "fp_7a1c")
    assert steps and all(s["engine"] == "vllm 0.8.5" for s in steps)
    assert all(s["system_fingerprint"] == "fp_7a1c" for s in steps)
    assert all(str(s["served_model"]).endswith("org/served-vlm-0425") for s in steps)

    from dvoc_bench.analysis import load_runs
    from dvoc_bench.analysis.leaderboard import _extras

    runs = load_runs(tmp_path / "run")
    t = runs.trials.assign(_hit=runs.trials["hit"].astype(bool))
    eng = _extras(t, runs.steps)["engine"]
    assert eng["engine"] == "vllm 0.8.5" and eng["system_fingerprint"] == "fp_7a1c"


def test_a_server_that_says_nothing_leaves_them_empty(tmp_path):
    steps = _sweep(tmp_path, None, None)
    assert steps and all(s["engine"] is None and s["system_fingerprint"] is None for s in steps)


def test_server_engine_reads_only_a_version_object():
    assert server_engine("not a url") is None
    assert server_engine("http://127.0.0.1:9/v1", timeout_s=0.5) is None  # nothing listens there


def test_what_a_server_says_of_itself_is_bounded_and_always_writable(tmp_path):
    """A lone surrogate or a huge string in the served model id, the fingerprint or the version never stops
    the sweep: bounded, redacted, U+FFFD for what cannot be encoded (found by a cold review)."""
    steps = _sweep(tmp_path, "0.8.5\ud800", "fp\udfff" + "x" * 10_000)
    raw = (tmp_path / "run" / "steps.jsonl").read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert steps and all(s["parse_status"] == "ok" for s in steps)
    assert all(s["engine"] == "vllm 0.8.5\ufffd" for s in steps)
    fps = [s["system_fingerprint"] for s in steps]
    assert all(fp.startswith("fp\ufffd") and len(fp) <= 200 for fp in fps)
    assert "\\ud800" not in raw
