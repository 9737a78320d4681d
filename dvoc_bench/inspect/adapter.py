"""Requests and replies between this project's model protocol and Inspect's.

Two directions, both pure conversions:

- a :class:`~dvoc_bench.models.base.ModelRequest` (one user turn: text, one PNG, tool schemas in OpenAI
  format) becomes Inspect's input (:func:`inspect_input`), and Inspect's ``ModelOutput`` becomes a
  :class:`~dvoc_bench.models.base.Reply` (:func:`reply_of`): :class:`InspectModel` is the
  :class:`~dvoc_bench.models.base.Model` a solver gives the project's methods, so every method runs its own
  code against whatever model ``inspect eval --model`` chose;
- Inspect's input becomes an OpenAI chat-completions body (:func:`openai_body`), and the body the simulator
  answers becomes Inspect's ``ModelOutput`` (:func:`output_of`): the ``dvoc`` model provider.

The frame an answer is read in belongs to the model config the solver was given (its ``coord_frame``), as in
a sweep; nothing here reads coordinates.
"""

from __future__ import annotations

import json
from typing import Any

from dvoc_bench.core.jsonread import loads
from dvoc_bench.models.base import CROP_FIELD, ModelCallError, ModelRequest, Reply, ToolCall

TOOL_CHOICE_TO_INSPECT = {"auto": "auto", "required": "any", "none": "none"}
"""OpenAI's ``tool_choice`` words in Inspect's vocabulary."""
TOOL_CHOICE_TO_OPENAI = {v: k for k, v in TOOL_CHOICE_TO_INSPECT.items()}
"""Inspect's ``tool_choice`` words in OpenAI's."""
SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "top_k", "frequency_penalty", "presence_penalty")
"""Sampling parameters of a request that have a field of the same name in Inspect's ``GenerateConfig``."""


def tool_infos(tools: list[dict[str, Any]]) -> list[Any]:
    """OpenAI-format tool schemas as Inspect ``ToolInfo`` objects (name, description, parameters)."""
    from inspect_ai.tool import ToolInfo, ToolParams

    out = []
    for t in tools:
        fn = t.get("function", t)
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        out.append(
            ToolInfo(
                name=str(fn["name"]),
                description=str(fn.get("description") or fn["name"]),
                parameters=ToolParams.model_validate(params),
            )
        )
    return out


def inspect_input(request: ModelRequest) -> list[Any]:
    """The request's one user turn as Inspect messages: the text, then the image as a data URL."""
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    content: list[Any] = [ContentText(text=request.text)]
    url = request.data_url()
    if url is not None:
        content.append(ContentImage(image=url, detail="high"))
    return [ChatMessageUser(content=content)]


def generate_config(request: ModelRequest, send_crop: bool) -> Any:
    """Inspect's ``GenerateConfig`` for ``request``: its seed and sampling parameters; with ``send_crop``
    (a simulated config) the crop rectangle rides in the body's extra fields, as it does to ``serve``."""
    from inspect_ai.model import GenerateConfig

    fields: dict[str, Any] = {"seed": request.seed}
    fields.update({k: request.params[k] for k in SAMPLING_KEYS if k in request.params})
    if send_crop and request.crop is not None:
        fields["extra_body"] = {CROP_FIELD: list(request.crop)}
    return GenerateConfig(**fields)


def reply_of(output: Any) -> Reply:
    """Inspect's ``ModelOutput`` as a :class:`Reply`: text, tool calls (arguments as the provider gave them:
    the raw JSON text when Inspect could not parse it), tokens; an output carrying an error raises
    :class:`ModelCallError`."""
    if getattr(output, "error", None):
        raise ModelCallError("unknown", f"inspect model error: {str(output.error).splitlines()[0][:300]}")
    if not output.choices:
        return Reply(text=None)
    message = output.choices[0].message
    calls = []
    for c in message.tool_calls or []:
        args: Any = c.arguments
        if getattr(c, "parse_error", None):  # Inspect could not read the arguments: keep them as text
            args = c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments)
        calls.append(ToolCall(c.function, args))
    usage = output.usage
    text = message.text if message.content else None
    return Reply(
        text=text or None,
        tool_calls=calls,
        tokens_in=None if usage is None else usage.input_tokens,
        tokens_out=None if usage is None else usage.output_tokens,
        cost_source="inspect",
        latency_s=float(output.time or 0.0),
        finish_reason=output.choices[0].stop_reason,
        served_model=output.model or None,
    )


class InspectModel:
    """A :class:`~dvoc_bench.models.base.Model` answered by an Inspect model (``get_model()``)."""

    def __init__(self, name: str, model: Any, simulated: bool) -> None:
        self.name = name
        """The model config's name (its frame, prompt style and tools are that config's)."""
        self.simulated = simulated
        """True when the config is a simulated profile (its rows are labelled simulated)."""
        self.model = model
        """The Inspect model every call goes to; ``None``: the active one (``get_model()`` at each call)."""

    async def complete(self, request: ModelRequest) -> Reply:
        tools = tool_infos(request.tools)
        choice = TOOL_CHOICE_TO_INSPECT.get(request.tool_choice or "auto", "auto")
        model = self.model
        if model is None:
            from inspect_ai.model import get_model

            model = get_model()
        try:
            output = await model.generate(
                inspect_input(request),
                tools=tools,
                tool_choice=choice if tools else None,
                config=generate_config(request, self.simulated),
            )
        except ModelCallError:
            raise
        except Exception as e:  # the provider's error, in one line (never its traceback, never a key)
            raise ModelCallError("unknown", f"{type(e).__name__}: {str(e).splitlines()[0][:300]}") from None
        return reply_of(output)


# the other direction: the ``dvoc`` provider


def openai_body(
    model: str, messages: list[Any], tools: list[Any], tool_choice: Any, config: Any
) -> dict[str, Any]:
    """An OpenAI chat-completions body of Inspect's input (the last user turn's text and image), tools, tool
    choice and config (seed, sampling parameters, ``extra_body``)."""
    content: list[dict[str, Any]] = []
    for m in messages:
        if m.role != "user":
            continue
        parts = m.content if isinstance(m.content, list) else [m.content]
        content = []
        for p in parts:
            if isinstance(p, str):
                content.append({"type": "text", "text": p})
            elif p.type == "text":
                content.append({"type": "text", "text": p.text})
            elif p.type == "image":
                content.append({"type": "image_url", "image_url": {"url": p.image}})
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": content}]}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters.model_dump(exclude_none=True),
                },
            }
            for t in tools
        ]
        if isinstance(tool_choice, str):
            body["tool_choice"] = TOOL_CHOICE_TO_OPENAI.get(tool_choice, "auto")
    if config.seed is not None:
        body["seed"] = config.seed
    for k in SAMPLING_KEYS:
        v = getattr(config, k, None)
        if v is not None:
            body[k] = v
    body.update(config.extra_body or {})
    return body


def output_of(completion: dict[str, Any], note_field: str) -> Any:
    """An OpenAI chat-completion object as Inspect's ``ModelOutput`` (text, tool calls, usage); the
    simulator's note (``note_field``), when it wrote one, is kept in the output's metadata."""
    from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, ModelOutput, ModelUsage
    from inspect_ai.tool import ToolCall as InspectToolCall

    choice = completion["choices"][0]
    msg = choice["message"]
    calls = []
    for i, c in enumerate(msg.get("tool_calls") or []):
        raw = c["function"].get("arguments")
        try:
            args = loads(raw, "tool call arguments") if isinstance(raw, str) else (raw or {})
            error = None
        except ValueError:
            args, error = {}, f"arguments are not JSON: {str(raw)[:200]}"
        calls.append(
            InspectToolCall(
                id=str(c.get("id") or f"call_{i}"),
                function=str(c["function"].get("name")),
                arguments=args if isinstance(args, dict) else {"value": args},
                parse_error=error,
            )
        )
    usage = completion.get("usage") or {}
    stop = choice.get("finish_reason") or "stop"
    out = ModelOutput(
        model=str(completion.get("model")),
        choices=[
            ChatCompletionChoice(
                message=ChatMessageAssistant(
                    content=msg.get("content") or "", tool_calls=calls or None, model=completion.get("model")
                ),
                stop_reason="tool_calls" if calls else ("max_tokens" if stop == "length" else "stop"),
            )
        ],
        usage=ModelUsage(
            input_tokens=int(usage.get("prompt_tokens") or 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            total_tokens=int(usage.get("total_tokens") or 0),
        ),
    )
    if completion.get(note_field):
        out.metadata = {note_field: completion[note_field]}
    return out
