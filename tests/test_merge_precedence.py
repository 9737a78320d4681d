"""Which record a shard merge keeps (dvoc_bench.runner.merge.winners, superseded_keys, the functions
merge_runs calls): a finished record beats a skipped one, the first finished one wins, whatever the order
the shards are given in, and a finished record already merged is never replaced."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from dvoc_bench.runner.merge import FINISHED, Source, superseded_keys, winners

STATUSES = ("ok", "error", "skipped")


def _source(name: str, records: dict[str, str]) -> Source:
    """An input named ``name`` holding one record per key with the given status."""
    s = Source(Path(name), shard=name)
    for k, status in records.items():
        r = {"trial_key": k, "status": status, "from": name}
        s.trials[k] = (json.dumps(r) + "\n", r)
    return s


def _expected(order: list[Source], key: str) -> str | None:
    """The input a merge must take ``key`` from, by the rule: the first finished, else the first at all."""
    holding = [s for s in order if key in s.trials]
    finished = [s for s in holding if s.trials[key][1]["status"] in ("ok", "error")]
    pick = finished[0] if finished else (holding[0] if holding else None)
    return None if pick is None else pick.shard


def test_finished_beats_skipped_and_the_first_finished_wins_in_every_order():
    a = _source("a", {"k1": "skipped", "k2": "skipped", "k3": "ok", "k4": "skipped"})
    b = _source("b", {"k1": "ok", "k2": "skipped", "k3": "error", "k4": "error"})
    c = _source("c", {"k1": "error", "k3": "ok", "k4": "skipped"})
    for order in itertools.permutations([a, b, c]):
        names = [s.shard for s in order]
        best = winners(order)
        first_finished_k1 = next(s for s in order if s.shard in ("b", "c"))
        assert best["k1"] is first_finished_k1, names  # b or c, whichever comes first; never skipped a
        assert best["k2"] is next(s for s in order if s.shard in ("a", "b")), names  # none finished: first
        assert best["k3"] is order[0], names  # all finished: the first input
        assert best["k4"] is b, names  # the only finished one, wherever it stands
        assert all(best[k].trials[k][1]["status"] in FINISHED for k in ("k1", "k3", "k4"))


@given(
    table=st.lists(
        st.dictionaries(st.sampled_from(["k1", "k2", "k3", "k4"]), st.sampled_from(STATUSES), max_size=4),
        min_size=1,
        max_size=4,
    ),
    perm_seed=st.integers(0, 1000),
)
@settings(max_examples=200, deadline=None)
def test_the_rule_holds_for_any_shards_in_any_order(table, perm_seed):
    sources = [_source(f"s{i}", recs) for i, recs in enumerate(table)]
    orders = list(itertools.permutations(sources))
    for order in (orders[0], orders[perm_seed % len(orders)], orders[-1]):
        best = winners(list(order))
        keys = {k for s in order for k in s.trials}
        assert set(best) == keys
        for k in keys:
            assert best[k].shard == _expected(list(order), k), ([s.shard for s in order], k)


def test_a_finished_record_of_the_output_stays_and_a_skipped_one_is_superseded():
    have = {
        "done": {"status": "ok"},
        "failed": {"status": "error"},
        "skipped_then_done": {"status": "skipped"},
        "skipped_still": {"status": "skipped"},
    }
    shard = _source(
        "s",
        {"done": "error", "failed": "ok", "skipped_then_done": "ok", "skipped_still": "skipped", "new": "ok"},
    )
    best = winners([shard])
    assert superseded_keys(have, best) == {"skipped_then_done"}
    assert superseded_keys(have, winners([_source("t", {"skipped_still": "error"})])) == {"skipped_still"}
    assert superseded_keys({}, best) == set()  # nothing in the output: nothing to replace
