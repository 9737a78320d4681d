"""Frame probe (``experiment=frame_probe``): which coordinate frame does a model answer in?

The model is shown clean screenshots whose targets we know (the "marks": the target element of each probe
scene, spread over the canvas) and asked, in our own neutral words, for the centre of the element the
scene's instruction names, through ``click_at``; a model config with a native ``prompt_style`` is asked in
its family's own format instead (:func:`dvoc_bench.protocol.native.native_prompt` with ``neutral=True``)
and read by that family's reader, in the declared axis order. The prompt states **no** unit and no image
size: the point is the model's native habit. Each answer is read in every candidate frame:

- ``pixel``: screenshot pixels;
- ``norm1000``: 0-1000 on both axes (``x (W-1)/1000``, the rule of :mod:`dvoc_bench.core.geometry`);
- ``norm1``: 0-1 on both axes;
- ``pixel_sent``: pixels of the image actually sent, when it is not the screenshot's own size (the
  ``image:`` limits, or the model's declared resize: ``coord_frame.resize``, docs/frames.md).

The image is sent as a sweep sends it: within the input limits, at the size the declared resize gives.
The verdict *agrees* with the declaration when it is the reading the declared frame predicts: ``pixel``
for pixels of an image sent as it is, ``pixel_sent`` for pixels of a resized one, ``norm1000`` for
0-1000 and 0-999 (a 0.1 % difference no probe can tell), ``norm1`` for 0-1. Three calls are enough to
check a new model: ``probe.repeats=1`` on three scenes spread over the canvas (``probe.min_telling=3``).

An answer *fits* a frame when, read in that frame, it lands inside the target box grown by ``margin_px``.
It is *telling* when exactly one frame fits (near the top-left corner several frames can fit at once).
The verdict is the frame of at least ``min_share`` of the telling answers (and at least ``min_telling``
of them); ``mixed`` when two frames each have a fifth or more; ``unclear`` otherwise. The table also shows
the median distance to the target in each reading, and whether the verdict agrees with the model config's
declared ``coord_frame``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dvoc_bench.core.declare import check_list
from dvoc_bench.core.frames import FrameRule, NormMapping
from dvoc_bench.core.geometry import Box, Frame, Point, Size
from dvoc_bench.core.records import ParseStatus
from dvoc_bench.core.rundir import PROBE_ANSWERS, PROBE_TABLE, PROBE_VERDICTS
from dvoc_bench.draw.render import encode_png
from dvoc_bench.draw.sending import model_view, resize_image
from dvoc_bench.models.base import Model, ModelCallError, ModelRequest
from dvoc_bench.models.config import default_conf_dir, load_model_config
from dvoc_bench.protocol import parse_reply, tools_for
from dvoc_bench.protocol.native import native_prompt, parse_native
from dvoc_bench.runner.settings import ProbeOptions, Settings
from dvoc_bench.scenes import SceneRegistry, default_scenes_dir

__all__ = [
    "CANDIDATES",
    "ProbeAnswer",
    "ProbeOptions",
    "ProbeVerdict",
    "classify",
    "format_verdicts",
    "probe_model",
    "probe_prompt",
    "run_probe",
]

CANDIDATES = ("pixel", "norm1000", "norm1", "pixel_sent")
"""Frames an answer is read in (``pixel_sent`` only when the image sent is downscaled)."""


@dataclass
class ProbeAnswer:
    """One probe call and how its numbers read in each frame."""

    model: str
    """Config name of the model."""
    task: str
    """Scene id."""
    rep: int
    """Repeat index."""
    raw: list[float] | None
    """``[x, y]`` as the model gave them, ``None`` when the reply had no usable numbers."""
    parse_status: ParseStatus
    """Parser status (``ok``, ``text_fallback``, ``parse_error``) or ``call_error``."""
    error: str | None = None
    """Redacted error of a failed call."""
    dist_px: dict[str, float] = field(default_factory=dict)
    """Distance (px) from each reading to the target centre."""
    fits: list[str] = field(default_factory=list)
    """Frames whose reading lands on the target (box + margin)."""


@dataclass
class ProbeVerdict:
    """What the probe concludes for one model."""

    model: str
    """Config name."""
    declared: str
    """``coord_frame`` of the model config (its units)."""
    verdict: str
    """``pixel | norm1000 | norm1 | pixel_sent | mixed | unclear``."""
    answers: int
    """Calls made."""
    usable: int
    """Answers with numbers."""
    telling: int
    """Answers that fit exactly one frame."""
    shares: dict[str, float]
    """Share of the telling answers per frame."""
    median_dist_px: dict[str, float | None]
    """Median distance to the target per reading (usable answers)."""
    simulated: bool
    """True when the model is the simulator."""
    expected: str | None = None
    """The reading the declared frame predicts (``pixel_sent`` for pixels of a resized image, ``norm1000``
    for 0-999); ``None``: ``declared`` itself."""
    frame_rule: str | None = None
    """The declared frame in full (:meth:`dvoc_bench.core.frames.FrameRule.describe`)."""
    prompt_style: str = "tool_call"
    """How the probe asked and read (``tool_call`` or the config's native style)."""

    @property
    def agrees(self) -> bool | None:
        """Whether the verdict matches the declared frame (``None`` without a clear verdict)."""
        if self.verdict in ("mixed", "unclear"):
            return None
        return self.verdict == (self.expected or self.declared)


def probe_prompt(instruction: str) -> str:
    """The probe's question: the task, no unit, no size (our wording)."""
    return (
        f"Task: {instruction}\n"
        "Look at the screenshot and find the element this task is about. Call click_at with the "
        "coordinates of the centre of that element, and your confidence."
    )


def readings(
    raw: Point, size: Size, sent: Size | None, mapping: NormMapping = "last_pixel"
) -> dict[str, Point]:
    """The answer read in every candidate frame, in screenshot pixels; a normalised reading by the
    declared ``mapping`` (``coord_frame.mapping``), as a sweep and ``python -m dvoc_bench.coords`` read it."""
    out = {
        f.value: FrameRule(units=f.value, mapping=mapping).to_pixels(raw.x, raw.y, size)
        for f in (Frame.PIXEL, Frame.NORM1000, Frame.NORM1)
    }
    if sent is not None:
        fx = (size.width - 1) / max(sent.width - 1, 1)
        fy = (size.height - 1) / max(sent.height - 1, 1)
        out["pixel_sent"] = Point(raw.x * fx, raw.y * fy)
    return out


def _grown(box: Box, m: float) -> Box:
    return Box(box.x0 - m, box.y0 - m, box.x1 + m, box.y1 + m)


def score_answer(
    ans: ProbeAnswer,
    box: Box,
    size: Size,
    sent: Size | None,
    margin: float,
    mapping: NormMapping = "last_pixel",
) -> None:
    """Fill ``dist_px`` and ``fits`` of an answer with numbers (normalised readings by ``mapping``)."""
    if ans.raw is None:
        return
    target = _grown(box, margin)
    for name, p in readings(Point(*ans.raw), size, sent, mapping).items():
        ans.dist_px[name] = round(p.dist(box.centre), 3)
        if target.contains(p):
            ans.fits.append(name)


def expected_reading(units: str, resized: bool) -> str:
    """The candidate reading a frame declared in ``units`` predicts, the image sent being ``resized``."""
    if units == "pixel":
        return "pixel_sent" if resized else "pixel"
    return "norm1000" if units in ("norm999", "touch1000") else units


def classify(
    model: str, declared: str, answers: Sequence[ProbeAnswer], opts: ProbeOptions, simulated: bool = False
) -> ProbeVerdict:
    """The verdict over scored answers (pure)."""
    usable = [a for a in answers if a.raw is not None]
    telling = [a.fits[0] for a in usable if len(a.fits) == 1]
    counts = Counter(telling)
    shares = {f: counts[f] / len(telling) for f in counts} if telling else {}
    verdict = "unclear"
    if len(telling) >= opts.min_telling:
        best, n = counts.most_common(1)[0]
        if n / len(telling) >= opts.min_share:
            verdict = best
        elif sum(s >= 0.2 for s in shares.values()) >= 2:
            verdict = "mixed"
    frames = sorted({k for a in usable for k in a.dist_px})
    med = {f: round(statistics.median(a.dist_px[f] for a in usable), 1) for f in frames}
    return ProbeVerdict(
        model=model,
        declared=declared,
        verdict=verdict,
        answers=len(answers),
        usable=len(usable),
        telling=len(telling),
        shares={k: round(v, 3) for k, v in sorted(shares.items())},
        median_dist_px=dict(med),
        simulated=simulated,
    )


async def probe_model(
    model: Model,
    registry: SceneRegistry,
    tasks: Sequence[str],
    opts: ProbeOptions,
    max_side: int | None = None,
    max_pixels: int | None = None,
    rule: FrameRule | None = None,
    style: str = "tool_call",
) -> list[ProbeAnswer]:
    """Ask ``model`` once per (task, repeat) and score every answer. The screenshot is sent as a sweep
    sends it, within the model's input limits and through its declared resize
    (:func:`dvoc_bench.draw.sending.model_view`); the prompt states no size. ``style``: the ``click_at``
    tool (``tool_call``) or a native prompt style, asked neutrally and read in ``rule``'s axis order."""
    answers: list[ProbeAnswer] = []
    frame = rule or FrameRule()
    for task in tasks:
        snap = registry.snapshot(task)
        view = model_view(snap.size, None, max_side, max_pixels, rule)
        image = resize_image(snap.image, view)
        png = encode_png(image)
        sent = view.sent if view.resized else None
        for rep in range(opts.repeats):
            if style == "tool_call":
                text, tools = probe_prompt(snap.instruction), tools_for("point")
            else:
                text = native_prompt(
                    style, instruction=snap.instruction, seen=view.sent, rule=frame, neutral=True
                )
                tools = []
            req = ModelRequest(
                text=text,
                image_png=png,
                image_size=view.sent,
                tools=tools,
                scene_id=snap.scene_id,
                seed=opts.seed * 1000 + rep,
                image_rgb=image,
            )
            try:
                reply = await model.complete(req)
            except ModelCallError as e:
                answers.append(ProbeAnswer(model.name, task, rep, None, "call_error", str(e)))
                continue
            parsed = (
                parse_reply(reply, "point") if style == "tool_call" else parse_native(reply, style, frame)
            )
            raw = [float(parsed.values["x"]), float(parsed.values["y"])] if parsed.values else None
            ans = ProbeAnswer(model.name, task, rep, raw, parsed.status)
            score_answer(ans, snap.target_box, snap.size, sent, opts.margin_px, frame.mapping)
            answers.append(ans)
    return answers


def format_verdicts(verdicts: Sequence[ProbeVerdict]) -> str:
    """A markdown table of the verdicts."""
    lines = [
        "| model | declared | verdict | agrees | usable/calls | telling | shares "
        "| median dist px by reading |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        agree = {True: "yes", False: "**NO**", None: "-"}[v.agrees]
        if v.expected and v.expected != v.declared:
            agree += f" (expects {v.expected})"
        shares = ", ".join(f"{k} {s:.0%}" for k, s in v.shares.items()) or "-"
        dists = ", ".join(f"{k} {d}" for k, d in v.median_dist_px.items()) or "-"
        name = v.model + (" (simulated)" if v.simulated else "")
        lines.append(
            f"| {name} | {v.declared} | {v.verdict} | {agree} | {v.usable}/{v.answers} | {v.telling} "
            f"| {shares} | {dists} |"
        )
    return "\n".join(lines)


def run_probe(s: Settings, model_choice: str | None, run_dir: Path) -> list[ProbeVerdict]:
    """The ``experiment=frame_probe`` job: probe every model, write ``probe.jsonl``, ``probe.md`` and
    ``probe.json`` into ``run_dir``; returns the verdicts (the door prints them). ``ConfigError`` on a bad
    task or model, before anything is written."""
    from dvoc_bench.models.factory import build_model
    from dvoc_bench.models.options import model_image
    from dvoc_bench.runner.setup import model_options

    models_dir = Path(s.paths.models) if s.paths.models else default_conf_dir() / "model"
    registry = SceneRegistry(Path(s.paths.scenes) if s.paths.scenes else default_scenes_dir())
    tasks = check_list("task" if s.task else "tasks", [s.task] if s.task else s.tasks, registry.ids())
    names = [model_choice] if model_choice else s.models
    known = sorted(p.stem for p in models_dir.glob("*.yaml"))
    configs = [load_model_config(n, models_dir) for n in check_list("models", names, known)]
    kw = model_options(s)
    models = [(c, build_model(c, registry.truth, **kw)) for c in configs]
    verdicts, rows = [], []
    for c, m in models:
        limits = model_image(c.image, kw["image"])  # every model kind: the harness resizes
        answers = asyncio.run(
            probe_model(
                m, registry, tasks, s.probe, limits.max_side, limits.max_pixels, c.frame, c.prompt_style
            )
        )
        rows += answers
        v = classify(c.name, c.coord_frame, answers, s.probe, c.simulated)
        resized = any(model_view(registry.snapshot(t).size, None, limits.max_side, limits.max_pixels,
                                 c.frame).resized for t in tasks)  # fmt: skip
        v.expected = expected_reading(c.coord_frame, resized)
        v.frame_rule, v.prompt_style = c.frame.describe(), c.prompt_style
        verdicts.append(v)
    run_dir.mkdir(parents=True, exist_ok=True)
    with (run_dir / PROBE_ANSWERS).open("w", encoding="utf-8") as f:
        for a in rows:
            f.write(json.dumps(asdict(a)) + "\n")
    (run_dir / PROBE_TABLE).write_text(format_verdicts(verdicts) + "\n", encoding="utf-8")
    (run_dir / PROBE_VERDICTS).write_text(
        json.dumps([{**asdict(v), "agrees": v.agrees} for v in verdicts], indent=1), encoding="utf-8"
    )
    return verdicts
