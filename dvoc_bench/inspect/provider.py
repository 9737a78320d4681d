"""Inspect's ``dvoc`` model provider: ``--model dvoc/<profile>`` answers offline as the project's simulator
(``conf/model/<profile>.yaml`` of kind ``simulator``), OCR model or screen parser would.

A call goes through the same backend as ``python -m dvoc_bench.serve`` (:class:`~dvoc_bench.app.simserve.
backend.SimBackend`): the scene is recognised by the request's screenshot and instruction, never told, so the
answer is the one a served simulator gives to the same body. Every answer of a simulated profile is
simulated: the provider says so in each output's metadata (``simulated``), and the solvers' records carry
the config's ``simulated`` flag. The scenes it recognises are those of the synthetic and web sources
(``-M scenes=synthetic`` for the synthetic ones alone: no browser is started); a dataset's samples are not
among them (the OCR model and the screen parser need no scene and answer on any screenshot).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from inspect_ai.model import GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from dvoc_bench.app.simserve.backend import NOTE_FIELD, SimBackend
from dvoc_bench.app.simserve.wire import HTTPError
from dvoc_bench.inspect.adapter import openai_body, output_of

SOURCES = ("synthetic", "web")
"""The task sources whose scenes the provider recognises by default (``-M scenes=synthetic`` narrows them:
every scene of the listed sources is rendered once, at the first call, to be recognised)."""

_BACKENDS: dict[tuple[str, ...], SimBackend] = {}
_LOCK = threading.Lock()


def backend(sources: tuple[str, ...] = SOURCES) -> SimBackend:
    """The process's simulator backend over ``sources`` (scenes rendered once; the browser closed when
    idle)."""
    from dvoc_bench.scenes import SceneRegistry, build_sources, default_scenes_dir

    with _LOCK:
        if sources not in _BACKENDS:
            registry = SceneRegistry(default_scenes_dir(), sources=build_sources(names=list(sources)))
            _BACKENDS[sources] = SimBackend(registry=registry)
        return _BACKENDS[sources]


@modelapi(name="dvoc")
class DvocModelAPI(ModelAPI):
    """The project's offline models as an Inspect provider."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 (Inspect's own signature)
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        self.profile = model_name
        """The model config answering (``conf/model/<profile>.yaml``)."""
        scenes = model_args.pop("scenes", None)
        names = [n.strip() for n in str(scenes).split(",") if n.strip()] if scenes else list(SOURCES)
        unknown = sorted(set(names) - set(SOURCES))
        if unknown:
            raise ValueError(f"scenes: {', '.join(unknown)} unknown; allowed: {', '.join(SOURCES)}")
        self.sources = tuple(names)
        """The task sources whose scenes this model recognises (``-M scenes=...``)."""
        if model_args:
            raise ValueError(f"{sorted(model_args)}: not arguments of dvoc/ models; allowed: scenes")
        self.simulated = backend(self.sources).model(model_name).simulated
        """True for simulator profiles (their every answer is labelled simulated)."""

    def max_connections(self) -> int:
        return 8

    async def generate(
        self,
        input: list[Any],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        body = openai_body(self.profile, input, tools, tool_choice, config)
        try:
            completion = await asyncio.to_thread(backend(self.sources).chat, body)
        except HTTPError as e:
            return ModelOutput.from_content(self.profile, "", stop_reason="unknown", error=str(e))
        out = output_of(completion, NOTE_FIELD)
        out.metadata = {**(out.metadata or {}), "simulated": self.simulated}
        return out
