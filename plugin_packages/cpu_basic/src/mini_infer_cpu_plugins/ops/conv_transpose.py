"""N-d transposed convolution as one batched GEMM + col2im.

cols[n, g, m, *k, *in] = sum_c W[g, c, m, *k] * X[n, g, c, *in] (one ``np.matmul``), then
every kernel tap is scatter-added into a zeroed buffer with one strided slice per tap
(``buf[..., t*d : t*d + s*(in-1) + 1 : s] += cols[..., t, :]``); the buffer is cropped by
the begin pads (negative pads -- an ``output_shape`` larger than the full result -- leave
zeros).

Output size per spatial dim: ``s*(in-1) + output_padding + (k-1)*d + 1 - pad_begin -
pad_end``; with ``output_shape`` (or SAME_* auto_pad, whose output is ``in*s``) the total
padding is derived and split: SAME_UPPER puts the smaller half first, otherwise the larger.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimExpr, DimsExprs, IntLike

from ..serialization import CpuPlugin
from ._nn_util import NN_FLOATS, acc_dtype, to_str

__all__ = ["ConvTranspose"]

Array = NDArray[Any]


class ConvTranspose(CpuPlugin):
    dtypes = NN_FLOATS
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
        "output_padding": None, "output_shape": None, "pads": None, "strides": None}

    def setup(self) -> None:
        self.auto_pad = to_str(self.attrs["auto_pad"])
        if self.auto_pad not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
            raise PluginInterfaceError(f"ConvTranspose: unknown auto_pad {self.auto_pad!r}")

    def _params(self, nd: int, kernel: Sequence[Any]
                ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        a = self.attrs
        strides = tuple(a["strides"]) if a["strides"] else (1,) * nd
        dil = tuple(a["dilations"]) if a["dilations"] else (1,) * nd
        opad = tuple(a["output_padding"]) if a["output_padding"] else (0,) * nd
        pads = tuple(a["pads"]) if a["pads"] else (0,) * (2 * nd)
        if a["kernel_shape"]:
            kernel = a["kernel_shape"]
        if len(strides) != nd or len(dil) != nd or len(opad) < nd or len(pads) != 2 * nd \
                or len(kernel) != nd:
            raise PluginInterfaceError(
                f"ConvTranspose: strides/dilations/output_padding/pads/kernel_shape do not "
                f"match {nd} spatial dims")
        return strides, dil, opad[:nd], pads

    def _out_shape_attr(self, nd: int) -> tuple[int, ...] | None:
        shape = self.attrs["output_shape"]
        if not shape:
            return None
        shape = tuple(shape)
        return shape[-nd:] if len(shape) >= nd else None

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x, w = list(inputs[0]), list(inputs[1])
        if len(x) < 3 or len(w) != len(x):
            raise PluginInterfaceError(
                f"ConvTranspose: X (rank {len(x)}) and W (rank {len(w)}) must have the same "
                "rank >= 3")
        nd = len(x) - 2
        strides, dil, opad, pads = self._params(nd, w[2:])
        m = w[1] * self.attrs["group"]
        given = self._out_shape_attr(nd)
        spatial: list[IntLike] = []
        for i in range(nd):
            if given is not None:
                spatial.append(given[i])
            elif self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                spatial.append(x[2 + i] * strides[i])
            else:
                k = DimExpr.wrap(self.attrs["kernel_shape"][i] if self.attrs["kernel_shape"]
                                 else w[2 + i])
                p = 0 if self.auto_pad == "VALID" else pads[i] + pads[i + nd]
                spatial.append((x[2 + i] - 1) * strides[i] + (k - 1) * dil[i]
                               + (1 + opad[i] - p))
        return [[x[0], m, *spatial]]

    def _geometry(self, in_sp: Sequence[int], k_sp: Sequence[int]
                  ) -> tuple[list[int], list[int], tuple[int, ...], tuple[int, ...]]:
        """(pads_begin, out_dims, strides, dilations) for concrete sizes."""
        nd = len(in_sp)
        strides, dil, opad, pads = self._params(nd, k_sp)
        given = self._out_shape_attr(nd)
        if given is None and self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            given = tuple(h * s for h, s in zip(in_sp, strides, strict=True))
        begin, out = [], []
        for i in range(nd):
            full = strides[i] * (in_sp[i] - 1) + opad[i] + (k_sp[i] - 1) * dil[i] + 1
            if given is not None:
                total = full - given[i]
                if self.auto_pad == "SAME_UPPER":
                    pb = total // 2
                else:
                    pb = total - total // 2
                begin.append(pb)
                out.append(given[i])
            else:
                pb, pe = (0, 0) if self.auto_pad == "VALID" else (pads[i], pads[i + nd])
                begin.append(pb)
                out.append(full - pb - pe)
        return begin, out, strides, dil

    def compute(self, x: Array, w: Array, b: Array | None = None, *, out: Array, group: int,
                **_: Any) -> None:
        n, c = x.shape[:2]
        in_sp, k_sp = x.shape[2:], w.shape[2:]
        nd = len(in_sp)
        if w.shape[0] != c or c % group:
            raise PluginInterfaceError(
                f"ConvTranspose: X {x.shape}, W {w.shape} and group {group} do not match")
        begin, out_dims, strides, dil = self._geometry(in_sp, k_sp)
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
