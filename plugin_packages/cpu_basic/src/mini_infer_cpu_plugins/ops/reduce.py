"""Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare, ArgMax, ArgMin --
NumPy reductions whose results are cast to the input's type (schemas, axes and shapes in
:mod:`mini_infer_core.ops.reduce`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import reduce as schema
from mini_infer_core.ops.reduce import Axes, reduced_shape
from mini_infer_core.plugin import quiet_fp
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit
from ._util import kernel

__all__ = [
    "ReduceSum_1", "ReduceSum", "ReduceMean_1", "ReduceMean", "ReduceMax_1", "ReduceMax",
    "ReduceMin_1", "ReduceMin", "ReduceProd_1", "ReduceProd", "ReduceL1_1", "ReduceL1",
    "ReduceL2_1", "ReduceL2", "ReduceLogSum_1", "ReduceLogSum", "ReduceLogSumExp_1",
    "ReduceLogSumExp", "ReduceSumSquare_1", "ReduceSumSquare", "ArgMax", "ArgMin",
]

Array = NDArray[Any]


def _sum(x: Array, axes: Axes, k: bool) -> Array:
    return np.sum(x, axis=axes, keepdims=k, dtype=x.dtype)


def _mean(x: Array, axes: Axes, k: bool) -> Array:
    return np.mean(x, axis=axes, keepdims=k, dtype=x.dtype)


def _max(x: Array, axes: Axes, k: bool) -> Array:
    return np.max(x, axis=axes, keepdims=k)  # type: ignore[no-any-return]


def _min(x: Array, axes: Axes, k: bool) -> Array:
    return np.min(x, axis=axes, keepdims=k)  # type: ignore[no-any-return]


def _prod(x: Array, axes: Axes, k: bool) -> Array:
    return np.prod(x, axis=axes, keepdims=k, dtype=x.dtype)  # type: ignore[no-any-return]


def _l1(x: Array, axes: Axes, k: bool) -> Array:
    return np.sum(np.abs(x), axis=axes, keepdims=k, dtype=x.dtype)


def _l2(x: Array, axes: Axes, k: bool) -> Array:
    return np.sqrt(np.sum(np.square(x), axis=axes, keepdims=k))  # type: ignore[no-any-return]


def _log_sum(x: Array, axes: Axes, k: bool) -> Array:
    return np.log(np.sum(x, axis=axes, keepdims=k))  # type: ignore[no-any-return]


def _log_sum_exp(x: Array, axes: Axes, k: bool) -> Array:
    if np.isfinite(x).all():  # nothing to keep out of the max (naive Bayes' one row): the
        m = np.max(x, axis=axes, keepdims=True)  # same values in three fewer calls
    else:
        finite = np.where(np.isinf(x), -np.inf, x)
        m = np.max(finite, axis=axes, keepdims=True)
        m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    s = np.sum(np.exp(x - m), axis=axes, keepdims=True, dtype=x.dtype)
    r = np.log(s) + m
    return r if k else r.reshape(reduced_shape(x.shape, axes, False))  # type: ignore[no-any-return]


def _sum_square(x: Array, axes: Axes, k: bool) -> Array:
    return np.sum(np.square(x), axis=axes, keepdims=k, dtype=x.dtype)


#: the ufuncs whose ``reduce`` the bound kernels call positionally (typed loosely: NumPy's
#: stubs know only its keyword form)
_ADD: Any = np.add
_MAX: Any = np.maximum
_LOGADDEXP: Any = np.logaddexp
#: the most terms a bound ReduceLogSumExp adds by ``logaddexp.reduce`` (one NumPy call, each
#: term's log(exp(a) + exp(b)) exact to an ulp or two, the same infinities and NaN as the
#: max-shifted sum) rather than by the max-shifted sum's seven calls (~1 against 5-7 us for
#: a one-row (1, 3) on this machine); longer rows keep the sum: its error does not grow
#: with a step per term, and it runs faster over many terms
_FEW_TERMS = 16


def _log_sum_exp_into(x: Array, axes: Axes, dst: Array, tmp: Array, m: Array) -> None:
    """``_log_sum_exp`` into ``dst`` (``x``'s shape with the reduced axes kept as 1) through
    the buffers ``tmp`` (like ``x``) and ``m`` (like ``dst``); an infinite ``x`` goes the
    NumPy way (its max kept out)."""
    if not np.isfinite(x).all():
        dst[...] = _log_sum_exp(x, axes, True)
        return
    _MAX.reduce(x, axes, None, m, True)
    np.subtract(x, m, tmp)
    np.exp(tmp, tmp)
    _ADD.reduce(tmp, axes, None, dst, True)
    np.log(dst, dst)
    np.add(dst, m, dst)


def _sum_square_into(x: Array, axes: Axes, dst: Array, tmp: Array) -> None:
    np.multiply(x, x, tmp)
    _ADD.reduce(tmp, axes, None, dst, True)


#: ``kernel(x, axes, keepdims)`` of each reduction of a non-empty ``x`` (axes None: all,
#: (): none)
_KERNELS: dict[str, Callable[[Array, Axes, bool], Array]] = {
    "ReduceSum": _sum, "ReduceMean": _mean, "ReduceMax": _max,
    "ReduceMin": _min, "ReduceProd": _prod, "ReduceL1": _l1,
    "ReduceL2": _l2, "ReduceLogSum": _log_sum, "ReduceLogSumExp": _log_sum_exp,
    "ReduceSumSquare": _sum_square,
}


#: the reductions that are one ufunc's ``reduce`` (Mean: then divided by the count)
_UFUNCS: dict[str, Any] = {"ReduceSum": np.add, "ReduceMean": np.add, "ReduceMax": np.maximum,
                           "ReduceMin": np.minimum}


class _Reduce(CpuPlugin, schema.ReduceBase):
    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None,
                keepdims: int = 1, **_: Any) -> Any:
        sel = self.reduce_axes(as_ints(axes), x.ndim)
        ufunc = _UFUNCS.get(self.op_type)
        if ufunc is not None and out is not None and x.size and x.dtype.kind == "f" \
                and out.dtype == x.dtype and out.flags.c_contiguous:
            # straight into the output: no result array, no copy (tiny tensors: the
            # np.mean/np.sum wrappers cost more than the sum)
            dst = out.reshape(tuple(1 if sel is None or i in sel else d
                                    for i, d in enumerate(x.shape)))
            ufunc.reduce(x, axis=sel, keepdims=True, out=dst)
            if self.op_type == "ReduceMean":
                dst /= x.size // max(dst.size, 1)
            return None
        if x.size == 0:
            r = np.full(reduced_shape(x.shape, sel, bool(keepdims)), self.empty_value(x.dtype),
                        x.dtype)
            return emit(r, out)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            r = _KERNELS[self.op_type](x, sel, bool(keepdims))
        return emit(np.asarray(r).astype(x.dtype, copy=False), out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """Sum, Max and Min of a non-empty float tensor over constant axes: the ufunc's
        ``reduce`` straight into the output, bound."""
        x, out = inputs[0], outputs[0]
        axes = inputs[1] if len(inputs) > 1 else None
        ufunc = _UFUNCS.get(self.op_type)
        if self.op_type == "ReduceMean" or not isinstance(x, np.ndarray) \
                or not isinstance(out, np.ndarray) or not x.size or x.dtype.kind != "f" \
                or out.dtype != x.dtype or not out.flags.c_contiguous:
            return None
        sel = self.reduce_axes(as_ints(axes), x.ndim)
        dst = out.reshape(tuple(1 if sel is None or i in sel else d
                                for i, d in enumerate(x.shape)))
        if ufunc is not None:
            return partial(ufunc.reduce, x, sel, None, dst, True)
        if self.op_type == "ReduceLogSumExp":
            axes_ = tuple(range(x.ndim)) if sel is None else sel
            terms = [a for a in axes_ if x.shape[a] != 1]
            if len(terms) <= 1 and axes_ and (not terms or x.shape[terms[0]] <= _FEW_TERMS):
                # a few terms along one axis (naive Bayes' class scores): one call
                return quiet_fp(partial(_LOGADDEXP.reduce, x, (terms or axes_)[0], None, dst,
                                        True))
            return quiet_fp(partial(_log_sum_exp_into, x, sel, dst, np.empty_like(x),
                                    np.empty_like(dst)))
        if self.op_type == "ReduceSumSquare":
            return partial(_sum_square_into, x, sel, dst, np.empty_like(x))
        return None


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

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The first index (``select_last_index`` 0) of a non-empty axis, straight into the
        output (viewed without the kept axis), bound."""
        x, out = inputs[0], outputs[0]
        if self.attrs["select_last_index"] or not isinstance(x, np.ndarray) or \
                not isinstance(out, np.ndarray) or out.dtype != np.intp or \
                not out.flags.c_contiguous or x.dtype.kind not in "biuf" or not x.size:
            return None
        a = self.arg_axis(x.ndim)
        view = out.reshape(x.shape[:a] + x.shape[a + 1:])
        find: Any = x.argmax if type(self).ufunc is np.argmax else x.argmin
        return partial(find, a, view)


ArgMax, ArgMin = (kernel(op, _Arg, f, __name__)
                  for op, f in ((schema.ArgMax, np.argmax), (schema.ArgMin, np.argmin)))
