"""Issue 34 item 5: a predictive interval is a pure function of the simulated trials, not of the order their
rows were written in (``trials.jsonl`` follows the asynchronous order trials finished in)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dvoc_bench.calibration.predictive import predictive_counts


def _sim(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for cell in ("S1|0", "S1|1", "S2|0", "S2|1", "S4|-"):
        for inst in range(2):
            for rep in range(3):
                rows.append(
                    {
                        "_cell": cell,
                        "instance": inst,
                        "trial_key": f"{cell}-{inst}-{rep}",
                        "hit_radius": bool(rng.random() < 0.5),
                    }
                )
    return pd.DataFrame(rows)


def test_shuffled_rows_give_identical_counts() -> None:
    sim = _sim(3)
    cells = {"S1|0": 2, "S1|1": 1, "S2|0": 3, "S2|1": 2, "S4|-": 1}
    base = predictive_counts(sim, cells, n_draw=400, seed=5)
    for k in range(5):
        shuffled = sim.sample(frac=1.0, random_state=k).reset_index(drop=True)
        reordered = dict(reversed(list(cells.items())))
        got = predictive_counts(shuffled, reordered, n_draw=400, seed=5)
        np.testing.assert_array_equal(got, base)
    listed = [c for c, m in cells.items() for _ in range(m)]
    np.testing.assert_array_equal(predictive_counts(sim, listed[::-1], n_draw=400, seed=5), base)
