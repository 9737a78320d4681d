"""``python -m dvoc_bench.bench ultra-agree``: the box matching it reports, and its refusals of bad input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dvoc_bench.benchmarks.ultra_agree import greedy_matches, iou_matrix, main


def test_iou_matrix_by_hand() -> None:
    a = [[0, 0, 10, 10], [0, 0, 2, 2]]
    b = [[5, 0, 15, 10], [0, 0, 10, 10], [20, 20, 30, 30]]
    m = iou_matrix(np.array(a), np.array(b))
    # 5x10 overlap of two 10x10 boxes: 50 / 150; identical: 1; disjoint: 0; 2x2 inside 10x10: 4 / 100
    assert m == pytest.approx(np.array([[1 / 3, 1.0, 0.0], [0.0, 0.04, 0.0]]))


def test_greedy_one_to_one_by_score() -> None:
    ours = [[0, 0, 10, 10], [100, 100, 110, 110]]
    # two reference boxes both overlap our first box at IoU >= 0.7; the higher-scored one takes it, the
    # other finds none left: one match, not two
    ref = [[0, 0, 10, 9, 0.2], [0, 0, 10, 10, 0.9]]
    assert greedy_matches(ref, ours, 0.7) == [1.0]
    assert greedy_matches(ref + [[100, 100, 110, 111, 0.5]], ours, 0.7) == pytest.approx([1.0, 100 / 110])
    # a shifted box (IoU 0.6) does not match at 0.7 but does at 0.5
    shifted = [[2.5, 0, 12.5, 10, 0.9]]
    assert greedy_matches(shifted, ours, 0.7) == []
    assert greedy_matches(shifted, ours, 0.5) == pytest.approx([0.6])
    assert greedy_matches([], ours, 0.7) == [] and greedy_matches(ref, [], 0.7) == []


def _reference(tmp_path: Path, name: str, weights: Path, shot: Path, **over: object) -> Path:
    ref = {
        "weights_sha256": hashlib.sha256(weights.read_bytes()).hexdigest(),
        "conf": 0.05,
        "iou": 0.1,
        "images": [{"path": str(shot), "kind": "pages", "sha256": "0" * 64, "640": []}],
        **over,
    }
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps({k: v for k, v in ref.items() if v is not None}), encoding="utf-8")
    return p


def test_bad_input_exits_2_naming_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing runs on a bad reference: each case stops before a detector is built (the weights here are
    not even a model)."""
    weights = tmp_path / "model.pt"
    weights.write_bytes(b"not the weights")
    shot = tmp_path / "shot.png"
    Image.new("RGB", (64, 48), "white").save(shot)
    cases = {
        "--reference: cannot read": tmp_path / "missing.json",
        "no 'images'": _reference(tmp_path, "noimages", weights, shot, images=None),
        "is not the reference's weights": _reference(
            tmp_path, "otherweights", weights, shot, weights_sha256="f" * 64
        ),
        "not the screenshot the reference was made on": _reference(tmp_path, "othershot", weights, shot),
    }
    for needle, ref in cases.items():
        with pytest.raises(SystemExit) as e:
            main(["--reference", str(ref), "--model", str(weights)])
        assert e.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert needle in err, (needle, err)
