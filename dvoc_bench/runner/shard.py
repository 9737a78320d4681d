"""Shards: one sweep's trials spread over N processes (``run.shard=I/N``), each into its own run directory.

A trial belongs to shard ``I`` of ``N`` when a hash of its trial key, taken mod ``N``, is ``I``
(:func:`shard_of`): a stable partition, independent of the plan's order and of which other trials are
planned, so every shard of a sweep computes the same split on any machine. ``run.shard`` is a ``run.*``
knob, so it is not in the fingerprint (:mod:`dvoc_bench.runner.runmeta`): every shard of a sweep has the
fingerprint the whole sweep run in one process has, which is what the merge compares
(:mod:`dvoc_bench.runner.merge`).

A shard's run directory holds its own trials in ``plan.jsonl`` and ``shard.json``: the
shard, the whole plan's size and the digest of its keys, and the fingerprint. A run directory keeps the
shard it was made with: resuming it as another shard (or as the whole sweep, or a whole run as a shard) is
refused.

Quota and budget are the whole sweep's (docs/cli.md): each of the ``N`` shards gets ``1/N`` of
``run.max_cost_usd`` (:func:`shard_budget`), and its provider gates ``rpm/N`` and ``rpd/N``
(:func:`rate_split`: the larger of ``N`` and ``scheduler.rate_split``), so N shards on one API key stay
within its quota, and the plan of a shard (``run.plan_only``) states the wall time that implies.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dvoc_bench.core.declare import ConfigError
from dvoc_bench.core.jsonread import load_file
from dvoc_bench.core.rundir import META, SHARD, TRIALS

_FORM = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based)."""

    index: int
    """Which shard, ``0 <= index < count``."""
    count: int
    """How many shards the sweep is split into (>= 1)."""

    @property
    def label(self) -> str:
        """``I/N``, as given to ``run.shard``."""
        return f"{self.index}/{self.count}"


def parse_shard(value: object) -> Shard | None:
    """``"I/N"`` -> :class:`Shard`; ``None`` stays ``None``. A malformed or out-of-range value raises
    :class:`ValueError` with the sentence a ``run.shard`` config error shows."""
    if value is None:
        return None
    m = _FORM.match(str(value))
    if m is None:
        raise ValueError(f"must be I/N (shard I of N, 0 <= I < N, e.g. 0/4), got {value!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1:
        raise ValueError(f"N must be at least 1, got {value!r}")
    if i >= n:
        raise ValueError(f"shard index {i} out of range for {n} shards (0 <= I < {n}), got {value!r}")
    return Shard(i, n)


def shard_of(trial_key: str, count: int) -> int:
    """The shard (0-based, of ``count``) a trial key belongs to: a hash of the key mod ``count``."""
    h = hashlib.sha256(("shard:" + trial_key).encode()).digest()
    return int.from_bytes(h[:8], "big") % count


def select(specs: Iterable[Any], shard: Shard | None) -> list[Any]:
    """The specs (anything with ``trial_key``) of ``shard``, in their order; all of them without one."""
    specs = list(specs)
    if shard is None or shard.count == 1:
        return specs
    return [s for s in specs if shard_of(s.trial_key, shard.count) == shard.index]


def plan_digest(keys: Iterable[str]) -> str:
    """Digest of a whole plan's trial keys (order-free): shards of one sweep record the same one."""
    return hashlib.sha256("\n".join(sorted(set(keys))).encode()).hexdigest()[:16]


def rate_split(shard: Shard | None, configured: int) -> int:
    """Processes sharing each provider's quota: ``scheduler.rate_split``, at least the shard count."""
    return max(configured, shard.count if shard is not None else 1)


def shard_budget(max_cost_usd: float | None, shard: Shard | None) -> float | None:
    """A shard's part of ``run.max_cost_usd`` (the whole sweep's budget): ``1/N`` of it."""
    if max_cost_usd is None or shard is None:
        return max_cost_usd
    return max_cost_usd / shard.count


def read_shard_file(run_dir: Path | str) -> dict[str, Any] | None:
    """A run directory's ``shard.json``, or ``None`` (not a shard, or unreadable)."""
    path = Path(run_dir) / SHARD
    try:
        data = load_file(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def check_shard(
    run_dir: Path | str,
    shard: Shard | None,
    *,
    planned_total: int,
    planned_shard: int,
    digest: str,
    fingerprint: str | None,
) -> None:
    """Refuse a run directory made as another shard (or not as a shard), then write ``shard.json`` for a
    shard. Call it holding the run directory's lock, before anything changes. A directory that was a whole
    run (it has ``run_meta.json`` and no ``shard.json``) cannot become a shard, nor a shard a whole run."""
    run_dir = Path(run_dir)
    old = read_shard_file(run_dir)
    was = None if old is None else str(old.get("shard"))
    now = None if shard is None else shard.label
    existing = (run_dir / META).is_file() or (run_dir / TRIALS).is_file()
    if old is not None and was != now:
        raise ConfigError(
            f"run.shard: {run_dir} is shard {was} of its sweep, not {now or 'the whole sweep'}; resume it "
            f"with run.shard={was}, or choose another hydra.run.dir"
        )
    if old is None and shard is not None and existing:
        raise ConfigError(
            f"run.shard: {run_dir} holds a whole run, not a shard; run shard {now} into another hydra.run.dir"
        )
    if shard is None:
        return
    data = {
        "shard": now,
        "index": shard.index,
        "count": shard.count,
        "planned_total": planned_total,
        "planned_shard": planned_shard,
        "plan_digest": digest,
        "fingerprint": fingerprint,
    }
    path = run_dir / SHARD
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(path)
