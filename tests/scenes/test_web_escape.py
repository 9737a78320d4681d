"""The fence has no holes: a page tries every channel that request interception may not see (WebRTC UDP
and TURN over TCP, WebTransport, DNS prefetch / preconnect / prefetch, sendBeacon to an IP literal,
EventSource, fetch and WebSocket) from the page, from an iframe and from a Worker, against listeners on
127.0.0.1 (TCP and UDP); and a symlink beside the page points at /etc/passwd and is shown in an iframe.

Asserted: zero UDP packets, zero TCP connections, the symlink's target never reaches a frame. Run twice:
with the default fence (no host resolves) and with ``web.allow_origins`` naming another loopback port (then
127.0.0.1 resolves, so only the fence's own switches and the route handler stand in the way)."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest

from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
from dvoc_bench.scenes.web.chromium import ChromiumNotFoundError, find_chromium
from dvoc_bench.scenes.web.source import WebOptions
from tests.support import need

pytestmark = pytest.mark.e2e

try:
    find_chromium()
except ChromiumNotFoundError as e:  # pragma: no cover - CI always has one
    need("CHROMIUM", str(e), module=True)


def _channels(tcp: int, udp: int) -> str:
    """JavaScript defining ``tryAll(tag)``: every channel at once, errors swallowed."""
    return f"""
const T = 'http://127.0.0.1:{tcp}';
function tryAll(tag) {{
  const q = f => {{ try {{ const p = f(); if (p && p.catch) p.catch(() => {{}}); }} catch (e) {{}} }};
  q(() => fetch(T + '/fetch-' + tag));
  q(() => navigator.sendBeacon && navigator.sendBeacon(T + '/beacon-' + tag, 'x'));
  q(() => new WebSocket('ws://127.0.0.1:{tcp}/ws-' + tag));
  q(() => typeof EventSource !== 'undefined' && new EventSource(T + '/es-' + tag));
  for (const port of [{udp}, {tcp}]) q(() => {{
    const wt = new WebTransport('https://127.0.0.1:' + port + '/wt-' + tag);
    wt.ready.catch(() => {{}}); wt.closed.catch(() => {{}});
  }});
  q(() => {{
    if (typeof RTCPeerConnection === 'undefined') return;
    const pc = new RTCPeerConnection({{iceServers: [
      {{urls: 'stun:127.0.0.1:{udp}'}},
      {{urls: 'turn:127.0.0.1:{udp}?transport=udp', username: 'u', credential: 'p'}},
      {{urls: 'turn:127.0.0.1:{tcp}?transport=tcp', username: 'u', credential: 'p'}}]}});
    pc.createDataChannel('d');
    return pc.createOffer().then(o => pc.setLocalDescription(o));
  }});
}}
"""


class _Listeners:
    """A TCP and a UDP socket on 127.0.0.1 counting whatever reaches them."""

    def __init__(self) -> None:
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen(64)
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", 0))
        self.tcp.settimeout(0.2)
        self.udp.settimeout(0.2)
        self.connections: list[object] = []
        self.packets: list[int] = []
        self._stop = False
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._accept, self._receive)]
        for t in self._threads:
            t.start()

    @property
    def ports(self) -> tuple[int, int]:
        return self.tcp.getsockname()[1], self.udp.getsockname()[1]

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, addr = self.tcp.accept()
            except OSError:
                continue
            self.connections.append(addr)
            conn.close()

    def _receive(self) -> None:
        while not self._stop:
            try:
                data, _ = self.udp.recvfrom(65536)
            except OSError:
                continue
            self.packets.append(len(data))

    def close(self) -> None:
        self._stop = True
        for t in self._threads:
            t.join(timeout=2)
        self.tcp.close()
        self.udp.close()


def _escape_site(folder: Path, tcp: int, udp: int) -> Path:
    folder.mkdir()
    js = _channels(tcp, udp)
    (folder / "leak.txt").symlink_to("/etc/passwd")
    (folder / "frame.html").write_text(f"<!doctype html><script>{js}tryAll('file-iframe');</script>")
    srcdoc = f"<script>{js}tryAll('srcdoc');</script>".replace("&", "&amp;").replace('"', "&quot;")
    page = folder / "page.html"
    page.write_text(
        f"""<!doctype html><html><head><meta charset="utf-8">
<link rel="dns-prefetch" href="//127.0.0.1:{tcp}"><link rel="preconnect" href="http://127.0.0.1:{tcp}">
<link rel="prefetch" href="http://127.0.0.1:{tcp}/prefetch"></head>
<body style="margin:0"><button id="go" style="width:200px;height:60px">Go</button>
<img src="http://127.0.0.1:{tcp}/img">
<iframe id="leak" src="leak.txt"></iframe><iframe src="frame.html"></iframe>
<iframe srcdoc="{srcdoc}"></iframe>
<script>{js}
tryAll('page');
const w = new Worker(URL.createObjectURL(new Blob([{json.dumps(js)} + "tryAll('worker');"])));
setTimeout(() => tryAll('later'), 300);
</script></body></html>""",
        encoding="utf-8",
    )
    return page


@pytest.mark.parametrize("allow_other_port", [False, True], ids=["default", "loopback-resolvable"])
def test_no_channel_leaves_the_browser(tmp_path: Path, allow_other_port: bool) -> None:
    listen = _Listeners()
    tcp, udp = listen.ports
    page = _escape_site(tmp_path / "site", tcp, udp)
    with socket.socket() as spare:  # a loopback port nobody listens on: allowed, but not ours
        spare.bind(("127.0.0.1", 0))
        other = spare.getsockname()[1]
    raw = {
        "custom": {"page": str(page), "selector": "#go", "instruction": "Click Go"},
        "allow_origins": [f"http://127.0.0.1:{other}"] if allow_other_port else [],
    }
    reg = SceneRegistry(default_scenes_dir(), options={"web": WebOptions.from_settings(raw)})
    try:
        snap = reg.snapshot("custom")
        web = reg.source("web").backend

        def frames(session):
            live = session.state[("live", "custom")]
            live.page.wait_for_timeout(3000)  # ICE gathering, retries, the delayed second round
            return [f.content() for f in live.page.frames]

        contents = web.browser.run(frames)
        probe = reg.probe("custom", snap.target_box.centre)
        blocked = web.blocked("custom")
    finally:
        reg.close()
        time.sleep(0.5)
        listen.close()
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    assert listen.packets == [], f"UDP packets reached 127.0.0.1:{udp}: {listen.packets}"
    assert listen.connections == [], f"TCP connections reached 127.0.0.1:{tcp}"
    assert not any(passwd in c for c in contents)  # the symlink's target never reached a frame
    assert (page.parent / "leak.txt").as_uri() in blocked
    tags = {u.rsplit("/", 1)[-1] for u in blocked}
    assert {"fetch-page", "fetch-file-iframe", "fetch-srcdoc", "img", "beacon-page"} <= tags, tags
    assert probe.hit is True and probe.blocked_requests == len(blocked)
