"""Maps between labels: LabelEncoder (every opset: the index list of opset 1, key and value
lists from opset 2, tensors from opset 4), CategoryMapper and OneHotEncoder.

Numeric keys are looked up with a sorted search (a NaN key matches NaN, as onnxruntime's
encoder does); string keys with a dictionary. Strings travel as object arrays of ``str``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import repeat
from typing import Any

import numpy as np

from mini_infer_core.errors import ExecutionError
from mini_infer_core.ops import ml
from mini_infer_core.plugin import DataType
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import MlPlugin

__all__ = ["CategoryMapper", "LabelEncoder", "LabelEncoder_1", "OneHotEncoder"]

Array = NDArray[Any]


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class _Table:
    """keys -> values with a default: numeric keys searched in sorted order, strings hashed."""

    def __init__(self, keys: Sequence[Any] | Array, values: Sequence[Any] | Array,
                 default: Any, out_dtype: Any) -> None:
        keys = list(np.asarray(keys, dtype=object).reshape(-1)) if len(keys) else []
        values = list(np.asarray(values, dtype=object).reshape(-1)) if len(values) else []
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys but {len(values)} values")
        self.default, self.dtype = default, np.dtype(out_dtype)
        self.strings = any(isinstance(k, (str, bytes)) for k in keys)
        self.lookup = {_text(k): v for k, v in zip(keys, values, strict=True)} \
            if self.strings else {}
        numeric = np.asarray([] if self.strings else keys)
        order = np.argsort(numeric, kind="stable")
        self.keys = numeric[order]
        self.values = np.asarray(values, dtype=self.dtype)[order] if keys else \
            np.empty(0, self.dtype)
        nan = self.keys.dtype.kind == "f" and bool(np.isnan(self.keys).any())
        self.nan_value = self.values[np.isnan(self.keys)][0] if nan else None

    def map(self, x: Array) -> Array:
        """The value of every element of ``x`` (shaped like it)."""
        if x.dtype == object:
            return _array([self.lookup.get(_text(v), self.default)
                           for v in x.reshape(-1).tolist()], x.shape, self.dtype)
        if not len(self.keys):
            return _array([self.default] * x.size, x.shape, self.dtype)
        xv = x.astype(self.keys.dtype) if x.dtype != self.keys.dtype else x
        pos = np.minimum(np.searchsorted(self.keys, xv), len(self.keys) - 1)
        hit = self.keys[pos] == xv
        if self.nan_value is not None:
            nan = np.isnan(xv)
            hit |= nan
            pos = np.where(nan, int(np.flatnonzero(np.isnan(self.keys))[0]), pos)
        if self.dtype == object:
            return _array([v if h else self.default for v, h in zip(
                self.values[pos].reshape(-1).tolist(), hit.reshape(-1).tolist(), strict=True)],
                x.shape, self.dtype)
        return np.where(hit, self.values[pos], np.asarray(self.default, self.dtype))


def _array(items: list[Any], shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    if dtype.kind != "O":
        return np.asarray(items, dtype=dtype).reshape(shape)
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr.reshape(shape)


class LabelEncoder_1(MlPlugin, ml.LabelEncoder_1):  # noqa: N801
    def setup(self) -> None:
        super().setup()
        classes = tuple(self.attrs["classes_strings"] or ())
        self.to_int = _Table(classes, np.arange(len(classes)), self.attrs["default_int64"],
                             np.int64)
        self.to_str = _Table(np.arange(len(classes)), classes, self.attrs["default_string"],
                             object)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        out[...] = (self.to_int if x.dtype == object else self.to_str).map(x)


_DEFAULTS = {DataType.STRING: "default_string", DataType.INT64: "default_int64",
             DataType.FLOAT: "default_float", DataType.DOUBLE: "default_float"}


class LabelEncoder(MlPlugin, ml.LabelEncoder):
    def setup(self) -> None:
        super().setup()
        a = self.attrs
        keys = next((a[k] for k in ("keys_tensor", "keys_strings", "keys_int64s", "keys_floats")
                     if a.get(k) is not None), ())
        values = next((a[k] for k in ("values_tensor", "values_strings", "values_int64s",
                                      "values_floats") if a.get(k) is not None), ())
        dtype = self.output_types([DataType.FLOAT])[0]
        default = a.get("default_tensor")
        if default is not None:
            default = default[0] if isinstance(default, tuple) else \
                np.asarray(default).reshape(-1)[0]
        else:
            default = a[_DEFAULTS.get(dtype, "default_int64")]
        if dtype in (DataType.FLOAT, DataType.DOUBLE):
            default = np.asarray(default, np.float32).astype(dtype.numpy)[()]
        try:
            self.table = _Table(keys, values, default,
                                object if dtype is DataType.STRING else dtype.numpy)
        except ValueError as exc:
            raise ExecutionError(f"LabelEncoder {self.name!r}: {exc}") from exc

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        out[...] = self.table.map(x)


class CategoryMapper(MlPlugin, ml.CategoryMapper):
    def setup(self) -> None:
        super().setup()
        strings = tuple(self.attrs["cats_strings"] or ())
        ints = tuple(self.attrs["cats_int64s"] or ())
        self.to_int = _Table(strings, ints, self.attrs["default_int64"], np.int64)
        self.to_str = _Table(ints, strings, self.attrs["default_string"], object)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        out[...] = (self.to_int if x.dtype == object else self.to_str).map(x)


#: rows of strings from which OneHotEncoder looks their columns up in one pass (fewer: a loop)
_LOOKED_UP_AT_ONCE = 16


class OneHotEncoder(MlPlugin, ml.OneHotEncoder):
    def setup(self) -> None:
        super().setup()
        cats = self.attrs["cats_strings"] or self.attrs["cats_int64s"] or ()
        self.table = _Table(tuple(cats), np.arange(len(cats)), -1, np.int64)

    def compute(self, x: Array, *, out: Array, zeros: int, **_: Any) -> None:
        if x.dtype == object and self.table.strings and out.flags.c_contiguous and \
                out.size == x.size * out.shape[-1]:
            self._strings_into(x, out, bool(zeros))
            return
        if x.dtype.kind == "f":
            x = x.astype(np.int64)  # onnxruntime truncates numeric inputs to int64
        index = self.table.map(x)
        if not zeros and (index < 0).any():
            bad = x.reshape(-1)[int(np.argmax(index.reshape(-1) < 0))]
            raise ExecutionError(f"OneHotEncoder {self.name!r}: {bad!r} is not one of the "
                                 "categories and zeros=0 forbids unknown values")
        flat = index.reshape(-1)
        onehot = np.zeros((flat.size, out.shape[-1]), np.float32)
        rows = np.flatnonzero(flat >= 0)
        onehot[rows, flat[rows]] = 1
        np.copyto(out, onehot.reshape(out.shape))

    def _strings_into(self, x: Array, out: Array, zeros: bool) -> None:
        """String categories: each value's column looked up and its 1 written straight into
        the zeroed output (a few rows cost a dict look-up each, not a dozen NumPy calls)."""
        lookup, width = self.table.lookup, out.shape[-1]
        values = x.reshape(-1).tolist()
        if len(values) >= _LOOKED_UP_AT_ONCE:
            self._many_strings_into(values, out.reshape(-1), width, zeros)
            return
        ones: list[int] = []
        for r, value in enumerate(values):
            column = lookup.get(_text(value), -1)
            if column >= 0:
                ones.append(r * width + column)
            elif not zeros:
                raise ExecutionError(f"OneHotEncoder {self.name!r}: {value!r} is not one of "
                                     "the categories and zeros=0 forbids unknown values")
        flat = out.reshape(-1)
        flat.fill(0)
        if len(ones) == 1:
            flat[ones[0]] = 1
        elif ones:
            flat[ones] = 1

    def _many_strings_into(self, values: list[Any], flat: Array, width: int,
                           zeros: bool) -> None:
        """Many rows: every column looked up in one C-level pass (``map`` of ``dict.get``),
        the values missed tried again as text (bytes, numbers), the ones set by one fancy
        assignment."""
        lookup = self.table.lookup
        index = np.array(list(map(lookup.get, values, repeat(-1))), np.int64)
        for k in np.flatnonzero(index < 0).tolist():
            index[k] = lookup.get(_text(values[k]), -1)
            if index[k] < 0 and not zeros:
                raise ExecutionError(f"OneHotEncoder {self.name!r}: {values[k]!r} is not one "
                                     "of the categories and zeros=0 forbids unknown values")
        rows = np.flatnonzero(index >= 0)
        flat.fill(0)
        flat[rows * width + index[rows]] = 1
