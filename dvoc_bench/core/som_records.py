"""The ``som`` block of a Set-of-Mark trial's record (``som`` / ``som_dvoc``): what the detector found, what
was marked and which mark the model picked, for a drag's start and its drop (re-exported by
:mod:`dvoc_bench.core.records`, where the rest of the record vocabulary lives)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SomRecord:
    """What the detector and the pick did in a ``som`` / ``som_dvoc`` trial (the ``som`` field)."""

    backend: str | None = None
    """Detector backend (``oracle | cv | onnx | rknn | helper``)."""
    config_digest: str | None = None
    """Hash of the detector's settings (backend options and the area limit)."""
    boxes: int | None = None
    """Boxes the detector returned."""
    marks: int | None = None
    """Boxes marked on the screenshot (after dropping the ones over ``max_area_frac`` of the screen)."""
    mark_boxes: list[list[float]] = field(default_factory=list)
    """The marks as ``[x0, y0, x1, y1, score]`` in harness pixels; mark ``id`` is at position ``id - 1``."""
    target_detected: bool | None = None
    """Some mark's box contains the target's centre (the detector's recall for this task)."""
    detector_ms: float | None = None
    """Detector wall time for this screenshot (the helper's round trip included)."""
    inference_ms: float | None = None
    """Model-only time when the backend reports it (onnxruntime run, the helper's ``OK`` line)."""
    chosen_id: int | None = None
    """The id the model named (also an invalid one), ``None`` without a readable id."""
    chosen_valid: bool | None = None
    """The named id is one of the marks."""
    point: list[float] | None = None
    """Centre of the chosen mark (the SoM click; for ``som_dvoc`` the DVOC start)."""
    hit: bool | None = None
    """``point`` lies inside the target element's box."""
    start_source: str | None = None
    """``som_dvoc``: where DVOC started, ``som`` (the chosen mark) or ``centre`` (no valid pick)."""
    dvoc_alpha: str | None = None
    """``som_dvoc``: alpha schedule its DVOC part used."""
    dvoc_overlay: str | None = None
    """``som_dvoc``: overlay its DVOC part used."""
    dvoc_predict: str | None = None
    """``som_dvoc``: answer kind its DVOC part used."""
    grounding_error: str | None = None
    """Why there are no marks (the detector failed, or found nothing to mark), as stated to the model in
    ``grounding.error``; the trial then fell back (``som``: one ``click_at`` on the plain screenshot;
    ``som_dvoc``: plain DVOC) and ended ``grounding_error``. ``None`` when marks were shown."""
    fallback_stop_reason: str | None = None
    """``som_dvoc`` after a grounding error: how its plain DVOC loop ended (``act``, ...: one of
    :data:`dvoc_bench.core.records.StopReason`, which imports this module)."""
    tag_layout: str | None = None
    """Tag placement used (``avoid | spec``, ``detector.tag_layout``)."""
    tag_overlaps: int | None = None
    """Tags drawn over an earlier tag (``avoid`` leaves one only when no free place was left)."""
    drop_chosen_id: int | None = None
    """A drag (two points): the id the model named for where the drag ends (the fields above are the
    start's pick, made on the start's marks); ``None`` on a one-point trial or without a readable id."""
    drop_chosen_valid: bool | None = None
    """A drag: the end's named id is one of the end's marks."""
    drop_point: list[float] | None = None
    """A drag: centre of the end's chosen mark (the drop point; ``som_dvoc``: the end's DVOC start)."""
    drop_hit: bool | None = None
    """A drag: ``drop_point`` lies inside the end's target box."""
    drop_target_detected: bool | None = None
    """A drag: some mark of the end's marking contains the end's target centre."""
    drop_mark_box: list[float] | None = None
    """A drag: the end's chosen mark as ``[x0, y0, x1, y1, score]`` in harness pixels (the end is marked
    on its own: the oracle detector marks the end's truth, so its marks may differ from ``mark_boxes``)."""
    drop_start_source: str | None = None
    """A drag under ``som_dvoc``: where the end's DVOC loop started (``som`` or ``centre``)."""
