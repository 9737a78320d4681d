"""Read an ultralytics ``.pt`` checkpoint without torch or ultralytics: a restricted unpickler.

A ``.pt`` file is a zip holding ``<root>/data.pkl`` (the pickle of a dict whose ``model`` is an ultralytics
``DetectionModel``) and ``<root>/data/<key>`` (the raw bytes of each tensor storage). The pickle names the
classes it needs; :class:`_Unpickler` resolves only a fixed list of them, each to a stand-in of ours:

- tensors (``torch._utils._rebuild_tensor_v2`` / ``_rebuild_parameter`` over ``torch.*Storage``) become
  float32 / int64 numpy arrays read from the zip;
- modules (``torch.nn.modules.*`` and ``ultralytics.nn.*``) become :class:`Module`: its class name, its
  plain attributes (``stride``, ``f``, ``i``, ``nc``, ``reg_max``, ``kernel_size``, …), its parameters and
  buffers (numpy) and its child modules in definition order (what ``forward`` walks).

Any other global (``os.system``, ``builtins.eval``, a class of another library) raises
:class:`PtError` naming it, before anything is built: the file is never executed.
"""

from __future__ import annotations

import pickle
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES = {
    "FloatStorage": np.float32,
    "HalfStorage": np.float16,
    "DoubleStorage": np.float64,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
    "BFloat16Storage": None,  # no numpy dtype: refused when read
}

_TORCH_MODULES = {
    "torch.nn.modules.activation": {"SiLU", "ReLU", "Sigmoid", "Hardswish", "LeakyReLU"},
    "torch.nn.modules.batchnorm": {"BatchNorm2d"},
    "torch.nn.modules.container": {"ModuleList", "Sequential"},
    "torch.nn.modules.conv": {"Conv2d", "ConvTranspose2d"},
    "torch.nn.modules.linear": {"Identity"},
    "torch.nn.modules.pooling": {"MaxPool2d"},
    "torch.nn.modules.upsampling": {"Upsample"},
}
"""The torch module classes a YOLO detection checkpoint holds."""

_ULTRALYTICS_PREFIX = "ultralytics.nn."
"""Every ultralytics module class is accepted as a stand-in; the graph builder refuses the ones it cannot
build (naming them), so an unknown block is reported as an unsupported architecture, not a pickle error."""


class PtError(ValueError):
    """The file is not a checkpoint this reader accepts (not a zip, truncated, a foreign global)."""


@dataclass
class Storage:
    """One tensor storage: where its bytes are in the zip and their dtype."""

    key: str
    """Entry name under ``<root>/data/``."""
    dtype: Any
    """numpy dtype of an element."""
    numel: int
    """Number of elements."""


class Module:
    """A stand-in for one ``nn.Module`` of the pickle (pickle makes it with ``__new__``, then
    ``__setstate__`` with the module's ``__dict__``)."""

    qual: str = "?"
    """Its class, ``module.Name`` as pickled (``ultralytics.nn.modules.block.C3k2``); set per stand-in."""
    attrs: dict[str, Any]
    """Plain attributes (``stride``, ``f``, ``i``, ``nc``, ``kernel_size``, ``training``, …)."""
    params: dict[str, np.ndarray | None]
    """Parameters and buffers by name (``weight``, ``bias``, ``running_mean``, …), numpy, float32."""
    children: dict[str, Module]
    """Child modules in definition order."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Module:
        self = super().__new__(cls)
        self.attrs, self.params, self.children = {}, {}, {}
        return self

    @property
    def name(self) -> str:
        """The bare class name (``C3k2``)."""
        return self.qual.rsplit(".", 1)[-1]

    def __repr__(self) -> str:
        return f"<{self.name} {list(self.children)}>"

    def __setstate__(self, state: Any) -> None:
        # nn.Module pickles its __dict__; parameters, buffers and children live in three OrderedDicts
        if isinstance(state, tuple):  # (dict, slots)
            state = state[0]
        if not isinstance(state, dict):
            raise PtError(f"{self.qual}: unexpected state {type(state).__name__}")
        for key, value in state.items():
            if key in ("_parameters", "_buffers"):
                self.params.update(dict(value))
            elif key == "_modules":
                self.children.update({k: v for k, v in value.items() if v is not None})
            elif not key.startswith("_"):
                self.attrs[key] = value

    def child(self, name: str) -> Module:
        """The child ``name``; :class:`PtError` when absent."""
        try:
            return self.children[name]
        except KeyError:
            raise PtError(f"{self.name} has no submodule {name!r} (has {sorted(self.children)})") from None

    def param(self, name: str) -> np.ndarray:
        """The parameter ``name`` (float32); :class:`PtError` when absent."""
        v = self.params.get(name)
        if not isinstance(v, np.ndarray):
            raise PtError(f"{self.name} has no tensor {name!r}")
        return v


def _module_class(qual: str) -> type[Module]:
    return type(qual.rsplit(".", 1)[-1], (Module,), {"qual": qual})


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: Any, zf: zipfile.ZipFile, root: str) -> None:
        super().__init__(file)
        self._zf = zf
        self._root = root
        self._classes: dict[str, type] = {}

    def find_class(self, module: str, name: str) -> Any:
        qual = f"{module}.{name}"
        if module == "collections" and name == "OrderedDict":
            return OrderedDict
        if module in ("__builtin__", "builtins") and name in ("set", "frozenset", "slice"):
            return {"set": set, "frozenset": frozenset, "slice": slice}[name]
        if module == "torch" and name in _DTYPES:
            return name  # a storage type is only a tag for persistent_load
        if module == "torch" and name == "Size":
            return tuple
        if module == "torch" and name in ("float32", "float16", "int64"):
            return name
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return self._rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if name in _TORCH_MODULES.get(module, ()) or module.startswith(_ULTRALYTICS_PREFIX):
            if qual not in self._classes:
                self._classes[qual] = _module_class(qual)
            return self._classes[qual]
        raise PtError(f"the pickle needs {qual}, which is not part of an ultralytics YOLO checkpoint")

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise PtError(f"unexpected persistent id {pid!r:.80}")
        _, kind, key, _location, numel = pid
        dtype = _DTYPES.get(kind) if isinstance(kind, str) else None
        if dtype is None:
            raise PtError(f"unsupported tensor storage {kind!r}")
        return Storage(str(key), dtype, int(numel))

    def _rebuild_tensor(
        self, storage: Storage, offset: int, size: tuple[int, ...], stride: tuple[int, ...], *_: Any
    ) -> np.ndarray:
        try:
            raw = self._zf.read(f"{self._root}/data/{storage.key}")
        except (KeyError, zipfile.BadZipFile, OSError, EOFError) as e:
            raise PtError(f"tensor storage {storage.key} unreadable: {e}") from None
        flat = np.frombuffer(raw, dtype=np.dtype(storage.dtype).newbyteorder("<"))
        if flat.size < storage.numel:
            raise PtError(f"tensor storage {storage.key} is truncated ({flat.size} of {storage.numel})")
        item = flat.itemsize
        arr = np.lib.stride_tricks.as_strided(
            flat[offset:], shape=tuple(size), strides=tuple(s * item for s in stride)
        )
        out = np.array(arr)
        if out.dtype.kind == "f":
            out = out.astype(np.float32)
        return out


def _rebuild_parameter(data: np.ndarray, *_: Any) -> np.ndarray:
    return data


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The unpickled checkpoint dict (``model``, ``train_args``, ``version``, …) with stand-ins.

    Raises :class:`PtError` (one line) for a file that is not a zip, is truncated, has no ``data.pkl``
    or needs a global outside the accepted list.
    """
    p = Path(path)
    try:
        zf = zipfile.ZipFile(p)
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise PtError(f"not a torch zip checkpoint ({type(e).__name__}: {e})") from None
    with zf:
        pkls = [n for n in zf.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if not pkls:
            raise PtError("no <root>/data.pkl inside: not a torch zip checkpoint")
        root = pkls[0].split("/", 1)[0]
        try:
            with zf.open(pkls[0]) as f:
                obj = _Unpickler(f, zf, root).load()
        except PtError:
            raise
        except (zipfile.BadZipFile, OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError) as e:
            raise PtError(f"unreadable checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(obj, dict):
        raise PtError(f"the pickle holds a {type(obj).__name__}, not a checkpoint dict")
    return obj
