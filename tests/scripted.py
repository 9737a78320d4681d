"""What method tests share: a scripted model, a trial spec with defaults, a frame sink, a run helper."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from dvoc_bench.core.records import TrialResult, TrialSpec
from dvoc_bench.methods.common import TrialEnv
from dvoc_bench.methods.registry import method_info
from dvoc_bench.models.base import ModelRequest, Reply, ToolCall


class ScriptedModel:
    """A model that answers with fixed replies in order (the last one repeats), or raises the ones that
    are exceptions; records every request it got."""

    name = "scripted"
    simulated = False

    def __init__(self, *replies: Reply | Exception):
        self.replies = list(replies)
        self.requests: list[ModelRequest] = []

    async def complete(self, req: ModelRequest) -> Reply:
        self.requests.append(req)
        r = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(r, Exception):
            raise r
        return r


def tool(name: str, **arguments: Any) -> Reply:
    """A reply holding one tool call with JSON arguments."""
    return Reply(None, [ToolCall(name, json.dumps(arguments))])


def offset(dx: float, dy: float, confidence: float = 0.9) -> Reply:
    """A ``report_offset`` reply."""
    return tool("report_offset", dx=dx, dy=dy, confidence=confidence)


def click(x: float, y: float, confidence: float = 0.9) -> Reply:
    """A ``click_at`` reply."""
    return tool("click_at", x=x, y=y, confidence=confidence)


def make_spec(
    task: str = "S6", method: str = "som", seed: int = 1, frame: str = "pixel", **over: Any
) -> TrialSpec:
    """A trial spec with the default loop settings; ``over`` replaces any field."""
    fields: dict[str, Any] = dict(
        trial_key=f"k-{task}-{method}-{seed}",
        experiment="t",
        model="m",
        model_id="m",
        api_base=None,
        provider="p",
        simulated=True,
        coord_frame=frame,
        task=task,
        scene_hash="h",
        method=method,
        protocol="v1",
        alpha="-",
        overlay="-",
        predict="-",
        start=None,
        start_index=1,
        rep=0,
        seed=seed,
        epsilon=30.0,
        conf_threshold=0.5,
        window=2,
        max_iterations=15,
        max_attempts=5,
        alpha_constant=0.5,
    )
    fields.update(over)
    return TrialSpec(**fields)


class FrameSink:
    """``save_frame`` for tests: keeps every PNG by its sha256."""

    def __init__(self) -> None:
        self.frames: dict[str, bytes] = {}

    def __call__(self, png: bytes) -> str:
        sha = hashlib.sha256(png).hexdigest()
        self.frames[sha] = png
        return sha


def run_method(spec: TrialSpec, env: TrialEnv) -> TrialResult:
    """Run the spec's registered method on ``env``."""
    return asyncio.run(method_info(spec.method).run(spec, env))
