"""The simulated model: one call from the tools offered to the reply (the steps of
:mod:`dvoc_bench.models.simulator`), with its per-call and per-situation generators."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from dvoc_bench.core.geometry import (
    Box,
    Frame,
    Point,
    Size,
    box_distance,
    offset_from_pixels,
    point_from_pixels,
)
from dvoc_bench.core.memo import Memo
from dvoc_bench.core.scene import SceneTruth
from dvoc_bench.models.base import MAX_REPLY_CHARS, ModelRequest, Reply, ToolCall, bound_reply
from dvoc_bench.models.simulator.behaviour import (
    aim,
    aimed_box,
    frame_of,
    gain_jitter,
    near_target,
    perceive,
    point_outliers,
    round_in_frame,
    sample_frame,
    task_given,
)
from dvoc_bench.models.simulator.perception import MarkerEvidence, find_marker, localise
from dvoc_bench.models.simulator.profile import SimProfile, for_canvas, load_profile, plain
from dvoc_bench.models.simulator.reading import (
    crosshair_position,
    decode_image,
    image_digest,
    parse_marks,
    position_stated,
    requested_frame,
    tool_names,
    truth_in_image,
)

NOT_PRESENT_TOOL = "not_present"
"""The harness's "not present" tool (:data:`dvoc_bench.protocol.absent.NOT_PRESENT_TOOL`; this floor cannot
import it)."""

NONE_MARK_PHRASE = "with id 0 (none)"
"""How a Set-of-Mark prompt offers the ``none`` mark (:data:`dvoc_bench.protocol.absent.SOM_SENTENCE`)."""

__all__ = ["NOT_SUPPORTED", "NO_TOOL_TEXT", "SimulatedModel"]

NOT_SUPPORTED = "not supported by the simulator"
"""Text of the reply when only ``select_element`` is offered."""

THREAD_PREFIX = "dvoc-sim"
"""Name prefix of the thread a simulated model answers in (:meth:`SimulatedModel.complete`)."""

EVIDENCE_CACHE = 256
"""Images whose marker evidence a simulated model remembers (by image digest)."""

NO_TOOL_TEXT = "I looked at the screenshot but I am not sure where the target is."
"""Text of a reply without a tool call (``p_no_tool_call``)."""


class SimulatedModel:
    """A simulated VLM answering :class:`ModelRequest` from the pixels, the text and the scene truth."""

    simulated = True

    def __init__(self, name: str, profile: SimProfile, truth: Callable[[str], SceneTruth]):
        self.name = name
        """Config name of the model."""
        self.profile = profile
        """The calibrated behaviour."""
        self.truth = truth
        """Ground-truth lookup by scene id."""
        self._identity = f"{name}|{profile.digest()}".encode()
        self._evidence: Memo[MarkerEvidence | None] = Memo(EVIDENCE_CACHE)
        self._pool: ThreadPoolExecutor | None = None  # started by the first ``complete``; its thread ends
        # with the model (an executor's idle workers exit when it is garbage-collected)
        self.max_reply_chars = MAX_REPLY_CHARS
        """Characters kept of a reply's text and tool arguments (``run.max_reply_chars``), as a client."""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], truth: Callable[[str], SceneTruth]) -> SimulatedModel:
        """Build from a whole model config (``name`` + ``sim:``), e.g. a loaded ``conf/model/sim-*.yaml``."""
        cfg = plain(cfg)
        return cls(str(cfg["name"]), load_profile(cfg), truth)

    def rng_for(self, req: ModelRequest) -> np.random.Generator:
        """The per-call generator: a pure function of the profile identity and the request content."""
        h = hashlib.sha256(self._identity)
        h.update(b"|" + str(int(req.seed)).encode() + b"|")
        h.update(req.text.encode())
        h.update(image_digest(req))
        return np.random.default_rng(int.from_bytes(h.digest()[:16], "big"))

    async def complete(self, request: ModelRequest) -> Reply:
        """:meth:`respond` in the model's own worker thread, within the simulated latency: the call takes
        ``latency_for(request)`` from its start, the time to compute the reply included (a real model's
        latency includes its looking; only a reply that takes longer to compute makes the call longer).
        Finding the crosshair costs milliseconds of numpy per new image: on the event loop it stalled every
        trial in flight. One thread per model: more only add contention on a small machine. The reply is a
        pure function of the request, so where and when it is computed changes nothing."""
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=THREAD_PREFIX)
        reply = await loop.run_in_executor(self._pool, self.respond, request)
        reply = bound_reply(reply, self.max_reply_chars)  # the records a real client writes
        delay = self.latency_for(request)
        if delay != reply.latency_s:
            reply = dataclasses.replace(reply, latency_s=delay)
        left = delay - (loop.time() - t0)
        if left > 0:
            await asyncio.sleep(left)
        return reply

    def latency_for(self, req: ModelRequest) -> float:
        """Seconds the call takes: ``latency_s`` plus the ``latency`` draw (from a child generator of the
        call's, so the reply does not depend on whether latency is sampled)."""
        lat = self.profile.latency
        if lat.scale <= 0 or lat.median_s <= 0:
            return self.profile.latency_s
        return self.profile.latency_s + lat.sample(self.rng_for(req).spawn(1)[0])

    def respond(self, req: ModelRequest) -> Reply:
        """Answer one request synchronously (deterministic in the request)."""
        prof = self.profile
        names = tool_names(req.tools)
        if "report_offset" in names:
            mode = "offset"
        elif "click_at" in names:
            mode = "point"
        elif "drag_points" in names:
            mode = "drag"
        elif "select_element" in names:
            marks = parse_marks(req.text, req.image_size)
            if not marks:
                return self._reply(NOT_SUPPORTED, None)
            mode = "select"
        else:
            return self._reply(NO_TOOL_TEXT, None)
        rng = self.rng_for(req)
        if rng.random() < prof.p_no_tool_call:
            return self._reply(NO_TOOL_TEXT, None)
        size = req.image_size
        scene = self.truth(req.scene_id)
        refusal = self._refuse(req, scene, names, mode)
        if refusal is not None:
            return refusal
        truth = truth_in_image(scene, size, req.crop)
        prof = for_canvas(prof, scene.size)
        rng = self.situation_rng(req, prof, mode, truth, rng)
        if mode == "drag":
            return self._drag(scene, req, size, rng, prof)
        centre, aimed = aim(truth, req.text, prof, rng)
        if mode == "point":
            return self._point(truth, size, centre, aimed, rng, prof, req.text)
        if mode == "select":
            return self._select(truth, marks, centre, aimed, rng)
        return self._offset(req, truth, size, centre, aimed, rng, prof)

    def _refuse(self, req: ModelRequest, scene: SceneTruth, names: set[str], mode: str) -> Reply | None:
        """The "not present" answer, with probability ``refuses_absent``, when the target is absent and the
        request offers the answer (a generator of its own: the other draws are untouched); else ``None``."""
        p = self.profile.refuses_absent
        if scene.absent is None or p <= 0:
            return None
        if mode == "select":
            if NONE_MARK_PHRASE not in req.text:
                return None
        elif NOT_PRESENT_TOOL not in names:
            return None
        if p < 1:
            h = hashlib.sha256(self._identity + b"|absent|" + req.text.encode() + image_digest(req))
            if np.random.default_rng(int.from_bytes(h.digest()[:16], "big")).random() >= p:
                return None
        if mode == "select":
            return self._reply(None, ToolCall("select_element", json.dumps({"id": 0, "confidence": 1.0})))
        args = {"reason": "no element on the screenshot matches the instruction"}
        return self._reply(None, ToolCall(NOT_PRESENT_TOOL, json.dumps(args)))

    def situation_rng(
        self, req: ModelRequest, prof: SimProfile, mode: str, truth: SceneTruth, rng: np.random.Generator
    ) -> np.random.Generator:
        """``rng``, or with probability ``consistency.<mode>`` (the per-call repeat rate) the generator of the
        model's *modal answer* to this exact input: seeded by the profile identity, the prompt text and the
        image, never by the trial seed, so two calls on identical input repeat each other with probability
        ``c**2`` and otherwise differ. Whether a call repeats is drawn from ``rng`` (the trial seed); no draw
        at all when the rate is 0."""
        c = {"offset": prof.consistency.offset, "point": prof.consistency.point}.get(mode, 0.0)
        if c <= 0 or rng.random() >= c:
            return rng
        h = hashlib.sha256(self._identity + b"|modal|" + mode.encode() + b"|")
        h.update(req.text.encode())
        h.update(image_digest(req))
        return np.random.default_rng(int.from_bytes(h.digest()[:16], "big"))

    def _select(
        self,
        truth: SceneTruth,
        marks: list[tuple[int, Box]],
        centre: Point,
        aimed: str | None,
        rng: np.random.Generator,
    ) -> Reply:
        prof = self.profile
        t_hat = perceive(
            truth, centre, aimed, prof.noise, prof.oneshot.noise_px, prof.outlier, prof.oneshot.outlier_p, rng
        )
        u_guess, u_confuse, u_pick = rng.random(3)
        inside = [(b.area, i) for i, (_, b) in enumerate(marks) if b.contains(t_hat)]
        if inside:
            pick = min(inside)[1]
        elif u_guess < prof.som.guess_unmarked:
            pick = min(range(len(marks)), key=lambda i: (box_distance(marks[i][1], t_hat), i))
        else:
            return self._reply(NO_TOOL_TEXT, None)
        if len(marks) > 1 and u_confuse < prof.som.confusion:
            c = marks[pick][1].centre
            others = sorted((marks[i][1].centre.dist(c), i) for i in range(len(marks)) if i != pick)
            near = others[: prof.som.neighbours]
            pick = near[int(u_pick * len(near))][1]
        conf = (prof.som.confidence or prof.oneshot.confidence).sample(rng, 0.0)
        args = {"id": marks[pick][0], "confidence": conf}
        return self._reply(None, ToolCall("select_element", json.dumps(args)))

    def _point(
        self,
        truth: SceneTruth,
        size: Size,
        centre: Point,
        aimed: str | None,
        rng: np.random.Generator,
        prof: SimProfile | None = None,
        text: str = "",
    ) -> Reply:
        prof = self.profile if prof is None else prof
        outlier, outlier_p = point_outliers(prof, truth, aimed)
        t_hat = perceive(truth, centre, aimed, prof.noise, prof.oneshot.noise_px, outlier, outlier_p, rng)
        mix = prof.oneshot.frames or prof.frames
        frame = self._frame(text, prof, mix.weights(position_stated=True), rng)
        p = point_from_pixels(t_hat, Frame(frame), size)
        conf = prof.oneshot.confidence.sample(rng, 0.0)
        args = {"x": round_in_frame(p.x, frame), "y": round_in_frame(p.y, frame), "confidence": conf}
        return self._reply(None, ToolCall("click_at", json.dumps(args)))

    def _drag(
        self, scene: SceneTruth, req: ModelRequest, size: Size, rng: np.random.Generator, prof: SimProfile
    ) -> Reply:
        """Both points of a two-point task in one ``drag_points`` answer: each end perceived as a one-shot
        point (``oneshot.noise_px``, ``oneshot.outlier_p``) on its own target when the prompt holds the
        task (else ``no_task``'s pick on that end's screen), one native frame for both. An ASSUMPTION: no
        profile was fitted on two-point answers (the trial's ``simulated_assumptions`` say so). A task
        with no two ends gets the text-only reply."""
        if len(scene.ends) != 2:
            return self._reply(NOT_SUPPORTED, None)
        points = []
        for end in scene.ends:
            truth = truth_in_image(end, size, req.crop)
            aimed: str | None = truth.target_id
            if task_given(scene, req.text):
                centre = truth.aim
            else:
                centre, aimed = aim(truth, req.text, prof, rng)
            outlier, outlier_p = point_outliers(prof, truth, aimed)
            t_hat = perceive(truth, centre, aimed, prof.noise, prof.oneshot.noise_px, outlier, outlier_p, rng)
            points.append(t_hat)
        mix = prof.oneshot.frames or prof.frames
        frame = self._frame(req.text, prof, mix.weights(position_stated=True), rng)
        pair = []
        for t_hat in points:
            p = point_from_pixels(t_hat, Frame(frame), size)
            pair.append([round_in_frame(p.x, frame), round_in_frame(p.y, frame)])
        conf = prof.oneshot.confidence.sample(rng, 0.0)
        args = {"from": pair[0], "to": pair[1], "confidence": conf}
        return self._reply(None, ToolCall("drag_points", json.dumps(args)))

    def _offset(
        self,
        req: ModelRequest,
        truth: SceneTruth,
        size: Size,
        centre: Point,
        aimed: str | None,
        rng: np.random.Generator,
        prof: SimProfile | None = None,
    ) -> Reply:
        prof = self.profile if prof is None else prof
        t_hat = perceive(truth, centre, aimed, prof.noise, None, prof.outlier, prof.outlier.p, rng)
        stated = crosshair_position(req) if prof.perception.knows_crosshair else None
        p_hat = stated if stated is not None else crosshair_position(req, self._seen(req, prof, rng))
        weights = prof.frames.weights(position_stated=position_stated(req.text))
        frame = self._frame(req.text, prof, weights, rng)
        if p_hat is None:
            if prof.unknown_position == "zero":
                args = {"dx": 0, "dy": 0, "confidence": prof.confidence.sample(rng, 0.0)}
                return self._reply(None, ToolCall("report_offset", json.dumps(args)))
            p_hat = size.centre
        box = aimed_box(truth, aimed)
        extent = (box.w, box.h)  # the element's size, as seen; where it is comes only from t_hat
        if frame == "mixed":  # H2: target in 0-1000 units, crosshair in pixels; believed to be pixels
            g_t = point_from_pixels(t_hat, Frame.NORM1000, size)
            o = gain_jitter(g_t - p_hat, prof.noise, rng)
            belief = near_target(o, prof.near, prof.axis_drop, rng, extent)
            native = belief
        else:
            o = gain_jitter(t_hat - p_hat, prof.noise, rng)
            belief = near_target(o, prof.near, prof.axis_drop, rng, extent)
            native = offset_from_pixels(belief, frame_of(frame), size)
        gx, gy = prof.gain
        conf = prof.confidence.sample(rng, belief.magnitude)
        args = {
            "dx": round_in_frame(native.dx * gx, frame),
            "dy": round_in_frame(native.dy * gy, frame),
            "confidence": conf,
        }
        return self._reply(None, ToolCall("report_offset", json.dumps(args)))

    def evidence(self, req: ModelRequest) -> MarkerEvidence | None:
        """What the image shows of the crosshair (:func:`~dvoc_bench.models.simulator.perception.find_marker`,
        deterministic in the pixels; the last ``EVIDENCE_CACHE`` images are remembered, so the identical
        first frames of repeats are analysed once)."""

        def look() -> MarkerEvidence | None:
            image = decode_image(req)
            return find_marker(image) if image is not None else None

        return self._evidence.get(image_digest(req), look)

    def _seen(self, req: ModelRequest, prof: SimProfile, rng: np.random.Generator) -> Point | None:
        """Where this call perceives the crosshair in the image (``None``: no image, or not seen). The draws
        come from a child of the call's generator, so the rest of the reply's stream is unchanged."""
        if req.image_png is None and req.image_rgb is None:
            return None
        per = prof.perception
        return localise(
            self.evidence(req),
            rng.spawn(1)[0],
            sigma_px=per.sigma_px,
            detect_salience=per.detect_salience,
            detect_slope=per.detect_slope,
            clutter_weight=per.clutter_weight,
            min_salience=per.min_salience,
            min_contrast=per.min_contrast,
        )

    @staticmethod
    def _frame(text: str, prof: SimProfile, weights: Mapping[str, float], rng: np.random.Generator) -> str:
        """The native frame of one answer: the explicitly requested one with ``obeys_requested_frame`` (an
        assumption; no draw while it is 0), else a draw from the mixture."""
        if prof.obeys_requested_frame > 0:
            want = requested_frame(text)
            if want is not None and rng.random() < prof.obeys_requested_frame:
                return want
        return sample_frame(weights, rng)

    def _reply(self, text: str | None, call: ToolCall | None) -> Reply:
        tok = self.profile.tokens
        return Reply(
            text=text,
            tool_calls=[call] if call is not None else [],
            tokens_in=tok.in_per_call,
            tokens_out=tok.out_per_call,
            cost_usd=0.0,
            cost_source="simulated",
            latency_s=self.profile.latency_s,
        )
