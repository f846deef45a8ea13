"""Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax, ArgMin.

Each Reduce* has two versions: ``axes`` as an attribute (``*_1``: up to opset 12 for ReduceSum,
17 for the others) and ``axes`` as an optional input with ``noop_with_empty_axes`` (from 13
for ReduceSum, 18 for the others). No axes reduce everything, unless ``noop_with_empty_axes``:
then only the elementwise part (abs, square, exp...) is applied. Reducing an empty set gives the
operation's identity (0, 1, -inf for Max/LogSum/LogSumExp, +inf for Min, NaN for Mean:
:meth:`ReduceBase.empty_value`).

An axes input known when the engine is built gives exact output shapes; a run-time one makes
the node data-dependent (unless a device requires it at build time: ``shape_inputs``).
ReduceSum, ReduceProd, ReduceMax and ReduceMin of integer values known at build time (shape
arithmetic: ``Shape -> ReduceProd``) have build-time values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimExpr, DimsExprs
from ..plugin.shapes import Shapes, Values, const, flat, norm_axis, reduced_dims, value_array
from ._schema import Op, ValueOp

__all__ = [
    "ReduceSum_1", "ReduceSum", "ReduceMean_1", "ReduceMean", "ReduceMax_1", "ReduceMax",
    "ReduceMin_1", "ReduceMin", "ReduceProd_1", "ReduceProd", "ReduceL1_1", "ReduceL1",
    "ReduceL2_1", "ReduceL2", "ReduceLogSum_1", "ReduceLogSum", "ReduceLogSumExp_1",
    "ReduceLogSumExp", "ReduceSumSquare_1", "ReduceSumSquare", "ArgMax", "ArgMin",
]

#: the axes a reduction runs over: None every axis, () none (``noop_with_empty_axes``)
Axes = tuple[int, ...] | None


def _constants(arr: Any) -> Any:
    """An object array of values as Python ints (``ValueError`` for a symbolic one)."""
    return np.vectorize(const, otypes=[object])(arr) if arr.size else arr


#: what each reduction gives over an empty set: its operation's identity
_IDENTITY: dict[str, float] = {
    "ReduceSum": 0.0, "ReduceMean": math.nan, "ReduceMax": -math.inf, "ReduceMin": math.inf,
    "ReduceProd": 1.0, "ReduceL1": 0.0, "ReduceL2": 0.0, "ReduceLogSum": -math.inf,
    "ReduceLogSumExp": -math.inf, "ReduceSumSquare": 0.0,
}


def reduced_shape(shape: Sequence[int], axes: Axes, keepdims: bool) -> tuple[int, ...]:
    """The output shape of a reduction of a tensor of ``shape`` (concrete dimensions) over
    ``axes`` (as :meth:`ReduceBase.reduce_axes` gives them)."""
    dims = reduced_dims([DimExpr.const(d) for d in shape], axes, keepdims)
    return tuple(d.get_constant_value() for d in dims)


#: how each reduction folds build-time values (object arrays of DimExpr)
_VALUE_FNS: dict[str, Callable[[Any, Axes, bool], Any]] = {
    "ReduceSum": lambda a, axes, k: np.sum(a, axis=axes, keepdims=k),
    "ReduceProd": lambda a, axes, k: np.prod(a, axis=axes, keepdims=k),
    "ReduceMax": lambda a, axes, k: np.max(_constants(a), axis=axes, keepdims=k),
    "ReduceMin": lambda a, axes, k: np.min(_constants(a), axis=axes, keepdims=k),
}


class ReduceBase(ValueOp):
    """A reduction with the ``axes`` attribute: the version before the axes input."""

    float_values = True  # exact on whole numbers

    def build_axes(self, inputs: Sequence[DimsExprs | None]) -> list[int] | None:
        """The axes the node names, when they are known at build time (else None)."""
        axes = self.attrs.get("axes")
        return [] if axes is None else [int(a) for a in axes]

    def selected(self, axes: Sequence[int]) -> Axes:
        """The axes the node reduces, from what it names (attribute version: the attribute;
        absent: all)."""
        given = self.attrs.get("axes")
        return None if given is None else tuple(given)

    def reduce_axes(self, axes: Sequence[int], rank: int) -> Axes:
        """What a kernel reduces an input of ``rank`` over: None every axis, () none, else the
        axes sorted in ``[0, rank)``. ``axes``: the values of the axes input (read by the
        device; ignored by the attribute version)."""
        sel = self.selected(axes)
        if sel is None:
            return None
        return tuple(sorted(norm_axis(a, rank, "axis") for a in sel))

    def empty_value(self, dtype: Any) -> Any:
        """What the reduction gives over an empty set, for a NumPy ``dtype``: the identity of
        its operation; +-inf become the type's extremes for integers, True/False for bool
        (NaN, the mean of nothing, becomes 0 for them)."""
        value = _IDENTITY[self.op_type]
        kind = np.dtype(dtype).kind
        if kind in "iub" and math.isnan(value):
            return 0
        if kind == "b":
            return bool(value > 0)
        if kind in "iu" and math.isinf(value):
            info = np.iinfo(dtype)
            return info.max if value > 0 else info.min
        return value

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        axes = self.build_axes(inputs)
        keep = bool(self.attrs["keepdims"])
        if not self.runtime(axes is None):
            assert axes is not None
            return [reduced_dims(dims, self.selected(axes), keep)]
        if keep:
            return [self.unknown_dims(len(dims))]
        n = inputs[1][0] if len(inputs[1]) else DimExpr.const(1)
        if not n.is_constant():
            raise PluginInterfaceError(
                f"{self.op_type}: with keepdims=0 the number of axes must be known when the "
                "engine is built (the output rank depends on it)")
        return [self.unknown_dims(len(dims) - n.get_constant_value())]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        fn = _VALUE_FNS.get(self.op_type)
        arr = value_array(inputs[0])
        axes = self.build_axes(inputs)
        if fn is None or arr is None or axes is None:
            return None
        try:
            sel = self.reduce_axes(axes, arr.ndim)
            return [flat(fn(arr, sel, bool(self.attrs["keepdims"])))]
        except (ValueError, TypeError):
            return None


class ReduceInputBase(ReduceBase):
    """A reduction with the optional ``axes`` input (1) and ``noop_with_empty_axes``."""

    value_inputs = (1,)

    def build_axes(self, inputs: Sequence[DimsExprs | None]) -> list[int] | None:
        if len(inputs) < 2 or inputs[1] is None:
            return []
        return self.ints(inputs, 1)

    def selected(self, axes: Sequence[int]) -> Axes:
        if axes:
            return tuple(axes)
        return () if self.attrs["noop_with_empty_axes"] else None


class ReduceAttr17(ReduceBase):
    """The attribute version of the reductions whose axes became an input in opset 18."""

    plugin_version = "1"
    max_opset = 17


class ReduceInput18(ReduceInputBase):
    """The input version of the reductions whose axes became an input in opset 18."""

    plugin_version = "18"
    min_opset = 18


# Each reduction in its two versions. Types: float16, float, double, int32, int64, uint32,
# uint64; bfloat16 from opset 13; int8 and uint8 for Max and Min from 12, bool from 20;
# LogSum and LogSumExp floats only from 28.
class ReduceSum_1(ReduceBase):  # noqa: N801
    """sum(x) over the ``axes`` attribute, opsets 1 to 12."""

    plugin_version = "1"
    max_opset = 12


class ReduceSum(ReduceInputBase):
    """sum(x) over the axes input, which arrived in opset 13 (five opsets before the other
    reductions' axes inputs)."""

    plugin_version = "13"
    min_opset = 13


class ReduceMean_1(ReduceAttr17):  # noqa: N801
    """sum(x) / n, n the number of elements reduced; NaN over an empty set."""


class ReduceMean(ReduceInput18):
    """The mean; with ``noop_with_empty_axes`` and no axes, x itself."""


class ReduceMax_1(ReduceAttr17):  # noqa: N801
    """max(x): -inf over an empty set, for integers the type's least value."""


class ReduceMax(ReduceInput18):
    """max(x), from opset 20 for bool too (an "any": an empty set gives False)."""


class ReduceMin_1(ReduceAttr17):  # noqa: N801
    """min(x): +inf over an empty set, for integers the type's greatest value."""


class ReduceMin(ReduceInput18):
    """min(x), from opset 20 for bool too (an "all": an empty set gives True)."""


class ReduceProd_1(ReduceAttr17):  # noqa: N801
    """prod(x); 1 over an empty set.

    Integer products wrap around as the type does, as sums do.
    """


class ReduceProd(ReduceInput18):
    """The product."""


class ReduceL1_1(ReduceAttr17):  # noqa: N801
    """sum(|x|)."""


class ReduceL1(ReduceInput18):
    """The L1 norm; with ``noop_with_empty_axes`` and no axes, |x| elementwise."""


class ReduceL2_1(ReduceAttr17):  # noqa: N801
    """sqrt(sum(x^2)), the Euclidean norm (0 over an empty set)."""


class ReduceL2(ReduceInput18):
    """The Euclidean norm; noop: |x|.

    For integers the root is taken in floating point and cast back (truncated), as onnx's
    reference does.
    """


class ReduceLogSum_1(ReduceAttr17):  # noqa: N801
    """log(sum(x)): -inf over an empty set."""


class ReduceLogSum(ReduceInput18):
    """log(sum(x)); noop: log(x). Floating-point types only from opset 28."""


class ReduceLogSumExp_1(ReduceAttr17):  # noqa: N801
    """log(sum(exp(x))), computed without overflow: the maximum m is taken out first,
    log(sum(exp(x - m))) + m."""


class ReduceLogSumExp(ReduceInput18):
    """log(sum(exp(x))); noop: x. Floating-point types only from opset 28."""


class ReduceSumSquare_1(ReduceAttr17):  # noqa: N801
    """sum(x^2)."""


class ReduceSumSquare(ReduceInput18):
    """sum(x^2); noop: x^2, elementwise."""


class ArgBase(Op):
    """ArgMax/ArgMin along ``axis`` (negative from opset 11); ``select_last_index`` (12)
    picks the last of equal extremes. INT64 output."""

    def arg_axis(self, rank: int) -> int:
        """``axis`` in ``[0, rank)``."""
        return norm_axis(self.attrs["axis"], rank, f"{self.op_type} axis")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        return [reduced_dims(dims, (self.arg_axis(len(dims)),), bool(self.attrs["keepdims"]))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT64]


class ArgMax(ArgBase):
    """The index of the greatest element along ``axis``."""


class ArgMin(ArgBase):
    """The index of the least element along ``axis``."""
