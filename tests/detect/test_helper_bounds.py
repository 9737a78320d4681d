"""Issue 14, failure 4 (SoM helper): a 300 MB stdout line and a helper that spawns children.

Before: the client buffered the whole line (peak RSS about 700 MB) and close() left the helper's own
child processes running.
"""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dvoc_bench.detect.helper_client import MAX_LINE_BYTES, HelperDetector, HelperError
from tests.support import HANG_S, ROOT

HUGE_LINE = """
import sys, struct
out = sys.stdout.buffer
out.write(b"READY 960 960\\n"); out.flush()
stdin = sys.stdin.buffer
cmd = stdin.read(1)
w, h = struct.unpack("<II", stdin.read(8)); stdin.read(w * h * 3)
chunk = b"x" * (1 << 20)
for _ in range(300):  # one 300 MB line, written without ever holding it
    out.write(chunk)
out.write(b"\\n"); out.flush()
"""

SPAWNS_A_CHILD = """
import subprocess, sys, struct
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(sys.argv[1], "a").write(f"{child.pid}\\n")
print("READY 960 960", flush=True)
stdin = sys.stdin.buffer
while True:
    cmd = stdin.read(1)
    if cmd in (b"", b"Q"):
        sys.exit(0)
    w, h = struct.unpack("<II", stdin.read(8)); stdin.read(w * h * 3)
    print("OK 0 1.0", flush=True)
"""


def script(tmp_path: Path, body: str, name: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def gone(pid: int) -> bool:
    """The process no longer runs (absent, or a zombie waiting for its reaper)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def wait_until(cond, timeout=10.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


@pytest.mark.e2e
def test_a_300mb_line_fails_the_request_without_being_buffered(tmp_path):
    cmd = script(tmp_path, HUGE_LINE, "huge.py")
    code = textwrap.dedent(
        f"""
        import resource, sys
        import numpy as np
        from dvoc_bench.detect.helper_client import MAX_LINE_BYTES, HelperDetector, HelperError
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        h = HelperDetector({cmd!r}, request_timeout_s=120)
        try:
            h.run(np.zeros((30, 40, 3), dtype=np.uint8))
            print("NO ERROR")
        except HelperError as e:
            print("ERROR", e)
        h.close()
        print("RSS_KB", base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        """
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=HANG_S)
    assert "RSS_KB" in r.stdout, r.stdout + r.stderr
    base, peak = (int(v) for v in r.stdout.split("RSS_KB")[1].split())
    print(f"\n300 MB helper line: client peak RSS {peak // 1024} MB (before the request {base // 1024} MB)")
    assert peak - base < 100_000  # kB; buffering the line cost about 600 MB more
    assert "ERROR" in r.stdout and "NO ERROR" not in r.stdout, r.stdout + r.stderr
    err = r.stdout.split("ERROR", 1)[1].splitlines()[0]
    assert f"longer than {MAX_LINE_BYTES} bytes" in err, err


def test_close_kills_the_helpers_whole_process_group(tmp_path):
    pid_file = tmp_path / "child.pid"
    h = HelperDetector([*script(tmp_path, SPAWNS_A_CHILD, "spawner.py"), str(pid_file)])
    try:
        h.run(__import__("numpy").zeros((30, 40, 3), dtype="uint8"))
        child = int(pid_file.read_text().split()[-1])
        assert not gone(child)
    finally:
        h.close()
    assert wait_until(lambda: gone(child)), f"the helper's child {child} survived close()"


def test_a_crashed_helpers_children_are_killed_too(tmp_path):
    """The helper dies mid-request; its child must not outlive the failed process."""
    body = SPAWNS_A_CHILD.replace('print("OK 0 1.0", flush=True)', "import os; os._exit(3)")
    pid_file = tmp_path / "child.pid"
    t0 = time.monotonic()
    with HelperDetector([*script(tmp_path, body, "crasher.py"), str(pid_file)]) as h:
        with pytest.raises(HelperError, match="crashed during a request"):
            h.run(__import__("numpy").zeros((30, 40, 3), dtype="uint8"))
        # noticed at once (the child keeps the pipe open: no end-of-file to wait for), not after 60 s
        assert time.monotonic() - t0 < 20
        children = [int(x) for x in pid_file.read_text().split()]
        assert len(children) == 2  # the first helper and the one of the retry
        assert wait_until(lambda: all(gone(c) for c in children)), children
