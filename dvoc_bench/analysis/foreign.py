"""Other harnesses' per-sample results as rows of the export schema (``python -m dvoc_bench.report --import
FILE --format F``), so that the report, the viewer, the equal-cost tables and the paired tests read them
like any run. Every converter here is pure: it turns the records of one file into export rows
(:data:`dvoc_bench.analysis.export.FIELDS`) that :func:`dvoc_bench.analysis.export.load_rows` validates and
scores by this project's rule, the same path as an export file of ours (``--format v1``).

Formats (:data:`FORMATS`):

- ``sspro``: the ScreenSpot-Pro evaluator's log (likaixin2000/ScreenSpot-Pro-GUI-Grounding,
  ``eval_screenspot_pro.py``): a JSON object whose ``details`` list holds one record per sample
  (``img_path, prompt_to_evaluate, pred, raw_response, bbox, correctness, ui_type, group, application,
  platform, …``; ``pred``: the point in pixels, ``bbox``: the truth's corners in pixels; ``correctness``:
  ``correct | wrong | wrong_format``), or the same records one JSON per line. One trial of one call.
- ``omniparser``: OmniParser's Set-of-Mark log (microsoft/OmniParser, ``eval/logs_sspro_omniv2.json``): the
  evaluator's records one per line, the raw reply a JSON object naming a box (``Click BBox ID``). Method
  ``som``; the point is the chosen box's centre as the log has it (the boxes themselves are not logged).
- ``zoom``: a two-step zoom method's per-step records (omxyz/zoom-consistency-routing, ``results/*.json``:
  step-1 point in 0–1000 of the full image, crop box in pixels, step-2 point in 0–1000 of the crop, final
  point normalised, ``correct``, image size, truth normalised ``x, y, w, h``). Each model's record is a
  two-call trial of method ``zoom`` (call 1: the step-1 point, call 2: the final point) and a one-call
  trial of method ``zoom_step1`` (its first call alone), so step 1 vs final is a paired comparison of two
  methods on the same samples; a file with two models side by side (``kv_*``, ``qw_*``) also gives the
  source's router (per sample, the model whose step-2 point lies nearer the crop centre; KV-Ground on a
  tie or when Qwen has no step 2) as a trial of both pipelines' calls.

The source's own verdict is kept in ``paper_success`` and its logged point in ``source_x``, ``source_y``;
our verdict is the project's rule on the row's final point (:mod:`dvoc_bench.analysis.import_check`
compares them). With a reader (``--reread MODEL``), the ``raw_response`` of each ``sspro`` row is read again
as a sweep reads that model config's replies, and that point is the row's final point. A problem with
one row (no annotation joins it, a ``pred`` outside the image, a reply in no known form) is a warning
naming the row and the field and the row is kept (a miss, with its parse status); a file that cannot be
read as the format at all raises :class:`~dvoc_bench.analysis.export.SchemaError` (exit 2).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from dvoc_bench.analysis.export import MAX_ROW_BYTES, SchemaError, load_rows
from dvoc_bench.analysis.schema import Runs
from dvoc_bench.core.jsonread import JsonError, array_items, load_file, loads
from dvoc_bench.core.rundir import REPORT

log = logging.getLogger(__name__)

FORMATS = ("v1", "sspro", "omniparser", "zoom", "inspect")
"""The import formats: ``v1`` is the project's own export schema (:mod:`dvoc_bench.analysis.export`)."""

Reader = Callable[[str, int, int], tuple[str, float | None, float | None, float | None, float | None, str]]
"""A reply reader (``dvoc_bench.runner.reread.reply_reader``): ``(text, w, h) -> (status, x, y, raw_x,
raw_y, detail)``."""

SSPRO_KEYS = ("prompt_to_evaluate", "pred", "bbox", "correctness")
"""Fields every ``sspro`` / ``omniparser`` record must have."""
ZOOM_KEYS = ("idx", "instruction", "img_width", "img_height", "bbox")
"""Fields every ``zoom`` record must have."""


@dataclass(frozen=True)
class Annotation:
    """One ScreenSpot-Pro sample as its annotation file states it."""

    id: str
    """The sample id the dataset loader gives it (the annotation's ``id``, else ``<file stem>:<index>``)."""
    file: str
    """The annotation file's stem (``davinci_macos``)."""
    image: str
    """``img_filename`` (relative to ``images/``)."""
    instruction: str
    application: str | None
    bbox: tuple[float, float, float, float]
    """Truth corners, pixels."""
    size: tuple[int, int] | None
    """``img_size`` ``(w, h)``, when stated."""
    meta: dict[str, Any] = field(default_factory=dict)
    """``ui_type``, ``group``, ``platform``."""


class Annotations:
    """ScreenSpot-Pro annotation files of one folder, indexed for the join: a record joins the sample with
    its instruction and application (and, where several share them, its image name or its box)."""

    def __init__(self, folder: Path | str) -> None:
        folder = Path(folder)
        files = sorted(folder.glob("*.json")) if folder.is_dir() else []
        if not files:
            raise SchemaError(f"--annotations: no ScreenSpot-Pro annotation files (*.json) in {folder}")
        self.folder = folder
        self.by_key: dict[tuple[str, str | None], list[Annotation]] = {}
        for path in files:
            try:
                recs = load_file(path)
            except (OSError, ValueError) as e:
                raise SchemaError(f"--annotations: {path.name}: not readable JSON ({e})") from None
            if not isinstance(recs, list):
                raise SchemaError(f"--annotations: {path.name}: expected a list of samples")
            for i, r in enumerate(recs):
                if not isinstance(r, dict) or "instruction" not in r or "bbox" not in r:
                    raise SchemaError(f"--annotations: {path.name}[{i}]: field `instruction`/`bbox`: missing")
                size = r.get("img_size")
                a = Annotation(
                    id=str(r.get("id") or f"{path.stem}:{i}"),
                    file=path.stem,
                    image=str(r.get("img_filename") or ""),
                    instruction=str(r["instruction"]),
                    application=r.get("application"),
                    bbox=tuple(float(v) for v in r["bbox"][:4]),  # type: ignore[arg-type]
                    size=(int(size[0]), int(size[1])) if isinstance(size, list) and len(size) >= 2 else None,
                    meta={k: r.get(k) for k in ("ui_type", "group", "platform")},
                )
                self.by_key.setdefault((a.instruction, a.application), []).append(a)
                cn = r.get("instruction_cn")  # the evaluator's lang=cn rows ask in Chinese
                if isinstance(cn, str) and cn and cn != a.instruction:
                    self.by_key.setdefault((cn, a.application), []).append(a)

    def join(
        self, instruction: str, application: str | None, image: str | None, box: Iterable[float] | None
    ) -> Annotation | None:
        """The one sample this record names, or ``None``."""
        cands = self.by_key.get((instruction, application), [])
        if len(cands) > 1 and image:
            cands = [a for a in cands if a.image and image.endswith(a.image)] or cands
        if len(cands) > 1 and box is not None:
            b = list(box)
            cands = [a for a in cands if max(abs(u - v) for u, v in zip(a.bbox, b, strict=True)) <= 1.0]
        return cands[0] if len(cands) == 1 else None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(float(v)):
        return None
    return float(v)


def _point(v: Any) -> tuple[float, float] | None:
    if not isinstance(v, list | tuple) or len(v) < 2:
        return None
    x, y = _num(v[0]), _num(v[1])
    return None if x is None or y is None else (x, y)


def _box(v: Any) -> tuple[float, float, float, float] | None:
    if not isinstance(v, list | tuple) or len(v) != 4:
        return None
    nums = [_num(u) for u in v]
    if any(u is None for u in nums):
        return None
    return tuple(u for u in nums if u is not None)  # type: ignore[return-value]


def read_records(path: Path, fmt: str) -> Iterator[dict[str, Any]]:
    """The records of ``path``, one at a time: a JSON list (read element by element, each at most
    :data:`~dvoc_bench.analysis.export.MAX_ROW_BYTES`), one JSON object per line (each line as bounded), or a
    JSON object with a ``details`` list (the ScreenSpot-Pro evaluator's log: one document, read whole up to
    :data:`~dvoc_bench.core.jsonread.MAX_DOCUMENT_BYTES`)."""
    try:
        f = path.open("rb")
    except OSError as e:
        raise SchemaError(f"{path}: cannot read ({e})") from None
    with f:
        head = f.read(4096).lstrip()
        f.seek(0)
        if head.startswith(b"["):
            data: Iterable[Any] = _checked(
                lambda: array_items(f, str(path), max_item_bytes=MAX_ROW_BYTES), fmt
            )
        else:
            data = _lines(path, f, fmt)
        n = 0
        for n, r in enumerate(data, 1):
            if not isinstance(r, dict):
                raise SchemaError(f"{path}: row {n - 1}: a record is a JSON object, got {type(r).__name__}")
            yield r
    if not n:
        raise SchemaError(f"{path}: no records (--format {fmt})")


def _checked(items: Callable[[], Iterator[Any]], fmt: str) -> Iterator[Any]:
    """``items()``, a :class:`JsonError` becoming the import's one line."""
    try:
        yield from items()
    except JsonError as e:
        raise SchemaError(f"{e}; --format {fmt}") from None


def _lines(path: Path, f: IO[bytes], fmt: str) -> Iterator[Any]:
    """The records of a file that is not a JSON list: one per line, or (when the first line is not a JSON
    value by itself: an indented document, or one longer than a row) the one document's ``details``."""
    i = 0
    while raw := f.readline(MAX_ROW_BYTES + 1):
        i += 1
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SchemaError(f"{path}: line {i}: not UTF-8 text (byte {e.start}); --format {fmt}") from None
        if not text.strip():
            continue
        try:
            if len(raw) > MAX_ROW_BYTES:
                raise JsonError("longer than a row", "size")
            rec = loads(text, f"{path}: line {i}")
        except JsonError as e:
            if e.kind == "depth" or i > 1 and e.kind != "size":  # one line of many: that line is bad
                raise SchemaError(f"{e}; --format {fmt}") from None
            if i > 1:
                raise SchemaError(
                    f"{path}: line {i}: longer than {MAX_ROW_BYTES >> 20} MB; --format {fmt}"
                ) from None
            yield from _document(path, fmt)
            return
        if i == 1 and isinstance(rec, dict) and "details" in rec:  # the evaluator's log on one line
            yield from _details(path, rec, fmt)
            return
        yield rec


def _document(path: Path, fmt: str) -> list[Any]:
    """The records of a file that is one JSON document (at most ``MAX_DOCUMENT_BYTES``, read whole)."""
    try:
        data = load_file(path)
    except JsonError as e:
        raise SchemaError(f"{e}; --format {fmt}") from None
    except OSError as e:
        raise SchemaError(f"{path}: cannot read ({e})") from None
    if isinstance(data, list):
        return data
    return _details(path, data, fmt)


def _details(path: Path, data: Any, fmt: str) -> list[Any]:
    if isinstance(data, dict) and fmt in ("sspro", "omniparser"):
        if not isinstance(data.get("details"), list):
            raise SchemaError(f"{path}: field `details`: missing; --format {fmt} reads the evaluator's log")
        return list(data["details"])
    raise SchemaError(f"{path}: no records (--format {fmt})")


def _require(path: Path, i: int, r: dict[str, Any], keys: tuple[str, ...], fmt: str) -> None:
    for k in keys:
        if k not in r:
            raise SchemaError(f"{path}: row {i}: field `{k}`: missing (--format {fmt})")


def _base(path: Path, fmt: str, i: int, suffix: str = "") -> dict[str, Any]:
    return {
        "schema_version": 1,
        "source": "import",
        "run_dir": f"{path}#{fmt}",
        "trial_key": f"{path.name}#{i}{suffix}",
        "experiment": f"import:{fmt}",
        "simulated": False,
        "scene_kind": "dataset",
        "start_index": 0,
        "rep": 0,
        "status": "ok",
        "paper_trial_id": str(i),
    }


def _sample(ann: Annotation | None, rec: dict[str, Any], instruction: str) -> dict[str, Any]:
    meta = ann.meta if ann else {}
    out = {
        "sample_dataset": "screenspot_pro",
        "sample_file": ann.file if ann else rec.get("task_filename"),
        "sample_ui_type": meta.get("ui_type") or rec.get("ui_type"),
        "sample_platform": meta.get("platform") or rec.get("platform"),
        "sample_application": (ann.application if ann else None) or rec.get("application"),
        "sample_group": meta.get("group") or rec.get("group"),
        "sample_instruction": instruction,
        "sample_image": ann.image if ann else None,
    }
    if ann and ann.size:
        out["sample_img_size"] = json.dumps(list(ann.size))
        out["image_w"], out["image_h"] = ann.size
    return {k: (None if v is None else (v if isinstance(v, int) else str(v))) for k, v in out.items()}


def _box_fields(box: tuple[float, float, float, float]) -> dict[str, float]:
    return dict(zip(("target_x0", "target_y0", "target_x1", "target_y1"), box, strict=True))


def sspro_rows(
    path: Path,
    records: Iterable[dict[str, Any]],
    fmt: str,
    annotations: Annotations | None,
    reader: Reader | None = None,
    model: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Export rows of the evaluator's records (``fmt``: ``sspro`` or ``omniparser``), one per record as it
    comes: one trial of one call. Records of negative samples (``gt_type: negative``: no target, the model
    should decline) have no box to score by this project's rule: they are left out, with one warning."""
    model = model or ("gpt-4o+omniparser-v2" if fmt == "omniparser" else path.stem)
    joined, negative, i = 0, 0, -1
    for r in records:
        if r.get("gt_type") == "negative":
            negative += 1
            continue
        i += 1
        _require(path, i, r, SSPRO_KEYS, fmt)
        where = f"{path.name}: row {r.get('idx', i)}"
        box = _box(r["bbox"])
        if box is None:
            raise SchemaError(
                f"{where}: field `bbox`: expected four numbers (x1, y1, x2, y2), got {r['bbox']!r}"
            )
        instr = str(r["prompt_to_evaluate"])
        ann = annotations.join(instr, r.get("application"), r.get("img_path"), box) if annotations else None
        if annotations is not None and ann is None:
            log.warning("%s: field `prompt_to_evaluate`: no annotation joins it (%r, application %r): image "
                        "size unknown", where, instr, r.get("application"))  # fmt: skip
        joined += ann is not None
        row = _base(path, fmt, i)
        row["paper_trial_id"] = str(r.get("idx", i))  # the row as the source numbers it
        row.update(**_sample(ann, r, instr), **_box_fields(box), model=model, model_calls=1)
        row["task"] = ann.id if ann else f"{r.get('task_filename') or path.stem}#{r.get('idx', i)}"
        row["method"] = "som" if fmt == "omniparser" else "oneshot"
        verdict = r["correctness"]
        row["paper_success"] = (
            None if verdict not in ("correct", "wrong", "wrong_format") else verdict == "correct"
        )
        pred = _point(r["pred"])
        if r["pred"] is not None and pred is None:
            log.warning("%s: field `pred`: not a point (%r): read as no answer", where, r["pred"])
        row["source_x"], row["source_y"] = pred if pred else (None, None)
        size = ann.size if ann else None
        call: dict[str, Any] = {
            "index": 0,
            "kind": "select" if fmt == "omniparser" else "click",
            "parse_status": "ok",
        }
        final = pred
        if reader is not None:
            final = _reread(where, r, size, reader, call)
        elif pred is None:
            call.update(parse_status="parse_error", parse_detail=f"source: {verdict}")
        if (
            final is not None
            and size is not None
            and not (0 <= final[0] <= size[0] and 0 <= final[1] <= size[1])
        ):
            log.warning("%s: field `pred`: (%g, %g) outside the %dx%d image: recorded out_of_frame",
                        where, final[0], final[1], size[0], size[1])  # fmt: skip
            call.update(parse_status="out_of_frame", parse_detail="outside the image")
            final = None
        if final is not None:
            call.update(px_x=final[0], px_y=final[1], next_x=final[0], next_y=final[1])
            row["final_x"], row["final_y"] = final
        if fmt == "omniparser":
            row["stop_reason"] = "selected" if final is not None else "no_valid_id"
        row["parse_errors"] = int(call["parse_status"] != "ok")
        row["calls"] = [call]
        yield row
    if negative:
        log.warning("%s: %d records of gt_type negative (no target box) left out", path.name, negative)
        if i < 0:
            raise SchemaError(f"{path}: every record is gt_type negative: nothing to score by a target box")
    if annotations is not None and joined == 0:
        raise SchemaError(f"{path}: no row joins the annotations in {annotations.folder} (field "
                          "`prompt_to_evaluate` with `application`): not this dataset's log?")  # fmt: skip


def _reread(
    where: str, r: dict[str, Any], size: tuple[int, int] | None, reader: Reader, call: dict[str, Any]
) -> tuple[float, float] | None:
    """Read the record's ``raw_response`` again through ``reader``; fill the call; the point or ``None``."""
    raw = r.get("raw_response")
    text = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    if size is None:
        log.warning("%s: field `raw_response`: not re-read: the image size is unknown (no annotation)", where)
        call.update(parse_status="parse_error", parse_detail="reread: image size unknown")
        return None
    status, x, y, rx, ry, detail = reader(text or "", size[0], size[1])
    call.update(raw_x=rx, raw_y=ry, parse_detail=f"reread: {detail}")
    if status == "ok" and x is not None and y is not None:
        return (x, y)
    call["parse_status"] = "out_of_frame" if status == "out_of_frame" else "parse_error"
    if status != "out_of_frame":
        log.warning("%s: field `raw_response`: %s (%s)", where, "a refusal" if status == "refusal" else
                    "in no form the reader knows", detail)  # fmt: skip
    return None


def _zoom_calls(
    s1: tuple[float, float] | None,
    crop: tuple[float, float, float, float] | None,
    s2: tuple[float, float] | None,
    final: tuple[float, float] | None,
    size: tuple[int, int],
) -> tuple[list[dict[str, Any]], tuple[float, float] | None]:
    """The calls of one model's two-step zoom and its final point in pixels (the source's mapping:
    normalised ``u`` -> ``u * W``)."""
    w, h = size
    c1: dict[str, Any] = {"index": 0, "kind": "click", "frame": "norm1000", "seen_w": w, "seen_h": h}
    if s1 is None:  # no step-1 answer: the source stops there, with no point
        c1.update(parse_status="parse_error", parse_detail="source: no step-1 answer")
        return [c1], None
    px1 = (s1[0] / 1000 * w, s1[1] / 1000 * h)
    c1.update(
        parse_status="ok", raw_x=s1[0], raw_y=s1[1], px_x=px1[0], px_y=px1[1], next_x=px1[0], next_y=px1[1]
    )
    c2: dict[str, Any] = {"index": 1, "kind": "click", "frame": "norm1000"}
    if crop is not None:
        c2.update(crop_x0=crop[0], crop_y0=crop[1], crop_x1=crop[2], crop_y1=crop[3], seen_w=w, seen_h=h)
    pt = None if final is None else (final[0] * w, final[1] * h)
    if s2 is None:  # the source falls back on step 1
        c2.update(parse_status="parse_error", parse_detail="source: no step-2 answer; step 1 kept")
    else:
        c2.update(parse_status="ok", raw_x=s2[0], raw_y=s2[1])
        if pt is not None:
            c2.update(px_x=pt[0], px_y=pt[1], next_x=pt[0], next_y=pt[1])
    return [c1, c2], pt


ZOOM_MODELS = {"kv": "kv-ground-8b", "qw": "qwen3.5-27b"}
"""Field prefix -> model name in the zoom-consistency records (KV-Ground-8B-BaseGuiOwl1.5-0315 and
Qwen3.5-27B-AWQ-4bit)."""


def zoom_rows(
    path: Path, records: Iterable[dict[str, Any]], annotations: Annotations | None
) -> Iterator[dict[str, Any]]:
    """Export rows of the zoom-consistency records, as they come: per model, a ``zoom`` and a
    ``zoom_step1`` trial; with two models side by side, also the router's trial (the first record says
    which layout the file has)."""
    records = iter(records)
    first = next(records, None)
    if first is None:
        raise SchemaError(f"{path}: no records (--format zoom)")
    _require(path, 0, first, ZOOM_KEYS, "zoom")
    if "step1" in first:
        models = {"": path.stem if path.stem not in ("kv_capture",) else ZOOM_MODELS["kv"]}
        keys = {"": ("step1", "crop_box", "step2", "final", "correct")}
    elif "kv_s1" in first and "qw_s1" in first:
        models = {p: ZOOM_MODELS[p] for p in ("kv", "qw")}
        keys = {"kv": ("kv_s1", "kv_crop_box", "kv_s2", "kv_final", "kv_correct"),
                "qw": ("qw_s1", "qw_crop_box", "qw_s2_qwcrop", "qw_final", "qw_correct")}  # fmt: skip
    else:
        raise SchemaError(f"{path}: row 0: field `step1` (or `kv_s1` and `qw_s1`): missing (--format zoom)")
    need = ZOOM_KEYS + tuple(k for ks in keys.values() for k in ks)
    joined = 0
    for i, r in enumerate(itertools.chain([first], records)):
        _require(path, i, r, need, "zoom")
        where = f"{path.name}: row {r['idx']}"
        w, h = int(r["img_width"]), int(r["img_height"])
        nb = _box(r["bbox"])
        if nb is None or w < 1 or h < 1:
            raise SchemaError(
                f"{where}: field `bbox`/`img_width`: expected a normalised x, y, w, h box and a size"
            )
        box = (nb[0] * w, nb[1] * h, (nb[0] + nb[2]) * w, (nb[1] + nb[3]) * h)
        instr = str(r["instruction"])
        ann = annotations.join(instr, r.get("application"), None, box) if annotations else None
        if annotations is not None and ann is None:
            log.warning("%s: field `instruction`: no annotation joins it (%r, application %r)",
                        where, instr, r.get("application"))  # fmt: skip
        joined += ann is not None
        sample = _sample(ann, r, instr)
        sample["image_w"], sample["image_h"] = w, h
        sample["sample_img_size"] = json.dumps([w, h])
        task = ann.id if ann else f"sspro#{r['idx']}"
        picked: dict[str, tuple[list[dict[str, Any]], tuple[float, float] | None, bool, float | None]] = {}
        for prefix, model in models.items():
            k1, kc, k2, kf, kok = keys[prefix]
            s1, s2 = _point(r[k1]), _point(r[k2])
            crop = _box(r[kc])
            final = _point(r[kf])
            calls, pt = _zoom_calls(s1, crop, s2, final, (w, h))
            if pt is not None and not (0 <= pt[0] <= w and 0 <= pt[1] <= h):
                log.warning("%s: field `%s`: outside the image: recorded out_of_frame", where, kf)
                calls[-1].update(parse_status="out_of_frame", next_x=None, next_y=None)
                pt = None
            consistency = None if s2 is None else math.hypot(s2[0] - 500, s2[1] - 500)
            picked[prefix] = (calls, pt, bool(r[kok]), consistency)
            for method, cs, p, verdict in (
                ("zoom", calls, pt, bool(r[kok])),
                ("zoom_step1", calls[:1], _step1(calls), None),
            ):
                row = _base(path, "zoom", i, f":{model}:{method}")
                row["paper_trial_id"] = str(r["idx"])
                row.update(**sample, **_box_fields(box), model=model, method=method, task=task,
                           model_calls=len(cs), calls=[dict(c) for c in cs],
                           parse_errors=sum(c["parse_status"] != "ok" for c in cs))  # fmt: skip
                row["paper_success"] = verdict
                if method == "zoom" and pt is not None:
                    row["source_x"], row["source_y"] = pt
                if p is not None:
                    row["final_x"], row["final_y"] = p
                yield row
        if len(picked) == 2:
            row = _router(path, i, picked, sample, box, task)
            row["paper_trial_id"] = str(r["idx"])
            yield row
    if annotations is not None and joined == 0:
        raise SchemaError(
            f"{path}: no row joins the annotations in {annotations.folder} (field `instruction`)"
        )


def _step1(calls: list[dict[str, Any]]) -> tuple[float, float] | None:
    c = calls[0]
    return None if c.get("next_x") is None else (c["next_x"], c["next_y"])


ROUTER = "router(kv-ground-8b,qwen3.5-27b)"
"""The model name of the source's zoom-consistency router's trials."""


def _router(
    path: Path,
    i: int,
    picked: dict[str, tuple[list[dict[str, Any]], tuple[float, float] | None, bool, float | None]],
    sample: dict[str, Any],
    box: tuple[float, float, float, float],
    task: str,
) -> dict[str, Any]:
    """The source's router: the model whose step-2 point lies nearer the crop centre (KV-Ground on a tie,
    or when only it has a step 2); both pipelines' calls are spent."""
    kc, qc = picked["kv"][3], picked["qw"][3]
    choice = (
        "qw"
        if kc is None and qc is not None
        else ("kv" if qc is None or (kc is not None and kc <= qc) else "qw")
    )
    calls = [dict(c, index=j) for j, c in enumerate(picked["kv"][0] + picked["qw"][0])]
    for c in calls:  # the router acts only on the chosen model's final point
        c.pop("next_x", None)
        c.pop("next_y", None)
    pt = picked[choice][1]
    if pt is not None:
        calls[-1].update(next_x=pt[0], next_y=pt[1])
    row = _base(path, "zoom", i, ":router")
    row.update(**sample, **_box_fields(box), model=ROUTER, method="zoom_router", task=task)
    row.update(
        model_calls=len(calls), calls=calls, parse_errors=sum(c["parse_status"] != "ok" for c in calls)
    )
    row["paper_success"] = picked[choice][2]
    if pt is not None:
        row["final_x"], row["final_y"] = pt
        row["source_x"], row["source_y"] = pt
    return row


def convert(
    path: Path,
    fmt: str,
    annotations: Path | None = None,
    reader: Reader | None = None,
    model: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Export rows of the file ``path`` read as ``fmt`` (not ``v1``), one record at a time."""
    if fmt not in FORMATS or fmt == "v1":
        raise SchemaError(f"--format: unknown import format {fmt!r}; allowed: {', '.join(FORMATS)}")
    if reader is not None and fmt != "sspro":
        why = "its records hold no raw replies"
        if fmt == "omniparser":
            why = "its replies name a Set-of-Mark box, whose coordinates the log does not hold"
        raise SchemaError(f"--reread: not for --format {fmt}: {why}")
    records = read_records(path, fmt)
    ann = Annotations(annotations) if annotations is not None else None
    if fmt == "zoom":
        return zoom_rows(path, records, ann)
    return sspro_rows(path, records, fmt, ann, reader, model)


def load_import(
    path: Path | str,
    fmt: str = "v1",
    annotations: Path | str | None = None,
    reader: Reader | None = None,
    model: str | None = None,
) -> Runs:
    """Read another harness's per-sample results (``fmt``, :data:`FORMATS`) into :class:`Runs`, through the
    same validation and scoring as an export file (``v1``: :func:`dvoc_bench.analysis.export.load_export`)."""
    from dvoc_bench.analysis.export import load_export

    path = Path(path)
    if fmt not in FORMATS:
        raise SchemaError(f"--format: unknown import format {fmt!r}; allowed: {', '.join(FORMATS)}")
    if fmt == "inspect" or (fmt == "v1" and path.suffix == ".eval"):  # an Inspect log of our tasks
        from dvoc_bench.analysis.inspect_log import read_eval, rows_of

        if reader is not None or annotations is not None:
            raise SchemaError("--reread / --annotations: not for an Inspect log (its trials are ours)")
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file")
        return load_rows(path, rows_of(path, read_eval(path)))
    if fmt == "v1":
        if reader is not None or annotations is not None:
            raise SchemaError("--reread / --annotations: not for --format v1 (the export schema is ours)")
        return load_export(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    rows = convert(path, fmt, Path(annotations) if annotations is not None else None, reader, model)
    return load_rows(path, rows)


def import_out(run_dirs: list[str], imports: list[str], fmt: str = "v1") -> Path | None:
    """Where a report with imported files goes without ``--out`` (``None``: no import, the runs' own
    default). Never an existing run's ``report/`` folder, never beside another harness's file: with run
    directories, a new folder beside the first run named after the runs and the files
    (``report-<run>+<file>``); another harness's files alone, ``runs/import-<file>[+<file>...]``; our own
    export files alone (``v1``), ``<file without suffix>/report`` as before."""
    if not imports:
        return None
    stems = [Path(f).stem for f in imports]
    if run_dirs:
        first = Path(run_dirs[0]).resolve()
        names = [Path(p).resolve().name for p in run_dirs] + stems
        name = "+".join(names[:3]) + (f"+{len(names) - 3}-more" if len(names) > 3 else "")
        return first.parent / f"report-{name}"
    if fmt != "v1":
        name = "+".join(stems[:3]) + (f"+{len(stems) - 3}-more" if len(stems) > 3 else "")
        return Path("runs") / f"import-{name}"
    if len(imports) == 1:
        return Path(imports[0]).with_suffix("") / REPORT
    return Path(imports[0]).resolve().parent / ("report-" + "+".join(stems[:3]))
