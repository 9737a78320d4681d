"""The sweep's progress bar: done / error / skipped, calls, cost so far and ETA (tqdm, on stderr)."""

from __future__ import annotations

from typing import Any


class Progress:
    """Counts finished trials; draws a tqdm bar unless ``quiet`` (then it only counts)."""

    def __init__(self, total: int, *, quiet: bool = False, desc: str = "trials"):
        self.total = total
        self.counts = {"ok": 0, "error": 0, "skipped": 0}
        self.calls = 0
        self.cost: float | None = None
        self._bar = None
        if not quiet and total:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit="trial", dynamic_ncols=True, leave=True)

    def update(self, record: dict[str, Any]) -> None:
        status = str(record.get("status", "ok"))
        self.counts[status] = self.counts.get(status, 0) + 1
        self.calls += int(record.get("model_calls") or 0)
        if record.get("cost_usd") is not None:
            self.cost = (self.cost or 0.0) + float(record["cost_usd"])
        if self._bar is not None:
            cost = "?" if self.cost is None else f"${self.cost:.4f}"
            self._bar.set_postfix_str(
                f"ok={self.counts['ok']} err={self.counts['error']} skip={self.counts['skipped']} "
                f"calls={self.calls} cost={cost}",
                refresh=False,
            )
            self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
