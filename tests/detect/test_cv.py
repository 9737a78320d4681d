"""The classical detector: its building blocks by hand, our scenes, and the ways it fails."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from dvoc_bench.detect.cv import CvDetector, CvOptions, border_coverage, components, dilate, edge_mask
from dvoc_bench.draw.render import dejavu
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir


def test_components_eight_connected_by_hand():
    m = np.zeros((6, 8), dtype=bool)
    m[0, 0] = m[1, 1] = True  # diagonal neighbours: one component
    m[0, 4:7] = True  # a run ...
    m[1, 6] = m[2, 5] = True  # ... with a diagonal tail
    m[5, 0:8] = True  # a full bottom row
    c = components(m)
    got = sorted(
        zip(c.x0.tolist(), c.y0.tolist(), c.x1.tolist(), c.y1.tolist(), c.count.tolist(), strict=True)
    )
    assert got == [(0, 0, 1, 1, 2), (0, 5, 7, 5, 8), (4, 0, 6, 2, 5)]
    assert components(np.zeros((3, 3), dtype=bool)).x0.size == 0


def test_components_ring_and_u_shape_merge_across_rows():
    m = np.zeros((10, 10), dtype=bool)
    m[1, 1:9] = m[8, 1:9] = True
    m[1:9, 1] = m[1:9, 8] = True  # a ring
    u = np.zeros((6, 9), dtype=bool)
    u[0:5, 0] = u[0:5, 8] = u[5, 0:9] = True  # two arms joined only at the bottom row
    assert components(m).count.tolist() == [28]
    c = components(u)
    assert (c.x0.tolist(), c.x1.tolist(), c.count.tolist()) == ([0], [8], [19])


def test_dilate_and_edges_by_hand():
    m = np.zeros((5, 7), dtype=bool)
    m[2, 3] = True
    d = dilate(m, 2, 1)
    assert d.sum() == 15 and d[1:4, 1:6].all()
    img = np.zeros((4, 6, 3), dtype=np.uint8)
    img[:, 3:] = 30  # a vertical boundary between columns 2 and 3
    e = edge_mask(img, 24)
    assert e[:, 2].all() and e[:, 3].all() and e.sum() == 8
    assert not edge_mask(img, 30).any()  # the threshold is strict
    assert border_coverage(np.ones((5, 5), dtype=bool), 1, 1, 3, 3) == 1.0


@pytest.mark.parametrize("scene_id", ["S1", "S2", "S3", "S4", "S5", "S6"])
def test_every_control_of_our_scenes_is_boxed_exactly(scene_id):
    snap = SceneRegistry(default_scenes_dir()).snapshot(scene_id)
    boxes = [d.box.as_list() for d in CvDetector().detect(snap.image)]
    for e in snap.truth.elements:
        if e.interactive:  # continuous edges: pixel columns x0..x1 span [x0, x1 + 1)
            assert [e.box.x0, e.box.y0, e.box.x1 + 1, e.box.y1 + 1] in boxes, e.id
    assert len(boxes) == len(snap.truth.elements)  # S5's caption is boxed too (it is text, like a link)


def _page() -> tuple[np.ndarray, dict[str, tuple[int, int, int, int]]]:
    """A light page: a text link, a filled button, an input, two touching buttons, a faint button."""
    img = Image.new("RGB", (640, 360), (250, 250, 250))
    d = ImageDraw.Draw(img)
    font = dejavu(14)
    d.text((40, 30), "Forgot password?", fill=(20, 80, 200), font=font)
    link = d.textbbox((40, 30), "Forgot password?", font=font)
    d.rectangle([40, 80, 159, 111], fill=(30, 110, 220))
    d.text((70, 88), "Sign in", fill=(255, 255, 255), font=font)
    d.rectangle([40, 140, 339, 171], fill=(255, 255, 255), outline=(180, 180, 180))
    d.rectangle([400, 80, 469, 111], fill=(60, 160, 60))
    d.rectangle([472, 80, 541, 111], fill=(160, 60, 60))  # 2 px gap: closer than the merge gap
    d.rectangle([400, 220, 519, 251], fill=(240, 240, 240))  # 10 levels from the page: below the threshold
    d.text((430, 228), "More", fill=(235, 235, 235), font=font)
    boxes = {
        "link": link,
        "button": (40, 80, 160, 112),
        "input": (40, 140, 340, 172),
        "pair": (400, 80, 542, 112),
    }
    return np.asarray(img), boxes


def test_a_light_page_finds_links_buttons_inputs_and_fails_realistically():
    img, truth = _page()
    run = CvDetector().run(img)
    assert run.backend == "cv" and run.inference_ms is None
    found = [tuple(round(v) for v in d.box.as_list()) for d in run.detections]
    assert truth["button"] in found and truth["input"] in found
    assert truth["pair"] in found  # the two touching buttons merge into one box
    lx0, ly0, lx1, ly1 = truth["link"]
    links = [b for b in found if abs(b[0] - lx0) <= 1 and abs(b[2] - lx1) <= 1 and abs(b[1] - ly0) <= 2]
    assert len(links) == 1  # the link's words are one box
    assert not any(b[0] >= 395 and b[1] >= 215 for b in found)  # the faint button is missed
    # boxed controls rank before text, and the button's own label is not a separate box
    scores = {b: d.score for b, d in zip(found, run.detections, strict=True)}
    assert scores[truth["button"]] > scores[links[0]]
    assert not any(b[0] >= 60 and b[2] <= 140 and b[1] >= 82 and b[3] <= 110 for b in found)
    lower = CvDetector(CvOptions(edge_threshold=4)).detect(img)
    assert any(round(d.box.x0) == 400 and round(d.box.y0) == 220 for d in lower)  # found when more sensitive


def test_options_are_validated_and_caps_apply():
    with pytest.raises(ValueError):
        CvOptions(edge_threshold=300)
    with pytest.raises(ValueError):
        CvOptions(min_border=2.0)
    img, _ = _page()
    assert len(CvDetector(CvOptions(max_boxes=2)).detect(img)) == 2
    assert CvDetector().detect(np.full((50, 50, 3), 7, dtype=np.uint8)) == []
