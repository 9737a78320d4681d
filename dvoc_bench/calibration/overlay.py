"""The perception parameters of the calibrated profiles (``sim.perception``).

The authors' records hold full-overlay steps in one style only (red crosshair, 15 px arms, 3 px bars), so
no step-level record can tell how perception degrades with the marker's contrast, size or clutter. The
values below are set by hand, under three constraints, and written into every calibrated profile:

- the authors' style is read essentially exactly (seen in > 99 % of calls, median error about 1 px on
  S1-S6), as the step-level fit assumes (its replays draw the crosshair and read it without error);
- a marker about as salient as the crossing strokes of a screenshot without overlay (salience about 0.6 on
  S1-S6; a 1 px, 11 px crosshair has 0.84) is seen only some of the time, and is then placed a few pixels
  off. ``detect_salience`` was first 0.9; the overlay sweep (``python -m dvoc_bench.bench overlay``) then
  gave 49 % for that smallest crosshair against 72 % for the next size (a 22-point step); at 0.65, 56 %
  against 72 % (17 points); it is now 0.55 (the smallest crosshair is seen in about 85 % of calls). With
  the refitted Gemini profile the sweep's arm lengths and bar widths move by at most 5.3 and 8.0 points
  between neighbours; the 11 px, 1 px crosshair itself (61 % against 85 % for 21 px, 2 px) stays the one
  steep corner: it is lost among the circle's and labels' strokes in about half the frames;
- Table 5.2 (text only 6 / 17, crosshair only 12 / 12, full 14 / 17) stays inside the simulator's 95 %
  predictive interval (met for all three since the Gemini profile's stopping was fitted;
  before, crosshair only, 12 / 12 against [6, 11], was not). Table 5.2 is therefore an **in-sample**
  check (:data:`dvoc_bench.calibration.predictive.PUBLISHED` marks it so); 5.1 and 5.3 stay out of
  sample.
"""

from __future__ import annotations

PERCEPTION: dict[str, float] = {
    "sigma_px": 4.0,
    "detect_salience": 0.55,
    "detect_slope": 4.0,
    "clutter_weight": 2.0,
    "min_salience": 0.7,
    "min_contrast": 0.2,
}
"""``sim.perception`` of every calibrated profile (see the module docstring)."""

TABLE_5_2_IN_SAMPLE = True
"""Whether Table 5.2 constrained :data:`PERCEPTION` (it did)."""
