"""mini-infer's ``ai.mini_infer::QMaxPool`` (the 8-bit MaxPool the QDQ rewrite makes between
equal parameters) on NHWC tensors (``TensorFormat.HWC``) in one compiled pass
(``mi_qmaxpool_i8``, ``_qelt.c``), so that ResNet's stem pooling and SqueezeNet's poolings
stay in the NHWC region of the integer convolutions; NCHW is cpu_basic's kernel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import contrib_qlinear as _basic

from mini_infer_core.plugin import DataType, PluginTensorDesc, TensorFormat
from mini_infer_core.plugin.arrays import NDArray

from ._abi import QMaxPoolArgs
from ._native import _kernel
from ._qformats import hwc_formats, linear
from ._qgemm import _check, _ptr

__all__ = ["QMaxPool"]

Array = NDArray[Any]
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_maxpool = _kernel("mi_qmaxpool_i8", QMaxPoolArgs)
HWC = TensorFormat.HWC


class QMaxPool(_basic.QMaxPool):
    """QMaxPool of an NHWC 8-bit image batch (X and Y NHWC), compiled; else cpu_basic's."""

    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc, first = in_out[pos], in_out[0]
        if desc.format not in (HWC, TensorFormat.LINEAR):
            return False
        if pos == 0:
            return desc.format is not HWC or (
                desc.dtype in (DataType.UINT8, DataType.INT8) and len(desc.shape) == 4)
        return desc.format is first.format

    def compute(self, x: Array, *, out: Any, **attrs: Any) -> None:
        hwc = hwc_formats(self)  # an NHWC tensor comes in its physical shape (N, H, W, C)
        if not (hwc[0] and hwc[-1]):
            super().compute(x, out=out, **attrs)
            return
        if (isinstance(out, tuple) or x.dtype not in _INT8 or x.ndim != 4
                or not (x.flags.c_contiguous and out.flags.c_contiguous)):
            with linear(x.transpose(0, 3, 1, 2), out.transpose(0, 3, 1, 2), hwc) as (xc, oc):
                super().compute(xc, out=oc, **attrs)
            return
        n, h, w, c = x.shape
        win, geo = self.geometry((h, w))
        kn = "mi_qmaxpool_i8"
        _check(_maxpool, QMaxPoolArgs(
            _ptr(x, _INT8, x.size, False, kn, "x"), _ptr(out, _INT8, out.size, True, kn, "y"),
            n, h, w, c, *(int(k) for k in win.kernel), *win.strides, *win.dilations,
            *geo.begin, out.shape[1], out.shape[2], int(x.dtype == np.int8)))
