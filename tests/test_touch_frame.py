"""The phone agent's touch frame (``touch1000``, issue 55): ``pixel / (size - 1) * 1000`` with one decimal,
its round trip at phone sizes and 4K, the prompt's wording and numbers, and Set-of-Mark's element list in
touch coordinates for a touch model and in pixels for a pixel model."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest

from dvoc_bench.core.frames import FrameRule
from dvoc_bench.core.geometry import Box, Frame, Point, Size, from_touch1000, to_touch1000
from dvoc_bench.draw.som_layout import Mark
from dvoc_bench.models.simulator.reading import requested_frame
from dvoc_bench.protocol.prompts import crosshair_line, format_number, frame_statement, parse_crosshair_line
from dvoc_bench.protocol.som import ELEMENTS_PREFIX, som_prompt

SIZES = [
    Size(1082, 2202),  # Pixel 7: 412x839 CSS px at 2.625
    Size(1170, 1992),  # iPhone 13: 390x664 at 3
    Size(1440, 2961),  # Galaxy S9+: 320x658 at 4.5
    Size(1080, 2400),
    Size(3840, 2160),  # 4K
    Size(2160, 3840),
]


def _one_decimal_half_up(pixel: float, extent: int) -> float:
    """The seed's number, computed in exact rationals (independent of the float code under test)."""
    q = Fraction(min(max(Fraction(pixel), 0), extent - 1)) * 1000 / (extent - 1)
    tenths = (q * 10 + Fraction(1, 2)).__floor__()
    return tenths / 10


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s.width}x{s.height}")
def test_touch_round_trip_is_within_half_a_pixel_and_one_decimal(size: Size):
    rng = random.Random(size.width * 7 + size.height)
    points = [Point(0, 0), Point(size.width - 1, size.height - 1), Point(size.width / 2, size.height / 3)]
    points += [Point(rng.uniform(0, size.width - 1), rng.uniform(0, size.height - 1)) for _ in range(2000)]
    worst = 0.0
    for p in points:
        t = to_touch1000(p, size)
        assert t.x == _one_decimal_half_up(p.x, size.width) and t.y == _one_decimal_half_up(p.y, size.height)
        assert 0.0 <= t.x <= 1000.0 and 0.0 <= t.y <= 1000.0
        back = from_touch1000(t, size)
        worst = max(worst, abs(back.x - p.x), abs(back.y - p.y))
    assert worst <= 0.5
    # the bound is the rounding's half a tenth: (size - 1) / 20000 px
    assert worst <= (max(size.width, size.height) - 1) / 20000 + 1e-9


def test_the_seeds_example_and_the_clamp():
    size = Size(1920, 1080)
    assert to_touch1000(Point(968, 0), size).x == 504.4  # 968 / 1919 * 1000 = 504.43 (research note 2.6)
    assert to_touch1000(Point(1920, 1080), size) == Point(1000.0, 1000.0)  # a box edge at W clamps to W - 1
    assert to_touch1000(Point(-3, -1), size) == Point(0.0, 0.0)


def test_the_prompt_states_touch_units_and_writes_one_decimal():
    size = Size(1082, 2202)
    text = frame_statement(Frame.TOUCH1000, size)
    assert "pixel / (size - 1) × 1000 with one decimal" in text
    assert requested_frame(text) == "touch1000"  # the simulator reads the request as the touch frame
    assert requested_frame(frame_statement(Frame.NORM1000, size)) == "norm1000"
    assert format_number(504.45, Frame.TOUCH1000) == "504.5"  # half up on the decimal value written
    assert format_number(0.25, Frame.TOUCH1000) == "0.3"
    line = crosshair_line(Point(540, 1100), Frame.TOUCH1000, size)
    parsed = parse_crosshair_line(line)
    assert parsed is not None and parsed[1] is Frame.TOUCH1000
    assert parsed[0] == to_touch1000(Point(540, 1100), size)


def test_touch1000_has_one_mapping():
    with pytest.raises(ValueError, match="last_pixel"):
        FrameRule(units="touch1000", mapping="edge")
    rule = FrameRule(units="touch1000")
    size = Size(1170, 1992)
    p = rule.to_pixels(500.0, 250.0, size)
    assert p == Point(500.0 * 1169 / 1000, 250.0 * 1991 / 1000)


def _elements(text: str) -> list[dict]:
    line = next(ln for ln in text.splitlines() if ln.startswith(ELEMENTS_PREFIX))
    return json.loads(line[len(ELEMENTS_PREFIX) :])["grounding"]["elements"]


def test_som_element_list_is_in_touch_units_for_a_touch_model_and_pixels_for_a_pixel_model():
    size = Size(1082, 2202)
    marks = [
        Mark(1, Box(105.0, 1393.875, 975.5, 1508.375), 0.9, (255, 0, 0)),
        Mark(2, Box(36.75, 18.0, 233.0, 215.0), 0.8, (0, 0, 255)),
    ]
    touch = _elements(som_prompt(instruction="Tap Sign In", size=size, frame=Frame.TOUCH1000, marks=marks))
    pixel = _elements(som_prompt(instruction="Tap Sign In", size=size, frame=Frame.PIXEL, marks=marks))
    assert [e["id"] for e in touch] == [1, 2] and set(touch[0]) == {"id", "center", "box"}
    for e, m in zip(touch, marks, strict=True):
        b = m.box
        cx, cy = (b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2
        assert e["center"] == [_one_decimal_half_up(cx, size.width), _one_decimal_half_up(cy, size.height)]
        assert e["box"] == [
            _one_decimal_half_up(b.x0, size.width),
            _one_decimal_half_up(b.y0, size.height),
            _one_decimal_half_up(b.x1, size.width),
            _one_decimal_half_up(b.y1, size.height),
        ]
        # a center taps the mark: back in pixels it is inside the box
        back = from_touch1000(Point(*e["center"]), size)
        assert b.x0 <= back.x <= b.x1 and b.y0 <= back.y <= b.y1
    assert pixel[0]["center"] == [540.3, 1451.1]  # pixels, one decimal: (105 + 975.5) / 2, ...
    assert pixel[0]["box"] == [105.0, 1393.9, 975.5, 1508.4]
