"""One bounded JSON reader for everything read back (issue #51, item 2): nesting depth and size are checked
before parsing, so no reader of ours (resume, merge, doctor, view, the cache, imports) raises
``RecursionError`` or ``MemoryError`` on what it reads; what does not pass is one line naming where."""

from __future__ import annotations

import json
import re
import shutil
import tracemalloc
from pathlib import Path

import pytest

from dvoc_bench import doctor as doctor_door
from dvoc_bench import merge as merge_door
from dvoc_bench import view as view_door
from dvoc_bench.core import rundir
from dvoc_bench.core.jsonread import (
    MAX_DEPTH,
    MAX_LINE_BYTES,
    JsonError,
    bounded_lines,
    load_file,
    loads,
    too_deep,
)
from dvoc_bench.runner.compose import quick_setup
from dvoc_bench.runner.sweep import run_sweep
from tests.support import ROOT

DEEP = "[" * 100_000  # the form: not JSON, and too deep for Python's parser
VALID_900 = "[" * 900 + "]" * 900  # valid JSON the parser reads, but nothing can walk it afterwards


def nested(n: int) -> str:
    return "[" * n + "]" * n


# ------------------------------------------------------------------------------------------ the reader


@pytest.mark.parametrize("text", [DEEP, VALID_900, nested(MAX_DEPTH + 1), '{"a":' * 70 + "1" + "}" * 70])
def test_too_deep_is_one_line_naming_where(text):
    with pytest.raises(JsonError) as e:
        loads(text, "somewhere.json")
    assert e.value.kind == "depth" and isinstance(e.value, ValueError)
    assert str(e.value).startswith("somewhere.json: JSON nested too deeply") and "\n" not in str(e.value)


def test_the_depth_bound_is_exact_and_brackets_in_strings_do_not_count():
    assert loads(nested(MAX_DEPTH)) is not None
    text = json.dumps({"s": "[" * 5000 + "{" * 5000, "t": 'a"\\[[[' * 100, "u": [[["]]]]"]]]})
    assert not too_deep(text) and loads(text)["u"] == [[["]]]]"]]]
    assert too_deep(nested(MAX_DEPTH + 1)) and too_deep(nested(MAX_DEPTH + 1).encode())
    # an independent count: the depth of the deepest list Python builds
    for n in (1, 30, MAX_DEPTH):
        v, d = loads(nested(n)), 0
        while isinstance(v, list):
            v, d = (v[0] if v else None), d + 1
        assert d == n


@pytest.mark.parametrize(
    ("data", "kind"),
    [(b"\xff\xfe{}", "encoding"), ("{'a': 1}", "syntax"), ("1" * 5000, "syntax"), ("", "syntax")],
)
def test_what_is_not_json_is_one_line_of_its_kind(data, kind):
    with pytest.raises(JsonError) as e:
        loads(data, "x")
    assert e.value.kind == kind and "\n" not in str(e.value) and str(e.value).startswith("x: ")


def test_a_lone_surrogate_comes_back_writable():
    v = loads('{"a": ["\\ud800x", "\\uDFFF"], "\\ud83d\\ude00": 1}')
    assert v == {"a": ["\ufffdx", "\ufffd"], "\U0001f600": 1}
    json.dumps(v, ensure_ascii=False).encode("utf-8")  # writable again


def test_a_file_above_the_bound_is_refused_before_it_is_read(tmp_path):
    p = tmp_path / "big.json"
    p.write_text(json.dumps({"a": "x" * 2000}))
    with pytest.raises(JsonError) as e:
        load_file(p, max_bytes=1000)
    assert e.value.kind == "size" and str(p) in str(e.value)
    assert load_file(p)["a"] == "x" * 2000
    with pytest.raises(FileNotFoundError):
        load_file(tmp_path / "absent.json")


def test_a_line_too_long_is_never_held_whole(tmp_path):
    p = tmp_path / rundir.TRIALS
    huge = 4 * MAX_LINE_BYTES
    with p.open("wb") as f:
        f.write(b'{"trial_key":"a"}\n')
        f.write(b'{"trial_key":"b","x":"')
        for _ in range(huge // (1 << 20)):
            f.write(b"y" * (1 << 20))
        f.write(b'"}\n{"trial_key":"c"}\n')
    tracemalloc.start()
    try:
        got = list(rundir.read_jsonl(p))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [r["trial_key"] for r in got] == ["a", "c"]
    assert peak < 2.5 * MAX_LINE_BYTES < huge  # the line is 4x the bound; at most the bound is held (twice)
    with p.open("rb") as f:
        spans = [(off, size) for off, _, size in bounded_lines(f, 1000)]
    assert sum(s for _, s in spans) == p.stat().st_size and [o for o, _ in spans][1] == 18


# ------------------------------------------------------------------------- the readers the issue named


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("clean") / "run"
    run_sweep(quick_setup(["smoke=true"]), d)
    return d


@pytest.fixture
def run(clean_run, tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(clean_run, d)
    return d


FORMS = {
    "trial line, 100,000 [": (rundir.TRIALS, "append", DEEP),
    "trial line, valid, 900 deep": (
        rundir.TRIALS, "append", f'{{"trial_key":"z","status":"skipped","x":{VALID_900}}}'
    ),
    "plan line, valid, 900 deep": (rundir.PLAN, "append", f'{{"trial_key":"z","x":{VALID_900}}}'),
    "run_meta.json": (rundir.META, "replace", DEEP),
    "run.json": (rundir.RUN, "replace", DEEP),
    "shard.json": (rundir.SHARD, "replace", DEEP),
}  # fmt: skip


def plant(run: Path, form: str) -> None:
    name, how, text = FORMS[form]
    if how == "append":
        with (run / name).open("a") as f:
            f.write(text + "\n")
    else:
        (run / name).write_text(text)


@pytest.mark.parametrize("form", FORMS)
def test_doctor_reads_every_form_without_a_traceback(run, form, capsys):
    plant(run, form)
    code = doctor_door.main([str(run)])
    out = capsys.readouterr().out
    lines_ = FORMS[form][1] == "append"
    assert code == (1 if lines_ else 0), out  # a bad record line is a problem found; a bad side file is not
    if lines_:
        assert "torn or unreadable lines" in out


@pytest.mark.parametrize("form", FORMS)
def test_view_reads_every_form_without_a_traceback(run, form, tmp_path, capsys):
    plant(run, form)
    assert view_door.main([str(run), "--out", str(tmp_path / "site")]) == 0


@pytest.mark.parametrize("form", FORMS)
def test_merge_reads_every_form_without_a_traceback(run, form, tmp_path, capsys):
    plant(run, form)
    code = merge_door.main([str(run), "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err.strip()
    if form == "run_meta.json":  # a source whose fingerprint cannot be read is refused, one line
        assert code == 2 and len(err.splitlines()) == 1 and rundir.META in err
    else:
        assert code == 0, err


def test_merge_reads_a_deep_merge_json_of_its_output(run, tmp_path, capsys):
    out = tmp_path / "m"
    assert merge_door.main([str(run), "--out", str(out)]) == 0
    (out / rundir.MERGE).write_text(DEEP)
    assert merge_door.main([str(run), "--out", str(out)]) == 0
    assert json.loads((out / rundir.MERGE).read_text())  # written again, readable


@pytest.mark.parametrize("form", FORMS)
def test_a_resume_reads_every_form_without_a_traceback(run, form):
    before = len(list(rundir.read_jsonl(run / rundir.TRIALS)))
    plant(run, form)
    run_sweep(quick_setup(["smoke=true"]), run)  # the same command again
    assert len([r for r in rundir.read_jsonl(run / rundir.TRIALS) if r.get("status") == "ok"]) == before


def test_a_deep_cache_entry_is_a_miss(tmp_path):
    from dvoc_bench.models.cache import ResponseCache

    cache = ResponseCache(tmp_path)
    path = cache._path("m", "k" * 64)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"identity": "m", "key": "k" * 64, "x": 1}).replace("1}", VALID_900 + "}"))
    assert cache.get("m", "k" * 64) is None


def test_the_doctor_moves_a_line_too_long_to_read_aside_byte_for_byte(run):
    from dvoc_bench.runner.doctor import repair

    path = run / rundir.TRIALS
    before = path.read_bytes()
    huge = b'{"trial_key":"huge","x":"' + b"y" * (MAX_LINE_BYTES + 10) + b'"}\n'
    path.write_bytes(before + huge)
    rep = repair(run)
    assert rep.clean and rep.moved == 1, rep.lines()
    assert path.read_bytes() == before
    rejected = rep.moved_to / "trials.rejected.jsonl"
    assert rejected.stat().st_size == len(huge) and rejected.read_bytes() == huge


# ------------------------------------------------------------------------------------- one reader


ALLOWED = {
    # our own processes' lines and our own values, never a file or a reply read back
    "dvoc_bench/__main__.py": "the job's exit codes, written by this process",
    "dvoc_bench/analysis/export.py": "a column the export itself just dumped",
    "dvoc_bench/app/simserve/server.py": "the fault injector's own reply",
    "dvoc_bench/benchmarks/dataset.py": "a benchmark child's last stdout line",
    "dvoc_bench/benchmarks/limits.py": "a benchmark child's last stdout line",
    "dvoc_bench/benchmarks/throughput.py": "a benchmark child's last stdout line",
    "dvoc_bench/calibration/fit.py": "a deep copy",
    "dvoc_bench/calibration/replay.py": "the in-process simulator's tool call; a deep copy",
    "dvoc_bench/core/assumptions.py": "a cell of the repository's own table",
    "dvoc_bench/models/simulator/reading.py": "the simulator reading the prompt the harness wrote",
    "dvoc_bench/protocol/som.py": "a deep copy",
    "dvoc_bench/scenes/desktop/apps.py": "the desktop runner's protocol (a child of ours)",
    "dvoc_bench/scenes/desktop/atspi_runner.py": "the desktop runner's protocol (a child of ours)",
    "dvoc_bench/scenes/desktop/runner.py": "the desktop runner's protocol (a child of ours)",
    "dvoc_bench/scenes/desktop/source.py": "the desktop runner's protocol (a child of ours)",
}


def test_every_json_read_goes_through_the_one_reader():
    raw = re.compile(r"\bjson\.loads?\(|\bjson\.JSONDecoder\b|pd\.read_json\(")
    found = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "dvoc_bench").rglob("*.py")
        if p.name != "jsonread.py" and raw.search(p.read_text(encoding="utf-8"))
    }
    assert found <= set(ALLOWED), sorted(found - set(ALLOWED))
