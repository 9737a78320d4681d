"""Progress on a terminal is a bar; into a pipe or a file it is plain periodic lines, never ``\\r``."""

from __future__ import annotations

import os
import pty

import pytest

from dvoc_bench.app.progress import Progress
from tests.support import run_cli


def _feed(p: Progress, n: int) -> None:
    for i in range(n):
        p.update({"status": "error" if i % 9 == 0 else "ok", "model_calls": 3, "cost_usd": None})
    p.close()


def test_into_a_pipe_the_progress_is_plain_lines():
    r, w = os.pipe()
    with os.fdopen(w, "w") as stream:
        assert not stream.isatty()
        _feed(Progress(270, stream=stream), 270)
    out = os.read(r, 1 << 20).decode()
    os.close(r)
    assert "\r" not in out and "\x1b" not in out
    lines = out.splitlines()
    assert len(lines) == 10  # one per tenth
    assert lines[0].startswith("trials: 27/270 (10%) ok=24 err=3 skip=0 calls=81 cost=?")
    assert lines[-1].startswith("trials: 270/270 (100%) ok=240 err=30 skip=0 calls=810 cost=? elapsed ")


def test_an_interrupted_sweep_says_where_it_stopped_and_a_slow_one_says_it_every_so_often():
    r, w = os.pipe()
    with os.fdopen(w, "w") as stream:
        p = Progress(100, stream=stream, every_s=0.0)  # every update is past the interval
        for _ in range(3):
            p.update({"status": "ok"})
        p.close()
        p.close()  # the job closes it twice on Ctrl-C: one last line only
    lines = os.read(r, 1 << 20).decode().splitlines()
    os.close(r)
    assert [ln.split(" ok=")[0] for ln in lines] == ["trials: 1/100 (1%)", "trials: 2/100 (2%)",
                                                     "trials: 3/100 (3%)", "trials: 3/100 (3%)"]  # fmt: skip


def test_on_a_terminal_it_is_the_bar():
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a 120-column terminal
    with os.fdopen(slave, "w") as stream:
        assert stream.isatty()
        _feed(Progress(20, stream=stream), 20)
    out = b""
    while True:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # the slave end is closed: all read
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    text = out.decode()
    assert "\r" in text and "20/20" in text and "ok=17 err=3" in text


def test_quiet_writes_nothing():
    r, w = os.pipe()
    with os.fdopen(w, "w") as stream:
        _feed(Progress(5, quiet=True, stream=stream), 5)
    assert os.read(r, 1 << 10) == b""
    os.close(r)


@pytest.mark.e2e
def test_a_redirected_sweep_logs_lines_not_a_redrawn_bar(tmp_path):
    p = run_cli("smoke=true", f"hydra.run.dir={tmp_path / 'run'}")  # stderr is a pipe here
    assert p.returncode == 0, p.stderr[-2000:]
    assert "\r" not in p.stderr
    progress = [ln for ln in p.stderr.splitlines() if ln.startswith("trials: ")]
    assert progress and progress[-1].split(" ok=")[0].endswith("(100%)")
