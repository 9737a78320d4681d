"""Which Chromium to launch, and with which switches.

Order: an explicit path (``web.chromium`` in the config), Playwright's own download if it is present,
``$DVOC_CHROMIUM``, ``/usr/bin/chromium``, ``chromium-browser`` and ``google-chrome`` on ``PATH``. With none
of them, :class:`ChromiumNotFoundError` says in one line how to get one. Nothing here downloads anything.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence

from dvoc_bench.core.declare import ConfigError

ENV_VAR = "DVOC_CHROMIUM"
"""Environment variable naming a Chromium binary."""

SYSTEM_CANDIDATES = ("/usr/bin/chromium", "chromium-browser", "google-chrome")
"""System browsers tried after Playwright's own and ``$DVOC_CHROMIUM`` (names are looked up on ``PATH``)."""

NO_PROXY_HOST = "dvoc-fence.invalid"
"""The proxy every non-allowed connection is sent to; ``.invalid`` never resolves (and no name does)."""

PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync",
    "DestroyProfileOnBrowserClose",
    "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable",
    "LensOverlay",
    "MediaRouter",
    "PaintHolding",
    "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect",
    "TcpPortRandomizationWin",
    "OptimizationHints",
    "NetworkTimeServiceQuerying",
    "AimEnabled",
    "PreconnectToSearch",
    "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion",
)
"""Playwright's own ``--disable-features`` list (1.65). Chromium honours only the **last**
``--disable-features`` switch, and ours comes after Playwright's, so ours must repeat its list or every
feature on it would be enabled again. When Playwright changes the list, :func:`dropped_features` on the
launched browser's command line names what ours lacks (a warning at launch; a failing test)."""

OFF_LOOPBACK_FEATURES = (
    # WebRTC's mDNS responder: on the first RTCPeerConnection it joins 224.0.0.251 / ff02::fb on every
    # interface (IGMP / MLD reports leave the machine even when no candidate is ever gathered).
    "WebRtcHideLocalIpsWithMdns",
    # Cast and DIAL discovery (mDNS, SSDP multicast); also on Playwright's list, kept here in case it leaves.
    "MediaRouter",
    "DialMediaRouteProvider",
)
"""Features turned off because they send packets off loopback on their own (measured by
``tests/scenes/test_web_netns.py``)."""

DISABLED_FEATURES = tuple(dict.fromkeys(PLAYWRIGHT_DISABLED_FEATURES + OFF_LOOPBACK_FEATURES))
"""The one ``--disable-features`` list we pass: Playwright's and ours, in that order, without repeats."""

LAUNCH_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Glyph outlines without the machine's fontconfig hinting: same text on every machine.
    "--font-render-hinting=none",
    # Second fence behind the request filter: no host name resolves, so nothing that slips past the route
    # handler (a preconnect, a DNS prefetch) can reach a remote host.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # Channels request interception never sees. WebRTC: no UDP at all (STUN, TURN over UDP, media), and TCP
    # only through a proxy, of which there is none (so no TURN over TCP either). No DNS prefetch. QUIC (and
    # with it WebTransport over HTTP/3) is off above. Measured by tests/scenes/test_web_escape.py.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
    # No multicast: without this a page's ``new RTCPeerConnection()`` makes Chromium send IGMP reports
    # (joining the mDNS group) on every interface. The host candidates mDNS would have hidden are not
    # gathered at all under the policy above, so no local address is shown to the page either.
    "--disable-features=" + ",".join(DISABLED_FEATURES),
    # Everything that reaches the network stack without passing the route handler (a preconnect,
    # WebTransport, TURN over TCP) is sent to a proxy whose name never resolves: no packet leaves. Loopback
    # too (``<-loopback>``); the allowed dev servers are added to the bypass list by :func:`launch_args`.
    f"--proxy-server=http://{NO_PROXY_HOST}:9",
    "--proxy-bypass-list=<-loopback>",
)
"""Switches for a quiet, offline, deterministic headless Chromium. Playwright adds its own defaults and a
fresh, empty temporary profile directory per launch (removed when the browser closes)."""


def dropped_features(argv: Sequence[str]) -> list[str]:
    """Features some ``--disable-features`` switch of a command line names but the last one, the only one
    Chromium honours, lacks (in order of first mention)."""
    lists = [a.split("=", 1)[1].split(",") for a in argv if a.startswith("--disable-features=")]
    if len(lists) < 2:
        return []
    kept = set(lists[-1])
    return [f for f in dict.fromkeys(f for lst in lists[:-1] for f in lst) if f and f not in kept]


def launch_args(origins: tuple[str, ...] = ()) -> list[str]:
    """:data:`LAUNCH_ARGS` with the ``web.allow_origins`` (loopback ``scheme://host:port``) let through:
    their hosts resolve and exactly their host:port pairs bypass the fence proxy."""
    args = list(LAUNCH_ARGS)
    if not origins:
        return args
    hostports = sorted({o.split("://", 1)[1] for o in origins})
    hosts = sorted({hp.rsplit(":", 1)[0] for hp in hostports})
    swap = {
        "--host-resolver-rules": "MAP * ~NOTFOUND" + "".join(f", EXCLUDE {h}" for h in hosts),
        "--proxy-bypass-list": ";".join(["<-loopback>", *hostports]),
    }
    out = []
    for a in args:
        key = a.split("=", 1)[0]
        out.append(f"{key}={swap[key]}" if key in swap else a)
    return out


HOW_TO_GET = (
    "no Chromium found: run `python -m playwright install chromium`, or install a system Chromium "
    "(Debian/Ubuntu: `apt-get install chromium`), or point DVOC_CHROMIUM (or web.chromium) at a "
    "Chrome/Chromium binary"
)


class ChromiumNotFoundError(ConfigError):
    """No usable Chromium binary; the message says how to get one (one line)."""


def resolve_chromium(
    explicit: str | None,
    playwright_own: str | None,
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    exists: Callable[[str], bool] = os.path.isfile,
) -> str:
    """The first usable binary in the documented order; raises :class:`ChromiumNotFoundError`.

    ``explicit`` (from the config) must exist when given: a wrong path is an error, never a silent
    fallback to another browser.
    """
    env = os.environ if env is None else env
    if explicit:
        found = explicit if exists(explicit) else which(explicit)
        if not found:
            raise ChromiumNotFoundError(f"web.chromium: {explicit!r} is not an existing file; {HOW_TO_GET}")
        return found
    if playwright_own and exists(playwright_own):
        return playwright_own
    from_env = env.get(ENV_VAR)
    if from_env:
        found = from_env if exists(from_env) else which(from_env)
        if not found:
            raise ChromiumNotFoundError(f"{ENV_VAR}={from_env!r} is not an existing file; {HOW_TO_GET}")
        return found
    for name in SYSTEM_CANDIDATES:
        found = name if os.path.isabs(name) and exists(name) else which(name)
        if found:
            return found
    raise ChromiumNotFoundError(HOW_TO_GET)


def find_chromium(explicit: str | None = None) -> str:
    """Resolve the binary, asking Playwright where its own download would be (starts its driver briefly).

    Safe to call from any thread, including one running an asyncio loop (the driver runs on a helper
    thread).
    """
    return resolve_chromium(explicit, playwright_chromium_path())


def playwright_chromium_path() -> str | None:
    """Where Playwright keeps its own Chromium (which may not be downloaded); ``None`` if unknown."""
    import threading

    out: list[str | None] = [None]

    def ask() -> None:
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as p:
                out[0] = p.chromium.executable_path
        except Exception:  # no driver, unsupported platform: just no Playwright browser
            out[0] = None

    t = threading.Thread(target=ask, name="dvoc-playwright-probe", daemon=True)
    t.start()
    t.join(timeout=60)
    return out[0]
