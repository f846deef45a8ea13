"""cpu_basic's ``com.microsoft`` QLinearGlobalAveragePool and QLinearConcat taking NHWC
tensors (``TensorFormat.HWC``, negotiated by the builder), so that the activations between two
integer convolutions need no transposition:

* QLinearGlobalAveragePool: X NHWC (the sums over its pixels) and Y in either format (one pixel:
  (N, C, 1, 1) and (N, 1, 1, C) are the same bytes); cpu_basic's arithmetic (onnxruntime's:
  the integer sums less ``count * x_zp``, times ``x_scale / (y_scale * count)``, rounded).
* QLinearConcat along the channels (``axis`` 1) of rank-4 tensors, every X and Y NHWC: the
  same requantization into the last axis.

LINEAR tensors are cpu_basic's kernels as they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_qlinear as _basic
from numpy.typing import NDArray

from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat

from ._qformats import hwc_formats

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
        _basic._check8(x, op)
        n, c = x.shape[0], x.shape[-1]
        count = math.prod(x.shape[1:-1])
        acc = x.reshape(n, -1, c).sum(axis=1, dtype=np.int64)
        acc -= np.int64(_basic._scalar(x_zero_point, "x_zero_point", op)) * count
        mult = _basic._scalar(x_scale, "x_scale", op) / (
            _basic._scalar(y_scale, "y_scale", op) * np.float32(max(count, 1)))
        # one pixel per image: NCHW and NHWC hold the same bytes
        _basic._store(acc.astype(np.float32) * mult,
                      _basic._scalar(y_zero_point, "y_zero_point", op), out.reshape(n, c))


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

    def compute(self, y_scale: Array, y_zero_point: Array | None, *inputs: Array | None,
                out: Array, axis: int) -> None:
        hwc = hwc_formats(self, (2,))[0]
        super().compute(y_scale, y_zero_point, *inputs, out=out, axis=3 if hwc else axis)
