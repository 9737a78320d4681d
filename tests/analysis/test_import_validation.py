"""Imports are validated like configs (issue 51, item 7): an infinite box edge, a negative cost, a newline
in a text field, two rows of one trial, a huge integer, a list where a number goes: each one line naming
the row and the field (exit 2), never scored; a 50 MB line is refused before it is parsed, in bounded
memory."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from dvoc_bench import report
from dvoc_bench.analysis.export import SchemaError, load_export
from tests.support import HANG_S, ROOT

GOOD = {"schema_version": 1, "model": "their-model", "method": "oneshot", "task": "a1", "target_x0": 10,
        "target_y0": 10, "target_x1": 50, "target_y1": 30, "final_x": 20, "final_y": 20, "image_w": 100,
        "image_h": 80}  # fmt: skip


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return path


BAD = [
    ('"target_x1": Infinity', "row 2: field `target_x1`: expected a finite number, got inf"),
    ('"final_x": NaN', "row 2: field `final_x`: expected a finite number, got nan"),
    ('"cost_usd": -1e9', "row 2: field `cost_usd`: -1000000000.0 is negative"),
    ('"tokens_in": -3', "row 2: field `tokens_in`: -3 is negative"),
    ('"calls": [{"index": 0, "cost_usd": -1}]', "row 2: field `calls[0].cost_usd`: -1 is negative"),
    ('"model_calls": 1' + "0" * 40, "row 2: field `model_calls`: 1000000000000"),
    ('"target_x0": [1, 2]', "row 2: field `target_x0`: expected a number, got [1, 2]"),
    (
        '"sample_instruction": "click\\rOK"',
        "row 2: field `sample_instruction`: control character U+000D at 5",
    ),
    ('"model": "a|b\\u0007"', "row 2: field `model`: control character U+0007 at 3"),
    ('"sample_instruction": "' + "x" * 10_001 + '"', "row 2: field `sample_instruction`: 10001 characters"),
    ('"target_x1": 150', "row 2: field `target_x1`: 150 is outside the 100x80 image"),
    ('"target_x1": 5', "row 2: field `target_x1`: the box (10, 10, 5, 30) is not ordered"),
    ('"image_w": 0', "row 2: field `image_w`: 0 is not a size"),
    ('"task": "a0"', "row 2: field `rep`: the same trial as row 1"),
]


@pytest.mark.parametrize(("change", "message"), BAD)
def test_a_bad_value_is_one_line_naming_row_and_field(tmp_path, change, message):
    first = dict(GOOD, task="a0")
    second = json.dumps(GOOD)[:-1] + ", " + change + "}"
    second = second.replace('"task": "a1", ', "", 1) if '"task"' in change else second
    for k in ("target_x0", "target_x1", "final_x", "model", "sample_instruction", "image_w", "model_calls"):
        if f'"{k}":' in change:  # the changed field replaces the good one (JSON keeps the last)
            second = second.replace(f'"{k}": {json.dumps(GOOD.get(k))}, ', "", 1) if k in GOOD else second
    path = write(tmp_path / "theirs.jsonl", [json.dumps(first), second])
    with pytest.raises(SchemaError) as e:
        load_export(path)
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert report.main(["--import", str(path), "--no-figures"]) == 2


def test_repeats_and_trial_keys_tell_rows_apart(tmp_path):
    rows = [dict(GOOD, rep=0), dict(GOOD, rep=1), dict(GOOD, trial_key="k1"), dict(GOOD, trial_key="k2")]
    runs = load_export(write(tmp_path / "ok.jsonl", [json.dumps(r) for r in rows]))
    assert len(runs.trials) == 4
    rows[3]["trial_key"] = "k1"
    with pytest.raises(SchemaError, match=r"row 4: field `trial_key`: the same trial as row 3"):
        load_export(write(tmp_path / "dup.jsonl", [json.dumps(r) for r in rows]))


def test_a_box_a_pixel_past_the_edge_is_kept(tmp_path):
    """Published annotations reach a pixel past the image (ScreenSpot-Pro: y0 = -1)."""
    runs = load_export(
        write(tmp_path / "edge.jsonl", [json.dumps(dict(GOOD, target_y0=-0.5, target_x1=100.5))])
    )
    assert len(runs.trials) == 1


def test_non_utf8_bytes_and_bad_json_are_one_line(tmp_path):
    path = tmp_path / "raw.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n" + b'{"model": "\xff"}\n')
    with pytest.raises(SchemaError, match=r"line 2: not UTF-8 \(byte 11\)"):
        load_export(path)
    write(path, [json.dumps(GOOD), "[" * 100_000])
    with pytest.raises(SchemaError, match=r"line 2: not JSON"):
        load_export(path)


CHILD = """
import json, resource, sys
from dvoc_bench.analysis.export import SchemaError, load_export
try:
    load_export(sys.argv[1])
    print("loaded")
except SchemaError as e:
    print(str(e))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def test_a_50_mb_row_is_refused_in_bounded_memory(tmp_path):
    """Before: one row holding a 50 MB string took 18.9 GB and was killed after 760 s."""
    path = tmp_path / "huge.jsonl"
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps(GOOD) + "\n")
        f.write(json.dumps(dict(GOOD, task="a2", sample_instruction="x" * (50 * 2**20))) + "\n")
    one = write(tmp_path / "one.jsonl", [json.dumps(GOOD)])

    def child(f: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", CHILD, str(f)], cwd=ROOT, capture_output=True, text=True,
                              timeout=HANG_S)  # fmt: skip

    baseline, p = child(one), child(path)
    said, peak = p.stdout.strip().splitlines()
    assert said == f"{path}: line 2: longer than 4 MB (one row at most)", p.stderr[-500:]
    base = int(baseline.stdout.strip().splitlines()[-1])
    assert int(peak) - base < 40, (peak, base)  # MB: the 4 MB read, never the 50 MB line
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


def test_a_newline_our_own_records_hold_is_text_and_the_tables_stay_one_line(tmp_path, capsys):
    """A multi-point CUActSpot task's second line, an error's detail: tab and newline are text (the
    report's cells flatten them), so an export of ours imports again."""
    from dvoc_bench import report

    row = dict(GOOD, model="m\tx", sample_instruction="Click it\nPoint at point 1 of 2.", error="a\nb")
    path = tmp_path / "ours.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert report.main(["--import", str(path), "--no-figures", "--n-boot", "20"]) == 0
    text = capsys.readouterr().out
    assert any(line.startswith("| m x |") for line in text.splitlines())


def test_the_first_repeat_is_the_one_a_table_of_every_key_finds_first():
    """The keys are checked once the last row is read, from their hashes (8 bytes a row, not a table of
    every key): the row named is the first that repeats an earlier one, as a table built row by row
    finds it, with that earlier row."""
    import numpy as np

    from dvoc_bench.analysis.export import first_repeat

    def by_table(values):
        seen: dict[int, int] = {}
        for i, v in enumerate(values):
            if v in seen:
                return seen[v], i
            seen[v] = i
        return None

    rng = np.random.default_rng(0)
    for n, span in ((0, 1), (1, 1), (2, 1), (50, 40), (500, 10**6), (3000, 2500), (2000, 2**62)):
        values = rng.integers(-span, span, n, dtype=np.int64) if n else np.zeros(0, dtype=np.int64)
        assert first_repeat(values) == by_table(values.tolist()), (n, span)
    assert first_repeat(np.array([5, 7, 9, 7, 5, 5, 7], dtype=np.int64)) == (1, 3)  # thrice: the first two


def test_a_repeat_far_down_a_long_file_names_both_rows(tmp_path):
    rows = [json.dumps(dict(GOOD, task=f"t{i}")) for i in range(3000)]
    rows[2500] = json.dumps(dict(GOOD, task="t17"))
    with pytest.raises(SchemaError, match=r"row 2501: field `rep`: the same trial as row 18 "):
        load_export(write(tmp_path / "long.jsonl", rows))
