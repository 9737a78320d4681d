"""Run one web page in a fresh network namespace and report every packet that left loopback.

Started by ``tests/scenes/test_web_netns.py`` under ``unshare -n`` (or ``unshare -rn``), so the namespace
holds only this process, its Chromium and the kernel: every frame sent on a non-loopback interface is
theirs. The namespace gets loopback and a veth pair (``d0`` = 192.0.2.10/24 with a default route and a
fixed neighbour, so an IP packet goes out at once, no ARP first; ``d1`` its peer). Each non-loopback
interface is captured with a raw ``AF_PACKET`` socket, outgoing frames only. A UDP datagram sent by this
process before the browser starts is the control: it must be seen, or the capture is not live.

Usage: ``python -m tests.scenes.netns_page_run PAGE OUT.json``; OUT gets ``{"control_seen": bool,
"packets": [...], "housekeeping": int}`` or ``{"setup_error": "..."}``.
"""

from __future__ import annotations

import ipaddress
import json
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
CONTROL = b"dvoc-capture-control"
REMOTE = "198.51.100.7"  # TEST-NET-2: never a real host
SETUP = (
    "ip link set lo up",
    "ip link add d0 type veth peer name d1",
    "ip addr add 192.0.2.10/24 dev d0",
    "ip link set d0 up",
    "ip link set d1 up",
    "ip route add default via 192.0.2.1 dev d0 onlink",
    "ip neigh replace 192.0.2.1 lladdr 02:00:00:00:00:01 dev d0 nud permanent",
)


def _setup() -> str | None:
    for cmd in SETUP:
        p = subprocess.run(cmd.split(), capture_output=True, text=True)
        if p.returncode != 0:
            return f"`{cmd}` failed: {p.stderr.strip()}"
    return None


def _mld_groups(icmp: bytes) -> list[str]:
    """Multicast groups named by an MLDv1 (131) or MLDv2 (143) report."""
    if icmp[0] == 131 and len(icmp) >= 24:
        return [socket.inet_ntop(socket.AF_INET6, icmp[8:24])]
    groups, (n,) = [], struct.unpack("!H", icmp[6:8])
    off = 8
    for _ in range(n):
        aux, nsrc = icmp[off + 1], struct.unpack("!H", icmp[off + 2 : off + 4])[0]
        groups.append(socket.inet_ntop(socket.AF_INET6, icmp[off + 4 : off + 20]))
        off += 20 + 16 * nsrc + 4 * aux
    return groups


SOLICITED_NODE = ipaddress.ip_network("ff02::1:ff00:0/104")


def _kernel_housekeeping(ip6: bytes) -> bool:
    """IPv6 neighbour discovery, and MLD reports for the solicited-node groups of the interfaces' own
    addresses: sent by the kernel when an interface comes up, by no program."""
    nh, off = ip6[6], 40
    if nh == 0:  # hop-by-hop options (MLD carries router alert)
        nh, off = ip6[off], off + 8 * (ip6[off + 1] + 1)
    if nh != 58 or len(ip6) <= off:
        return False
    icmp = ip6[off:]
    if 133 <= icmp[0] <= 137:
        return True
    if icmp[0] in (131, 143):
        return all(ipaddress.ip_address(g) in SOLICITED_NODE for g in _mld_groups(icmp))
    return False


def describe(frame: bytes) -> tuple[str, bool]:
    """One line for an Ethernet frame, and whether it is the kernel's IPv6 housekeeping."""
    (ethertype,) = struct.unpack("!H", frame[12:14])
    p = frame[14:]
    if ethertype == 0x0800:
        ihl, proto = (p[0] & 15) * 4, p[9]
        src, dst = socket.inet_ntoa(p[12:16]), socket.inet_ntoa(p[16:20])
        name = {1: "ICMP", 2: "IGMP", 6: "TCP", 17: "UDP"}.get(proto, f"proto {proto}")
        if proto in (6, 17):
            sport, dport = struct.unpack("!HH", p[ihl : ihl + 4])
            return f"IPv4 {name} {src}:{sport} -> {dst}:{dport}", False
        if proto == 2 and p[ihl] == 0x22:  # IGMPv3 membership report: name its groups
            n, off, groups = struct.unpack("!H", p[ihl + 6 : ihl + 8])[0], ihl + 8, []
            for _ in range(n):
                aux, nsrc = p[off + 1], struct.unpack("!H", p[off + 2 : off + 4])[0]
                groups.append(socket.inet_ntoa(p[off + 4 : off + 8]))
                off += 8 + 4 * nsrc + 4 * aux
            return f"IPv4 IGMPv3 report {src} -> {dst} groups {','.join(groups)}", False
        return f"IPv4 {name} {src} -> {dst}", False
    if ethertype == 0x86DD:
        src, dst = socket.inet_ntop(socket.AF_INET6, p[8:24]), socket.inet_ntop(socket.AF_INET6, p[24:40])
        return f"IPv6 next-header {p[6]} {src} -> {dst}", _kernel_housekeeping(p)
    if ethertype == 0x0806:
        return f"ARP who-has {socket.inet_ntoa(p[24:28])}", False
    return f"ethertype {ethertype:#06x}", False


class Capture:
    """Outgoing frames on every non-loopback interface, from start to :meth:`stop`."""

    def __init__(self) -> None:
        self.frames: list[tuple[str, bytes]] = []
        self.socks = []
        for _, name in socket.if_nameindex():
            if name == "lo":
                continue
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.bind((name, 0))
            self.socks.append(s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select(self.socks, [], [], 0.05)
            for s in ready:
                try:
                    data, addr = s.recvfrom(65535)
                except OSError:  # an interface went down
                    continue
                if addr[2] == PACKET_OUTGOING:
                    self.frames.append((addr[0], data))

    def stop(self) -> list[tuple[str, bytes]]:
        self._stop.set()
        self._thread.join(timeout=2)
        for s in self.socks:
            s.close()
        return self.frames


def run_page(page: Path) -> None:
    """Snapshot the page with the project's web backend, then let it run 3 s more (ICE gathering)."""
    from dvoc_bench.scenes import SceneRegistry, default_scenes_dir
    from dvoc_bench.scenes.web.source import WebOptions

    raw = {"custom": {"page": str(page), "selector": "#go", "instruction": "Click Go"}}
    reg = SceneRegistry(default_scenes_dir(), options={"web": WebOptions.from_settings(raw)})
    try:
        reg.snapshot("custom")
        web = reg.source("web").backend
        web.browser.run(lambda session: session.state[("live", "custom")].page.wait_for_timeout(3000))
    finally:
        reg.close()


def main(page: Path, out: Path) -> None:
    if (err := _setup()) is not None:
        out.write_text(json.dumps({"setup_error": err}))
        return
    cap = Capture()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(CONTROL, (REMOTE, 9))
    time.sleep(0.2)
    control_seen = any(CONTROL in f for _, f in cap.frames)
    start = len(cap.frames)
    run_page(page)
    time.sleep(0.5)
    frames = cap.stop()[start:]
    described = [(iface, *describe(f)) for iface, f in frames]
    packets = [f"{iface}: {line}" for iface, line, kernel in described if not kernel]
    out.write_text(
        json.dumps(
            {
                "control_seen": control_seen,
                "packets": packets,
                "housekeeping": sum(kernel for *_, kernel in described),
            }
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
