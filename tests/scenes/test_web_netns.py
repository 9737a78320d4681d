"""No packet of a page run leaves loopback, measured on the wire.

A page calls ``new RTCPeerConnection()`` (STUN and TURN servers on a remote address), opens a data channel,
creates an offer and sets it (ICE gathering starts), and fetches, beacons, opens a WebSocket and loads an
image from a remote IP address. It runs with the project's web backend (the real launch switches) inside a
fresh network namespace that has loopback and one veth interface with an address and a default route
(``tests/scenes/netns_page_run.py``); every outgoing frame on that interface is captured with a raw
``AF_PACKET`` socket. In the namespace nothing else runs, so every frame is the browser's, except the
kernel's IPv6 neighbour discovery, which is told apart by its type. Before the fix Chromium joined the mDNS
group: IGMPv3 reports to 224.0.0.22.

Needs ``unshare`` and ``ip`` and either root or unprivileged user namespaces (``unshare -rn``); skipped
with the reason otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scenes.netns_page_run import REMOTE
from tests.support import chromium_or_skip, need

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

PAGE = f"""<!doctype html><html><body style="margin:0">
<button id="go" style="width:200px;height:60px">Go</button>
<img src="http://{REMOTE}/img.png">
<script>
const R = '{REMOTE}';
const q = f => {{ try {{ const p = f(); if (p && p.catch) p.catch(() => {{}}); }} catch (e) {{}} }};
q(() => fetch('http://' + R + '/fetch'));
q(() => navigator.sendBeacon('http://' + R + '/beacon', 'x'));
q(() => new WebSocket('ws://' + R + '/ws'));
q(() => {{
  const pc = new RTCPeerConnection({{iceServers: [
    {{urls: 'stun:' + R + ':3478'}},
    {{urls: 'turn:' + R + ':3478?transport=udp', username: 'u', credential: 'p'}},
    {{urls: 'turn:' + R + ':3478?transport=tcp', username: 'u', credential: 'p'}}]}});
  pc.createDataChannel('d');
  return pc.createOffer().then(o => pc.setLocalDescription(o));
}});
q(() => new RTCPeerConnection());
</script></body></html>"""


def _namespace_command() -> list[str]:
    """``unshare -n`` as root, ``unshare -rn`` otherwise; skips naming the need when neither works."""
    missing = [b for b in ("unshare", "ip") if shutil.which(b) is None]
    if missing:
        need("NETNS", f"no {' and '.join(missing)} on PATH")
    cmd = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    probe = subprocess.run([*cmd, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        why = f"`{' '.join(cmd)} true`: {probe.stderr.strip()}"
        need("NETNS", f"neither root nor unprivileged user namespaces ({why})")
    return cmd


def test_a_webrtc_page_sends_no_packet_off_loopback(tmp_path: Path) -> None:
    chromium_or_skip()
    cmd = _namespace_command()
    page, out = tmp_path / "page.html", tmp_path / "capture.json"
    page.write_text(PAGE, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run(
        [*cmd, sys.executable, "-m", "tests.scenes.netns_page_run", str(page), str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(out.read_text())
    if "setup_error" in got:
        need("NETNS", f"no veth interface in the namespace ({got['setup_error']})")
    assert got["control_seen"], "the capture missed the control datagram: it is not live"
    assert got["packets"] == [], f"packets left loopback during the page run: {got['packets']}"


def test_the_launched_browser_keeps_playwrights_disabled_features() -> None:
    """Chromium honours only the last ``--disable-features``; ours must carry Playwright's whole list (this
    fails when a Playwright upgrade adds to it: copy the names into ``PLAYWRIGHT_DISABLED_FEATURES``)."""
    chromium_or_skip()
    from dvoc_bench.scenes.web.browser import WebBrowser, process_argv
    from dvoc_bench.scenes.web.chromium import dropped_features

    need("PROC", None if Path("/proc/self/cmdline").is_file() else "no /proc/self/cmdline to read argv from")
    browser = WebBrowser()
    try:
        argv = browser.run(lambda session: process_argv(session.pid))
    finally:
        browser.close()
    switches = [a for a in argv if a.startswith("--disable-features=")]
    assert len(switches) >= 2, argv  # Playwright's and ours
    assert "WebRtcHideLocalIpsWithMdns" in switches[-1].split("=", 1)[1].split(",")
    assert dropped_features(argv) == []
