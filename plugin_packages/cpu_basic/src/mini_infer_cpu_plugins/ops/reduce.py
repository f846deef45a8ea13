"""Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax, ArgMin --
NumPy reductions whose results are cast to the input's type (schemas, axes and shapes in
:mod:`mini_infer_core.ops.reduce`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.ops import reduce as schema
from mini_infer_core.ops.reduce import Axes
from mini_infer_core.plugin import DimExpr
from mini_infer_core.plugin.shapes import reduced_dims

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit
from .elementwise import kernel

__all__ = [
    "ReduceSum_1", "ReduceSum", "ReduceMean_1", "ReduceMean", "ReduceMax_1", "ReduceMax",
    "ReduceMin_1", "ReduceMin", "ReduceProd_1", "ReduceProd", "ReduceL1_1", "ReduceL1",
    "ReduceL2_1", "ReduceL2", "ReduceLogSum_1", "ReduceLogSum", "ReduceLogSumExp_1",
    "ReduceLogSumExp", "ReduceSumSquare_1", "ReduceSumSquare", "ArgMax", "ArgMin",
]

Array = NDArray[Any]


def _extreme(dtype: np.dtype[Any], low: bool) -> Any:
    if dtype.kind == "b":
        return not low
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if low else info.max
    return -np.inf if low else np.inf


def _sum(x: Array, axes: Axes, k: bool) -> Array:
    return np.sum(x, axis=axes, keepdims=k, dtype=x.dtype)


def _mean(x: Array, axes: Axes, k: bool) -> Array:
    count = x.size if axes is None else math.prod(x.shape[a] for a in axes)
    if count == 0:  # the mean of nothing is NaN (without NumPy's warning)
        return np.full(reduced_dims_shape(x.shape, axes, k), np.nan, x.dtype)
    return np.mean(x, axis=axes, keepdims=k, dtype=x.dtype)


def _extreme_reduce(ufunc: Any, low: bool) -> Any:
    def run(x: Array, axes: Axes, k: bool) -> Array:
        if x.size == 0:
            shape = reduced_dims([DimExpr.const(d) for d in x.shape], axes, k)
            return np.full([d.get_constant_value() for d in shape], _extreme(x.dtype, low),
                           x.dtype)
        return ufunc.reduce(x, axis=axes, keepdims=k)  # type: ignore[no-any-return]
    return run


def _prod(x: Array, axes: Axes, k: bool) -> Array:
    return np.prod(x, axis=axes, keepdims=k, dtype=x.dtype)  # type: ignore[no-any-return]


def _l1(x: Array, axes: Axes, k: bool) -> Array:
    return np.sum(np.abs(x), axis=axes, keepdims=k, dtype=x.dtype)


def _l2(x: Array, axes: Axes, k: bool) -> Array:
    return np.sqrt(np.sum(np.square(x), axis=axes, keepdims=k))  # type: ignore[no-any-return]


def _log_sum(x: Array, axes: Axes, k: bool) -> Array:
    return np.log(np.sum(x, axis=axes, keepdims=k))  # type: ignore[no-any-return]


def _log_sum_exp(x: Array, axes: Axes, k: bool) -> Array:
    if x.size == 0:
        return np.log(np.sum(x, axis=axes, keepdims=k))  # type: ignore[no-any-return]
    finite = np.where(np.isinf(x), -np.inf, x)
    m = np.max(finite, axis=axes, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    s = np.sum(np.exp(x - m), axis=axes, keepdims=True, dtype=x.dtype)
    r = np.log(s) + m
    if not k:
        r = r.reshape(reduced_dims_shape(x.shape, axes))
    return r  # type: ignore[no-any-return]


def reduced_dims_shape(shape: tuple[int, ...], axes: Axes, keepdims: bool = False
                       ) -> tuple[int, ...]:
    dims = reduced_dims([DimExpr.const(d) for d in shape], axes, keepdims)
    return tuple(d.get_constant_value() for d in dims)


def _sum_square(x: Array, axes: Axes, k: bool) -> Array:
    return np.sum(np.square(x), axis=axes, keepdims=k, dtype=x.dtype)


#: ``kernel(x, axes, keepdims)`` of each reduction (axes None: all, (): none)
_KERNELS: dict[str, Callable[[Array, Axes, bool], Array]] = {
    "ReduceSum": _sum, "ReduceMean": _mean, "ReduceMax": _extreme_reduce(np.maximum, True),
    "ReduceMin": _extreme_reduce(np.minimum, False), "ReduceProd": _prod, "ReduceL1": _l1,
    "ReduceL2": _l2, "ReduceLogSum": _log_sum, "ReduceLogSumExp": _log_sum_exp,
    "ReduceSumSquare": _sum_square,
}


class _Reduce(CpuPlugin, schema.ReduceBase):
    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None,
                keepdims: int = 1, **_: Any) -> Any:
        sel = self.reduce_axes(as_ints(axes), x.ndim)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _KERNELS[self.op_type](x, sel, bool(keepdims))
        return emit(np.asarray(r).astype(x.dtype, copy=False), out)


(ReduceSum_1, ReduceSum, ReduceMean_1, ReduceMean, ReduceMax_1, ReduceMax, ReduceMin_1, ReduceMin,
 ReduceProd_1, ReduceProd, ReduceL1_1, ReduceL1, ReduceL2_1, ReduceL2, ReduceLogSum_1,
 ReduceLogSum, ReduceLogSumExp_1, ReduceLogSumExp, ReduceSumSquare_1, ReduceSumSquare) = (
    type(name, (_Reduce, getattr(schema, name)), {"__module__": __name__})
    for name in __all__[:20])


class _Arg(CpuPlugin, schema.ArgBase):
    """``ufunc``: np.argmax or np.argmin."""

    ufunc: Any = None

    def compute(self, x: Array, *, out: Array | None = None, keepdims: int,
                select_last_index: int, **_: Any) -> Any:
        a = self.arg_axis(x.ndim)
        find = type(self).ufunc
        idx = x.shape[a] - 1 - find(np.flip(x, a), axis=a) if select_last_index else \
            find(x, axis=a)
        idx = np.asarray(idx, np.int64)
        return emit(np.expand_dims(idx, a) if keepdims else idx, out)


ArgMax, ArgMin = (kernel(op, _Arg, f, __name__)
                  for op, f in ((schema.ArgMax, np.argmax), (schema.ArgMin, np.argmin)))
