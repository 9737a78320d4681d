"""Synthetic scene specs, their rendering and the scene registry."""

from __future__ import annotations

import copy
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.scenes import SceneFolder, SceneRegistry, TaskSource, default_scenes_dir
from dvoc_bench.scenes.desktop.gtk_tasks import TASKS as GTK_TASKS
from dvoc_bench.scenes.miniwob.planners import PLANNERS
from dvoc_bench.scenes.synthetic import load_spec, render_synthetic, render_synthetic_file

SCENES = default_scenes_dir()
SYNTHETIC = SCENES / "synthetic"
BACKGROUND = (40, 42, 48)

# The authors' layouts (upstream-facts §4.1): target rectangle and its centre.
AUTHORS_TARGETS = {
    "S1": ((360, 275, 440, 325), (400, 300)),
    "S2": ((388, 294, 412, 306), (400, 300)),
    "S3": ((300, 200, 420, 240), (360, 220)),
    "S4": ((10, 10, 70, 40), (40, 25)),
    "S5": ((200, 224, 450, 256), (325, 240)),
    "S6": ((150, 350, 230, 390), (190, 370)),
}
AUTHORS_INSTRUCTIONS = {
    "S1": "Click the CLICK ME button",
    "S2": "Click the small green button",
    "S3": "Click the button labeled 'Submit'",
    "S4": "Click the button in the top-left corner",
    "S5": "Click inside the username input field",
    "S6": "Click the BLUE button",
}

MINIWOB = sorted(f"miniwob.{n}" for n in PLANNERS)
"""The episode tasks every registry lists (no browser until one runs)."""
GTK = sorted(f"gtk.{n}" for n in GTK_TASKS)
"""The desktop episode tasks every registry lists (no program until one runs)."""


@pytest.fixture(scope="module")
def registry() -> SceneRegistry:
    return SceneRegistry(SCENES)


def _pixel(image: np.ndarray, x: float, y: float) -> tuple[int, ...]:
    return tuple(int(v) for v in image[int(y), int(x)])


def _write(path: Path, spec: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _raw(scene_id: str) -> dict:
    return yaml.safe_load((SYNTHETIC / f"{scene_id}.yaml").read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------- the six scenes


def test_ids(registry: SceneRegistry) -> None:
    assert registry.ids() == [
        *(f"A{i:02d}" for i in range(1, 32)),  # the application tasks (scenes/apps)
        "D1",
        "D2",
        "D3",
        "D4",
        *(f"M{i}{c}" for i in range(1, 6) for c in "abc"),  # the mobile-first pages (scenes/web)
        "S1",
        "S2",
        "S3",
        "S4",
        "S5",
        "S6",
        "W1",
        "W2",
        "W3",
        "W4",
        "W5",
        *GTK,  # the GTK programs' episode tasks
        *MINIWOB,  # the MiniWoB tasks with an oracle planner (their pages come from the miniwob package)
    ]


@pytest.mark.parametrize("scene_id", sorted(AUTHORS_TARGETS))
def test_target_matches_authors(registry: SceneRegistry, scene_id: str) -> None:
    rect, centre = AUTHORS_TARGETS[scene_id]
    truth = registry.truth(scene_id)
    assert truth.size == Size(800, 600)
    assert truth.target_box == Box.from_list(rect)
    assert truth.target_box.centre == Point(*centre)
    assert truth.instruction == AUTHORS_INSTRUCTIONS[scene_id]
    target = next(e for e in truth.elements if e.id == truth.target_id)
    assert target.box == truth.target_box and target.interactive


@pytest.mark.parametrize("scene_id", sorted(AUTHORS_TARGETS))
def test_pixels(registry: SceneRegistry, scene_id: str) -> None:
    snap = registry.snapshot(scene_id)
    image = snap.image
    assert image.shape == (600, 800, 3) and image.dtype == np.uint8
    for x, y in [(0, 0), (799, 0), (0, 599), (799, 599), (5, 5)]:
        assert _pixel(image, x, y) == BACKGROUND
    spec = load_spec(SYNTHETIC / f"{scene_id}.yaml")
    target = next(e for e in spec["elements"] if e["id"] == spec["target"])
    x0, y0, x1, y1 = target["box"]
    ow = target["outline_width"]
    cx = (x0 + x1) // 2
    # below any text, inside the outline: the fill colour
    assert _pixel(image, cx, y1 - ow - 1) == target["fill"]
    # the rectangle is inclusive: the outline covers x0 and x1, background lies just outside
    cy = (y0 + y1) // 2
    assert _pixel(image, x0, cy) == _pixel(image, x1, cy) == target["outline"]
    assert _pixel(image, x1 + 1, cy) == _pixel(image, x0 - 1, cy) == BACKGROUND
    assert _pixel(image, cx, y1 + 1) == BACKGROUND
    # the fill dominates the interior even where text is drawn
    interior = image[y0 + ow : y1 - ow + 1, x0 + ow : x1 - ow + 1].reshape(-1, 3)
    colours, counts = np.unique(interior, axis=0, return_counts=True)
    assert tuple(int(c) for c in colours[counts.argmax()]) == target["fill"]
    if target["text"] is None:
        assert _pixel(image, *snap.target_box.centre.as_list()) == target["fill"]


def test_text_is_drawn(registry: SceneRegistry) -> None:
    image = registry.snapshot("S1").image
    white = np.all(image[288:310, 364:436] > 220, axis=-1)  # "CLICK ME" (anti-aliased) in the button
    assert white.sum() > 50
    s5 = registry.snapshot("S5").image
    assert np.all(s5[200:222, 200:300] == (180, 180, 180), axis=-1).any()  # "Username:"
    assert np.all(s5[228:250, 204:300] == (100, 100, 100), axis=-1).any()  # placeholder


def test_s3_buttons(registry: SceneRegistry) -> None:
    truth = registry.truth("S3")
    labels = {e.label: e.box for e in truth.elements}
    assert labels == {
        "Cancel": Box(100, 200, 220, 240),
        "Submit": Box(300, 200, 420, 240),
        "Delete": Box(500, 200, 620, 240),
        "Save": Box(200, 350, 320, 390),
    }
    assert truth.target_id == "submit"


def test_s5_caption_is_a_non_interactive_text_element(registry: SceneRegistry) -> None:
    truth = registry.truth("S5")
    caption = next(e for e in truth.elements if e.role == "text")
    assert not caption.interactive and caption.label == "Username:"
    box = caption.box
    assert 200 <= box.x0 < box.x1 < 320 and 200 <= box.y0 < box.y1 < 224  # above the input field
    field = next(e for e in truth.elements if e.id == truth.target_id)
    assert field.role == "input"


def test_s6_six_buttons_one_blue(registry: SceneRegistry) -> None:
    snap = registry.snapshot("S6")
    buttons = [e for e in snap.truth.elements if e.role == "button"]
    assert len(buttons) == 6
    fills = [_pixel(snap.image, (e.box.x0 + e.box.x1) / 2, e.box.y1 - 3) for e in buttons]
    blue = [e for e, f in zip(buttons, fills, strict=True) if f == (100, 100, 200)]
    assert [e.id for e in blue] == [snap.truth.target_id]
    assert sorted(fills).count((100, 200, 100)) == 3
    assert len({e.label for e in buttons}) == 6  # labels tell the buttons apart


@pytest.mark.parametrize("scene_id", sorted(AUTHORS_TARGETS))
def test_element_boxes_inside_canvas(registry: SceneRegistry, scene_id: str) -> None:
    truth = registry.truth(scene_id)
    ids = [e.id for e in truth.elements]
    assert len(ids) == len(set(ids))
    for e in truth.elements:
        assert 0 <= e.box.x0 <= e.box.x1 < 800 and 0 <= e.box.y0 <= e.box.y1 < 600
        assert e.label


def test_image_is_read_only(registry: SceneRegistry) -> None:
    image = registry.snapshot("S1").image
    assert not image.flags.writeable
    with pytest.raises(ValueError):
        image[0, 0] = 0


# ------------------------------------------------------------------------------------------- hashing


def test_hash_stable_and_distinct() -> None:
    first = {sid: render_synthetic_file(SYNTHETIC / f"{sid}.yaml") for sid in AUTHORS_TARGETS}
    second = {sid: render_synthetic_file(SYNTHETIC / f"{sid}.yaml") for sid in AUTHORS_TARGETS}
    for sid in AUTHORS_TARGETS:
        assert first[sid].content_hash == second[sid].content_hash
        assert np.array_equal(first[sid].image, second[sid].image)
        assert len(first[sid].content_hash) == 16
        int(first[sid].content_hash, 16)
    assert len({s.content_hash for s in first.values()}) == 6


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s["elements"][0].__setitem__("fill", (100, 201, 100)),  # pixels
        lambda s: s.__setitem__("instruction", "Click the green button"),  # text only
        lambda s: s["elements"][0].__setitem__("label", "OK button"),  # geometry metadata only
        lambda s: s["elements"][0].__setitem__("text_at", (367, 290)),  # one text shifted by a pixel
    ],
)
def test_changed_spec_changes_hash(change) -> None:
    spec = load_spec(SYNTHETIC / "S1.yaml")
    base = render_synthetic(spec).content_hash
    changed = copy.deepcopy(spec)
    change(changed)
    assert render_synthetic(changed).content_hash != base
    assert render_synthetic(spec).content_hash == base  # the original spec was not mutated


def test_load_spec_is_normalised_and_idempotent() -> None:
    spec = load_spec(SYNTHETIC / "S5.yaml")
    caption = spec["elements"][0]
    assert caption["kind"] == "text" and caption["box"] is None
    assert spec["size"] == (800, 600) and spec["background"] == BACKGROUND
    from dvoc_bench.scenes.synthetic import validate_spec

    assert validate_spec(spec) == spec


def test_defaults_filled(tmp_path: Path) -> None:
    raw = _raw("S2")
    element = raw["elements"][0]
    for key in ("role", "interactive", "outline_width"):
        del element[key]
    spec = load_spec(_write(tmp_path / "S2.yaml", raw))
    e = spec["elements"][0]
    assert (e["role"], e["interactive"], e["outline_width"]) == ("button", True, 1)


# ---------------------------------------------------------------------------------------- validation


def _mutations():
    def top_unknown(s):
        s["colour"] = 1

    def element_unknown(s):
        s["elements"][0]["fil"] = [1, 2, 3]

    def missing(s):
        del s["instruction"]

    def bad_target(s):
        s["target"] = "nope"

    def text_without_position(s):
        del s["elements"][0]["text_at"]

    def box_outside(s):
        s["elements"][0]["box"] = [360, 275, 800, 325]

    def bad_colour(s):
        s["background"] = [40, 42, 256]

    def bad_kind(s):
        s["elements"][0]["kind"] = "circle"

    def bad_difficulty(s):
        s["difficulty"] = "trivial"

    return [
        (top_unknown, "'colour'"),
        (element_unknown, "'fil'"),
        (missing, "'instruction'"),
        (bad_target, "'target'"),
        (text_without_position, "'text_at'"),
        (box_outside, "'box'"),
        (bad_colour, "'background'"),
        (bad_kind, "'kind'"),
        (bad_difficulty, "'difficulty'"),
    ]


@pytest.mark.parametrize(("mutate", "key"), _mutations())
def test_validation_names_file_and_key(tmp_path: Path, mutate, key: str) -> None:
    raw = _raw("S1")
    mutate(raw)
    path = _write(tmp_path / "S1.yaml", raw)
    with pytest.raises(ValueError) as info:
        load_spec(path)
    assert str(path) in str(info.value) and key in str(info.value)


def test_non_interactive_target_rejected(tmp_path: Path) -> None:
    raw = _raw("S5")
    raw["target"] = "username_caption"
    with pytest.raises(ValueError, match="non-interactive"):
        load_spec(_write(tmp_path / "S5.yaml", raw))


def test_invalid_yaml(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.yaml"):
        load_spec(path)


# ------------------------------------------------------------------------------------------ registry


def test_registry_caches(registry: SceneRegistry) -> None:
    assert registry.snapshot("S2") is registry.snapshot("S2")
    assert registry.truth("S2") is registry.snapshot("S2").truth


def test_registry_unknown_id_lists_known(registry: SceneRegistry) -> None:
    with pytest.raises(KeyError, match="S1, S2, S3, S4, S5, S6"):
        registry.snapshot("S9")


def test_registry_renders_once_across_threads(tmp_path: Path) -> None:
    calls: list[Path] = []

    def load(path: Path, max_side: int):
        calls.append(path)
        return render_synthetic_file(path, max_side)

    shutil.copy(SYNTHETIC / "S2.yaml", tmp_path / "S2.yaml")
    reg = SceneRegistry(tmp_path.parent, sources={tmp_path.name: SceneFolder("*.yaml", load)})
    results = []
    threads = [threading.Thread(target=lambda: results.append(reg.snapshot("S2"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(r is results[0] for r in results)


def test_registry_pluggable_sources_and_natural_order(tmp_path: Path) -> None:
    for sid in ("S2", "S10"):
        raw = _raw("S2")
        raw["id"] = sid
        _write(tmp_path / "synthetic" / f"{sid}.yaml", raw)
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / "W1.html").write_text("<html></html>", encoding="utf-8")
    reg = SceneRegistry(tmp_path)
    assert reg.ids() == ["S2", "S10", *GTK, *MINIWOB]  # web/ has no source by default
    w1 = render_synthetic_file(SYNTHETIC / "S1.yaml")
    plugged = SceneRegistry(
        tmp_path,
        sources={
            "synthetic": SceneFolder("*.yaml", render_synthetic_file),
            "web": SceneFolder("*.html", lambda _p, _max: w1),
        },
    )
    assert plugged.ids() == ["S2", "S10", "W1"]
    with pytest.raises(ValueError, match="expected the file stem"):
        plugged.snapshot("W1")  # the loader reported S1 for W1.html


def test_registry_id_must_match_file_stem(tmp_path: Path) -> None:
    (tmp_path / "synthetic").mkdir()
    shutil.copy(SYNTHETIC / "S1.yaml", tmp_path / "synthetic" / "S7.yaml")
    reg = SceneRegistry(tmp_path)
    with pytest.raises(ValueError, match="S7"):
        reg.snapshot("S7")


def test_missing_directory() -> None:
    with pytest.raises(FileNotFoundError):
        SceneRegistry(Path("does-not-exist-anywhere")).ids()


def test_default_scenes_dir() -> None:
    assert (default_scenes_dir() / "synthetic" / "S1.yaml").is_file()


class _ListedTasks:
    """A task source that is not a folder of files: two renamed copies of S1, in a fixed order."""

    kind = "synthetic"
    ordered = True
    live = False

    def __init__(self) -> None:
        self.closed = 0
        self.base = render_synthetic_file(SYNTHETIC / "S1.yaml")

    def ids(self) -> list[str]:
        return ["zeta", "alpha"]

    def snapshot(self, task_id: str):  # noqa: ANN201
        import dataclasses

        truth = dataclasses.replace(self.base.truth, scene_id=task_id)
        return dataclasses.replace(self.base, truth=truth)

    def meta(self, task_id: str) -> dict[str, str]:
        return {"listed": task_id}

    def probe(self, task_id: str, point):  # noqa: ANN001, ANN201
        return None

    def close(self) -> None:
        self.closed += 1


def test_a_task_source_that_is_no_folder_plugs_into_the_registry(tmp_path: Path) -> None:
    """The task-source protocol: ids in the source's own order, snapshots, record metadata, the box rule
    when the source answers no probe, and close."""
    listed = _ListedTasks()
    assert isinstance(listed, TaskSource)
    _write(tmp_path / "synthetic" / "S2.yaml", _raw("S2"))
    folder = SceneFolder("*.yaml", render_synthetic_file)
    reg = SceneRegistry(tmp_path, sources={"listed": listed, "synthetic": folder})
    assert reg.ids() == ["S2", "zeta", "alpha"]  # folder ids sorted, an ordered source's kept as given
    snap = reg.snapshot("alpha")
    assert snap.scene_id == "alpha" and reg.meta("alpha") == {"listed": "alpha"} and reg.meta("S2") is None
    centre = snap.truth.target_box.centre
    assert reg.probe("alpha", centre).hit_element == snap.truth.target_id  # answered from the boxes
    reg.close()
    assert listed.closed == 1
