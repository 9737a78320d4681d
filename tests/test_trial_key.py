"""The trial key sees every setting (issue 47): ``TrialSpec.key()`` hashes every field of the spec, every
setting that can change a trial reaches the spec, and the keys of records made before the new fields are
unchanged.

The schema walk cannot go stale: every leaf of the settings schema is either swept here (and must move a key)
or listed in ``UNKEYED_SETTINGS`` with its reason; a new setting fails the walk until it is one or the other.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest

from dvoc_bench.core.geometry import Size
from dvoc_bench.core.records import UNKEYED_SPEC_FIELDS, TrialSpec
from dvoc_bench.models.config import default_conf_dir
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.plan import UNKEYED_SETTINGS, build_plan, unkeyed_reason
from dvoc_bench.runner.runmeta import _flatten
from dvoc_bench.runner.settings import Settings

BASE = (
    "models=[sim-ideal]",
    "tasks=[S1,S2]",
    "methods=[dvoc,oneshot,centre,som,zoom,zoom_dvoc,som_dvoc]",
    "alphas=[decay,adaptive]",
    "overlays=[full,none]",
    "starts=random:2",
)
"""A sweep every setting can reach: each method, the adaptive schedule, an overlay and none."""

KINDS = ("web", "desktop", "miniwob")
"""The kinds a setting may reach only on its own kind of screen (``web.verify_click``, ``desktop.*``)."""


def keys_of(*overrides: str) -> frozenset[str]:
    """Every trial key of :data:`BASE` with ``overrides``, planned on each kind of scene (unrendered: a fixed
    scene hash per task, so only the settings move the keys)."""
    given = {o.split("=")[0] for o in overrides}
    base = [b for b in BASE if b.split("=")[0].removesuffix("s") not in given]  # task=X replaces tasks=[..]
    setup = quick_setup([*base, *overrides])
    out: set[str] = set()
    for kind in KINDS:
        scenes = {t: (f"hash-{t}", Size(800, 600)) for t in setup.swept.tasks}
        out |= {p.trial_key for p in build_plan(setup, scenes, dict.fromkeys(setup.swept.tasks, kind))}
    drags = setup.swept.tasks[:1]  # the first task as a two-point (drag) task: the knobs of drags move it
    scenes = {t: (f"hash-{t}", Size(800, 600)) for t in setup.swept.tasks}
    out |= {
        p.trial_key for p in build_plan(setup, scenes, dict.fromkeys(setup.swept.tasks, "dataset"), drags)
    }
    return frozenset(out)


SWEPT: dict[str, tuple[str, ...]] = {
    "models": ("models=[sim-gemma-4-26b]",),
    "model": ("model=sim-ideal", "model.sim.noise.scale_px=3.0"),
    "tasks": ("tasks=[S3]",),
    "task": ("task=S4",),
    "methods": ("methods=[dvoc]",),
    "alphas": ("alphas=[constant]",),
    "overlays": ("overlays=[crosshair]",),
    "predict_modes": ("predict_modes=[absolute]",),
    "protocols": ("protocols=[paper]",),
    "repeats": ("repeats=2",),
    "starts": ("starts=random:3",),
    "seed": ("seed=7",),
    "declare_frame": ("declare_frame=norm1000",),
    "loop.epsilon": ("loop.epsilon=20",),
    "loop.threshold": ("loop.threshold=0.7",),
    "loop.window": ("loop.window=3",),
    "loop.max_iterations": ("loop.max_iterations=10",),
    "loop.alpha_constant": ("loop.alpha_constant=0.25",),
    "loop.hit_radius_min": ("loop.hit_radius_min=20",),
    "adaptive.start": ("adaptive.start=0.25",),
    "adaptive.shrink": ("adaptive.shrink=0.25",),
    "adaptive.grow": ("adaptive.grow=2.0",),
    "adaptive.floor": ("adaptive.floor=0.25",),
    "adaptive.cap": ("adaptive.cap=0.75",),
    "adaptive.progress": ("adaptive.progress=0.5",),
    "oneshot.max_attempts": ("oneshot.max_attempts=3",),
    "oneshot.retry_rule": ("oneshot.retry_rule=within_eps",),
    "dvoc.drag_start": ("dvoc.drag_start=model",),
    "zoom.factor": ("zoom.factor=3.0",),
    "zoom.rounds": ("zoom.rounds=1",),
    "zoom.min_crop": ("zoom.min_crop=128",),
    "overlay_style.crosshair_color": ("overlay_style.crosshair_color=[0,255,0]",),
    "overlay_style.crosshair_width": ("overlay_style.crosshair_width=5",),
    "overlay_style.crosshair_arm": ("overlay_style.crosshair_arm=25",),
    "overlay_style.circle_color": ("overlay_style.circle_color=[0,0,0]",),
    "overlay_style.circle_radius": ("overlay_style.circle_radius=40",),
    "overlay_style.circle_width": ("overlay_style.circle_width=1",),
    "overlay_style.label_fg": ("overlay_style.label_fg=[0,0,0]",),
    "overlay_style.label_bg": ("overlay_style.label_bg=[255,255,255]",),
    "overlay_style.label_font_size": ("overlay_style.label_font_size=16",),
    "overlay.label_placement": ("overlay.label_placement=away",),
    "sampling": ("+sampling.temperature=0.7",),
    "image.max_side": ("image.max_side=512",),
    "image.max_pixels": ("image.max_pixels=200000",),
    "web.verify_click": ("web.verify_click=true",),
    "web.device": ("web.device=Pixel 7",),
    "web.custom_device.width": ("web.device=custom", "web.custom_device.width=360"),
    "web.custom_device.height": ("web.device=custom", "web.custom_device.height=700"),
    "web.custom_device.device_scale_factor": ("web.device=custom", "web.custom_device.device_scale_factor=3"),
    "web.custom_device.is_mobile": ("web.device=custom", "web.custom_device.is_mobile=false"),
    "web.custom_device.has_touch": ("web.device=custom", "web.custom_device.has_touch=false"),
    "desktop.verify_click": ("desktop.verify_click=true",),
    "episode.scale": ("episode.scale=2",),
    "episode.max_steps": ("episode.max_steps=5",),
    "episode.wall_s": ("episode.wall_s=60",),
    "detector": ("detector=cv",),
    "absent.variant": ("absent.variant=ask_missing",),
    "absent.offer": ("absent.offer=true",),
    "web.zoom": ("web.zoom=1.5",),
    "web.device_scale_factor": ("web.device_scale_factor=2",),
    "web.viewport": ("web.viewport=[800,600]",),
    "web.orientation": ("web.orientation=portrait",),
    "web.color_scheme": ("web.color_scheme=dark",),
    "web.font_scale": ("web.font_scale=1.5",),
    "desktop.gtk_theme": ("desktop.gtk_theme=dark",),
    "desktop.gdk_scale": ("desktop.gdk_scale=2",),
    "desktop.gdk_dpi_scale": ("desktop.gdk_dpi_scale=1.5",),
    "wording": ("wording=relational",),
}
"""Every keyed leaf of the settings schema and an override that changes it."""


def leaves() -> list[str]:
    """Every leaf of the settings schema (an empty mapping or ``None`` block is a leaf of its own)."""
    return sorted(_flatten(Settings().model_dump(mode="json")))


def test_every_leaf_of_the_settings_schema_is_swept_here_or_listed_with_its_reason():
    unclassified = [k for k in leaves() if k not in SWEPT and unkeyed_reason(k) is None]
    assert not unclassified, f"settings neither keyed (SWEPT) nor in UNKEYED_SETTINGS: {unclassified}"
    both = [k for k in SWEPT if unkeyed_reason(k) is not None]
    assert not both, f"listed as unkeyed and swept: {both}"
    stale = [k for k in SWEPT if k not in leaves()]
    assert not stale, f"SWEPT names settings that no longer exist: {stale}"
    assert all(len(reason) > 20 for reason in UNKEYED_SETTINGS.values())


@pytest.fixture(scope="module")
def base_keys() -> frozenset[str]:
    return keys_of()


@pytest.mark.parametrize("leaf", sorted(SWEPT))
def test_changing_a_keyed_setting_changes_the_keys(leaf, base_keys):
    assert keys_of(*SWEPT[leaf]) != base_keys, f"{leaf}: a sweep over it would share its trial keys"


def test_a_setting_block_moves_only_the_trials_it_reaches(base_keys):
    """``adaptive.start`` moves the adaptive DVOC trials and leaves the one-shot ones, which a multirun over
    it runs again (the same trial, counted once)."""
    setup = quick_setup([*BASE, "adaptive.start=0.25"])
    scenes = {t: (f"hash-{t}", Size(800, 600)) for t in setup.swept.tasks}
    plan = build_plan(setup, scenes, dict.fromkeys(setup.swept.tasks, "synthetic"))
    moved = {p.method for p in plan if p.trial_key not in base_keys}
    kept = {p.method for p in plan if p.trial_key in base_keys}
    assert "dvoc" in moved and "oneshot" in kept and "oneshot" not in moved
    assert {p.adaptive for p in plan if p.alpha == "adaptive"} == {"start=0.25"}
    assert {p.adaptive for p in plan if p.alpha != "adaptive"} == {"-"}


def test_two_model_files_of_one_name_in_two_folders_do_not_share_keys(tmp_path: Path):
    """``paths.models`` is unkeyed as a path; what it changes, the model's config, is keyed."""
    src = default_conf_dir() / "model" / "sim-ideal.yaml"
    keys = []
    for scale in ("1.0", "4.0"):
        d = tmp_path / scale
        d.mkdir()
        text = src.read_text().replace("name: sim-ideal", "name: sim-mine")
        text = text.replace("scale_px: 1.0,", f"scale_px: {scale},")
        assert f"scale_px: {scale}," in text
        (d / "sim-mine.yaml").write_text(text)
        setup = quick_setup(["models=[sim-mine]", "tasks=[S1]", "methods=[oneshot]", f"paths.models={d}"])
        plan = build_plan(setup, {"S1": ("h", Size(800, 600))})
        assert {p.model_config for p in plan} != {"-"}
        keys.append({p.trial_key for p in plan})
    assert keys[0].isdisjoint(keys[1])


def test_a_shipped_model_config_keeps_its_keys_and_an_override_moves_them():
    plain = build_plan(quick_setup(["model=sim-ideal", "tasks=[S1]"]), {"S1": ("h", Size(800, 600))})
    tuned = build_plan(
        quick_setup(["model=sim-ideal", "tasks=[S1]", "model.sim.noise.scale_px=3.0"]),
        {"S1": ("h", Size(800, 600))},
    )
    assert {p.model_config for p in plain} == {"-"}
    assert {p.model_config for p in tuned if p.method != "centre"} != {"-"}
    calling = {p.trial_key for p in plain if p.method != "centre"}
    assert calling.isdisjoint(p.trial_key for p in tuned)
    assert {p.trial_key for p in plain if p.method == "centre"} <= {p.trial_key for p in tuned}


# ------------------------------------------------------------------------------------- the key is the spec


def _other(value: object) -> object:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return [*value, 1.0]
    if value is None:
        return [1.0, 2.0]
    raise AssertionError(f"no other value for {value!r}")


@pytest.fixture(scope="module")
def spec() -> TrialSpec:
    plan = build_plan(quick_setup(["tasks=[S1]", "methods=[dvoc]"]), {"S1": ("h", Size(800, 600))})
    return plan[0]


def test_the_key_is_the_spec_every_field_enters_it(spec: TrialSpec):
    assert spec.key() == spec.trial_key
    for f in dataclasses.fields(TrialSpec):
        changed = dataclasses.replace(spec, **{f.name: _other(getattr(spec, f.name))})
        if f.name in UNKEYED_SPEC_FIELDS:
            assert changed.key() == spec.key(), f.name
        else:
            assert changed.key() != spec.key(), f"{f.name} does not enter the trial key"


def test_only_the_key_the_experiment_the_derived_seed_and_the_markers_stay_out():
    assert {"trial_key", "experiment", "seed", "simulated_assumptions"} == UNKEYED_SPEC_FIELDS


ALL = (
    "alphas=[decay,adaptive,constant,undamped]",
    "methods=[dvoc,oneshot,centre,som,zoom,zoom_dvoc,som_dvoc]",
)


def _plan_digest(experiment: str, kind: str, *extra: str) -> tuple[int, str]:
    setup = quick_setup([f"experiment={experiment}", *extra])
    scenes = {t: ("h" + t, Size(800, 600)) for t in setup.swept.tasks}
    keys = sorted(p.trial_key for p in build_plan(setup, scenes, dict.fromkeys(setup.swept.tasks, kind)))
    return len(keys), hashlib.sha256("".join(keys).encode()).hexdigest()[:12]


@pytest.mark.parametrize(
    ("experiment", "kind", "extra", "expected"),
    [
        ("quick", "synthetic", (), (270, "c4312c9b3bd1")),
        ("quick", "web", ALL, (1350, "5c12781e5919")),
        ("paper_main", "desktop", ("seed=3",), (540, "d916f6e57d4a")),
        ("ablation_alpha", "dataset", ALL, (192, "c40327db6d7c")),
        ("ablation_overlay", "synthetic", (), (90, "b5179e3d28bf")),
        ("ablation_predict", "web", ALL, (624, "4f5996fd82e0")),
    ],
)
def test_keys_of_records_made_before_the_new_fields_are_unchanged(experiment, kind, extra, expected):
    """sha256 (12 hex digits) of the sorted keys of a preset's plan (scene hash ``h<task>``, 800x600) as
    computed by the code of main 46f5efc, before the spec fields of issue 47 existed: at their defaults they
    leave the keys as they were, so the records of earlier rounds still resume.

    The two ``web`` plans with every method were re-pinned when Set-of-Mark became one trial per input
    (issue 52 item 10; it was 1830 "1c3e6beab30c" and 840 "dcee3ac8f85a"): checked apart from this code by
    planning both presets with the code before that change and with this one, the new key set is the old
    one minus exactly its ``som`` / ``som_dvoc`` trials of start index 2-5 (480 and 216), every kept key
    byte-identical; the four plans without Set-of-Mark on scenes are unchanged."""
    assert _plan_digest(experiment, kind, *extra) == expected


def test_no_shipped_file_is_left_out_by_the_model_override_check():
    """Every shipped model config reads back as itself (``model_config`` ``-``)."""
    names = [p.stem for p in (default_conf_dir() / "model").glob("sim-*.yaml")]
    setup = quick_setup([f"models=[{','.join(names)}]", "tasks=[S1]", "methods=[oneshot]"])
    assert dict(setup.model_changes) == {}


def test_retry_rule_does_not_key_a_paper_trial_which_ignores_it():
    """Issue 52 (review): under protocol=paper the authors' rule (hit_radius) decides a one-shot retry
    whatever ``oneshot.retry_rule`` says, so two values must not plan the same trial twice; v1 trials keep
    it in their key."""
    paper = ("protocols=[paper]",)
    assert keys_of(*paper, "oneshot.retry_rule=within_eps") == keys_of(*paper)
    both = ("protocols=[v1,paper]",)
    moved = keys_of(*both, "oneshot.retry_rule=within_eps") - keys_of(*both)
    assert moved and moved.isdisjoint(keys_of(*paper))


def test_the_reply_bound_is_unkeyed_for_the_reason_it_gives():
    """Issue 52 (review): ``run.max_reply_chars`` stays out of the key because at its default it cuts no
    answer: its reason quotes the longest reply of the authors' recorded calls, recounted here from the
    raw files (not through the harness's loader), and the default's margin over it."""
    import json
    import re

    from dvoc_bench.models.base import MAX_REPLY_CHARS
    from tests.support import RECORDS, need_upstream

    root = need_upstream() / RECORDS
    longest = {"text": 0, "tool calls": 0}
    calls = 0

    def walk(v):  # every LLM output object of a record, however deep
        if isinstance(v, dict):
            if isinstance(v.get("raw_message"), dict):
                yield v["raw_message"]
            for x in v.values():
                yield from walk(x)
        elif isinstance(v, list):
            for x in v:
                yield from walk(x)

    for path in root.rglob("*.json"):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        for msg in walk(data):
            calls += 1
            longest["text"] = max(longest["text"], len(msg.get("content") or ""))
            for c in msg.get("tool_calls") or []:
                args = (c.get("function") or {}).get("arguments") or ""
                text = args if isinstance(args, str) else json.dumps(args)
                longest["tool calls"] = max(longest["tool calls"], len(text))
    reason = UNKEYED_SETTINGS["run.max_reply_chars"]
    said = re.findall(r"([\d,]+) characters of (text|tool calls)", reason)
    quoted = {k: int(v.replace(",", "")) for v, k in said}
    assert quoted == longest, (quoted, longest, calls)
    assert 10 * max(longest.values()) <= MAX_REPLY_CHARS
    assert f"{MAX_REPLY_CHARS:,}" in reason and "reply_truncated" in reason


def test_drag_start_keys_only_the_drags():
    """``dvoc.drag_start`` moves the key of a two-point task's DVOC trials and of nothing else (a one-point
    trial does not read it: re-running it would pay for the same trial)."""
    setup0 = quick_setup(BASE)
    setup1 = quick_setup([*BASE, "dvoc.drag_start=model"])
    scenes = {t: (f"hash-{t}", Size(800, 600)) for t in setup0.swept.tasks}
    kinds = dict.fromkeys(setup0.swept.tasks, "dataset")
    drags = setup0.swept.tasks[:1]
    a = {
        (p.task, p.method, p.start_index, p.rep): p.trial_key
        for p in build_plan(setup0, scenes, kinds, drags)
    }
    b = {
        (p.task, p.method, p.start_index, p.rep): p.trial_key
        for p in build_plan(setup1, scenes, kinds, drags)
    }
    moved = {k for k in a if a[k] != b[k]}
    assert moved and all(k[0] in drags and k[1] == "dvoc" for k in moved)
