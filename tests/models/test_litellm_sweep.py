"""The real path end to end: sweeps through LiteLLM -> HTTP -> dvoc_bench.serve match the in-process ones."""


import pytest

from dvoc_bench.core.rundir import read_jsonl
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.models.factory import build_model
from dvoc_bench.models.simulator import SimProfile, SimulatedModel
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import plan, run_sweep

# what legitimately differs between transports: timing, and the cost (the simulator says 0.0 itself;
# over HTTP LiteLLM does not know the price of a local model, so it is unknown: None)
VOLATILE = {"wall_s", "finished_at", "latency_s", "retry_wait_s", "cost_usd", "cost_source", "served_model",
            "system_fingerprint", "engine"}  # fmt: skip


def _run(run_dir, setup, specs, factory):
    run_sweep(setup, run_dir, factory, specs=specs)
    trials = {t["trial_key"]: t for t in read_jsonl(run_dir / "trials.jsonl")}
    steps = {(s["trial_key"], s["index"]): s for s in read_jsonl(run_dir / "steps.jsonl")}
    frames = {p.name: p.read_bytes() for p in (run_dir / "frames").iterdir()}
    return trials, steps, frames


def _strip(d):
    return {k: v for k, v in d.items() if k not in VOLATILE}


def in_process(name, truth):
    cfg = load_model_config(name, default_conf_dir() / "model")
    return SimulatedModel(cfg.name, SimProfile.from_mapping(cfg.sim), truth)


def _over_http_and_in_process(tmp_path, setup, specs, server):
    """The same plan through LiteLLM -> HTTP -> the server and through the in-process simulator of the
    server's profile; with the number of requests the server answered."""
    before = server.faults.counts["ok"]
    http = _run(
        tmp_path / "http", setup, specs, lambda m, gate: build_model(m, setup.registry.truth, wrap=gate)
    )
    calls = server.faults.counts["ok"] - before
    local = _run(
        tmp_path / "local",
        setup,
        specs,
        lambda m, gate: gate(in_process("sim-gemma-4-26b", setup.registry.truth)),
    )
    return http, local, calls


@pytest.mark.e2e
def test_sweep_over_http_matches_the_in_process_simulator(sim_url, tmp_path):
    url, server = sim_url
    setup = quick_setup(
        [
            "model=local-sim",
            "tasks=[S1,S3,S5]",
            "methods=[dvoc,oneshot]",
            "overlays=[full,none]",
            "predict_modes=[relative,absolute]",
            "starts=random:2",
            "protocols=[v1,paper]",
        ]
    )
    (cfg,) = setup.models
    assert cfg.api_base == url and cfg.simulated and cfg.kind == "litellm"
    specs = plan(setup)
    http, local, calls = _over_http_and_in_process(tmp_path, setup, specs, server)
    trials_h, steps_h, frames_h = http
    trials_l, steps_l, frames_l = local
    assert len(trials_h) == len(specs) == len(trials_l)
    assert calls == len(steps_h) > 100  # every step was a real HTTP request
    assert {t["status"] for t in trials_h.values()} == {"ok"}
    assert {_k: _strip(t) for _k, t in trials_h.items()} == {_k: _strip(t) for _k, t in trials_l.items()}
    assert steps_h.keys() == steps_l.keys()
    for k in steps_h:
        assert _strip(steps_h[k]) == _strip(steps_l[k]), k
    assert frames_h == frames_l  # the very images that were sent
    # both tools were exercised, and every record says the answers are simulated
    tools = {c["name"] for s in steps_h.values() for c in s["reply_tool_calls"]}
    assert tools == {"report_offset", "click_at"}
    assert all(t["simulated"] for t in trials_h.values())
    # over HTTP the usage comes from the server's `usage`, and the cost is unknown rather than invented
    s0 = next(iter(steps_h.values()))
    assert (s0["tokens_in"], s0["tokens_out"]) == (1100, 40)
    assert all(s["cost_usd"] is None for s in steps_h.values())
    assert all(s["cost_usd"] == 0.0 for s in steps_l.values())


def test_a_downscaled_image_still_reaches_the_target(sim_url, tmp_path):
    """image.max_side: the sim sees a 400x300 image; a norm1000 answer needs no undoing and DVOC converges."""
    setup = quick_setup(["model=local-sim", "tasks=[S1,S4]", "methods=[dvoc,oneshot]", "starts=random:2"])
    from dvoc_bench.models.options import ImageOptions

    specs = plan(setup)
    small = ImageOptions(max_side=400)
    trials, steps, _ = _run(
        tmp_path, setup, specs, lambda m, gate: build_model(m, setup.registry.truth, image=small, wrap=gate)
    )
    assert {t["status"] for t in trials.values()} == {"ok"}
    hit = sum(t["hit"] for t in trials.values()) / len(trials)
    assert hit >= 0.75


def test_zoom_over_http_sends_its_crops_and_matches_the_in_process_simulator(sim_url, tmp_path):
    """A zoom round's crop rides in the request body (``dvoc_crop``, simulated configs only) so the local
    server maps its truth through it as the in-process simulator does; without it the server would take
    the crop for the whole screen and answer elsewhere."""
    url, server = sim_url
    setup = quick_setup(
        ["model=local-sim", "tasks=[S1,S2,S6]", "methods=[zoom,zoom_dvoc]", "starts=random:1"]
    )
    specs = plan(setup)
    http, local, _ = _over_http_and_in_process(tmp_path, setup, specs, server)
    trials_h, steps_h, _ = http
    trials_l, steps_l, _ = local
    assert any(s["crop"] is not None for s in steps_h.values())  # zoom rounds were sent
    assert {t["status"] for t in trials_h.values()} == {"ok"}
    assert {k: _strip(t) for k, t in trials_h.items()} == {k: _strip(t) for k, t in trials_l.items()}
    for k in steps_h:
        assert _strip(steps_h[k]) == _strip(steps_l[k]), k
