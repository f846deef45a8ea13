"""cpu_basic's MatMulNBits with 4-bit weights on the compiled kernel (:mod:`._qnbits`,
``_qnbits.c``): the weights stay 4-bit, dequantized a panel at a time as the product runs.

* ``accuracy_level`` 0-3: float compute, the weights onnxruntime's float path dequantizes
  (``(q - zero_point) * scale`` in float32), multiplied with FMA.
* ``accuracy_level`` 4 (float32 A, zero points absent or packed uint8): A quantized to int8
  per block of K (``scale = max|a| / 127``), integer dot products with the 4-bit values
  (AVX-512 VNNI or AVX2), each block scaled in float, as onnxruntime's int8 path.

A constant B is repacked by the build into the kernel's panels (``__qpacked__`` = 1: the
engine stores it so, same shape and dtype); the scales and zero points are put in the panels'
order once, at the first run. A B computed at run time is packed on each run. Other bit
widths, a ``g_idx`` that reorders K, and A's types other than float32 and float16 are
cpu_basic's (a packed B unpacked once).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_matmul as _contrib

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import Repacked
from mini_infer_core.plugin.arrays import NDArray

from ._abi import NBitsArgs
from ._derived import Derived
from ._qnbits import last_panel, nbits_args, pack_q4, panel_params, run_nbits, unpack_q4

__all__ = ["MatMulNBits"]

Array = NDArray[Any]
_FLOATS = (np.dtype(np.float32), np.dtype(np.float16))


class MatMulNBits(Derived, _contrib.MatMulNBits):
    """4-bit block-quantized weights on the compiled kernel (see the module)."""

    hidden_fields: ClassVar[tuple[str, ...]] = (*_contrib.MatMulNBits.hidden_fields,
                                                "__qpacked__")
    package = "mini-infer-cpu-native"
    #: the arrays of the last run (by identity) and the product made for them
    _last: tuple[tuple[Any, ...], NBitsArgs] | None = None

    def _trivial_groups(self, g_idx: Array | None) -> bool:
        """No g_idx, or one that maps row k to block k // block_size (nothing reordered)."""
        if g_idx is None:
            return True
        g = g_idx.reshape(-1)
        return g.size == self.k and bool(np.array_equal(g, np.arange(self.k) // self.block))

    def _b_bytes(self) -> int:
        return self.n * self.n_blocks * self.block // 2

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """A constant 4-bit B stored in the kernel's panels (where the kernel will read it:
        K not reordered by g_idx)."""
        b = constants[1] if len(constants) > 1 else None
        if self.bits != 4 or b is None or b.dtype != np.uint8 or b.size != self._b_bytes():
            return {}
        if len(inputs) > 4 and inputs[4] is not None:
            g_idx = constants[4] if len(constants) > 4 else None
            if g_idx is None or not self._trivial_groups(g_idx):
                return {}
        return {1: Repacked(pack_q4(b, self.n, self.n_blocks, self.block),
                            lambda: self.record("__qpacked__", 1))}

    def _onnx_b(self, b: Array) -> Array:
        """B as the ONNX graph has it (a packed one unpacked once)."""
        if self.hidden.get("__qpacked__"):
            return self._derived(b, "onnx", lambda w: unpack_q4(
                w, self.n, self.n_blocks, self.block))
        return b

    def _zero_points(self, zero_points: Array, a_dtype: Any) -> Array:
        """The zero points as float32 ``(N, k_blocks)``: packed uint8 (4 bits, low first) or
        A's type shaped as the scales."""
        n, nb = self.n, self.n_blocks
        op = f"MatMulNBits {self.name!r}"
        if zero_points.dtype == np.uint8 and np.dtype(a_dtype) != np.uint8:
            per_row = -(-nb // 2)
            if zero_points.size != n * per_row:
                raise PluginInterfaceError(
                    f"{op}: packed uint8 zero_points must hold N * ceil(n_blocks / 2) = "
                    f"{n * per_row} bytes, got {zero_points.shape}")
            z = zero_points.reshape(n, per_row)
            vals = np.stack([z & 15, z >> 4], axis=2).reshape(n, 2 * per_row)[:, :nb]
            return vals.astype(np.float32)
        if zero_points.size != n * nb:
            raise PluginInterfaceError(
                f"{op}: zero_points of A's type must be shaped as scales ({n * nb} values), "
                f"got {zero_points.shape}")
        return zero_points.astype(np.float32).reshape(n, nb)

    def compute(self, a: Array, b: Array, scales: Array, zero_points: Array | None = None,
                g_idx: Array | None = None, bias: Array | None = None, *, out: Array,
                **kw: Any) -> None:
        key = (a, out, b, scales, zero_points, g_idx, bias)
        last = self._last
        if last is not None and all(x is y for x, y in zip(last[0], key, strict=True)):
            run_nbits(last[1])
            return
        packed = bool(self.hidden.get("__qpacked__"))
        if (self.bits != 4 or a.dtype not in _FLOATS or out.dtype not in _FLOATS
                or b.dtype != np.uint8 or b.size != self._b_bytes()
                or scales.size != self.n * self.n_blocks or not self._trivial_groups(g_idx)
                or (bias is not None and bias.size != self.n)):
            super().compute(a, self._onnx_b(b), scales, zero_points, g_idx, bias, out=out, **kw)
            return
        n, nb, block = self.n, self.n_blocks, self.block
        if packed:
            bp = b
        else:
            bp = self._derived(b, "pack", lambda w: pack_q4(w, n, nb, block))
        blast = self._derived(bp, "last", lambda w: last_panel(w, n, nb, block))
        sp = self._derived(scales, "scales", lambda s: panel_params(s.astype(np.float32), n, nb))
        zp = None if zero_points is None else self._derived(
            zero_points, "zp", lambda z: panel_params(self._zero_points(z, a.dtype), n, nb))
        int8 = (int(self.attrs["accuracy_level"]) == 4 and a.dtype == np.float32
                and (zero_points is None or zero_points.dtype == np.uint8))
        rows = np.ascontiguousarray(a, np.float32).reshape(-1, self.k)
        direct = out.dtype == np.float32 and out.flags.c_contiguous and out.flags.aligned
        c = out.reshape(rows.shape[0], n) if direct else np.empty((rows.shape[0], n), np.float32)
        bias32 = None if bias is None else np.ascontiguousarray(bias, np.float32).reshape(-1)
        args = nbits_args(rows, bp, blast, sp, zp, bias32, c, kb=nb, block=block, int8=int8)
        run_nbits(args)
        if not direct:
            np.copyto(out, c.reshape(out.shape), casting="unsafe")
            return
        # kept for the next runs where A is read in place and the rest is constant
        constant = all(x is None or not x.flags.writeable for x in key[2:])
        in_place = a.flags.c_contiguous and a.dtype == np.float32  # rows is a view of a
        self._last = (key, args) if constant and in_place else None
