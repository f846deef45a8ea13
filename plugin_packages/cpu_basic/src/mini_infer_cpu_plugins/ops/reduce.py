"""Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax, ArgMin.

Each Reduce* has two versions: ``axes`` as an attribute (``*_1``: up to opset 12 for ReduceSum,
17 for the others) and ``axes`` as an optional input with ``noop_with_empty_axes`` (from 13
for ReduceSum, 18 for the others). No axes reduce everything, unless ``noop_with_empty_axes``:
then only the elementwise part (abs, square, exp...) is applied. Reducing an empty set gives the
operation's identity (0, 1, -inf for Max/LogSum/LogSumExp, +inf for Min).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimExpr, DimsExprs
from mini_infer_core.plugin.shapes import Shapes, norm_axis, reduced_dims

from ._dynamic import ValuePlugin, as_ints, emit

__all__ = [
    "ReduceSum_1", "ReduceSum", "ReduceMean_1", "ReduceMean", "ReduceMax_1", "ReduceMax",
    "ReduceMin_1", "ReduceMin", "ReduceProd_1", "ReduceProd", "ReduceL1_1", "ReduceL1",
    "ReduceL2_1", "ReduceL2", "ReduceLogSum_1", "ReduceLogSum", "ReduceLogSumExp_1",
    "ReduceLogSumExp", "ReduceSumSquare_1", "ReduceSumSquare", "ArgMax", "ArgMin",
]

Array = NDArray[Any]
Axes = tuple[int, ...] | None  # None: every axis; (): none (noop)


def _extreme(dtype: np.dtype[Any], low: bool) -> Any:
    if dtype.kind == "b":
        return not low
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if low else info.max
    return -np.inf if low else np.inf


class _Reduce(ValuePlugin):
    """Axes from the ``axes`` attribute (opsets before the input version)."""

    attributes: ClassVar[dict[str, Any]] = {"axes": None, "keepdims": 1}

    def axes_of(self, inputs: Sequence[DimsExprs | None]) -> Axes:
        axes = self.attrs.get("axes")
        return None if axes is None else tuple(axes)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        axes = self.axes_of(inputs)
        return [list(reduced_dims(dims, axes, bool(self.attrs["keepdims"])))]

    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None,
                keepdims: int = 1, noop_with_empty_axes: int = 0, **_: Any) -> Any:
        if "noop_with_empty_axes" in self.attributes:
            ax = tuple(as_ints(axes)) if axes is not None else ()
            sel: Axes = ax if ax or noop_with_empty_axes else None
        else:
            sel = self.axes_of([])
        if sel is not None:
            sel = tuple(sorted(norm_axis(a, x.ndim, "axis") for a in sel))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _KERNELS[self.op_type](x, sel, bool(keepdims))
        return emit(np.asarray(r).astype(x.dtype, copy=False), out)


class _ReduceInput(_Reduce):
    """Axes from the optional input 1 (a run-time tensor makes the shapes data-dependent)."""

    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"keepdims": 1, "noop_with_empty_axes": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        keep = bool(self.attrs["keepdims"])
        noop = bool(self.attrs["noop_with_empty_axes"])
        if len(inputs) < 2 or inputs[1] is None:
            self.runtime(False)
            return [list(dims) if noop else list(reduced_dims(dims, None, keep))]
        axes = self.ints(inputs, 1)
        if not self.runtime(axes is None):
            assert axes is not None
            sel: Axes = tuple(axes) if axes or noop else None
            return [list(reduced_dims(dims, sel, keep))]
        if keep:
            return [list(self.unknown_dims(len(dims)))]
        n = inputs[1][0] if len(inputs[1]) else DimExpr.const(1)
        if not n.is_constant():
            raise PluginInterfaceError(
                f"{self.op_type}: with keepdims=0 the number of axes must be known when the "
                "engine is built (the output rank depends on it)")
        return [list(self.unknown_dims(len(dims) - n.get_constant_value()))]


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


class ReduceSum_1(_Reduce):  # noqa: N801
    op_type = "ReduceSum"
    plugin_version = "1"
    max_opset = 12


class ReduceSum(_ReduceInput):
    plugin_version = "13"
    min_opset = 13


class ReduceMean_1(_Reduce):  # noqa: N801
    op_type = "ReduceMean"
    plugin_version = "1"
    max_opset = 17


class ReduceMean(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceMax_1(_Reduce):  # noqa: N801
    op_type = "ReduceMax"
    plugin_version = "1"
    max_opset = 17


class ReduceMax(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceMin_1(_Reduce):  # noqa: N801
    op_type = "ReduceMin"
    plugin_version = "1"
    max_opset = 17


class ReduceMin(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceProd_1(_Reduce):  # noqa: N801
    op_type = "ReduceProd"
    plugin_version = "1"
    max_opset = 17


class ReduceProd(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceL1_1(_Reduce):  # noqa: N801
    op_type = "ReduceL1"
    plugin_version = "1"
    max_opset = 17


class ReduceL1(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceL2_1(_Reduce):  # noqa: N801
    op_type = "ReduceL2"
    plugin_version = "1"
    max_opset = 17


class ReduceL2(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceLogSum_1(_Reduce):  # noqa: N801
    op_type = "ReduceLogSum"
    plugin_version = "1"
    max_opset = 17


class ReduceLogSum(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceLogSumExp_1(_Reduce):  # noqa: N801
    op_type = "ReduceLogSumExp"
    plugin_version = "1"
    max_opset = 17


class ReduceLogSumExp(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class ReduceSumSquare_1(_Reduce):  # noqa: N801
    op_type = "ReduceSumSquare"
    plugin_version = "1"
    max_opset = 17


class ReduceSumSquare(_ReduceInput):
    plugin_version = "18"
    min_opset = 18


class _Arg(ValuePlugin):
    """ArgMax/ArgMin along ``axis`` (negative from opset 11); ``select_last_index`` from 12
    picks the last of equal extremes. INT64 output."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 0, "keepdims": 1, "select_last_index": 0}
    find: ClassVar[Any] = np.argmax

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(dims), f"{self.op_type} axis")
        return [list(reduced_dims(dims, (a,), bool(self.attrs["keepdims"])))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]

    def compute(self, x: Array, *, out: Array | None = None, axis: int, keepdims: int,
                select_last_index: int) -> Any:
        a = norm_axis(axis, x.ndim)
        if select_last_index:
            idx = x.shape[a] - 1 - type(self).find(np.flip(x, a), axis=a)
        else:
            idx = type(self).find(x, axis=a)
        idx = np.asarray(idx, np.int64)
        if keepdims:
            idx = np.expand_dims(idx, a)
        return emit(idx, out)


class ArgMax(_Arg):
    find = np.argmax


class ArgMin(_Arg):
    find = np.argmin
