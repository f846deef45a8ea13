"""cpu_basic's ``com.microsoft`` QLinearGlobalAveragePool and QLinearConcat taking NHWC
tensors (``TensorFormat.HWC``, negotiated by the builder), so that the activations between two
integer convolutions need no transposition:

* QLinearGlobalAveragePool: X NHWC (the sums over its pixels) and Y in either format (one pixel:
  (N, C, 1, 1) and (N, 1, 1, C) are the same bytes); cpu_basic's arithmetic (onnxruntime's:
  the integer sums less ``count * x_zp``, times ``x_scale / (y_scale * count)``, rounded).
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
from numpy.typing import NDArray

from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat
from mini_infer_core.plugin.shapes import norm_axis

from ._qformats import hwc_formats
from .qelementwise import lookup

__all__ = ["QLinearConcat", "QLinearGlobalAveragePool"]

Array = NDArray[Any]
HWC = TensorFormat.HWC
_BYTES = (DataType.UINT8, DataType.INT8)


class QLinearGlobalAveragePool(_basic.QLinearGlobalAveragePool):
    """The mean of NHWC pixels (see the module)."""

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
        op = f"QLinearGlobalAveragePool {self.name!r}"
        _basic.check_8bit(x, op)
        n, c = x.shape[0], x.shape[-1]
        count = math.prod(x.shape[1:-1])
        acc = x.reshape(n, -1, c).sum(axis=1, dtype=np.int64)
        acc -= np.int64(_basic.qscalar(x_zero_point, "x_zero_point", op)) * count
        mult = _basic.qscalar(x_scale, "x_scale", op) / (
            _basic.qscalar(y_scale, "y_scale", op) * np.float32(max(count, 1)))
        # one pixel per image: NCHW and NHWC hold the same bytes
        _basic.qstore(acc.astype(np.float32) * mult,
                      _basic.qscalar(y_zero_point, "y_zero_point", op), out.reshape(n, c))


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
