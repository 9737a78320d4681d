"""README.md and every docs/*.md are executable: every ``python -m dvoc_bench…`` command of their fenced
code blocks runs, and the numbers they quote from simulated runs (wherever they are quoted) are the ones
``python -m dvoc_bench.bench readme`` prints.

Commands run at smoke scale: ``smoke=true`` is appended where the command sweeps, and runs go to a
temporary folder (``hydra.run.dir=`` / ``hydra.sweep.dir=``). ``RUN_DIR`` / ``RUN_A`` / ``RUN_B`` become
the session's default run and one-trial run, ``/path/to/page.html`` a page with a Save button; ``model=
local-sim`` talks to the simulator server of the ``sim_url`` fixture; ``"$DVOC_UPSTREAM"`` becomes the
authors' records folder of the tests (:data:`tests.support.UPSTREAM`), and the command runs with
``DVOC_UPSTREAM`` set to it. A command that cannot run in CI carries ``# needs:
key|server|dataset|xvfb|long|writes-repo`` on its line: only those are skipped (and, with the reason, a
web command without a Chromium or a command reading ``$DVOC_UPSTREAM`` without the authors' records,
which fails instead under ``DVOC_REQUIRE_UPSTREAM=1``; CI has both). The commands run two at a time, once
per module; each is then its own test, named by its file and line (``docs/cli.md:L12:...``), and the
terminal summary (conftest.py) says how many ran and were skipped.

Also here: README.md stays short (:data:`README_MAX_BYTES`), and no documentation refers to the research
notes outside the repository (:data:`PRIVATE_REFS`).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dvoc_bench.benchmarks import readme_numbers
from tests.support import HANG_S, UPSTREAM, need, required

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
"""The executable documentation: the README first, then docs/*.md."""
README_MAX_BYTES = 15 * 1024
MARKERS = ("key", "server", "dataset", "xvfb", "long", "writes-repo")
MARKER_RE = re.compile(r"#\s*needs:\s*([\w-]+)")
PLACEHOLDERS = ("RUN_DIR", "RUN_A", "RUN_B", "/path/to/page.html")
UPSTREAM_VARS = ("${DVOC_UPSTREAM}", "$DVOC_UPSTREAM")
"""How a command names the authors' records folder (``--upstream "$DVOC_UPSTREAM"``)."""


@dataclass
class Command:
    line: int
    text: str  # as written (continuations joined)
    env: dict[str, str] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)  # from "python" on
    needs: str | None = None
    file: str = "README.md"  # relative to the repository

    @property
    def module(self) -> str:
        return self.argv[2]

    @property
    def id(self) -> str:
        return f"{self.file}:L{self.line}:" + " ".join(self.argv[2:])[:70]

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"

    @property
    def reads_upstream(self) -> bool:
        return any(v in self.text for v in UPSTREAM_VARS)


def fenced_lines(text: str) -> list[tuple[int, str]]:
    """Logical lines (``\\`` continuations joined) inside fenced code blocks, with their line numbers."""
    out, inside, buf, start = [], False, "", 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            continue
        if not buf:
            start = n
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((start, buf + line))
        buf = ""
    return out


def extract(text: str, file: str = "README.md") -> list[Command]:
    """Every ``python -m dvoc_bench…`` command of a Markdown file's fenced blocks."""
    cmds = []
    for n, line in fenced_lines(text):
        if "python -m dvoc_bench" not in line:
            continue
        m = MARKER_RE.search(line)
        needs = m.group(1) if m else None
        assert needs is None or needs in MARKERS, f"{file} line {n}: unknown marker {needs!r}"
        part = line.split("&&")[-1]  # a set-up line: what it finally runs
        tokens = shlex.split(part, comments=True)
        if tokens and tokens[-1] == "&":
            tokens = tokens[:-1]
        env = {}
        while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", tokens[0]):
            k, v = tokens.pop(0).split("=", 1)
            env[k] = v
        if tokens[:2] != ["python", "-m"] or not tokens[2].startswith("dvoc_bench"):
            continue
        cmds.append(Command(n, line.strip(), env, tokens, needs, file))
    return cmds


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


COMMANDS = [c for doc in DOCS for c in extract(doc.read_text(encoding="utf-8"), rel(doc))]


def needs_chromium(c: Command) -> bool:
    web_bench = c.module == "dvoc_bench.bench" and c.argv[3:4] == ["web"]
    return web_bench or bool(re.search(r"\bW\d\b|task=custom", c.text))


def missing_data(c: Command) -> tuple[str, str] | None:
    """Why a command cannot run here although CI can run it, as ``(dependency, why)`` for
    :func:`tests.support.need`: no Chromium for a web page, or no authors' records at ``UPSTREAM`` for a
    command reading ``$DVOC_UPSTREAM`` (CI has both)."""
    if needs_chromium(c) and (why := chromium_missing()):
        return "CHROMIUM", why
    if c.reads_upstream and not UPSTREAM.is_dir():
        return "UPSTREAM", f"not at {UPSTREAM} (set DVOC_UPSTREAM to their folder)"
    return None


def chromium_missing() -> str | None:
    from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium

    try:
        find_chromium()
    except ChromiumNotFoundError as e:
        return str(e)
    return None


@dataclass
class Result:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    out_dir: Path | None = None


def prepare(
    c: Command, i: int, tmp: Path, subs: dict[str, str]
) -> tuple[list[str], dict[str, str], Path | None]:
    """The command as the test runs it: placeholders substituted, smoke scale, runs under ``tmp``."""
    args = [subs.get(a, a) for a in c.argv[3:]]
    args = [a.replace("/path/to/page.html", subs["/path/to/page.html"]) for a in args]
    for var in UPSTREAM_VARS:  # no shell expands it: the test does
        args = [a.replace(var, str(UPSTREAM)) for a in args]
    out_dir = None
    if c.module == "dvoc_bench" and "--help" not in args:
        out_dir = tmp / f"cmd{i}"
        multirun = "-m" in args or "--multirun" in args
        if not any(a.startswith("smoke=") for a in args):
            args.append("smoke=true")
        args += [f"hydra.{'sweep' if multirun else 'run'}.dir={out_dir}", "run.quiet=true"]
    env = {**os.environ, **c.env, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "1"}
    if c.reads_upstream:
        env["DVOC_UPSTREAM"] = str(UPSTREAM)
    return [sys.executable, "-m", c.module, *args], env, out_dir


def copy_run(run: Path, dest: Path) -> Path:
    """A copy of a run directory (its frames linked, not copied)."""
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns("frames", "report*"))
    if (run / "frames").is_dir():
        (dest / "frames").symlink_to(run / "frames", target_is_directory=True)
    return dest


@pytest.fixture(scope="module")
def results(tmp_path_factory, default_run, one_trial_run, sim_url) -> dict[int, Result]:
    """Every runnable command, two at a time."""
    tmp = tmp_path_factory.mktemp("readme")
    page = tmp / "page.html"
    page.write_text(
        "<!doctype html><html><body style=\"font-family: 'DVOC Sans'; margin: 40px\">"
        '<h1>Settings</h1><input id="name" value="Ada"><button id="save">Save</button></body></html>'
    )
    todo = {}
    for i, c in enumerate(COMMANDS):
        if c.needs or missing_data(c):
            continue
        # each command gets its own copy of the runs it names: reports write into them, two at a time
        subs = {"/path/to/page.html": str(page)}
        for name, run in (("RUN_DIR", default_run), ("RUN_A", default_run), ("RUN_B", one_trial_run)):
            if name in c.argv:
                subs[name] = str(copy_run(run, tmp / f"cmd{i}-{name}" / run.name))
        todo[i] = prepare(c, i, tmp, subs)
    if not any(is_readme_bench(COMMANDS[i]) for i in todo):  # the docs must show it; run it anyway
        todo[-1] = prepare(Command(0, "", argv=["python", "-m", "dvoc_bench.bench", "readme"]), -1, tmp, subs)

    def run(item):
        i, (argv, env, out_dir) = item
        p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=HANG_S)
        return i, Result(argv, p.returncode, p.stdout, p.stderr, out_dir)

    # the slowest first, so the two workers finish together
    order = sorted(todo.items(), key=lambda kv: not is_readme_bench(COMMANDS[kv[0]] if kv[0] >= 0 else None))
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, order))


def is_readme_bench(c: Command | None) -> bool:
    return c is None or (c.module == "dvoc_bench.bench" and c.argv[3:] == ["readme"])


@pytest.fixture(scope="module")
def readme_output(results) -> str:
    """What ``python -m dvoc_bench.bench readme`` printed (the documented command of that name)."""
    (i,) = [i for i in results if i < 0 or is_readme_bench(COMMANDS[i])]
    r = results[i]
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


@pytest.mark.e2e  # every command runs in a subprocess
@pytest.mark.parametrize("i", range(len(COMMANDS)), ids=[c.id for c in COMMANDS])
def test_readme_command_runs(i, results, readme_output):
    c = COMMANDS[i]
    if c.needs:  # by design: never run by the tests (BY_DESIGN in tests/support.py keeps it a skip in CI)
        pytest.skip(f"README command marked needs: {c.needs} — {c.where}: {c.text[:120]}")
    if is_readme_bench(c):
        assert set(readme_numbers.parse(readme_output)) == {
            "default run (What the default run does)",
            readme_numbers.STORY,
            "one-shot and declare_frame (Coordinate frames)",
            "experiment=frames (The finding, plainly)",
            readme_numbers.HEADLINE,
            readme_numbers.CROSSVAL,
            readme_numbers.CROSSVAL_USE,
        }
    if i not in results:
        missing = missing_data(c)
        assert missing is not None, f"{c.where}: not run, with no reason"
        need(missing[0], f"{missing[1]} — {c.where}")
    r = results[i]
    assert r.returncode == 0, f"{c.where}: {' '.join(r.argv)}\n{r.stderr[-3000:]}"
    args = c.argv[3:]
    if c.module == "dvoc_bench" and "--help" in args:
        assert r.stdout.startswith("dvoc-bench:")
    elif c.module == "dvoc_bench" and "run.plan_only=true" in args:  # sizes the sweep, writes nothing
        assert r.stdout.startswith("plan only:") and not (r.out_dir / "trials.jsonl").exists()
    elif c.module == "dvoc_bench":
        assert "run dir:" in r.stdout
        jobs = sorted(d for d in r.out_dir.iterdir() if d.is_dir()) if "-m" in args else [r.out_dir]
        assert jobs and all(j.is_dir() for j in jobs)
        if "experiment=frame_probe" not in args:  # the probe writes its own records, not trials
            assert all((j / "trials.jsonl").is_file() for j in jobs)
    elif c.module == "dvoc_bench.report":
        assert "report written to" in r.stderr and "# dvoc-bench report" in r.stdout


@pytest.mark.e2e  # the numbers come from simulated runs
def test_readme_quotes_the_simulated_numbers_exactly(readme_output):
    texts = {rel(doc): doc.read_text(encoding="utf-8") for doc in DOCS}
    blocks = readme_numbers.parse(readme_output)
    assert len(blocks) == 7
    for name, block in blocks.items():
        if block == readme_numbers.NO_RECORDS and not UPSTREAM.is_dir() and not required():
            continue  # the headline needs the authors' records (tests/analysis/test_headline.py skips too)
        assert any(block in text for text in texts.values()), (
            f"README / docs out of date ({name}); paste `python -m dvoc_bench.bench readme`:\n{block}"
        )


def test_readme_quotes_the_cross_validation_tables():
    """Issue 34 item 5: the validation tables are the ones the cross-validation file renders to (fast: no
    sweep; the file is written by ``calibrate --cross-validate``): the leave-one-out table in
    docs/simulator.md, what the simulator can be used for in the README."""
    block = readme_numbers.crossval_block()
    use = readme_numbers.crossval_use_block()
    assert "| held out |" in block and "| claims about a real model | no |" in use
    for text, doc in ((block, ROOT / "docs" / "simulator.md"), (use, README)):
        assert text in doc.read_text(encoding="utf-8"), (
            f"{rel(doc)} out of date; paste `python -m dvoc_bench.bench readme`:\n{text}"
        )


def test_the_commands_are_found_and_counted():
    text = README.read_text(encoding="utf-8")
    assert text.startswith(
        "# dvoc-bench\n\n```bash\n"
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && python -m dvoc_bench\n"
        'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && '
        "python -m pytest -q -n auto --dist loadfile\n```"
    )  # the two set-up lines stay as they are
    assert COMMANDS[0].argv == ["python", "-m", "dvoc_bench"] and COMMANDS[0].line == 4
    assert COMMANDS[0].file == "README.md" and len(DOCS) > 10  # the README, then docs/*.md
    assert {c.file for c in COMMANDS} >= {"README.md", "docs/cli.md", "docs/paper.md"}
    assert [c for c in COMMANDS if c.reads_upstream], "no command reads the authors' records"
    by_marker = Counter(c.needs for c in COMMANDS if c.needs)
    runnable = [c for c in COMMANDS if not c.needs]
    multiruns = [c for c in runnable if "-m" in c.argv[3:]]
    assert len(multiruns) >= 3 and any("hydra/launcher=joblib" in c.text for c in multiruns)
    assert len(runnable) >= 20 and set(by_marker) <= set(MARKERS)
    # every marked command says why on its own line, and the marker is what the docs' own key lists
    assert all(MARKER_RE.search(c.text) for c in COMMANDS if c.needs)
    assert not [c.id for c in COMMANDS if "../shared" in c.text]  # the records' folder is $DVOC_UPSTREAM


def test_extraction_handles_continuations_env_markers_and_set_up_lines():
    sample = (
        "```bash\n"
        "python3 -m venv .venv && pip install -e . && python -m dvoc_bench\n"
        "KEY=... python -m dvoc_bench model=x   # needs: key\n"
        "python -m dvoc_bench a=1 \\\n  'b=\"#save\"'   # fine\n"
        "python -m dvoc_bench.serve --port 1 &   # needs: server\n"
        "python -m pytest -q\n"
        "```\n"
        "prose `python -m dvoc_bench ignored=1`\n"
    )
    cmds = extract(sample)
    assert [c.argv for c in cmds] == [
        ["python", "-m", "dvoc_bench"],
        ["python", "-m", "dvoc_bench", "model=x"],
        ["python", "-m", "dvoc_bench", "a=1", 'b="#save"'],
        ["python", "-m", "dvoc_bench.serve", "--port", "1"],
    ]
    assert [c.needs for c in cmds] == [None, "key", None, "server"] and cmds[1].env == {"KEY": "..."}
    assert [c.line for c in cmds] == [2, 3, 4, 6]
    with pytest.raises(AssertionError, match="unknown marker"):
        extract("```\npython -m dvoc_bench x=1  # needs: coffee\n```\n")
    (up,) = extract(
        '```\npython -m dvoc_bench.report RUN_DIR --upstream "$DVOC_UPSTREAM"\n```\n', "docs/x.md"
    )
    assert up.reads_upstream and up.id.startswith("docs/x.md:L2:dvoc_bench.report")
    argv, env, _ = prepare(up, 0, Path("/tmp"), {"/path/to/page.html": "/p.html"})
    assert argv[-1] == str(UPSTREAM) and env["DVOC_UPSTREAM"] == str(UPSTREAM)


def test_the_readme_is_short():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes (at most {README_MAX_BYTES}): move detail to docs/"
    )


PRIVATE_REFS = re.compile(
    r"\.\./shared|DESIGN §|DESIGN\.md|upstream-facts|facts §|anchors(-r3)?\.md|\bsom\.md|[Ii]ssue #?\d+"
)
"""References to the research notes outside the repository (their folder, a design section, a note by
name, an issue number): the documentation states the facts in its own words instead."""

TEXT_SUFFIXES = {".md", ".ipynb", ".py", ".yaml", ".yml", ".txt", ".json", ".html", ".js", ".css"}
"""What a folder is searched in."""


def private_refs(paths) -> list[str]:
    """``path:line: text`` of every line of ``paths`` (files, or folders searched for text files) that
    matches :data:`PRIVATE_REFS`."""
    hits = []
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.suffix in TEXT_SUFFIXES) if path.is_dir() else [path]
        for f in files:
            for n, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if PRIVATE_REFS.search(line):
                    hits.append(f"{rel(f)}:{n}: {line.strip()[:160]}")
    return hits


DOCUMENTATION = [
    README,
    ROOT / "docs",
    ROOT / "analysis" / "README.md",
    *sorted((ROOT / "analysis").glob("*.ipynb")),
]


def test_the_documentation_refers_to_no_private_note():
    hits = private_refs(DOCUMENTATION)
    assert not hits, "\n".join(hits)


def test_no_file_refers_to_a_private_note():
    hits = private_refs([*DOCUMENTATION, ROOT / "conf", ROOT / "dvoc_bench"])
    assert not hits, "\n".join(hits)


def test_the_first_screen_tells_the_story_above_the_default_table():
    """Issue 52 item 2: a reader of the first screen alone learns what the default run shows, what the paper
    claimed and what the frame finding changes, before the table (the lines are generated: STORY)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    table = next(i for i, ln in enumerate(lines) if ln.startswith("| model "))
    heads = ["- **What the default run shows** [SIMULATED]", "- **What the paper claimed**",
             "- **What the frame finding changes**"]  # fmt: skip
    at = [next((i for i, ln in enumerate(lines) if ln.startswith(h)), None) for h in heads]
    assert None not in at and at == sorted(at) and at[-1] - at[0] == 2, at
    assert at[-1] < table <= 40, "the story and the table must be on the first screen"
    assert "frame request assumed" in lines[at[0]]  # the rows' marker is said in the story's words
