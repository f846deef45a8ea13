"""cpu_basic's ``com.microsoft`` QLinearGlobalAveragePool and QLinearConcat taking NHWC
tensors (``TensorFormat.HWC``, negotiated by the builder), so that the activations between two
integer convolutions need no transposition:

* QLinearGlobalAveragePool: X NHWC (the sums over its pixels) and Y in either format (one pixel:
  (N, C, 1, 1) and (N, 1, 1, C) are the same bytes); cpu_basic's arithmetic (onnxruntime's:
  the integer sums less ``count * x_zp``, times ``x_scale / (y_scale * count)``, rounded),
  compiled (``mi_qgap_i8``, ``_qgap.c``: int32 sums vectorized over the channels, the same
  float32 multiply and rounding, so the same bytes as the NumPy formula it replaces).
* QLinearConcat: each input copied where its scale and zero point are Y's, else through
  cpu_basic's requantization table (kept for constant parameters), looked up in one compiled
  pass; along the channels (``axis`` 1) of rank-4 tensors every X and Y may be NHWC (the last
  axis then).

QLinearGlobalAveragePool on LINEAR tensors is cpu_basic's kernel as it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_qlinear as _basic

from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ._abi import QGapArgs
from ._kept import KeptCalls
from ._native import _kernel
from ._qformats import hwc_formats
from ._qgemm import _check, _ptr
from .qelementwise import lookup

__all__ = ["QLinearConcat", "QLinearGlobalAveragePool"]

Array = NDArray[Any]
HWC = TensorFormat.HWC
_BYTES = (DataType.UINT8, DataType.INT8)
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_gap = _kernel("mi_qgap_i8", QGapArgs)
#: MI_QGAP_MAX_HW (_args.h): the most pixels whose 8-bit sums fit the kernel's int32
_MAX_HW = 8421504


class QLinearGlobalAveragePool(KeptCalls, _basic.QLinearGlobalAveragePool):
    """The mean of NHWC pixels (see the module); the compiled call kept as the step's for
    constant parameters (:class:`._kept.KeptCalls`: run without ``enqueue`` and ``compute``).
    """

    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc = in_out[pos]
        if desc.format is not HWC:  # Y LINEAR after an NHWC X too: the same bytes
            return super().supports_format_combination(pos, in_out, num_inputs)
        return (pos in (0, num_inputs) and len(desc.shape) == 4 and desc.dtype in _BYTES
                and not int(self.attrs.get("channels_last", 0)))

    def compute(self, x: Array, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None = None, *, out: Array, **kw: Any) -> None:
        if not hwc_formats(self)[0]:
            super().compute(x, x_scale, x_zero_point, y_scale, y_zero_point, out=out, **kw)
            return
        key = (x.shape, x.dtype, out.shape, out.dtype, x_scale, x_zero_point, y_scale,
               y_zero_point)
        if self._run_kept(x, out, key):
            return
        op = f"QLinearGlobalAveragePool {self.name!r}"
        _basic.check_8bit(x, op)
        n, c = x.shape[0], x.shape[-1]
        count = math.prod(x.shape[1:-1])
        xs, ys, zx, zy = self._params(x_scale, x_zero_point, y_scale, y_zero_point, op)
        mult = xs / (ys * np.float32(max(count, 1)))  # onnxruntime's, in float32
        if (x.dtype == out.dtype and x.flags.c_contiguous and out.flags.c_contiguous
                and count <= _MAX_HW):
            kn = "mi_qgap_i8"
            args = QGapArgs(
                _ptr(x, _INT8, x.size, False, kn, "x"), _ptr(out, _INT8, n * c, True, kn, "y"),
                n, count, c, float(mult), int(zx), int(zy), int(x.dtype == np.int8))
            _check(_gap, args)
            self._calls = None
            if all(p is None or not p.flags.writeable for p in key[4:]):
                self._kept_args = (key, args)
                self._calls = ((x, out, *key[4:]), [(_gap, (QGapArgs.from_buffer_copy(args),))])
            return
        acc = x.reshape(n, -1, c).sum(axis=1, dtype=np.int64)
        acc -= np.int64(zx) * count
        # one pixel per image: NCHW and NHWC hold the same bytes
        _basic.qstore(acc.astype(np.float32) * mult, np.float32(zy), out.reshape(n, c))

    #: the last compiled run's (shapes, dtypes and parameters by identity; its arguments)
    _kept_args: tuple[tuple[Any, ...], QGapArgs] | None = None

    def _run_kept(self, x: Array, out: Array, key: tuple[Any, ...]) -> bool:
        """Run the kept arguments again where they were made for ``key`` (the same shapes
        and constant parameters: only the addresses of X and Y can differ)."""
        kept = self._kept_args
        if kept is None or kept[0][:4] != key[:4] or not (
                x.flags.c_contiguous and out.flags.c_contiguous and out.flags.writeable) \
                or any(p is not q for p, q in zip(kept[0][4:], key[4:], strict=True)):
            return False
        args = QGapArgs.from_buffer_copy(kept[1])  # another context's run may be on it
        args.x, args.y = x.ctypes.data, out.ctypes.data
        _check(_gap, args)
        return True

    #: (x_scale, x_zero_point, y_scale, y_zero_point) and their values (the scales as
    #: float32), kept while the parameters are the same read-only arrays
    _kept: tuple[tuple[Any, ...], tuple[np.float32, np.float32, int, int]] | None = None

    def _params(self, x_scale: Array, x_zero_point: Array | None, y_scale: Array,
                y_zero_point: Array | None, op: str) -> tuple[np.float32, np.float32, int, int]:
        """The two scales and the two zero points, kept for constant parameters."""
        key = (x_scale, x_zero_point, y_scale, y_zero_point)
        kept = self._kept
        if kept is not None and all(p is q for p, q in zip(kept[0], key, strict=True)):
            return kept[1]
        xs = _basic.qscalar(x_scale, "x_scale", op)
        ys = _basic.qscalar(y_scale, "y_scale", op)
        zx = int(_basic.qscalar(x_zero_point, "x_zero_point", op))
        zy = int(_basic.qscalar(y_zero_point, "y_zero_point", op))
        params = (xs, ys, zx, zy)
        if all(p is None or not p.flags.writeable for p in key):
            self._kept = (key, params)
        return params


class QLinearConcat(_basic.QLinearConcat):
    """Concatenated channels of NHWC tensors (see the module)."""

    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc, first = in_out[pos], in_out[2]
        if desc.format not in (HWC, TensorFormat.LINEAR):
            return False
        data = pos == num_inputs or (pos >= 2 and (pos - 2) % 3 == 0)
        if not data:
            return desc.format is TensorFormat.LINEAR
        if first.format is not HWC:
            return desc.format is TensorFormat.LINEAR and (
                super().supports_format_combination(pos, in_out, num_inputs))
        return (desc.format is HWC and len(desc.shape) == 4 and desc.dtype in _BYTES
                and int(self.attrs["axis"]) in (1, -3))

    #: each input's requantization table, kept while its parameters are the same constants
    _tables: dict[int, tuple[tuple[Any, ...], Array | None]] | None = None

    def compute(self, y_scale: Array, y_zero_point: Array | None, *inputs: Array | None,
                out: Array, axis: int) -> None:
        hwc = hwc_formats(self, (2,))[0]
        a = out.ndim - 1 if hwc else norm_axis(axis, out.ndim)
        if self._tables is None:
            self._tables = {}
        op = f"QLinearConcat {self.name!r}"
        at = 0
        for i in range(0, len(inputs), 3):
            x, s, z = inputs[i:i + 3]
            assert x is not None and s is not None
            _basic.check_8bit(x, op)
            part = out[(slice(None),) * a + (slice(at, at + x.shape[a]),)]
            at += x.shape[a]
            key = (s, z, y_scale, y_zero_point, x.dtype, out.dtype)
            kept = self._tables.get(i)
            if kept is not None and all(p is q for p, q in zip(kept[0][:4], key[:4],
                                                                strict=True)) \
                    and kept[0][4:] == key[4:]:
                table = kept[1]
            else:
                xs, xz = _basic.qscalar(s, "X_scale", op), _basic.qscalar(z, "X_zero_point", op)
                ys = _basic.qscalar(y_scale, "Y_scale", op)
                yz = _basic.qscalar(y_zero_point, "Y_zero_point", op)
                table = None if (xs == ys and xz == yz and x.dtype == out.dtype) else \
                    _basic.qtable(x.dtype, xs, xz, ys, yz, out.dtype, lambda v: v)
                if all(p is None or not p.flags.writeable for p in key[:4]):
                    self._tables[i] = (key, table)
            if table is None:
                np.copyto(part, x)
            elif part.flags.c_contiguous and x.flags.c_contiguous:
                lookup(x, table, part)
            else:
                y = np.empty(x.shape, out.dtype)
                lookup(np.ascontiguousarray(x), table, y)
                np.copyto(part, y)
