"""Answer frames declared in full (dvoc_bench/core/frames.py, docs/frames.md): the processor's smart_resize
against published examples, the provider's downscale cap, the declaration in a model file and its errors,
and the range check that turns an impossible answer into ``out_of_frame``."""

from __future__ import annotations

import pytest
import yaml

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.frames import FrameRule, downscale, smart_resize
from dvoc_bench.core.geometry import Point, Size
from dvoc_bench.draw.sending import model_view
from dvoc_bench.models.config import load_model_config
from tests.support import ROOT, run_cli

# The published examples, each worked by hand from the processor's rule (round each side to a multiple of
# the factor; over max_pixels: scale by sqrt(area / max_pixels) and floor to the factor).
#  1280x720, factor 28: 1280/28 = 45.7 -> 46*28 = 1288; 720/28 = 25.7 -> 26*28 = 728 (the Qwen2.5-VL example)
#  1920x1080, factor 28: 68.6 -> 69*28 = 1932; 38.6 -> 39*28 = 1092 (2.1 MP, under 16384*28^2 = 12.8 MP)
#  3840x2160, factor 28: 137.1 -> 137*28 = 3836; 77.1 -> 77*28 = 2156 (8.3 MP, under 12.8 MP)
#  1920x1080, factor 28, max 1280*28^2 = 1003520: beta = sqrt(2073600/1003520) = 1.4375;
#    1920/1.4375 = 1335.7 -> 47*28 = 1316; 1080/1.4375 = 751.3 -> 26*28 = 728
#  3840x2160 under the same cap: beta = 2.875; 1335.7 -> 1316; 751.3 -> 728 (the same aspect)
#  1280x720, factor 32 (Qwen3-VL): 1280/32 = 40 -> 1280; 720/32 = 22.5 -> 22*32 = 704 (round half to even)
#  a 20x20 icon, factor 28, min 100*28^2 = 78400 (UI-TARS): beta = sqrt(78400/400) = 14; 280/28 -> 280
SMART = [
    ((1280, 720), 28, None, None, (1288, 728)),
    ((1920, 1080), 28, None, None, (1932, 1092)),
    ((3840, 2160), 28, None, None, (3836, 2156)),
    ((1920, 1080), 28, None, 1280 * 28 * 28, (1316, 728)),
    ((3840, 2160), 28, None, 1280 * 28 * 28, (1316, 728)),
    ((1280, 720), 32, None, None, (1280, 704)),
    ((20, 20), 28, 100 * 28 * 28, None, (280, 280)),
]


@pytest.mark.parametrize(("size", "factor", "lo", "hi", "want"), SMART)
def test_smart_resize_matches_the_published_examples(size, factor, lo, hi, want):
    got = smart_resize(Size(*size), factor, lo, hi)
    assert (got.width, got.height) == want
    again = smart_resize(got, factor, lo, hi)  # an image already at the model's size is left as it is
    assert (again.width, again.height) == want


def test_claude_downscale_caps_the_long_edge_and_the_area():
    # 1280x720: 0.92 MP and 1280 px, under both caps; 1920x1080: 2.07 MP -> sqrt(1.15e6/2073600) = 0.7447
    # -> 1429.8 x 804.3, floored; 2000x400: the long edge binds (1568/2000 = 0.784 -> 1568 x 313.6)
    assert downscale(Size(1280, 720), 1568, 1_150_000) == Size(1280, 720)
    assert downscale(Size(1920, 1080), 1568, 1_150_000) == Size(1429, 804)
    assert downscale(Size(3840, 2160), 1568, 1_150_000) == Size(1429, 804)
    assert downscale(Size(2000, 400), 1568, 1_150_000) == Size(1568, 313)


def test_the_image_sent_is_the_image_the_model_sees():
    rule = FrameRule(units="pixel", resize="smart_resize", factor=28)
    view = model_view(Size(1280, 720), rule=rule)
    assert (view.sent.width, view.sent.height) == (1288, 728)
    # the model's pixel (644, 364) of the 1288x728 image is the screenshot's (640, 360): x * 1280 / 1288
    p = view.to_original(type(view.full.centre)(644, 364))
    assert (p.x, p.y) == pytest.approx((640.0, 360.0))
    assert model_view(Size(1280, 720)).identity  # no rule: as before


def test_a_one_word_coord_frame_keeps_its_meaning(tmp_path):
    cfg = load_model_config("sim-ideal", ROOT / "conf" / "model", check_key=False)
    assert cfg.frame == FrameRule(units=cfg.coord_frame) and cfg.frame.describe() == f"{cfg.coord_frame} x-y"


def _model_file(tmp_path, coord_frame, **extra):
    models = tmp_path / "conf" / "model"
    models.mkdir(parents=True, exist_ok=True)
    good = yaml.safe_load((ROOT / "conf" / "model" / "sim-ideal.yaml").read_text(encoding="utf-8"))
    doc = {**good, "name": "bad", "coord_frame": coord_frame, **extra}
    (models / "bad.yaml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    return models


def test_a_mapping_coord_frame_is_read_in_full(tmp_path):
    models = _model_file(
        tmp_path, {"units": "norm1000", "axes": "yx", "resize": "smart_resize", "factor": 32}
    )
    cfg = load_model_config("bad", models, check_key=False)
    assert cfg.coord_frame == "norm1000"
    assert (
        cfg.frame.describe() == "norm1000 y-x, smart_resize(factor=32, min_pixels=4096, max_pixels=16777216)"
    )


@pytest.mark.parametrize(
    ("coord_frame", "extra", "line"),
    [
        (
            {"resize": "bicubic"},
            {},
            "model bad: coord_frame.resize: unknown value 'bicubic'; allowed: none, smart_resize, downscale",
        ),
        (
            {"units": "norm100"},
            {},
            "model bad: coord_frame.units: unknown value 'norm100'; allowed: pixel, norm1000,",
        ),
        ({"axes": "xz"}, {}, "model bad: coord_frame.axes: unknown value 'xz'; allowed: xy, yx"),
        ({"resize": "smart_resize"}, {}, "model bad: coord_frame.factor: required with resize: smart_resize"),
        ({"resize": "downscale"}, {}, "model bad: coord_frame.max_long_edge: downscale needs"),
        ({"factor": 28}, {}, "model bad: coord_frame.factor: only with resize: smart_resize"),
        ({"shape": 1}, {}, "model bad: coord_frame.shape: unknown key; allowed: units, axes, resize"),
        (
            "pixel",
            {"prompt_style": "llava"},
            "model bad: prompt_style: unknown value 'llava'; allowed: tool_call, ",
        ),
    ],
)
def test_a_bad_frame_is_one_line_naming_the_key(tmp_path, coord_frame, extra, line):
    models = _model_file(tmp_path, coord_frame, **extra)
    with pytest.raises(ConfigError) as e:
        load_model_config("bad", models, check_key=False)
    assert str(e.value).startswith(line), str(e.value)


@pytest.mark.e2e
def test_a_bad_resize_rule_stops_the_cli_with_exit_code_2(tmp_path):
    models = _model_file(tmp_path, {"units": "pixel", "resize": "lanczos"})
    r = run_cli(
        "models=[bad]", f"paths.models={models}", f"hydra.run.dir={tmp_path / 'run'}", "run.quiet=true"
    )
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith(
        "config error: model bad: coord_frame.resize: unknown value 'lanczos'; allowed:"
    )
    assert not (tmp_path / "run" / "plan.jsonl").exists()


def test_the_range_is_the_declared_one():
    seen = Size(1288, 728)
    assert FrameRule(units="norm1000").in_range(1000, 0, seen)
    assert not FrameRule(units="norm1000").in_range(1000.5, 10, seen)
    assert not FrameRule(units="norm999").in_range(999.5, 10, seen)
    assert FrameRule(units="pixel").in_range(1288, 728, seen) and not FrameRule(units="pixel").in_range(
        1289, 5, seen
    )
    assert not FrameRule(units="norm1").in_range(0.5, 1.2, seen) and not FrameRule().in_range(-1, 5, seen)


# downscale_pad (TianXi-Action: area cap 7,494,400 px, then padding to a multiple of 28), by hand:
#  3840x2160 = 8,294,400 px > the cap: s = sqrt(7494400 / 8294400) = 0.950552; 3840 s = 3650.1 -> 3650,
#    2160 s = 2053.2 -> 2053 (floored); the canvas: 3650 -> 131*28 = 3668, 2053 -> 74*28 = 2072
#  1920x1080 = 2,073,600 px, under the cap: as it is; canvas 69*28 = 1932, 39*28 = 1092
TIANXI = FrameRule(units="pixel", resize="downscale_pad", max_pixels=7_494_400, factor=28)


def test_downscale_pad_caps_the_area_then_pads_the_canvas():
    assert TIANXI.seen(Size(3840, 2160)) == Size(3650, 2053)
    assert TIANXI.canvas(Size(3650, 2053)) == Size(3668, 2072)
    assert TIANXI.seen(Size(1920, 1080)) == Size(1920, 1080)
    assert TIANXI.canvas(Size(1920, 1080)) == Size(1932, 1092)
    # the image sent is the downscaled one; an answer on the padding is in frame, one past it is not
    assert model_view(Size(3840, 2160), rule=TIANXI).sent == Size(3650, 2053)
    assert TIANXI.in_range(3668, 2072, Size(3650, 2053)) and not TIANXI.in_range(3669, 10, Size(3650, 2053))
    assert TIANXI.describe() == "pixel x-y, downscale_pad(max_pixels=7494400, factor=28)"


def test_the_mapping_is_the_declared_one():
    seen = Size(1920, 1080)
    # by hand: 500 * 1920 / 1000 = 960 (edge); 500 * 1919 / 1000 = 959.5 (last_pixel)
    edge = FrameRule(units="norm1000", mapping="edge")
    assert edge.to_pixels(500, 1000, seen) == Point(960.0, 1080.0)
    assert FrameRule(units="norm1000").to_pixels(500, 1000, seen) == Point(959.5, 1079.0)
    # 0-999 (MAI-UI: x / 999 * W): 333 * 1920 / 999 = 640
    assert FrameRule(units="norm999", mapping="edge").to_pixels(333, 0, seen) == Point(640.0, 0.0)
    # rounding after the mapping: 0.4922 * 1920 = 945.024 -> 945 (round);
    # 0.4036 * 1080 = 435.888 -> 435 (floor)
    assert FrameRule(units="norm1", mapping="edge", rounding="round").to_pixels(0.4922, 0.5, seen).x == 945.0
    assert FrameRule(units="norm1", mapping="edge", rounding="floor").to_pixels(0.5, 0.4036, seen).y == 435.0
    # pixels are taken as they are, whatever the mapping says
    raw = FrameRule(units="pixel", mapping="edge", rounding="floor").to_pixels(10.7, 3.2, seen)
    assert raw == Point(10.7, 3.2)
    # the inverse, and the recorded rule
    back = edge.from_pixels(edge.to_pixels(123, 456, seen), seen)
    assert (back.x, back.y) == pytest.approx((123, 456))
    assert edge.describe() == "norm1000 x-y, u*W/top"
    assert FrameRule(units="norm1000").describe() == "norm1000 x-y"  # the default leaves records as they were


@pytest.mark.parametrize(
    ("coord_frame", "line"),
    [
        (
            {"units": "pixel", "resize": "downscale_pad", "max_pixels": 100},
            "coord_frame.factor: required with",
        ),
        (
            {"units": "pixel", "resize": "downscale_pad", "factor": 28},
            "coord_frame.max_pixels: required with",
        ),
        (
            {"units": "norm1000", "mapping": "W"},
            "coord_frame.mapping: unknown value 'W'; allowed: last_pixel, edge",
        ),
        ({"units": "norm1000", "rounding": "ceil"}, "coord_frame.rounding: unknown value 'ceil'"),
    ],
)
def test_a_bad_mapping_or_pad_rule_is_one_line_naming_the_key(tmp_path, coord_frame, line):
    models = _model_file(tmp_path, coord_frame)
    with pytest.raises(ConfigError) as e:
        load_model_config("bad", models, check_key=False)
    assert str(e.value).startswith(f"model bad: {line}"), str(e.value)
