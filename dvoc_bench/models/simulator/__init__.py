"""The simulator: a stochastic stand-in for a vision-language model.

The simulator sees what a model sees (the image pixels and the prompt text) plus the scene's ground truth,
looked up by ``request.scene_id``. It never reads harness state or the protocol module: the paper's
artefacts and the corrected protocol's gains must *emerge* from one mechanism, not from switches.

Mechanism of one call (every random draw comes from a per-call generator, see *Determinism*):

1. **Mode** from the tools offered: ``report_offset`` -> an offset answer; ``click_at`` -> a point answer;
   ``select_element`` -> a Set-of-Mark pick (item 13) when the prompt carries an element list, else a
   text-only reply "not supported by the simulator" (no tool call). With no known tool the reply is text
   only as well.
2. **Task.** If ``truth.instruction`` occurs in the prompt text, the intended element is the target box.
   Otherwise (a prompt without the task, like the paper's first one-shot call) the model goes for the first
   interactive element in drawing order (``no_task: first_element``) or a random one (``random_element``).
3. **Perceived target** ``T^`` = the intended element's centre (for the target: ``SceneTruth.aim``, a
   point on a polygon target whose box centre is off it) + per-axis inlier noise (Laplace or
   Student-t, ``noise.scale_px``), clamped to the canvas. With probability ``outlier.p`` the centre is
   replaced first: by another interactive element's centre (share ``outlier.wrong_element_share``) or by a
   displacement of uniform magnitude in ``[min_px, max_px]`` in a uniformly random direction.
4. **Crosshair** ``P^`` (offset mode): where the call perceives the crosshair in the pixels
   (:mod:`~dvoc_bench.models.simulator.perception`, ``sim.perception``: a localiser that knows no colour,
   whose error and miss rate grow as the marker's contrast against its local background falls, as it shrinks
   and as clutter overlaps it; the draws come from a child generator of the call's); if it is not seen or
   none is drawn, the ``Crosshair position: (X, Y) UNIT`` line of the text, converted to pixels per its unit
   (``px``, ``in 0-1000 units``, ``in 0-1 units``; the rule of ``geometry.point_to_pixels``), else the point
   after the arrow of the prompt's last history line (the paper's text-only mode: the undamped point its
   history prints). With none of these, the model does not know where the crosshair is and answers ``(0,
   0)`` (``unknown_position: zero``) or assumes the image centre (``guess_centre``).
5. **Native frame** per call from the mixture ``frames`` over ``pixel``, ``norm1000``, ``norm1`` and
   ``mixed``. ``mixed`` is the authors' hypothesis H2: the target read in 0-1000 units, the crosshair read in
   pixels from the drawn label, ``r = g*T^ - P^`` with ``g = 1000/(W-1), 1000/(H-1)``. It needs a prompt that
   does not state the crosshair position; when the text has a ``Crosshair position:`` line, the ``mixed``
   weight goes to ``norm1000``. Offsets and points leave pixels with the factor of ``geometry``
   (``(W-1)/1000`` px per norm1000 unit).
6. **Near-target behaviour** on the perceived offset ``t^`` (px; for ``mixed`` the confused ``g*T^ - P^``,
   which the model takes for pixels): below 30 px it reports ``(0, 0)`` with ``near.p_zero_below_30``; at
   30-100 px it reports ``(0, 0)`` with ``near.p_zero_30_100`` and otherwise reverses the direction with
   ``near.p_reverse_30_100``; below 100 px ``t^`` is multiplied by ``near.shrink_below_100``. Then each axis
   with ``|t^_axis| > 30`` is reported as 0 with ``axis_drop.p`` (never both axes in one reply: an all-zero
   report belongs to the near-target rule). With ``near.zero_rule: box`` the ``(0, 0)`` report depends
   instead on where the perceived crosshair lies against the box of the element aimed at *as perceived*:
   a box of that element's size centred on the perceived target ``P^ + t^`` (the model sees how big the
   button is; where it is comes only from its own noisy estimate, never from the true box).
   ``near.p_zero_in_box`` inside (split by ``|t^|`` with ``p_zero_in_box_below_15`` / ``_below_30``),
   ``near.p_zero_box_near`` at most ``BOX_NEAR_PX`` (10 px) outside, never further off (a model that stops
   when it believes the crosshair is *on the button*: a large button stops the loop early, a small one
   never does; the authors' Gemini 3.1 FL records show it, 112 of 118 zero reports).
   ``axis_drop.p_x_in_span`` / ``p_y_in_span`` likewise report an axis as 0 while the crosshair lies
   within that perceived box's span on it. Both default off.
7. **Gain**: the native-frame offset is multiplied per axis by ``gain = [gx, gy]`` (offsets only; points
   are absolute and get no gain).
8. **Rounding** like real models: integers for pixel / norm1000 / mixed, 3 decimals for norm1.
9. **Confidence** from the categorical ``confidence.values / probs``, or, when ``confidence.by_distance`` is
   set, from the first bucket whose ``max_px`` is at least the magnitude of the offset the model believes
   in after step 6 (px, before frame conversion and gain). That makes a Gemini-like profile informative
   and gives ``(0, 0)`` reports the first bucket (in the records, (0,0) reports come with confidence 1.0).
10. With probability ``p_no_tool_call`` the reply carries no tool call, only a short text.
11. **Point mode** (one-shot / absolute): ``T^`` with ``oneshot.noise_px`` inlier noise and
    ``oneshot.outlier_p`` outliers, in the native frame (``oneshot.frames`` if given, else ``frames`` with
    ``mixed`` counted as ``norm1000``: there is no crosshair to mix with), confidence from
    ``oneshot.confidence``.
12. The tool call's arguments are a JSON *string*, as Gemini sends them, e.g.
    ``{"dx": 49, "dy": 159, "confidence": 0.9}``. Tokens come from ``tokens``, the cost is 0.0 with
    ``cost_source="simulated"``, the latency is ``latency_s`` (``complete`` sleeps only when it is > 0).

13. **Select mode** (Set-of-Mark): the marks are read from the prompt's ``Grounding: {"grounding": {...}}``
    line, in the units its ``Element list units:`` line names (pixels, 0-1000 or 0-1; converted
    with the rule of ``geometry.point_to_pixels``). The perceived target ``T^`` is drawn as in point mode
    (``oneshot.noise_px``, ``oneshot.outlier_p``); the pick is the smallest mark box containing ``T^``.
    When none contains it, the nearest mark (by distance to its box) is named with probability
    ``som.guess_unmarked``, otherwise the reply has no tool call. With probability ``som.confusion`` the
    pick moves to one of the ``som.neighbours`` marks nearest to it (centre distance): the confusion
    toward nearby boxes. Confidence from ``som.confidence`` (default: ``oneshot.confidence``). The reply
    is ``select_element({"id": n, "confidence": c})``. ``p_no_tool_call`` applies as in the other modes.

Knobs added by the calibration (each default keeps the behaviour above):

14. **Per-canvas overrides** ``canvas: [{size: [W, H], frames, gain, noise, outlier, near, axis_drop,
    confidence, oneshot}]``: a call on a scene whose own size is ``W x H`` uses the sections given there
    instead of the top-level ones (the authors' models answered differently on 800x600 and 1280x720
    screens: more mixed-frame answers and more noise on the web pages).
15. ``no_task_target``: probability that a prompt without the task still aims at the real target (the
    element that stands out) instead of ``no_task``'s pick (in the records, first one-shot calls landed on the
    target in 58-68 % of the authors' trials).
16. ``latency: {median_s, sigma, scale}``: per-call latency drawn from a log-normal with that median and
    log-sd (fitted on the authors' records) times ``scale``, added to ``latency_s``. ``scale`` is 0 in
    the committed profiles, so offline sweeps stay fast; ``scale: 1`` gives realistic waits. The draw
    comes from a child of the call's generator, so the reply itself does not depend on it.
17. ``consistency: {offset, point}``: the per-call *repeat rate*. With this probability a call gives the
    model's *modal answer* to its input: drawn from a generator seeded by the profile identity, the whole
    prompt text and the image (every pixel: another overlay, colour or label is another input), never by
    the trial seed. Otherwise it draws afresh with the per-call generator, which takes the trial seed. Two
    calls on identical input therefore repeat each other with probability ``c**2`` (the fit's
    ``c = sqrt(share of identical answers over identical-input pairs of the records)``), and repeats of a
    trial are samples. ``instance`` (an integer, 0 by default) relabels every stream, modal answers
    included: another simulated instance of the same model.
18. ``obeys_requested_frame`` (an ASSUMPTION, 0 by default): probability that a call answers in the frame
    the prompt requests explicitly (the corrected protocol's frame statement) instead of the native mixture.
    ``fitted_for: {protocols, overlays, overlay_style}`` lists the knobs the parameters were fitted for; a
    trial under any other value records its assumptions (``TrialRecord.simulated_assumptions``) and the
    summary marks its row, e.g. ``[SIMULATED; frame request assumed]``.

Ground truth is scaled to the size of the image sent when the harness resized the screenshot
(``request.image_size`` differs from the scene's size).

Determinism: there is no global RNG. Each call (apart from its modal answer, item 17) seeds
``numpy.random.default_rng`` with an integer taken from sha256 over the profile identity (model name + a
digest of the profile), ``request.seed``, ``request.text`` and sha256 of the PNG bytes (or of the raw array
when only ``image_rgb`` is given). The same request gives the same reply whatever the call order or
transport, as long as the PNG bytes are part of the request.

Layout: :mod:`~dvoc_bench.models.simulator.profile` declares the profile (the ``sim:`` block: every knob
above with its type, default, range and docstring; a bad value is one line naming the dotted key),
:mod:`~dvoc_bench.models.simulator.reading` reads the request (tools, crosshair, prompt lines, marks),
:mod:`~dvoc_bench.models.simulator.behaviour` makes the draws of steps 2-8 and
:mod:`~dvoc_bench.models.simulator.model` holds :class:`SimulatedModel`, which puts one call together.
"""

from dvoc_bench.models.simulator.behaviour import AXIS_DROP_MIN_PX, MID_PX, NEAR_PX
from dvoc_bench.models.simulator.model import NO_TOOL_TEXT, NOT_SUPPORTED, SimulatedModel
from dvoc_bench.models.simulator.profile import (
    ASSUMPTION_LABELS,
    NATIVE_FRAMES,
    AxisDropSpec,
    CanvasSpec,
    ConfidenceBucket,
    ConfidenceSpec,
    ConsistencySpec,
    FittedFor,
    FrameMix,
    LatencySpec,
    NearSpec,
    NoiseSpec,
    OneShotSpec,
    OutlierSpec,
    SimProfile,
    SomSpec,
    TokensSpec,
    assumed_knobs,
    for_canvas,
    load_profile,
)
from dvoc_bench.models.simulator.reading import parse_crosshair_line, parse_marks

__all__ = [
    "ASSUMPTION_LABELS",
    "AXIS_DROP_MIN_PX",
    "MID_PX",
    "NATIVE_FRAMES",
    "NEAR_PX",
    "NOT_SUPPORTED",
    "NO_TOOL_TEXT",
    "AxisDropSpec",
    "CanvasSpec",
    "ConfidenceBucket",
    "ConfidenceSpec",
    "ConsistencySpec",
    "FittedFor",
    "FrameMix",
    "LatencySpec",
    "NearSpec",
    "NoiseSpec",
    "OneShotSpec",
    "OutlierSpec",
    "SimProfile",
    "SimulatedModel",
    "SomSpec",
    "TokensSpec",
    "assumed_knobs",
    "for_canvas",
    "load_profile",
    "parse_crosshair_line",
    "parse_marks",
]
