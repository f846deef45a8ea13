"""onnxruntime's quantized ``com.microsoft`` products: MatMulNBits, DynamicQuantizeMatMul,
MatMulIntegerToFloat and QGemm (schemas in :mod:`mini_infer_core.ops.contrib_quant`).

Integer products are accumulated exactly (float64 BLAS, as :mod:`.qlinear` does), then scaled
in float32 as onnxruntime's output stages do: ``float(acc) * (a_scale * b_scale) + bias``.
MatMulNBits dequantizes its weights to float32 (kept between runs while they are constants,
i.e. read-only arrays) and multiplies in float32; with ``accuracy_level`` 4 it first rounds A
to int8 per block of K (``scale = max|a| / 127``) as onnxruntime's int8 path does, so that the
product is that path's (up to the order of float additions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import contrib_quant as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._quant import requantize

__all__ = ["MatMulNBits", "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QGemm"]

Array = NDArray[Any]
f32 = np.float32


def unpack_bits(packed: Array, bits: int) -> Array:
    """uint8 bytes holding ``8 // bits`` values each, low bits first: the values, the last
    axis ``8 // bits`` times longer."""
    if bits == 8:
        return packed
    shifts = np.arange(0, 8, bits, dtype=np.uint8)
    vals = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return vals.reshape(*packed.shape[:-1], -1)


def dynamic_quantize(x: Array) -> tuple[Array, np.float32, np.float32]:
    """DynamicQuantizeLinear's uint8 quantization of ``x`` (float32 arithmetic, as the ONNX
    spec and onnxruntime compute it): the values (float64, whole numbers), scale, zero
    point."""
    hi = f32(max(0.0, float(np.max(x)))) if x.size else f32(0)
    lo = f32(min(0.0, float(np.min(x)))) if x.size else f32(0)
    scale = f32(1.0) if hi == lo else f32(hi - lo) / f32(255)
    zp = f32(np.rint(np.clip(f32(0) - lo / scale, 0, 255)))
    with np.errstate(invalid="ignore"):
        q = np.rint(x.astype(f32) / scale)
    q += zp
    np.clip(q, 0, 255, out=q)
    return q.astype(np.float64), scale, zp


def _per_column(v: Array, n: int, what: str, op: str) -> Array:
    """A scale or zero point of B: per tensor (one element) or per column (``[N]``)."""
    if v.size == 1:
        return v.reshape(())
    if v.shape[-1] != n:
        raise PluginInterfaceError(
            f"{op}: {what} has shape {v.shape}; expected one value or one per column ({n})")
    return v


def _shift(b: Array, b_zp: Array | None) -> Array:
    """``b - b_zp`` in float64."""
    bf = b.astype(np.float64)
    if b_zp is not None:
        bf -= b_zp.astype(np.float64)
    return bf


def _integer_product(a: Array, a_zp: Array | None, bf: Array) -> Array:
    """``(a - a_zp) @ bf`` exactly, in float64 (``bf``: :func:`_shift`'s)."""
    af = a.astype(np.float64)
    if a_zp is not None:
        af -= a_zp.astype(np.float64).reshape(())
    acc: Array = np.matmul(af, bf)
    return acc


class _Kept(CpuPlugin):
    """Keeps what it makes of constant inputs (read-only arrays: the engine's constants)
    between runs."""

    def setup(self) -> None:
        super().setup()
        #: kind -> (key, the inputs, value)
        self._cache: dict[str, tuple[tuple[Any, ...], tuple[Any, ...], Any]] = {}

    def _constant(self, kind: str, make: Any, *parts: Array | None) -> Any:
        """``make()``, kept while ``parts`` are the same read-only (constant) arrays."""
        constant = all(p is None or not p.flags.writeable for p in parts)
        key = (kind, *(id(p) for p in parts))
        hit = self._cache.get(kind)
        if constant and hit is not None and hit[0] == key:
            return hit[2]
        value = make()
        if constant:  # the arrays are held beside the key, so their ids stay theirs
            self._cache[kind] = (key, parts, value)
        return value

    def shifted_b(self, b: Array, b_zp: Array | None, op: str) -> Array:
        """``b - b_zp`` (per tensor or per column) in float64, kept for a constant B."""
        def make() -> Array:
            return _shift(b, None if b_zp is None
                          else _per_column(b_zp, b.shape[-1], "b_zero_point", op))

        bf: Array = self._constant("b", make, b, b_zp)
        return bf


def _scaled(acc: Array, scale: Array, bias: Array | None, out: Array) -> None:
    """``out = float32(acc) * scale + bias`` (scale, bias per column or one)."""
    y = acc.astype(f32)
    y *= scale.astype(f32)
    if bias is not None:
        y += bias.astype(f32)
    np.copyto(out, y, casting="unsafe")


class DynamicQuantizeMatMul(_Kept, schema.DynamicQuantizeMatMul):
    def compute(self, a: Array, b: Array, b_scale: Array, b_zero_point: Array | None = None,
                bias: Array | None = None, *, out: Array) -> None:
        op = f"DynamicQuantizeMatMul {self.name!r}"
        n = b.shape[-1]
        qa, a_scale, a_zp = dynamic_quantize(a)
        qa -= np.float64(a_zp)
        acc = np.matmul(qa, self.shifted_b(b, b_zero_point, op))
        scale = f32(a_scale) * _per_column(b_scale, n, "b_scale", op).astype(f32)
        _scaled(acc, scale, bias, out)


class MatMulIntegerToFloat(_Kept, schema.MatMulIntegerToFloat):
    def compute(self, a: Array, b: Array, a_scale: Array, b_scale: Array,
                a_zero_point: Array | None = None, b_zero_point: Array | None = None,
                bias: Array | None = None, *, out: Array) -> None:
        op = f"MatMulIntegerToFloat {self.name!r}"
        n = b.shape[-1]
        if a_scale.size != 1:
            raise PluginInterfaceError(f"{op}: a_scale must be one value, got {a_scale.shape}")
        acc = _integer_product(a, a_zero_point, self.shifted_b(b, b_zero_point, op))
        scale = a_scale.astype(f32).reshape(()) * _per_column(b_scale, n, "b_scale", op
                                                              ).astype(f32)
        _scaled(acc, scale, bias, out)


class QGemm(_Kept, schema.QGemm):
    def compute(self, a: Array, a_scale: Array, a_zero_point: Array, b: Array,
                b_scale: Array, b_zero_point: Array, c: Array | None = None,
                y_scale: Array | None = None, y_zero_point: Array | None = None, *,
                out: Array, transA: int, transB: int, alpha: float) -> None:
        op = f"QGemm {self.name!r}"
        a2 = a.T if transA else a
        b2 = b.T if transB else b
        n = b2.shape[1]
        bf = self._constant("b", lambda: _shift(b2, _per_column(
            b_zero_point, n, "b_zero_point", op)), b, b_zero_point)  # b: b2 is a new view
        acc = _integer_product(a2, a_zero_point, bf)
        if c is not None:
            acc += c.astype(np.float64)
        scale = (f32(alpha) * a_scale.astype(f32).reshape(())
                 * _per_column(b_scale, n, "b_scale", op).astype(f32))
        if y_scale is None:
            _scaled(acc, scale, None, out)
            return
        requantize(acc, (scale / y_scale.astype(f32).reshape(())).astype(np.float64),
                   y_zero_point, out)


class MatMulNBits(_Kept, schema.MatMulNBits):
    def _blocks(self, b: Array, scales: Array, zero_points: Array | None, a_dtype: Any
                ) -> tuple[Array, Array, Array | Any]:
        """B's values ``[N, n_blocks, block]``, scales and zero points ``[N, n_blocks]``
        (float32), each checked against K, N, bits and block_size."""
        op = f"MatMulNBits {self.name!r}"
        n, nb, bits, block = self.n, self.n_blocks, self.bits, self.block
        blob = block * bits // 8
        if b.dtype != np.uint8 or b.size != n * nb * blob:
            raise PluginInterfaceError(
                f"{op}: B must be uint8 [N, n_blocks, block_size * bits / 8] = [{n}, {nb}, "
                f"{blob}], got {b.dtype} {b.shape}")
        q = unpack_bits(b.reshape(n, nb, blob), bits)
        if scales.size != n * nb:
            raise PluginInterfaceError(
                f"{op}: scales must hold N * n_blocks = {n * nb} values, got {scales.shape}")
        s = scales.astype(f32).reshape(n, nb)
        if zero_points is None:
            zp: Array | Any = f32(1 << (bits - 1))
        elif zero_points.dtype == np.uint8 and np.dtype(a_dtype) != np.uint8:
            per_row = -(-nb * bits // 8)
            if zero_points.size != n * per_row:
                raise PluginInterfaceError(
                    f"{op}: packed uint8 zero_points must hold N * ceil(n_blocks * bits / 8)"
                    f" = {n * per_row} bytes, got {zero_points.shape}")
            zp = unpack_bits(zero_points.reshape(n, per_row), bits)[:, :nb].astype(f32)
        else:
            if zero_points.size != n * nb:
                raise PluginInterfaceError(
                    f"{op}: zero_points of A's type must be shaped as scales ({n * nb} "
                    f"values), got {zero_points.shape}")
            zp = zero_points.astype(f32).reshape(n, nb)
        return q, s, zp

    def _weights(self, b: Array, scales: Array, zero_points: Array | None,
                 g_idx: Array | None, a_dtype: Any) -> Array:
        """The dequantized weights ``[N, K]`` in float32."""
        q, s, zp = self._blocks(b, scales, zero_points, a_dtype)
        k = self.k
        vals = q.reshape(self.n, -1)[:, :k].astype(f32)
        if g_idx is None:
            group = np.arange(k) // self.block
        else:
            group = g_idx.astype(np.int64).reshape(-1)
            if group.size != k or group.min(initial=0) < 0 or group.max(
                    initial=0) >= self.n_blocks:
                raise PluginInterfaceError(
                    f"MatMulNBits {self.name!r}: g_idx must hold K = {k} block indices below "
                    f"{self.n_blocks}, got shape {g_idx.shape}")
        zcols = zp[:, group] if isinstance(zp, np.ndarray) else zp
        w: Array = (vals - zcols) * s[:, group]
        return w

    def _int8_rows(self, a: Array) -> Array:
        """accuracy_level 4's A: quantized to int8 per block of K (``scale = max|a| / 127``,
        round half to even), as onnxruntime's int8 path quantizes it, and dequantized again.
        Its product with the dequantized weights is the sum over blocks of ``scale_a *
        scale_b * (integer dot product)`` that onnxruntime computes, up to the order of the
        float additions: one GEMM instead of one per block."""
        nb, block, k = self.n_blocks, self.block, self.k
        rows = a.reshape(-1, k).astype(f32)
        padded = np.zeros((rows.shape[0], nb * block), f32)
        padded[:, :k] = rows
        blocks = padded.reshape(-1, nb, block)
        sa = np.max(np.abs(blocks), axis=2, keepdims=True) / f32(127)
        with np.errstate(divide="ignore"):
            inv = np.where(sa != 0, f32(1) / sa, f32(0)).astype(f32)
        q = np.rint(blocks * inv)
        q *= sa
        rounded: Array = q.reshape(rows.shape[0], nb * block)[:, :k].reshape(a.shape)
        return rounded

    def compute(self, a: Array, b: Array, scales: Array, zero_points: Array | None = None,
                g_idx: Array | None = None, bias: Array | None = None, *, out: Array,
                **_: Any) -> None:
        # onnxruntime's int8 path: float32 A, no g_idx, zero points absent or packed
        if int(self.attrs["accuracy_level"]) == 4 and a.dtype == np.float32 and \
                g_idx is None and (zero_points is None or zero_points.dtype == np.uint8):
            a = self._int8_rows(a)
        w = self._constant("float", lambda: self._weights(
            b, scales, zero_points, g_idx, a.dtype), b, scales, zero_points, g_idx)
        y = np.matmul(a.astype(f32), w.T)
        if bias is not None:
            y += bias.astype(f32)
        np.copyto(out, y, casting="unsafe")
