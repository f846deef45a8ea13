"""Per-feature transforms: Binarizer, Imputer, Scaler, Normalizer, ArrayFeatureExtractor and
FeatureVectorizer (onnxruntime's semantics, which the ONNX specification leaves open in
places: a Normalizer row whose norm is 0 is copied, an Imputer with one value per feature
applies them along the last axis)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.errors import ExecutionError
from mini_infer_core.ops import ml
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import MlPlugin

__all__ = ["ArrayFeatureExtractor", "Binarizer", "FeatureVectorizer", "Imputer", "Normalizer",
           "Scaler"]

Array = NDArray[Any]

try:  # the compiled few-row path (optional: NumPy otherwise)
    from . import _cml  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - built without a C compiler
    _cml = None

_NORMS = {"MAX": 0, "L1": 1, "L2": 2}


def _float32_pair(x: Array, out: Array) -> bool:
    """Whether ``x`` and ``out`` are float32 arrays of the same size the compiled kernels
    can read and write in place."""
    return _cml is not None and x.dtype == np.float32 and out.dtype == np.float32 and \
        x.size == out.size and x.flags.c_contiguous and out.flags.c_contiguous


def _per_feature(values: Any, features: int, dtype: Any) -> Array:
    """An attribute list of one value for all features, or one per feature."""
    arr = np.asarray(values if values is not None else (), dtype)
    return arr if arr.size == features else arr[:1]


class Binarizer(MlPlugin, ml.Binarizer):
    def compute(self, x: Array, *, out: Array, threshold: float, **_: Any) -> None:
        kept = self.__dict__.get("_threshold")
        if kept is None or kept[0] != x.dtype:  # the threshold in x's type (kept)
            kept = self.__dict__["_threshold"] = (x.dtype, np.asarray(
                threshold, np.float32).astype(x.dtype) if x.dtype.kind == "f" else threshold)
        np.copyto(out, x > kept[1], casting="unsafe")  # True -> 1, False (and NaN) -> 0


class Imputer(MlPlugin, ml.Imputer):
    def compute(self, x: Array, *, out: Array, imputed_value_floats: Any,
                imputed_value_int64s: Any, replaced_value_float: float,
                replaced_value_int64: int, **_: Any) -> None:
        floats = x.dtype.kind == "f"
        values = imputed_value_floats if floats else imputed_value_int64s
        if not values:
            kind = "imputed_value_floats" if floats else "imputed_value_int64s"
            raise ExecutionError(f"Imputer {self.name!r}: X is {x.dtype}, which needs {kind}; "
                                 "the model gives none")
        features = x.shape[-1] if x.ndim else 1
        shape_type = (features, x.dtype)
        kept = self.__dict__.get("_kept")
        if kept is None or kept[0] != shape_type:  # the same every run while F and type are
            replaced = np.asarray(replaced_value_float, np.float32).astype(x.dtype) \
                if floats else replaced_value_int64
            kept = self.__dict__["_kept"] = (shape_type, _per_feature(values, features, x.dtype),
                                             replaced, floats and bool(np.isnan(replaced)))
        imputed, replaced, nan = kept[1:]
        hit = np.isnan(x) if nan else x == replaced
        if out.shape == x.shape and out.dtype == x.dtype:  # x, then the imputed where hit
            np.copyto(out, x)
            np.copyto(out, imputed, where=hit)
            return
        np.copyto(out, np.where(hit, np.broadcast_to(imputed, x.shape), x))


class Scaler(MlPlugin, ml.Scaler):
    def compute(self, x: Array, *, out: Array, offset: Any, scale: Any, **_: Any) -> None:
        dtype = np.float64 if x.dtype == np.float64 else np.float32
        features = x.shape[-1] if x.ndim else 1
        kept = getattr(self, "_per", None)
        if kept is None or kept[0] != features:  # the same every run while F is
            kept = self._per = (features, _per_feature(
                offset if offset is not None else (0.0,), features, np.float32),
                _per_feature(scale if scale is not None else (1.0,), features, np.float32))
        off, sc = kept[1], kept[2]
        if x.size and off.size and sc.size and _float32_pair(x, out):
            _cml.scale(x, off, sc, out)
            return
        np.copyto(out, (x.astype(dtype) - off.astype(dtype)) * sc.astype(dtype),
                  casting="unsafe")

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """float32 in and out: ``_cml.scale`` made once for the step's arrays."""
        x, out = inputs[0], outputs[0]
        if workspace is None and isinstance(x, np.ndarray) and isinstance(out, np.ndarray) \
                and x.ndim and x.size and _float32_pair(x, out):
            a = self.attrs
            features = x.shape[-1]
            off = _per_feature(a["offset"] if a["offset"] is not None else (0.0,), features,
                               np.float32)
            sc = _per_feature(a["scale"] if a["scale"] is not None else (1.0,), features,
                              np.float32)
            if off.size and sc.size:
                return partial(_cml.scale, x, off, sc, out)
        return super().bind_run(inputs, outputs, workspace)


class Normalizer(MlPlugin, ml.Normalizer):
    def compute(self, x: Array, *, out: Array, norm: str, **_: Any) -> None:
        if x.ndim > 2:
            raise ExecutionError(f"Normalizer {self.name!r}: X must have rank 1 or 2, "
                                 f"got shape {x.shape}")
        rows = np.atleast_2d(x)
        if norm in _NORMS and rows.shape[0] and _float32_pair(rows, out):
            _cml.normalize(rows, rows.shape[0], _NORMS[norm], out)
            return
        xf = rows.astype(np.float32)
        if norm == "MAX":  # NaNs skipped, from the lowest float (onnxruntime's std::max)
            z = np.fmax.reduce(xf, axis=1, keepdims=True, initial=np.finfo(np.float32).min)
            y = xf / np.where(z != 0, z, np.float32(1))
        elif norm == "L1":
            z = np.abs(rows).astype(np.float32).sum(axis=1, keepdims=True)
            y = xf / np.where(z != 0, z, np.float32(1))
        elif norm == "L2":
            sq = (rows * rows).astype(np.float32)
            z = sq.sum(axis=1, keepdims=True)
            y = np.where(z != 0, np.sqrt(sq / np.where(z != 0, z, np.float32(1))), xf)
            y = np.where((z != 0) & (rows < 0), -y, y)
        else:
            raise ExecutionError(f"Normalizer {self.name!r}: norm {norm!r} is not one of "
                                 "MAX, L1, L2")
        np.copyto(out, y.reshape(out.shape))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """float32 rows in and out (MAX, L1, L2): ``_cml.normalize`` made once for the
        step's arrays."""
        x, out = inputs[0], outputs[0]
        norm = self.attrs["norm"]
        if workspace is None and norm in _NORMS and isinstance(x, np.ndarray) and \
                isinstance(out, np.ndarray) and 1 <= x.ndim <= 2:
            rows = np.atleast_2d(x)
            if rows.shape[0] and _float32_pair(rows, out):
                return partial(_cml.normalize, rows, rows.shape[0], _NORMS[norm], out)
        return super().bind_run(inputs, outputs, workspace)


class ArrayFeatureExtractor(MlPlugin, ml.ArrayFeatureExtractor):
    def compute(self, x: Array, y: Array, *, out: Array, **_: Any) -> None:
        index = np.asarray(y, np.int64).reshape(-1)
        size = x.shape[-1]
        if _compiled_take(x, index, out):
            _take(x, size, index, out, self.name)
            return
        if index.size and (index.min() < 0 or index.max() >= size):
            _out_of_range(self.name, int(index[(index < 0) | (index >= size)][0]), size)
        if out.flags.c_contiguous and out.size == x.size // max(size, 1) * index.size:
            np.take(x, index, axis=-1, out=out.reshape(*x.shape[:-1], index.size))
            return
        np.copyto(out, x[..., index].reshape(out.shape))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The compiled gather (``_cml.take``: bounds checked and items copied in one call)
        bound to the step's arrays: the label lookup after an ArgMax (naive Bayes, the
        linear models skl2onnx writes out) costs a fraction of a microsecond, where the
        NumPy checks and ``np.take`` cost several."""
        x, y, out = inputs[0], inputs[1], outputs[0]
        if workspace is not None or not isinstance(y, np.ndarray) or y.dtype != np.int64 \
                or not y.flags.c_contiguous or not _compiled_take(x, y, out):
            return None
        return partial(_take, x, x.shape[-1], y, out, self.name)


def _compiled_take(x: Any, index: Array, out: Any) -> bool:
    """Whether ``_cml.take`` can gather ``x`` at ``index`` (int64, contiguous) into ``out``:
    fixed-size items (not strings), both C-contiguous, ``x`` not empty and ``out`` of the
    size the gather fills."""
    return _cml is not None and isinstance(x, np.ndarray) and isinstance(out, np.ndarray) \
        and x.dtype.kind in "biuf" and out.dtype == x.dtype and x.ndim >= 1 and x.size > 0 \
        and x.flags.c_contiguous and out.flags.c_contiguous and index.flags.c_contiguous \
        and out.size == x.size // x.shape[-1] * index.size


def _take(x: Array, size: int, index: Array, out: Array, name: str) -> None:
    bad = _cml.take(x, size, index, x.itemsize, out)
    if bad is not None:
        _out_of_range(name, bad, size)


def _out_of_range(name: str, index: int, size: int) -> None:
    raise ExecutionError(
        f"ArrayFeatureExtractor {name!r}: index {index} is out of range for the last axis "
        f"of X (size {size}); the indices must lie in [0, {size})")


class FeatureVectorizer(MlPlugin, ml.FeatureVectorizer):
    def compute(self, *inputs: Array, out: Array, inputdimensions: Any, **_: Any) -> None:
        out[...] = 0
        start = 0
        for x, width in zip(inputs, inputdimensions, strict=True):
            rows = x.reshape(1, -1) if x.ndim == 1 else x.reshape(x.shape[0], -1)
            take = min(int(width), rows.shape[1])
            out[:, start:start + take] = rows[:, :take]
            start += int(width)
