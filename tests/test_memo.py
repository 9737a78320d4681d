"""The one in-memory cache (dvoc_bench/core/memo.py): least recently used out, hits refresh, a failing
computation stores nothing, a slow miss does not block a hit on another key."""

from __future__ import annotations

import threading

import pytest

from dvoc_bench.core.memo import Memo


def test_least_recently_used_goes_first_and_a_hit_refreshes():
    m: Memo[str] = Memo(2)
    computed: list[str] = []

    def value(k: str):
        return lambda: computed.append(k) or k.upper()

    assert m.get("a", value("a")) == "A"
    assert m.get("b", value("b")) == "B"
    assert m.get("a", value("a")) == "A"  # hit: "a" is now the most recent, "b" the least
    assert m.get("c", value("c")) == "C"  # evicts "b"
    assert len(m) == 2
    assert m.get("a", value("a")) == "A"  # still cached
    assert m.get("b", value("b")) == "B"  # was dropped: computed again
    assert computed == ["a", "b", "c", "b"]
    assert m.misses == 4


def test_a_failing_computation_stores_nothing():
    m: Memo[int] = Memo(4)

    def boom() -> int:
        raise RuntimeError("ocr failed")

    with pytest.raises(RuntimeError, match="ocr failed"):
        m.get("k", boom)
    assert len(m) == 0 and m.misses == 0
    assert m.get("k", lambda: 7) == 7


def test_a_slow_miss_does_not_block_a_hit_on_another_key():
    m: Memo[int] = Memo(4)
    m.get("fast", lambda: 1)
    started, release = threading.Event(), threading.Event()

    def slow() -> int:
        started.set()
        assert release.wait(10)
        return 2

    t = threading.Thread(target=lambda: m.get("slow", slow))
    t.start()
    assert started.wait(10)
    got: list[int] = []
    reader = threading.Thread(target=lambda: got.append(m.get("fast", lambda: -1)))
    reader.start()
    reader.join(5)
    hit_while_slow = list(got)
    release.set()
    t.join(10)
    assert hit_while_slow == [1]
    assert m.get("slow", lambda: -1) == 2


def test_size_zero_keeps_nothing():
    m: Memo[int] = Memo(0)
    calls: list[int] = []
    assert m.get("k", lambda: calls.append(1) or 5) == 5
    assert m.get("k", lambda: calls.append(1) or 5) == 5
    assert len(calls) == 2 and len(m) == 0 and m.misses == 2


@pytest.mark.parametrize("size", [-1, True, 2.5, "8"])
def test_a_size_that_is_not_a_whole_number_is_refused(size):
    with pytest.raises(ValueError, match="cache_size: .* is not a whole number >= 0"):
        Memo(size)
