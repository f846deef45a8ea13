"""N-d transposed convolution as one batched GEMM + col2im.

cols[n, g, m, *k, *in] = sum_c W[g, c, m, *k] * X[n, g, c, *in] (one ``np.matmul``), then
every kernel tap is scatter-added into a zeroed buffer with one strided slice per tap
(``buf[..., t*d : t*d + s*(in-1) + 1 : s] += cols[..., t, :]``); the buffer is cropped by
the begin pads (negative pads -- an ``output_shape`` larger than the full result -- leave
zeros).

The geometry (pads, output sizes) is the schema's
(:meth:`mini_infer_core.ops.conv_transpose.ConvTranspose.geometry`).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import conv_transpose as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._nn_util import acc_dtype

__all__ = ["ConvTranspose"]

Array = NDArray[Any]


class ConvTranspose(CpuPlugin, schema.ConvTranspose):
    def compute(self, x: Array, w: Array, b: Array | None = None, *, out: Array, group: int,
                **_: Any) -> None:
        n, c = x.shape[:2]
        in_sp, k_sp = x.shape[2:], w.shape[2:]
        nd = len(in_sp)
        if w.shape[0] != c or c % group:
            raise PluginInterfaceError(
                f"ConvTranspose: X {x.shape}, W {w.shape} and group {group} do not match")
        begin, out_dims, strides, dil = self.geometry(in_sp, k_sp)
        mg = w.shape[1]
        cg = c // group
        kprod = int(np.prod(k_sp))
        p = int(np.prod(in_sp))
        dt = acc_dtype(x.dtype) if x.dtype != np.float32 else np.dtype(np.float32)
        wg = w.astype(dt, copy=False).reshape(group, cg, mg * kprod).transpose(0, 2, 1)
        xg = x.astype(dt, copy=False).reshape(n, group, cg, p)
        cols = np.matmul(wg, xg).reshape(n, group * mg, *k_sp, *in_sp)
        # buffer covering both the full result and the requested window (negative pads)
        lo = [max(0, -pb) for pb in begin]
        full = [s * (h - 1) + (k - 1) * d + 1 for s, h, k, d in
                zip(strides, in_sp, k_sp, dil, strict=True)]
        ext = [max(f + o, o + pb + od) for f, o, pb, od in zip(full, lo, begin, out_dims,
                                                              strict=True)]
        buf = np.zeros((n, group * mg, *ext), dt)
        for tap in itertools.product(*(range(k) for k in k_sp)):
            dst: tuple[Any, ...] = (Ellipsis, *(
                slice(o + t * d, o + t * d + s * (h - 1) + 1, s)
                for o, t, d, s, h in zip(lo, tap, dil, strides, in_sp, strict=True)))
            buf[dst] += cols[(slice(None), slice(None), *tap)]
        crop: tuple[Any, ...] = (Ellipsis, *(slice(o + pb, o + pb + od) for o, pb, od in
                            zip(lo, begin, out_dims, strict=True)))
        res = buf[crop]
        if b is not None:
            res = res + b.astype(dt).reshape((-1,) + (1,) * nd)
        np.copyto(out, res, casting="unsafe")
