"""The families' mapping checked on a third party's real records (../shared/thirdparty/zoom-consistency,
omxyz/zoom-consistency-routing @ 4ddfd14, MIT): two Qwen3-VL-family models (KV-Ground-8B, on GUI-Owl-1.5,
and Qwen3.5-27B) answered every ScreenSpot-Pro sample with the ``computer_use`` tool call in 0-1000 that
harness's prompt asks for (its src/models.py), twice: on the screenshot (step 1) and on a crop of half its
size (step 2). The records keep the numbers their parser read, the crop box the harness cut around step 1
(its centre: ``int(u / 1000 * W)``, src/zoom.py) and the final point (step 2 mapped back through the crop,
``x1 + u / 1000 * crop_w``). The raw replies are not in the records, so each reply is written back in the
form that prompt demands and read through ``python -m dvoc_bench.coords``'s function, with the
``vllm-qwen3-vl-8b`` config: its reader, its resize and its mapping (``edge``, ``u * W / top``) must give
the harness's own pixels."""

from __future__ import annotations

import json

import pytest

from dvoc_bench.coords import screen_point
from dvoc_bench.core.geometry import Box, Point, Size
from tests.support import need_thirdparty

CONFIG = "vllm-qwen3-vl-8b"
RUNS = {  # file -> (step-1 key, crop key, step-2 key, final key, correct key)
    "kv_capture.json": ("step1", "crop_box", "step2", "final", "correct"),
    "qwen_cross_capture.json": ("qw_s1", "qw_crop_box", "qw_s2_qwcrop", "qw_final", "qw_correct"),
}




def reply(point: list[float]) -> str:
    """The tool call the harness's prompt asks for (src/models.py SYSTEM_PROMPT), around ``point``."""
    call = {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": point}}
    return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"


@pytest.fixture(scope="module", params=sorted(RUNS))
def records(request) -> tuple[str, list[dict]]:
    path = need_thirdparty("zoom-consistency") / request.param
    return request.param, json.loads(path.read_text(encoding="utf-8"))


def test_step_one_lands_on_the_pixel_the_harness_cropped_around(records):
    name, rows = records
    s1, crop = RUNS[name][0], RUNS[name][1]
    read = compared = 0
    wrong = []
    for r in rows:
        if r.get(s1) is None:
            continue
        w, h = r["img_width"], r["img_height"]
        _, p = screen_point(CONFIG, Size(w, h), reply(r[s1]))
        read += p is not None
        x1, y1, x2, y2 = r[crop]
        half = (int(w * 0.5) // 2, int(h * 0.5) // 2)
        if p is None:
            continue
        for axis, (lo, hi, size, got) in enumerate(((x1, x2, w, p.x), (y1, y2, h, p.y))):
            if not (lo > 0 and hi < size):
                continue  # a crop pushed against the edge no longer shows its centre on this axis
            compared += 1
            centre = lo + half[axis]  # the harness's int(u / 1000 * W), from its own crop box
            # it truncated u / 1000 * W (575 / 1000.0 * 1440 = 827.99999... -> 827): ours lies in that pixel
            if not centre - 1e-6 <= got <= centre + 1 + 1e-6:
                wrong.append((r["idx"], axis, r[s1], got, centre))
    assert read >= 0.99 * sum(r.get(s1) is not None for r in rows), (name, read)
    assert compared > 1000, compared  # sample-axes whose crop was not pushed against an edge
    assert not wrong, (name, len(wrong), wrong[:5])


def test_the_final_point_is_the_harness_s_within_a_millionth_of_a_pixel(records):
    name, rows = records
    _, crop, s2, final, correct = RUNS[name]
    compared = 0
    off: list[tuple] = []
    verdicts_differ: list[tuple] = []
    for r in rows:
        if r.get(s2) is None or r.get(final) is None:
            continue
        w, h = r["img_width"], r["img_height"]
        x1, y1, x2, y2 = r[crop]
        _, p = screen_point(CONFIG, Size(x2 - x1, y2 - y1), reply(r[s2]))
        assert p is not None, (r["idx"], r[s2])
        if max(r[s2]) >= 1000:
            continue  # on the crop's far edge: we clamp to its last pixel, the harness does not
        compared += 1
        ours = Point(x1 + p.x, y1 + p.y)
        theirs = Point(r[final][0] * w, r[final][1] * h)
        if ours.dist(theirs) > 1e-6:
            off.append((r["idx"], (ours.x, ours.y), (theirs.x, theirs.y)))
        bx, by, bw, bh = r["bbox"]
        hit = Box(bx * w, by * h, (bx + bw) * w, (by + bh) * h).contains(ours)
        if hit != r[correct]:
            verdicts_differ.append(r["idx"])
    assert compared > 1000, compared
    assert not off, (name, len(off), off[:5])
    assert not verdicts_differ, (name, verdicts_differ[:10])


def test_the_old_mapping_would_not_reproduce_them(records):
    # the check has teeth: u * (W - 1) / 1000 misses the harness's step-2 pixel on most records
    name, rows = records
    _, crop, s2, final, _ = RUNS[name]
    moved = 0
    for r in rows[:200]:
        if r.get(s2) is None or r.get(final) is None or max(r[s2]) >= 1000:
            continue
        x1, _, x2, _ = r[crop]
        old_x = x1 + r[s2][0] * (x2 - x1 - 1) / 1000
        moved += abs(old_x - r[final][0] * r["img_width"]) > 1e-6
    assert moved > 50, moved
