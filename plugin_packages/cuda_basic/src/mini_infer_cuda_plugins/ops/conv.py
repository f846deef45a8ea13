"""Convolution: im2col + cuBLAS GEMM, with a direct kernel for depthwise convolutions.

* 1x1, stride 1, unpadded: a GEMM straight on the input (per image; groups are the batch of
  a batched GEMM), no im2col.
* depthwise (group == C, one input channel per filter), 1-D or 2-D, on the GPU: one direct
  RawKernel (``dwconv_2d``) with the bias fused.
* otherwise im2col into an instance-owned ``cols`` buffer -- the ``im2col_2d`` RawKernel for
  1-D/2-D on the GPU; a padded copy and a strided window view elsewhere (N-d, NumPy) -- then
  one GEMM per image (``xp.matmul(W, cols, out=...)``), the batch in chunks whose ``cols``
  stay under ``COLS_BUDGET`` bytes.
* the bias is added by the ``bias_act`` RawKernel on the GPU (a broadcast add on NumPy);
  with what the builder fused into the Conv (:class:`ConvFusion`: BatchNormalization and
  per-channel Mul/Add folded into W and B, a residual ``r``, a Relu) one ``bias_res_act``
  kernel adds bias and residual and applies the Relu.

Steady-state runs of one shape allocate nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mini_infer_core.ops import conv as schema
from mini_infer_core.plugin import ConvFusion, shapes

from ..serialization import CudaPlugin
from . import _raw
from ._common import Scratch, array_module, matmul_into

__all__ = ["Conv"]


#: upper bound of the im2col buffer; larger batches are processed in chunks
COLS_BUDGET = 256 * 1024 * 1024


@dataclass(frozen=True)
class _Plan:
    window: shapes.Window
    geometry: shapes.Geometry
    #: 1x1, stride 1, no padding: GEMM on the input itself
    pointwise: bool
    #: group == C with one input channel per filter
    depthwise: bool
    #: images per im2col chunk
    chunk: int


def window_view(xp: Any, padded: Any, lead: int, w: shapes.Window, out: Sequence[int]) -> Any:
    """A strided view of every window of ``padded`` (its first ``lead`` axes kept), shaped
    ``lead axes + kernel + out`` (im2col order)."""
    sp = padded.strides[lead:]
    shape = padded.shape[:lead] + w.kernel + tuple(out)
    strides = (padded.strides[:lead] + tuple(sp[i] * w.dilations[i] for i in range(w.nd))
               + tuple(sp[i] * w.strides[i] for i in range(w.nd)))
    return xp.lib.stride_tricks.as_strided(padded, shape=shape, strides=strides)


def as_2d(w: shapes.Window, g: shapes.Geometry, spatial: Sequence[int]) -> tuple[list[int], ...]:
    """(in sizes, kernel, strides, begin pads, end pads, dilations, out sizes) of a 1-D or
    2-D window as 2-D (a 1-D one gets a leading axis of size 1)."""
    lead = [1] * (2 - w.nd)
    zero = [0] * (2 - w.nd)
    return (lead + list(spatial), lead + list(w.kernel), lead + list(w.strides),
            zero + list(g.begin), zero + list(g.end), lead + list(w.dilations),
            lead + list(g.out))


def window_args(w: shapes.Window, g: shapes.Geometry, spatial: Sequence[int]
                ) -> tuple[np.int32, ...]:
    """A 1-D or 2-D window as the windowed kernels take it (``MI_WINDOW_PARAMS`` of
    kernels/common.cuh): in sizes, out sizes, kernel, strides, begin pads, dilations."""
    (h, wd), (kh, kw), (sh, sw), (ph, pw), _, (dh, dw), (oh, ow) = as_2d(w, g, spatial)
    return tuple(np.int32(v) for v in (h, wd, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw))


class Conv(ConvFusion, CudaPlugin, schema.Conv):
    #: what the kernels apply after the product (no Clip: the epilogues know Relu only)
    fusable = frozenset({"BatchNormalization", "Mul", "Add", "Sum", "Relu"})

    def setup(self) -> None:
        self.scratch = Scratch()

    def _plan(self, x: Any, w: Any, group: int) -> _Plan:
        key = ("plan", x.shape, w.shape, x.dtype.str)
        plan: _Plan | None = self.scratch.get(key)
        if plan is not None:
            return plan
        n, c = x.shape[:2]
        win, geo = self.geometry(x.shape, w.shape)
        pointwise = (all(k == 1 for k in win.kernel) and all(s == 1 for s in win.strides)
                     and geo.out == tuple(x.shape[2:]))
        depthwise = group == c and w.shape[1] == 1 and group > 1
        per_image = c * int(np.prod(win.kernel)) * int(np.prod(geo.out)) * x.itemsize
        chunk = max(1, min(n, COLS_BUDGET // max(per_image, 1)))
        plan = _Plan(win, geo, pointwise, depthwise, chunk)
        self.scratch.put(key, plan)
        return plan

    def compute(self, x: Any, w: Any, b: Any | None = None, r: Any | None = None, *,
                out: Any, group: int, __relu__: int = 0, **_: Any) -> None:
        xp = array_module(x, w, out)
        plan = self._plan(x, w, group)
        gpu = xp is not np
        if gpu:
            x, w = xp.ascontiguousarray(x), xp.ascontiguousarray(w)
        dst = out if out.flags.c_contiguous else \
            self.scratch.buffer(xp, "dst", out.shape, out.dtype)
        act = _raw.ACT_RELU if __relu__ else _raw.ACT_NONE
        if gpu and plan.depthwise and plan.window.nd <= 2:
            self._depthwise(xp, x, w, b, dst, plan, act if r is None else _raw.ACT_NONE)
            if r is not None:
                self._epilogue(xp, dst, None, r, act)
        else:
            if plan.pointwise:
                self._pointwise(xp, x, w, dst, group)
            else:
                self._im2col_gemm(xp, x, w, dst, group, plan)
            if b is not None or r is not None or act != _raw.ACT_NONE:
                self._epilogue(xp, dst, b, r, act)
        if dst is not out:
            xp.copyto(out, dst)

    @staticmethod
    def _pointwise(xp: Any, x: Any, w: Any, dst: Any, group: int) -> None:
        n, c = x.shape[:2]
        m = w.shape[0]
        p = int(np.prod(x.shape[2:]))
        wg = w.reshape(group, m // group, c // group)
        for i in range(n):
            matmul_into(xp, wg, x[i].reshape(group, c // group, p),
                        dst[i].reshape(group, m // group, p))

    def _im2col_gemm(self, xp: Any, x: Any, w: Any, dst: Any, group: int, plan: _Plan) -> None:
        n, c = x.shape[:2]
        m = w.shape[0]
        win, geo = plan.window, plan.geometry
        k = int(np.prod(win.kernel))
        p = int(np.prod(geo.out))
        ck = (c // group) * k
        cols = self.scratch.buffer(xp, "cols", (plan.chunk, c, *win.kernel, *geo.out),
                                   x.dtype)
        wg = w.reshape(group, m // group, ck)
        for n0 in range(0, n, plan.chunk):
            n1 = min(n, n0 + plan.chunk)
            part = cols[: n1 - n0]
            self._im2col(xp, x[n0:n1], part, plan)
            for i in range(n1 - n0):
                matmul_into(xp, wg, part[i].reshape(group, ck, p),
                            dst[n0 + i].reshape(group, m // group, p))

    def _im2col(self, xp: Any, x: Any, cols: Any, plan: _Plan) -> None:
        """``cols[n, c, *kernel, *out]`` = the input under each window tap (0 in padding)."""
        win, geo = plan.window, plan.geometry
        if xp is not np and win.nd <= 2:
            _raw.launch("conv", "im2col_2d", x.dtype, cols.size, (
                x, cols, *window_args(win, geo, x.shape[2:]), np.int64(cols.size)))
            return
        src = x
        ext = shapes.padded_extent(x.shape[2:], win, geo)
        if shapes.needs_padding(x.shape[2:], geo.begin, ext):
            # zero border filled once, when the buffer is made; the interior is rewritten
            src = self.scratch.buffer(xp, "pad", (*x.shape[:2], *ext), x.dtype, fill=0)
            inner = (slice(None), slice(None), *(slice(b, b + s) for b, s in
                                                 zip(geo.begin, x.shape[2:], strict=True)))
            xp.copyto(src[inner], x)
        xp.copyto(cols, window_view(xp, src, 2, win, geo.out))

    def _epilogue(self, xp: Any, dst: Any, b: Any | None, r: Any | None, act: int) -> None:
        """``dst = act(dst + b[channel] + r)`` in place; ``b`` and ``r`` optional."""
        n, m = dst.shape[:2]
        p = dst.size // max(n * m, 1)
        if xp is np:
            d3 = dst.reshape(n, m, p)
            if b is not None:
                np.add(d3, b.reshape(m, 1), out=d3)
            if r is not None:
                np.add(dst, r, out=dst)
            if act == _raw.ACT_RELU:
                np.maximum(dst, 0, out=dst)
            return
        bias = xp.ascontiguousarray(b) if b is not None else \
            self.scratch.buffer(xp, "zero_bias", (m,), dst.dtype, fill=0)
        if r is None:
            _raw.launch("epilogue", "bias_act", dst.dtype, dst.size, (
                dst, bias, np.int64(p), np.int32(m), np.int32(act), np.int64(dst.size)))
        else:
            _raw.launch("epilogue", "bias_res_act", dst.dtype, dst.size, (
                dst, bias, xp.ascontiguousarray(r), np.int64(p), np.int32(m), np.int32(act),
                np.int64(dst.size)))

    def _depthwise(self, xp: Any, x: Any, w: Any, b: Any | None, dst: Any, plan: _Plan,
                   act: int) -> None:
        c, m = x.shape[1], w.shape[0]
        bias = xp.ascontiguousarray(b) if b is not None else \
            self.scratch.buffer(xp, "zero_bias", (m,), x.dtype, fill=0)
        _raw.launch("conv", "dwconv_2d", x.dtype, dst.size, (
            x, w, bias, dst, np.int32(c), np.int32(m),
            *window_args(plan.window, plan.geometry, x.shape[2:]), np.int32(act),
            np.int64(dst.size)))
