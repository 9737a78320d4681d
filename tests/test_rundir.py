"""The run directory's readers and writers (:mod:`dvoc_bench.core.rundir`): what each reader makes of blank,
torn and foreign lines, the torn-tail repair, the atomic rewrite and ``run.json``'s ``frames``."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from dvoc_bench.core import rundir

LINES = (
    b'{"trial_key":"a","index":0}\n'
    b"\n"
    b"[1, 2]\n"
    b'{"trial_key":"b"}\n'
    b'{"broken\n'
    b'{"trial_key":"c","index":1}'  # the last line, without its newline: torn even though it parses
)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / rundir.STEPS
    p.write_bytes(LINES)
    return p


def test_read_jsonl_passes_over_blank_and_unparseable_lines_with_a_warning(path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="dvoc_bench.core.rundir"):
        got = list(rundir.read_jsonl(path))
    assert got == [{"trial_key": "a", "index": 0}, [1, 2], {"trial_key": "b"}, {"trial_key": "c", "index": 1}]
    assert sum("does not parse" in r.getMessage() for r in caplog.records) == 1
    assert list(rundir.read_jsonl(path.with_name("absent.jsonl"))) == []


def test_complete_records_keep_the_bytes_and_stop_at_a_torn_tail(path: Path) -> None:
    got = list(rundir.complete_records(path))
    assert [r for _, r in got] == [{"trial_key": "a", "index": 0}, {"trial_key": "b"}]
    assert [raw for raw, _ in got] == ['{"trial_key":"a","index":0}\n', '{"trial_key":"b"}\n']


def test_checked_lines_judge_every_line_against_the_files_check(path: Path) -> None:
    lines = rundir.checked_lines(path, rundir.LINE_OK[rundir.STEPS])
    assert [ln.number for ln in lines] == [1, 2, 3, 4, 5, 6]
    assert b"".join(ln.raw for ln in lines) == LINES  # every byte, as on disk
    ok = [ln.obj is not None for ln in lines]
    assert ok == [True, False, False, False, False, False]  # blank, a list, no index, torn, no newline
    trials = rundir.checked_lines(path, rundir.LINE_OK[rundir.TRIALS])
    assert [ln.obj is not None for ln in trials] == [True, False, False, True, False, False]


def test_the_plan_check_reads_the_old_key_too() -> None:
    assert rundir.plan_line_ok({"key": "k"}) and rundir.plan_key({"key": "k"}) == "k"
    assert rundir.plan_key({"trial_key": "t", "key": "k"}) == "t"
    assert not rundir.plan_line_ok({"trial_key": 3})


def test_repair_tail_cuts_the_torn_last_line_only(path: Path) -> None:
    rundir.repair_tail(path)
    assert path.read_bytes() == LINES[: LINES.rindex(b"\n") + 1]
    before = path.read_bytes()
    rundir.repair_tail(path)  # a whole file is left alone
    assert path.read_bytes() == before
    one = path.with_name("one.jsonl")
    one.write_bytes(b'{"torn"')
    rundir.repair_tail(one)
    assert one.read_bytes() == b""


def test_rewrite_lines_replaces_the_file_through_its_own_temporary(tmp_path: Path) -> None:
    p = tmp_path / rundir.TRIALS
    p.write_text("old\n")
    stray = tmp_path / (rundir.TRIALS + rundir.TMP)
    stray.write_text("a stray temporary file\n")
    rundir.rewrite_lines(p, ["a\n", b"b\n"], tmp_suffix=".doctor" + rundir.TMP)
    assert p.read_bytes() == b"a\nb\n"
    assert stray.read_text() == "a stray temporary file\n"  # another suffix: not overwritten, not moved
    assert sorted(x.name for x in tmp_path.iterdir()) == sorted([rundir.TRIALS, stray.name])
    rundir.write_jsonl(p, [{"x": 1, "é": "ü"}])
    assert p.read_text(encoding="utf-8") == '{"x":1,"é":"ü"}\n'


def test_shots_mode_is_what_run_json_says(tmp_path: Path) -> None:
    assert rundir.shots_mode(tmp_path) is None  # no run.json
    (tmp_path / rundir.RUN).write_text("not json")
    assert rundir.shots_mode(tmp_path) is None
    (tmp_path / rundir.RUN).write_text("[1]")
    assert rundir.shots_mode(tmp_path) is None
    rundir.write_run_info(tmp_path, {"frames": "none", "planned": 3})
    assert rundir.shots_mode(tmp_path) == "none"
    assert json.loads((tmp_path / rundir.RUN).read_text()) == {"frames": "none", "planned": 3}
    assert rundir.shot_path(tmp_path, "ab") == tmp_path / "frames" / "ab.png"  # the folder's old name stays
    assert rundir.SHOT_NAME.match("0" * 64 + ".png") and not rundir.SHOT_NAME.match("x.png")
