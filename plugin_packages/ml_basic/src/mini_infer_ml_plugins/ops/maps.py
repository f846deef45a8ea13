"""Sequences of maps and maps: ZipMap (scores -> one dict per row) and DictVectorizer (a dict ->
a row of the vocabulary's values), in onnxruntime's run-time form: a map is a Python dict, a
sequence a list. Both nodes are data-dependent: ``compute`` returns its output (as a tuple, so
that ZipMap's list reads as one output).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import ExecutionError
from mini_infer_core.ops import ml
from mini_infer_core.plugin import DataType

from ..serialization import MlPlugin

__all__ = ["DictVectorizer", "ZipMap"]

Array = NDArray[Any]


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

    def compute(self, x: Array, **_: Any) -> tuple[list[dict[Any, float]]]:
        rows = np.asarray(x, np.float32)
        if rows.ndim == 1:
            rows = rows.reshape(1, -1)
        if rows.ndim != 2 or rows.shape[1] != len(self.keys):
            raise ExecutionError(
                f"ZipMap {self.name!r}: X has shape {tuple(np.shape(x))}, expected "
                f"[N, {len(self.keys)}] (one column per class label)")
        keys = self.sorted_keys
        # tolist() makes each float32 the Python float onnxruntime gives (the same value)
        return ([dict(zip(keys, row, strict=True)) for row in rows[:, self.order].tolist()],)


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
