"""onnxruntime's QOperator-format ``com.microsoft`` operators: QLinearAdd, QLinearMul,
QLinearSigmoid, QLinearLeakyRelu, QLinearSoftmax, QLinearAveragePool,
QLinearGlobalAveragePool and QLinearConcat, and the ``com.microsoft`` QuantizeLinear and
DequantizeLinear (ONNX's kernels in another domain); mini-infer's own QLinearLookup and QMaxPool
(domain ``ai.mini_infer``, made by the QDQ rewrite) (schemas in
:mod:`mini_infer_core.ops.contrib_quant`).

Scales and zero points are per tensor. The arithmetic is onnxruntime's on x86 (MLAS), in
float32, so that a quantized graph gives its bits rather than a quantum beside them at ties:

* QLinearAdd (MLAS's AVX2 kernel): ``ra = a_scale / c_scale``, ``rb = b_scale / c_scale``, a
  fixed part ``f = c_zp - fma(ra, a_zp, rb * b_zp)`` (one rounding for the fused product-sum),
  then per element ``y = sat(rint(fma(a, ra, fma(b, rb, f))))`` on the raw integers: the zero
  point inside the rounding, each fma rounded once;
* QLinearMul (MLAS's SSE2 kernel): ``y = sat(rint((a - a_zp) * (b - b_zp) * (a_scale * b_scale
  / c_scale) + c_zp))``, products and sums rounded apart;

the unary ones and QLinearConcat's requantization map each of the 256 input values through a
table (dequantize, the function, quantize: round half to even, then the zero point, then
saturation), pooling and softmax work on the dequantized values.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import contrib_quant as schema
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from .pool import AveragePool, _Pool
from .quantize import DequantizeLinear, QuantizeLinear

__all__ = ["QLinearAdd", "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu",
           "QLinearLookup", "QLinearChannelLookup", "QMaxPool", "QLinearSoftmax",
           "QLinearAveragePool",
           "QLinearGlobalAveragePool",
           "QLinearConcat", "MsQuantizeLinear", "MsDequantizeLinear"]

Array = NDArray[Any]
f32 = np.float32
Real = float | np.floating[Any]


def _scalar(v: Array | None, what: str, op: str, default: float = 0.0) -> np.float32:
    if v is None:
        return f32(default)
    if v.size != 1:
        raise PluginInterfaceError(
            f"{op}: {what} must be one value (per-tensor quantization), got shape {v.shape}")
    return f32(v.reshape(-1)[0])


def _dequantize(x: Array, scale: np.float32, zp: np.float32) -> Array:
    return (x.astype(f32) - zp) * scale


def _store(y: Array, zp: np.float32, out: Array) -> None:
    """``out = saturate(round_half_even(y) + zp)`` (``y`` already divided by the scale)."""
    info = np.iinfo(out.dtype)
    r = np.rint(y)
    r += zp
    np.clip(r, info.min, info.max, out=r)
    np.copyto(out, r, casting="unsafe")


def fma32(x: Real, y: Real, z: Real) -> np.float32:
    """``x * y + z`` rounded once to float32 (C's ``fmaf``; Python 3.11 has no ``math.fma``):
    the exact value, then the nearest float32, ties to even."""
    if not all(math.isfinite(v) for v in (x, y, z)):
        return f32(np.float64(x) * np.float64(y) + np.float64(z))
    exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
    near = f32(float(exact))  # the double's rounding can leave it one float32 step off
    steps = (np.nextafter(near, f32(-np.inf)), near, np.nextafter(near, f32(np.inf)))
    return min((c for c in steps if math.isfinite(c)),
               key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.uint32)) & 1))


@functools.lru_cache(maxsize=256)
def qadd_fixed(ra: Real, za: Real, rb: Real, zb: Real, zc: Real) -> np.float32:
    """QLinearAdd's fixed part ``c_zp - fma(ra, a_zp, rb * b_zp)`` in float32 (the operands in
    the node's order: A's ratio and zero point first); kept for the last parameters seen, so
    that a run does not redo the exact arithmetic."""
    return f32(f32(zc) - fma32(ra, za, f32(rb * f32(zb))))


def _quantize(y: Array, scale: np.float32, zp: np.float32, out: Array) -> None:
    with np.errstate(divide="ignore", invalid="ignore"):
        _store(y.astype(f32) / scale, zp, out)


def _table(dtype: Any, x_scale: np.float32, x_zp: np.float32, y_scale: np.float32,
           y_zp: np.float32, out_dtype: Any, fn: Callable[[Array], Array]) -> Array:
    """The output for each of the 256 bit patterns of an 8-bit ``dtype`` input."""
    values = np.arange(256, dtype=np.uint8).view(dtype)
    table = np.empty(256, out_dtype)
    _quantize(fn(_dequantize(values, x_scale, x_zp)), y_scale, y_zp, table)
    return table


def _lookup(x: Array, table: Array, out: Array) -> None:
    np.take(table, x.view(np.uint8), out=out)


def _channel_lookup(x: Array, table: Array, out: Array, axis: int) -> None:
    """``out = table[c, x]``, ``c`` the index along ``axis`` (table ``(C, 256)``)."""
    c = x.shape[axis]
    offsets = (np.arange(c, dtype=np.int32) * 256).reshape(
        [c if i == axis else 1 for i in range(x.ndim)])
    np.take(table.reshape(-1), np.add(x.view(np.uint8), offsets, dtype=np.int32), out=out)


def _check8(x: Array, op: str) -> None:
    if x.dtype not in (np.uint8, np.int8):
        raise PluginInterfaceError(f"{op}: X must be uint8 or int8, got {x.dtype}")


#: the helpers other distributions' 8-bit kernels share with these (public names:
#: mini-infer-cpu-native's NHWC forms of QLinearGlobalAveragePool, QLinearConcat, the lookups)
qscalar, qstore, qtable, qlookup, check_8bit = _scalar, _store, _table, _lookup, _check8
qchannel_lookup = _channel_lookup


class _Binary(CpuPlugin, schema.QLinearBinaryBase):
    def combine(self, a: Array, b: Array, q: tuple[np.float32, ...]) -> Array:
        """The values to round (C's zero point in them), from the raw integers and ``q``:
        (sa, za, sb, zb, sc, zc)."""
        raise NotImplementedError

    def compute(self, a: Array, a_scale: Array, a_zero_point: Array | None, b: Array,
                b_scale: Array, b_zero_point: Array | None, c_scale: Array,
                c_zero_point: Array | None = None, *, out: Array) -> None:
        op = f"{self.op_type} {self.name!r}"
        sa, sb, sc = (_scalar(s, w, op) for s, w in ((a_scale, "A_scale"), (b_scale, "B_scale"),
                                                     (c_scale, "C_scale")))
        za, zb, zc = (_scalar(z, w, op) for z, w in ((a_zero_point, "A_zero_point"),
                                                     (b_zero_point, "B_zero_point"),
                                                     (c_zero_point, "C_zero_point")))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            y = self.combine(a, b, (sa, za, sb, zb, sc, zc))
        _store(y, f32(0), out)


def _scalar_in_span(a: Array, b: Array) -> bool:
    """Whether ``a`` is one value along the innermost axis where ``b`` is not: onnxruntime's
    broadcast then runs its kernel with the operands exchanged (``a`` the scalar B)."""
    return bool((a.shape[-1:] or (1,))[0] == 1 and (b.shape[-1:] or (1,))[0] != 1)


class QLinearAdd(_Binary, schema.QLinearAdd):
    def combine(self, a: Array, b: Array, q: tuple[np.float32, ...]) -> Array:
        sa, za, sb, zb, sc, zc = q
        if _scalar_in_span(a, b):
            a, b, sa, za, sb, zb = b, a, sb, zb, sa, za
        ra, rb = f32(sa / sc), f32(sb / sc)
        fixed = qadd_fixed(ra, za, rb, zb, zc)
        # each fma in float64 (the products of 8-bit integers and float32 ratios are exact
        # there, and so the sums with float32 values of like magnitude), rounded once to
        # float32
        t = (b.astype(np.float64) * np.float64(rb) + np.float64(fixed)).astype(f32)
        return (a.astype(np.float64) * np.float64(ra) + t).astype(f32)


class QLinearMul(_Binary, schema.QLinearMul):
    def combine(self, a: Array, b: Array, q: tuple[np.float32, ...]) -> Array:
        sa, za, sb, zb, sc, zc = q
        ratio = f32(f32(sa * sb) / sc)
        y = (a.astype(f32) - za) * (b.astype(f32) - zb)
        y *= ratio
        y += zc
        return y


class _Unary(CpuPlugin, schema.QLinearUnaryBase):
    """Through a 256-entry table of ``fn``."""

    def fn(self, x: Array) -> Array:
        raise NotImplementedError

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array, **_: Any) -> None:
        op = f"{self.op_type} {self.name!r}"
        _check8(x, op)
        table = _table(x.dtype, _scalar(x_scale, "X_scale", op),
                       _scalar(x_zero_point, "X_zero_point", op),
                       _scalar(y_scale, "Y_scale", op),
                       _scalar(y_zero_point, "Y_zero_point", op), out.dtype, self.fn)
        _lookup(x, table, out)


class QLinearSigmoid(_Unary, schema.QLinearSigmoid):
    def fn(self, x: Array) -> Array:
        with np.errstate(over="ignore"):
            return (f32(1) / (f32(1) + np.exp(-x))).astype(f32)


class QLinearLeakyRelu(_Unary, schema.QLinearLeakyRelu):
    def fn(self, x: Array) -> Array:
        return np.where(x >= 0, x, x * f32(self.attrs["alpha"])).astype(f32)


class QLinearLookup(CpuPlugin, schema.QLinearLookup):
    """``Y = Table[X]`` (X's bit patterns index the table; mini-infer's own operator)."""

    def compute(self, x: Array, table: Array, *, out: Array) -> None:
        op = f"QLinearLookup {self.name!r}"
        _check8(x, op)
        if table.size != 256 or table.dtype != x.dtype:
            raise PluginInterfaceError(
                f"{op}: Table must be 256 values of X's type ({x.dtype}), got {table.size} "
                f"of {table.dtype}")
        _lookup(x, table.reshape(-1), out)


class QLinearChannelLookup(CpuPlugin, schema.QLinearChannelLookup):
    """``Y[n, c, ...] = Table[c, X[n, c, ...]]`` (mini-infer's own operator)."""

    def compute(self, x: Array, table: Array, *, out: Array) -> None:
        check_channel_table(x, table, 1, f"QLinearChannelLookup {self.name!r}")
        _channel_lookup(x, table, out, 1)


def check_channel_table(x: Array, table: Array, axis: int, op: str) -> None:
    """Raise unless X is 8-bit and ``table`` holds 256 values of X's type per channel."""
    _check8(x, op)
    if x.ndim < 2 or table.size != 256 * x.shape[axis] or table.dtype != x.dtype:
        raise PluginInterfaceError(
            f"{op}: Table must be (C, 256) values of X's type ({x.dtype}) for X of shape "
            f"{x.shape}, got {table.size} of {table.dtype}")


class QMaxPool(_Pool, schema.QMaxPool):
    """MaxPool of the 8-bit tensor (cpu_basic's MaxPool kernel; mini-infer's own operator)."""


class QLinearSoftmax(CpuPlugin, schema.QLinearSoftmax):
    """Softmax of the dequantized values (the zero point cancels), quantized."""

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array, axis: int,
                opset: int) -> None:
        op = f"QLinearSoftmax {self.name!r}"
        _check8(x, op)
        a = norm_axis(axis, x.ndim)
        v = x.astype(f32)
        if int(opset) < 13:
            v = v.reshape(math.prod(x.shape[:a]), -1)
            a = 1
        v = (v - v.max(axis=a, keepdims=True)) * _scalar(x_scale, "X_scale", op) \
            if v.size else v
        e = np.exp(v)
        y = e / e.sum(axis=a, keepdims=True) if v.size else e
        _quantize(y.reshape(x.shape), _scalar(y_scale, "Y_scale", op),
                  _scalar(y_zero_point, "Y_zero_point", op), out)


def _to_channels_first(x: Array, last: int) -> Array:
    return np.moveaxis(x, -1, 1) if last else x


class QLinearAveragePool(CpuPlugin, schema.QLinearAveragePool):
    """AveragePool (cpu_basic's kernel) on the dequantized values."""

    def setup(self) -> None:
        super().setup()
        pool = {k: v for k, v in self.attrs.items() if k != "channels_last"}
        self.pool = AveragePool(self.name, **pool)

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array, **_: Any) -> None:
        op = f"QLinearAveragePool {self.name!r}"
        _check8(x, op)
        last = int(self.attrs["channels_last"])
        xf = _dequantize(_to_channels_first(x, last), _scalar(x_scale, "x_scale", op),
                         _scalar(x_zero_point, "x_zero_point", op))
        y = np.empty(_to_channels_first(out, last).shape, f32)
        self.pool.compute(np.ascontiguousarray(xf), out=y)
        _quantize(np.moveaxis(y, 1, -1) if last else y, _scalar(y_scale, "y_scale", op),
                  _scalar(y_zero_point, "y_zero_point", op), out)


class QLinearGlobalAveragePool(CpuPlugin, schema.QLinearGlobalAveragePool):
    """onnxruntime's: the integer sums less ``count * x_zp``, times ``x_scale / (y_scale *
    count)``, rounded."""

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array, **_: Any) -> None:
        op = f"QLinearGlobalAveragePool {self.name!r}"
        _check8(x, op)
        last = int(self.attrs["channels_last"])
        axes = tuple(range(1, x.ndim - 1)) if last else tuple(range(2, x.ndim))
        count = math.prod(x.shape[a] for a in axes)
        acc = x.astype(np.int64).sum(axis=axes, keepdims=True)
        acc -= np.int64(_scalar(x_zero_point, "x_zero_point", op)) * count
        mult = _scalar(x_scale, "x_scale", op) / (_scalar(y_scale, "y_scale", op)
                                                  * f32(max(count, 1)))
        _store(acc.astype(f32) * mult, _scalar(y_zero_point, "y_zero_point", op), out)


class QLinearConcat(CpuPlugin, schema.QLinearConcat):
    """Each input requantized through a table (copied where its scale and zero point are
    Y's), written into its slice of the output."""

    def compute(self, y_scale: Array, y_zero_point: Array | None, *inputs: Array | None,
                out: Array, axis: int) -> None:
        op = f"QLinearConcat {self.name!r}"
        ys = _scalar(y_scale, "Y_scale", op)
        yz = _scalar(y_zero_point, "Y_zero_point", op)
        a = norm_axis(axis, out.ndim)
        at = 0
        for i in range(0, len(inputs), 3):
            x, s, z = inputs[i:i + 3]
            assert x is not None and s is not None
            _check8(x, op)
            xs, xz = _scalar(s, "X_scale", op), _scalar(z, "X_zero_point", op)
            part = out[(slice(None),) * a + (slice(at, at + x.shape[a]),)]
            at += x.shape[a]
            if xs == ys and xz == yz and x.dtype == out.dtype:
                np.copyto(part, x)
            else:
                part[...] = _table(x.dtype, xs, xz, ys, yz, out.dtype, lambda v: v)[
                    x.view(np.uint8)]


class MsQuantizeLinear(QuantizeLinear, schema.MsQuantizeLinear):
    op_type = schema.MsQuantizeLinear.op_type
    plugin_type = schema.MsQuantizeLinear.plugin_type


class MsDequantizeLinear(DequantizeLinear, schema.MsDequantizeLinear):
    op_type = schema.MsDequantizeLinear.op_type
    plugin_type = schema.MsDequantizeLinear.plugin_type
