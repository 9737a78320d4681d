"""AndroidControl's three conventions (issue 55), worked by hand on a 1080x2400 phone screen, and their
place in a phone trial's record."""

from __future__ import annotations

import pytest

from dvoc_bench.core.geometry import Box, Point, Size
from dvoc_bench.core.records import TrialRecord
from dvoc_bench.core.scoring import android_control

SCREEN = Size(1080, 2400)
BOX = Box(100, 100, 199, 149)  # centre (149.5, 124.5); w 99, h 49
# grown x1.2: |dx| <= 59.4, |dy| <= 29.4; near: 0.04 * 2400 = 96 px; screen14: hypot(dx/1080, dy/2400) <= 0.14


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        (Point(149.5, 124.5), (True, True, True)),
        (Point(199, 149), (True, True, True)),  # the box's last pixel, edges included
        (Point(205, 124.5), (False, True, True)),  # outside the box, inside it grown x1.2 (x <= 208.9)
        (Point(149.5, 152), (False, True, True)),  # below the box, inside the grown one (y <= 153.9)
        (Point(239.5, 124.5), (False, True, True)),  # outside the grown box, 90 px from the centre <= 96
        (Point(249.5, 124.5), (False, False, True)),  # 100 px: past 96, but 100/1080 = 0.093 <= 0.14
        (Point(149.5, 124.5 + 330), (False, False, True)),  # 330/2400 = 0.1375
        (Point(149.5, 124.5 + 340), (False, False, False)),  # 340/2400 = 0.1417
        (Point(149.5 + 155, 124.5), (False, False, False)),  # 155/1080 = 0.1435: the ellipse is narrow
    ],
)
def test_the_three_conventions_by_hand(point, expected):
    s = android_control(point, BOX, SCREEN)
    assert (s.ac_box, s.ac_grown, s.ac_screen14) == expected


def test_no_point_fails_every_convention():
    s = android_control(None, BOX, SCREEN)
    assert (s.ac_box, s.ac_grown, s.ac_screen14) == (False, False, False)


def test_a_phone_trials_record_carries_them_and_others_do_not(make_spec_and_result):
    spec, result = make_spec_and_result(Point(249.5, 124.5))
    phone = TrialRecord.build(spec, result, BOX, 0.0, scene_kind="web", screen=SCREEN)
    assert (phone.ac_box, phone.ac_grown, phone.ac_screen14) == (False, False, True)
    assert phone.hit is False  # the box rule of the record agrees with ac_box
    desk = TrialRecord.build(spec, result, BOX, 0.0, scene_kind="web")
    assert (desk.ac_box, desk.ac_grown, desk.ac_screen14) == (None, None, None)


@pytest.fixture
def make_spec_and_result():
    from dvoc_bench.core.records import TrialResult, TrialSpec

    def make(final: Point):
        spec = TrialSpec(
            trial_key="k", experiment="phones", model="sim-ideal", model_id="sim/ideal", api_base=None,
            provider="simulator", simulated=True, coord_frame="pixel", task="M1a", scene_hash="h",
            method="oneshot", protocol="v1", alpha="-", overlay="-", predict="-", start=None,
            start_index=1, rep=0, seed=1, epsilon=30.0, conf_threshold=0.5, window=1, max_iterations=10,
            max_attempts=1, alpha_constant=0.5, device="Pixel 7",
        )  # fmt: skip
        result = TrialResult(status="ok", stop_reason="act", final_point=[final.x, final.y])
        return spec, result

    return make


def test_the_box_grows_by_a_fifth_not_the_aitw_two_fifths():
    wide = Box(0, 1000, 999, 1199)  # centre (499.5, 1099.5), half width 499.5; x1.2: 599.4; x1.4: 699.3
    assert android_control(Point(499.5 + 590, 1099.5), wide, SCREEN).ac_grown is True
    assert android_control(Point(499.5 + 620, 1099.5), wide, SCREEN).ac_grown is False  # 620 > 599.4, > 96


def test_the_report_table_counts_every_rule_and_the_taps_that_disagree():
    import pandas as pd

    from dvoc_bench.analysis.phones import table

    rows = [
        # task, device, hit, ac_box, ac_grown, ac_screen14, clicked_target
        ("M1a", "Pixel 7", True, True, True, True, True),
        ("M1b", "Pixel 7", False, False, True, True, False),
        ("M1c", "Pixel 7", False, False, False, True, True),  # a tap that disagrees with the hit rule
        ("W1", "-", True, None, None, None, True),  # a desktop trial: not a phone trial
    ]
    t = pd.DataFrame(
        [
            dict(task=a, device=d, hit=h, ac_box=b, ac_grown=g, ac_screen14=s, clicked_target=c,
                 model="sim-ideal", simulated=True, method="oneshot", status="ok")
            for a, d, h, b, g, s, c in rows
        ]
    )  # fmt: skip
    (row,) = table(t).to_dict("records")
    assert row["n"] == 3 and row["device"] == "Pixel 7"
    assert (row["hit"], row["ac_box"], row["ac_grown"], row["ac_screen14"]) == (1 / 3, 1 / 3, 2 / 3, 1.0)
    assert row["ac_screen14_lo"] < 1.0 and row["ac_screen14_hi"] == 1.0
    assert (row["taps"], row["taps_agree"]) == (3, 2)
