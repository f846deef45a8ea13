"""Sequences of maps and maps: ZipMap (scores -> one dict per row) and DictVectorizer (a dict ->
a row of the vocabulary's values), in onnxruntime's run-time form: a map is a Python dict, a
sequence a list. Both nodes are data-dependent: ``compute`` returns its output (as a tuple, so
that ZipMap's list reads as one output).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import starmap
from typing import Any

import numpy as np

from mini_infer_core.errors import ExecutionError
from mini_infer_core.ops import ml
from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import MlPlugin

__all__ = ["DictVectorizer", "ZipMap"]

Array = NDArray[Any]

try:  # the compiled dicts (optional: the made row function otherwise)
    from . import _cml  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a C compiler
    _cml = None


class ZipMap(MlPlugin, ml.ZipMap):
    def setup(self) -> None:
        super().setup()
        strings = self.attrs["classlabels_strings"]
        self.keys: list[Any] = [str(k) for k in strings] if strings else \
            [int(k) for k in self.attrs["classlabels_int64s"] or ()]
        # onnxruntime's maps are ordered by key (std::map; strings by code point, as their
        # UTF-8 bytes): each dict is built in that order, so that it iterates the same way
        self.order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        self.sorted_keys = [self.keys[i] for i in self.order]
        self.row = _row_builder(self.keys, self.order)
        self.key_tuple = tuple(self.sorted_keys)
        self.columns = np.array(self.order, np.int64)

    def enqueue_dynamic(self, inputs: Sequence[Any], workspace: Any, stream: Any
                        ) -> list[Any]:
        """The usual case (float32 scores [N, classes], C-contiguous) straight to the
        compiled dicts: ``compute``'s checks and the base's keyword arguments cost more than
        ``_cml.zipmap`` itself at one row."""
        x = inputs[0]
        if _cml is not None and type(x) is np.ndarray and x.dtype == np.float32 and \
                x.ndim == 2 and x.shape[1] == len(self.keys) and x.flags.c_contiguous:
            return [_cml.zipmap(x, x.shape[0], x.shape[1], self.key_tuple, self.columns)]
        return super().enqueue_dynamic(inputs, workspace, stream)

    def compute(self, x: Array, **_: Any) -> tuple[list[dict[Any, float]]]:
        rows = x if type(x) is np.ndarray and x.dtype == np.float32 else \
            np.asarray(x, np.float32)
        if rows.ndim == 1:
            rows = rows.reshape(1, -1)
        if rows.ndim != 2 or rows.shape[1] != len(self.keys):
            raise ExecutionError(
                f"ZipMap {self.name!r}: X has shape {tuple(np.shape(x))}, expected "
                f"[N, {len(self.keys)}] (one column per class label)")
        if _cml is not None and rows.dtype == np.float32 and rows.flags.c_contiguous:
            return (_cml.zipmap(rows, rows.shape[0], rows.shape[1], self.key_tuple,
                                self.columns),)
        # tolist() makes each float32 the Python float onnxruntime gives (the same value)
        if self.row is not None:
            return (list(starmap(self.row, rows.tolist())),)
        keys = self.sorted_keys
        return ([dict(zip(keys, row, strict=True)) for row in rows[:, self.order].tolist()],)


#: the most class labels for which ZipMap builds its dicts with a made function
_MADE_UP_TO = 64


def _row_builder(keys: list[Any], order: list[int]) -> Callable[..., dict[Any, float]] | None:
    """A function of one row's scores (in column order) that returns its dict, keys in
    ``order``: a dict display, the fastest way CPython builds a small dict (about twice as
    fast as ``dict(zip(...))``). The keys are bound as arguments of the code made (only
    generated names appear in it), so a label's text never becomes code."""
    if not 0 < len(keys) <= _MADE_UP_TO:
        return None
    n = len(keys)
    args = ", ".join(f"v{i}" for i in range(n))
    display = ", ".join(f"k{i}: v{i}" for i in order)
    source = (f"def make({', '.join(f'k{i}' for i in range(n))}):\n"
              f"    def row({args}):\n        return {{{display}}}\n    return row\n")
    scope: dict[str, Any] = {}
    exec(compile(source, "<ZipMap row>", "exec"), scope)  # noqa: S102 - names only
    row: Callable[..., dict[Any, float]] = scope["make"](*keys)
    return row


class DictVectorizer(MlPlugin, ml.DictVectorizer):
    def setup(self) -> None:
        super().setup()
        strings = self.attrs["string_vocabulary"]
        vocabulary: list[Any] = [str(k) for k in strings] if strings else \
            [int(k) for k in self.attrs["int64_vocabulary"] or ()]
        self.strings = bool(strings)
        self.index = {key: i for i, key in enumerate(vocabulary)}

    def compute(self, x: Mapping[Any, Any], **_: Any) -> tuple[Array]:
        if not isinstance(x, Mapping):
            raise ExecutionError(f"DictVectorizer {self.name!r}: X must be a dict, got "
                                 f"{type(x).__name__}")
        dtype = self.value_type()
        row: Array
        if dtype is DataType.STRING:
            row = np.full((1, len(self.index)), "", dtype=object)
        else:
            row = np.zeros((1, len(self.index)), dtype=dtype.numpy)
        index = self.index
        for key, value in x.items():
            k = _key(key, self.strings)
            at = index.get(k) if k is not None else None
            if at is not None:
                row[0, at] = str(value) if dtype is DataType.STRING else value
        return (row,)


def _key(key: Any, strings: bool) -> Any:
    """A map key as the vocabulary holds it (None: a key of the other type)."""
    if strings:
        if isinstance(key, bytes):
            return key.decode()
        return key if isinstance(key, str) else None
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return int(key)
    return None
