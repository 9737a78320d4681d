"""Issue 32, item 2: a provider that echoes the key encoded (base64 in its three alignments, hex, URL, JSON
escapes, reversed, spaced, split) got it stored in steps, the cache and the console.

A fake OpenAI-compatible provider on loopback echoes the presented key in every form, in its successful
replies (text, tool call arguments, a header) and in its 500 and 400 error bodies; a tiny sweep runs
against it, and every file of the run and cache folders and the captured console is searched for every
form. Which forms are covered, and which are not, is in the docstring of dvoc_bench/core/redaction.py and
in docs/run-directory.md.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
from typing import Any

import pytest

from dvoc_bench.core.redaction import REDACTED, redact
from dvoc_bench.core.rundir import read_jsonl
from tests.support import KEYS, Answer, chat_completion, fake_openai, leaks, run_cli, tree_text

_AFTER = b"\x00\x01\x02\x03\x04"


def _b64_around(key: str, offset: int, urlsafe: bool, pad: bool) -> tuple[str, str]:
    """The key's bytes inside a longer base64 string at ``offset`` mod 3: (the echoed string, the part of it
    that only the key's bits decide)."""
    before = bytes([0xA5]) * (3 + offset)
    data = before + key.encode() + _AFTER
    enc = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()
    if not pad:
        enc = enc.rstrip("=")
    lo = -(-8 * len(before) // 6)  # first character with no bit of the bytes before the key
    hi = 8 * (len(before) + len(key)) // 6  # first character with a bit of the bytes after it
    return enc, enc[lo:hi]


def forms(key: str) -> dict[str, tuple[str, str]]:
    """Every echoed form of ``key``: name -> (as echoed, what must not be found; '' = the echo itself)."""
    raw = key.encode()
    out = {
        "plain": (key, key),
        "hex": (raw.hex(), raw.hex()),
        "HEX": (raw.hex().upper(), raw.hex()),
        "hex-spaced": (" ".join(f"{b:02x}" for b in raw), " ".join(f"{b:02x}" for b in raw)),
        "url": ("".join(f"%{b:02X}" for b in raw), "".join(f"%{b:02x}" for b in raw)),
        "json-escape": ("".join(f"\\u{ord(c):04x}" for c in key), "".join(f"\\u{ord(c):04x}" for c in key)),
        "reversed": (key[::-1], key[::-1]),
        "spaced": (" ".join(key), " ".join(key)),
        "split": (f"{key[:16]} ... {key[16:]}", key[:16]),
        "split-tail": (f"{key[:16]} ... {key[16:]}", key[16:]),
    }
    for offset in range(3):
        for urlsafe in (False, True):
            for pad in (True, False):
                name = f"base64-{offset}{'-urlsafe' if urlsafe else ''}{'' if pad else '-nopad'}"
                out[name] = _b64_around(key, offset, urlsafe, pad)
    out["base64-alone"] = (base64.b64encode(raw).decode(), base64.b64encode(raw).decode()[:-2])
    # issue 51: the key's characters in order with non-letters between, and further transforms
    pieces = '" + "'.join(key[i : i + 5] for i in range(0, len(key), 5))
    out["pieces"] = (pieces, pieces)
    out["spaced-3"] = ("   ".join(key), "   ".join(key))
    out["dotted"] = (".".join(key), ".".join(key))
    b32 = base64.b32encode(raw).decode()
    out["base32"] = (b32, b32[: 8 * len(raw) // 5])
    out["base32-lower"] = (b32.lower(), b32[: 8 * len(raw) // 5])
    for order in ("le", "be"):
        wide = key.encode(f"utf-16-{order}")
        out[f"utf16{order}-hex"] = (wide.hex(), wide.hex())
        out[f"utf16{order}-repr"] = (repr(wide)[2:-1], repr(wide)[2:-1])
    out["url-twice"] = ("".join(f"%25{b:02X}" for b in raw), "".join(f"%25{b:02x}" for b in raw))
    rev = base64.b64encode(raw[::-1]).decode()
    out["base64-reversed"] = (rev, rev[:-2])
    return out


def echo(key: str) -> str:
    return " | ".join(f"{name}: {shown}" for name, (shown, _) in forms(key).items())


def found(haystack: str, key: str) -> list[str]:
    """Names of the forms of ``key`` found in ``haystack`` (base64 exactly; the others in any letter case
    and through any number of JSON / repr escapings of a backslash)."""
    folded = re.sub(r"\\+", lambda _: "\\", haystack).lower()
    hits = []
    for name, (_, needle) in forms(key).items():
        exact = name.startswith("base64") or name == "base32"
        where, what = (haystack, needle) if exact else (folded, needle.lower())
        if what in where:
            hits.append(name)
    return hits


def echoing_provider():
    """A careless OpenAI-compatible provider: request 3n+1 gets a 500, 3n+2 a tool call, 3n+3 a 400; each
    echoes the presented key in every form (the tool call's reply in its headers too)."""

    def answer(body: dict, headers: Any) -> Answer:
        key = (headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        with lock:
            count[0] += 1
            n = count[0]
        said = echo(key)
        if n % 3 == 1:
            return 500, {"error": {"message": f"upstream failed for {said}", "type": "server_error"}}, {}
        if n % 3 == 0:
            msg = f"invalid request from {said}"
            return 400, {"error": {"message": msg, "type": "invalid_request_error", "param": said}}, {}
        args = json.dumps({"x": 500, "y": 500, "confidence": 0.5, "note": said})
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        out = chat_completion("echo", content=f"Answering for {said}", tool=("click_at", args), usage=usage)
        token = base64.b64encode(key.encode()).decode()
        return 200, out, {"X-Echo-Token": token, "X-Echo-Hex": key.encode().hex()}

    count, lock = [0], threading.Lock()
    return fake_openai(answer)


@pytest.mark.parametrize("key", KEYS, ids=["sk-shaped", "local-token"])
def test_every_echoed_form_is_redacted_in_process(key):
    text = echo(key)
    assert set(found(text, key)) == set(forms(key))  # the search finds every form when it is there
    out = redact(text, {key})
    assert found(out, key) == [], out
    assert out.count(REDACTED) >= len(forms(key)) - 1 and "base64-0: " in out  # the labels survive
    # as records (JSON) and error strings (a repr of the parsed body) hold it
    for wrapped in (json.dumps(text), repr(text), json.dumps(json.dumps(text))):
        assert found(redact(wrapped, {key}), key) == []


@pytest.mark.e2e
@pytest.mark.parametrize("key", KEYS, ids=["sk-shaped", "local-token"])
def test_a_provider_echoing_the_key_encoded_leaves_it_in_no_file_and_no_console_line(tmp_path, key):
    with echoing_provider() as (url, server):
        r = run_cli(
            "model=local-sim",
            "tasks=[S1]",
            "methods=[dvoc,oneshot]",
            "starts=random:2",
            "retry.backoff_base_s=0",
            f"cache.dir={tmp_path / 'cache'}",
            f"hydra.run.dir={tmp_path / 'run'}",
            "hydra.verbose=true",  # DEBUG logging everywhere: the worst case for leaks
            env_extra={"DVOC_SIM_URL": url, "DVOC_SIM_API_KEY": key},
        )
        served = server.requests
    assert r.returncode in (0, 3), r.stderr[-3000:]
    assert served >= 6  # errors and successful replies, each echoing every form
    steps = list(read_jsonl(tmp_path / "run" / "steps.jsonl"))
    trials = list(read_jsonl(tmp_path / "run" / "trials.jsonl"))
    assert any(s.get("reply_text") and REDACTED in s["reply_text"] for s in steps)  # echoed, then redacted
    assert any(t.get("error") and REDACTED in str(t["error"]) for t in trials) or any(
        REDACTED in str(s.get("error")) for s in steps
    )
    assert list((tmp_path / "cache").rglob("*.json"))
    everything = tree_text(tmp_path) + r.stdout + r.stderr
    assert found(everything, key) == []
    assert leaks(everything, key) == []
    assert os.environ.get("DVOC_SIM_API_KEY") != key  # the key went to the child only
