"""Settings declared once: the pydantic base every settings model uses, the constrained types, and the
one-line error every bad value turns into (``<dotted key>: <what>; allowed: ...``).

A settings model lists each knob once, with its type, default, range or allowed values and a docstring;
validation happens inside the job (Hydra composes, pydantic checks) and a failure names the key::

    class Loop(Declared):
        epsilon: PosFloat = 30.0
        \"\"\"Pixels; a report below this counts as on target.\"\"\"

    Loop.model_validate({"epsilon": float("nan")})  # -> ConfigError("loop.epsilon: must be a finite ...")
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "RGB",
    "ConfigError",
    "Declared",
    "NonNegFloat",
    "NonNegInt",
    "PosFloat",
    "PosInt",
    "Prob",
    "check_list",
    "format_error",
    "validate",
]


class ConfigError(ValueError):
    """A bad configuration value; the message (one line) names the key and the allowed values."""


class Declared(BaseModel):
    """Base of every settings model: unknown keys and non-finite numbers are errors; instances are
    immutable; field docstrings are the documentation."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, allow_inf_nan=False, use_attribute_docstrings=True, strict=False
    )


Prob = Annotated[float, Field(ge=0.0, le=1.0)]
"""A probability, in [0, 1]."""
PosInt = Annotated[int, Field(ge=1)]
"""A whole number >= 1."""
NonNegInt = Annotated[int, Field(ge=0)]
"""A whole number >= 0."""
PosFloat = Annotated[float, Field(gt=0.0)]
"""A finite number > 0."""
NonNegFloat = Annotated[float, Field(ge=0.0)]
"""A finite number >= 0."""
Byte = Annotated[int, Field(ge=0, le=255)]
"""A whole number 0..255."""
RGB = tuple[Byte, Byte, Byte]
"""A colour as ``[r, g, b]``, each 0..255."""

M = TypeVar("M", bound=BaseModel)


def _model_at(model: type[BaseModel], path: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The settings model that owns the last key of ``path`` (for listing its allowed keys)."""
    cur: Any = model
    for part in path:
        if not (isinstance(cur, type) and issubclass(cur, BaseModel)) or not isinstance(part, str):
            return None
        field = cur.model_fields.get(part)
        if field is None:
            return None
        cur = field.annotation
        for _ in range(3):  # unwrap Optional[...] / dict[str, X] / list[X]
            args = [a for a in get_args(cur) if a is not type(None)]
            if isinstance(cur, type) and issubclass(cur, BaseModel):
                break
            if not args:
                break
            cur = args[-1]
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def _literal_values(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str] | None:
    parent = _model_at(model, path[:-1]) if len(path) > 1 else model
    if parent is None or not isinstance(path[-1], str) or path[-1] not in parent.model_fields:
        return None
    ann = parent.model_fields[path[-1]].annotation
    for _ in range(3):
        if get_origin(ann) is Literal:
            return [str(v) for v in get_args(ann)]
        args = [a for a in get_args(ann) if a is not type(None)]
        if not args:
            return None
        ann = args[0]
    return None


def format_error(e: ValidationError, model: type[BaseModel], prefix: str = "") -> str:
    """The first error of ``e`` as one line: ``<prefix><dotted key>: <what>[; allowed: ...]``."""
    err = e.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    key = prefix + ".".join(str(p) for p in loc) if loc else prefix.rstrip(".") or model.__name__
    kind, value = err["type"], err.get("input")
    if kind == "extra_forbidden":
        owner = _model_at(model, loc[:-1]) if len(loc) > 1 else model
        allowed = f"; allowed: {', '.join(owner.model_fields)}" if owner is not None else ""
        return f"{key}: unknown key{allowed}"
    if kind == "literal_error":  # an item of a list names the list
        while loc and isinstance(loc[-1], int):
            loc = loc[:-1]
        key = prefix + ".".join(str(p) for p in loc)
        values = _literal_values(model, loc) or []
        return f"{key}: unknown value {value!r}; allowed: {', '.join(values)}"
    if kind == "finite_number":
        return f"{key}: must be a finite number, got {value!r}"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"{key}: must be a whole number, got {value!r}"
    if kind in ("float_parsing", "float_type"):
        return f"{key}: must be a number, got {value!r}"
    if kind in ("bool_parsing", "bool_type"):
        return f"{key}: must be true or false, got {value!r}"
    if kind == "missing" and loc and isinstance(loc[-1], int):
        whole = prefix + ".".join(str(p) for p in loc[:-1])
        return f"{whole}: too few items (item {loc[-1]} is missing)"
    if kind == "missing":
        return f"{key}: required, not given"
    msg = str(err["msg"])
    if kind == "value_error":  # a validator's own sentence; "<field>: ..." names a field of the model
        text = msg.removeprefix("Value error, ")
        head, sep, rest = text.partition(": ")
        if sep and head.isidentifier():
            return f"{prefix}{'.'.join(str(p) for p in (*loc, head))}: {rest}"
        return f"{key}: {text}"
    msg = msg.removeprefix("Input should be ")
    if err["msg"].startswith("Input should be "):
        msg = "must be " + msg
    return f"{key}: {msg}, got {value!r}"


def validate(model: type[M], data: object, prefix: str = "") -> M:
    """``model.model_validate(data)``; a failure is a :class:`ConfigError` with one line naming the key
    (``prefix`` is prepended, e.g. ``"loop."`` or ``"model sim-x: sim."``)."""
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as e:
        raise ConfigError(format_error(e, model, prefix)) from None


def check_list(key: str, values: str | Iterable[object] | None, allowed: Collection[object]) -> list[str]:
    """A non-empty list of allowed values (a bare string is taken as a one-item list), for the lists whose
    allowed values are only known at run time (registries, files); ``ConfigError`` naming ``key``."""
    if isinstance(values, str):
        values = [values]
    values = list(values or [])
    if not values:
        raise ConfigError(f"{key}: empty list; allowed: {', '.join(map(str, allowed))}")
    for v in values:
        if v not in allowed:
            raise ConfigError(f"{key}: unknown value {v!r}; allowed: {', '.join(map(str, allowed))}")
    return [str(v) for v in values]


def check_mapping(key: str, raw: object, allowed: Collection[str], what: str = "") -> Mapping[str, Any]:
    """``raw`` as a mapping whose keys are all in ``allowed``, for the hand-read blocks (a scene's own task
    file, ``web.custom``, ``desktop.custom``); ``ConfigError`` naming ``key``. ``what`` names the thing in
    the not-a-mapping message (``"a desktop task "``)."""
    keys = ", ".join(allowed)
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: {what}must be a mapping with keys {keys}")
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ConfigError(f"{key}: unknown key(s) {unknown}; allowed: {keys}")
    return raw
