"""N-d convolution: the Conv kernel and the path each shape takes (the schema, with the window
geometry, is :mod:`mini_infer_core.ops.conv`; the fusions are
:class:`~mini_infer_core.plugin.ConvFusion`).

* 1x1, stride 1, unpadded: a plain GEMM on the input; with a bias or residual, those are
  written first and the GEMM (:func:`._blas.gemm`, ``beta=1``) adds the product onto them.
* 2-D, stride 1, enough channels: one accumulating GEMM per kernel tap, no im2col
  (:mod:`._conv_taps`).
* 2-D depthwise (one input channel per group), any stride: a sum over taps of all channel
  planes shifted at once (:mod:`._conv_depthwise`).
* otherwise im2col: the input is copied once into a zero-bordered buffer, every window is
  gathered with one strided copy into ``cols`` and one GEMM runs the product (groups are a
  leading axis of a batched matmul, never a Python loop). Large images go in cache-sized
  bands of output rows; a batch in chunks whose ``cols`` stay under ``COLS_BUDGET`` bytes.

Buffers come from the workspace the engine plans in the context's arena (shared with every
other node), so steady-state runs allocate nothing but views. Weights the tap and depthwise
paths read are stored tap-major at build time (``pack_constants``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.ops import conv as schema
from mini_infer_core.plugin import ConvFusion, record, shapes
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._blas import available, gemm
from ._conv_depthwise import depthwise_conv
from ._conv_taps import TapGeometry, pack_taps, tap_conv, tap_major, usable
from ._geometry import pad_into, windows_view
from ._util import Scratch, add_per_row, relu

__all__ = ["Conv"]


def _align(n: int) -> int:
    return (n + 63) // 64 * 64


def _pad(buf: Array, x: Array, begin: Sequence[int]) -> Array:
    """``x`` inside a zero border in ``buf``. The buffer may be shared with other nodes, so the
    border (and only the border) is cleared on every call."""
    for axis in range(2, buf.ndim):
        lo, n = begin[axis - 2], x.shape[axis]
        lead = (slice(None),) * axis
        buf[(*lead, slice(0, lo))] = 0
        buf[(*lead, slice(lo + n, None))] = 0
    return pad_into(buf, x, begin)


def _gemm_onto(w2: Array, x2: Array, d: Array, b: Array | None, r: Array | None) -> None:
    """``d`` (M, P) = bias (M,) + residual (M, P) + ``w2 @ x2``: the bias and residual (either
    may be absent, not both) are written first and the GEMM adds onto them (``beta=1``)."""
    if r is None:
        np.copyto(d, b.reshape(-1, 1))  # type: ignore[union-attr]
    elif b is None:
        np.copyto(d, r)
    else:
        add_per_row(r, b, d)
    gemm(w2, x2, d, beta=1.0)


def _accumulates(group: int, b: Array | None, r: Array | None, dtype: Any) -> bool:
    """Whether the GEMM adds onto a bias/residual written first (one group, and a BLAS:
    for small grouped convs one batched np.matmul plus an add is faster)."""
    return group == 1 and (b is not None or r is not None) and available(dtype)


Array = NDArray[Any]

#: upper bound of the im2col buffer; larger batches are processed in chunks
COLS_BUDGET = 128 * 1024 * 1024
#: an image whose im2col exceeds this is processed in bands of output rows (cache-sized)
ROW_BUDGET = 16 * 1024 * 1024


@record(frozen=True)
class _Plan:
    window: shapes.Window
    begin: tuple[int, ...]
    ext: tuple[int, ...]
    out_dims: tuple[int, ...]
    pad: bool
    pointwise: bool
    chunk: int
    #: stride-1 2-D convolutions with enough channels: one GEMM per kernel tap
    taps: TapGeometry | None = None


class ConvKernel(CpuPlugin, schema.ConvBase):
    """The kernel of every convolution here (Conv; ConvInteger and QLinearConv run it on
    their zero-point-shifted operands)."""

    def setup(self) -> None:
        self.scratch = Scratch()

    def _plan(self, x: Array, w: Array, group: int) -> _Plan:
        return self._plan_for(x.shape, w.shape, x.itemsize, group)

    def _plan_for(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                  group: int) -> _Plan:
        key = ("plan", xshape, wshape, itemsize)
        plan: _Plan | None = self.scratch.get(key)
        if plan is not None:
            return plan
        c, m = xshape[1], wshape[0]
        win, geo = self.geometry(xshape, wshape)
        begin, out_dims = geo.begin, geo.out
        ext = shapes.padded_extent(xshape[2:], win, geo)
        pad = shapes.needs_padding(xshape[2:], begin, ext)
        pointwise = (all(k == 1 for k in wshape[2:]) and all(s == 1 for s in win.strides)
                     and not pad and tuple(out_dims) == xshape[2:])
        per_image = c * math.prod(wshape[2:]) * math.prod(out_dims) * itemsize
        chunk = max(1, min(xshape[0], COLS_BUDGET // max(per_image, 1)))
        taps = None
        if not pointwise and len(xshape) == 4 and usable(
                4, win.strides, c // group, m // group, wshape[2:], out_dims[0] * ext[1],
                np.dtype(f"f{itemsize}")):
            taps = TapGeometry((begin[0], begin[1]), (ext[0], ext[1]),
                               (out_dims[0], out_dims[1]), (wshape[2], wshape[3]),
                               (win.dilations[0], win.dilations[1]))
        plan = _Plan(win, tuple(begin), tuple(ext), tuple(out_dims), pad, pointwise, chunk,
                     taps)
        self.scratch.put(key, plan)
        return plan

    # -- buffers: the im2col columns and the padded input come from the workspace the engine
    # plans in the context's arena (shared with every other node's), or from scratch kept on
    # the plugin when called without one
    def _layout(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                group: int) -> list[tuple[str, tuple[int, ...]]]:
        plan = self._plan_for(xshape, wshape, itemsize, group)
        n, c = xshape[:2]
        if plan.pointwise or self._is_depthwise(c, group, plan, itemsize):
            return []
        if plan.taps is not None:
            return plan.taps.buffers(c, wshape[0])
        k = tuple(int(v) for v in wshape[2:])
        bufs: list[tuple[str, tuple[int, ...]]] = []
        if plan.pad:
            bufs.append(("pad", (n, c, *plan.ext)))
        rows = self._row_block(c * math.prod(k), plan, itemsize)
        if rows < plan.out_dims[0]:
            rest = tuple(plan.out_dims[1:])
            bufs.append(("band", (c, *k, rows, *rest)))
            bufs.append(("bandout", (group, wshape[0] // group, rows * math.prod(rest))))
        else:
            bufs.append(("cols", (plan.chunk, c, *k, *plan.out_dims)))
        return bufs

    def get_workspace_size(self, inputs: Sequence[Any],  # type: ignore[override]
                           outputs: Sequence[Any]) -> int:
        x, w = inputs[0], inputs[1]
        if x is None or w is None or x.dtype.numpy.kind != "f":
            return 0
        size = x.dtype.itemsize
        layout = self._layout(tuple(x.shape), tuple(w.shape), size, self.attrs["group"])
        return sum(_align(math.prod(shape) * size) for _, shape in layout)

    def _buffers(self, x: Array, w: Array, group: int) -> dict[str, Array]:
        layout = self._layout(x.shape, w.shape, x.itemsize, group)
        need = sum(_align(math.prod(shape) * x.itemsize) for _, shape in layout)
        ws = self.workspace
        out: dict[str, Array] = {}
        if ws is not None and ws.size >= need:
            offset = 0
            for tag, shape in layout:
                nbytes = math.prod(shape) * x.itemsize
                out[tag] = ws[offset: offset + nbytes].view(x.dtype).reshape(shape)
                offset += _align(nbytes)
        else:
            for tag, shape in layout:
                out[tag] = self.scratch.flat(tag, shape, x.dtype)
        return out

    def compute(self, x: Array, w: Array, b: Array | None = None, r: Array | None = None, *,
                out: Array, group: int, __relu__: int = 0, __clip__: Any = None,
                **_: Any) -> None:
        plan = self._plan(x, w, group)
        n, c = x.shape[:2]
        m = w.shape[0]
        cg, mg = c // group, m // group
        p = math.prod(plan.out_dims)
        dst = out if out.flags.c_contiguous else self.scratch.buffer("dst", out.shape, out.dtype)
        if plan.pointwise and self._accumulates(group, b, r, x.dtype):
            for i in range(n):
                _gemm_onto(w.reshape(m, c), x[i].reshape(c, p), dst[i].reshape(m, p), b,
                           None if r is None else r[i].reshape(m, p))
            b = r = None
        elif plan.pointwise:
            xs = x.reshape(n, group, cg, p)
            np.matmul(w.reshape(group, mg, cg), xs, out=dst.reshape(n, group, mg, p))
        elif self._is_depthwise(c, group, plan, x.itemsize):
            depthwise_conv(x, self._packed(w, c), dst, plan.window, plan.begin, plan.ext,
                           plan.out_dims, self.scratch, b)
            b = None
        elif plan.taps is not None:
            bufs = self._buffers(x, w, group)
            tap_conv(x, self._packed(w, group), dst, plan.taps, bufs["tapin"], bufs["tapacc"], b,
                     r, bool(__relu__))
            b = r = None
            __relu__ = 0
        else:
            bufs = self._buffers(x, w, group)
            k = w.shape[2:]
            ck = cg * math.prod(k)
            wg = w.reshape(group, mg, ck)
            rows = self._row_block(c * math.prod(k), plan, x.itemsize)
            if rows < plan.out_dims[0]:
                self._blocked(x, wg, dst, plan, rows, group, ck, bufs)
                return self._epilogue(dst, out, b, r, __relu__, __clip__)
            cols = bufs["cols"]
            accumulate = self._accumulates(group, b, r, x.dtype)
            for n0 in range(0, n, plan.chunk):
                n1 = min(n, n0 + plan.chunk)
                part = cols[: n1 - n0]
                self._im2col(x[n0:n1], part, plan, bufs)
                if not accumulate:
                    np.matmul(wg, part.reshape(n1 - n0, group, ck, p),
                              out=dst[n0:n1].reshape(n1 - n0, group, mg, p))
                    continue
                for i in range(n0, n1):
                    _gemm_onto(wg[0], part[i - n0].reshape(ck, p), dst[i].reshape(m, p), b,
                               None if r is None else r[i].reshape(m, p))
            if accumulate:
                b = r = None
        self._epilogue(dst, out, b, r, __relu__, __clip__)

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]) -> dict[int, Any]:
        """Build time: constant weights that the tap or depthwise path will read, stored
        tap-major (memory order kh, kw, M, C) so that every tap is one contiguous matrix and
        neither loading nor the first run repacks anything."""
        w = constants[1] if len(constants) > 1 else None
        x = inputs[0]
        if w is None or x is None or w.ndim != 4 or not x[0].is_static():
            return {}
        xshape, group = x[0].to_tuple(), self.attrs["group"]
        if len(xshape) != 4 or w.dtype.kind != "f":
            return {}
        plan = self._plan_for(xshape, w.shape, w.itemsize, group)
        if plan.taps is None and not self._is_depthwise(xshape[1], group, plan, w.itemsize):
            return {}
        return {1: tap_major(w)}

    @staticmethod
    def _is_depthwise(c: int, group: int, plan: _Plan, itemsize: int) -> bool:
        """2-D, one input channel per group, float32/float64: the tap-sum path."""
        return c == group > 1 and len(plan.out_dims) == 2 and itemsize in (4, 8)

    def _packed(self, w: Array, group: int) -> Array:
        """The weights laid out for :func:`tap_conv` (a view when the builder packed them)."""
        cached = getattr(self, "_tap_weights", None)
        if cached is None or cached[0] is not w:
            cached = self._tap_weights = (w, pack_taps(w, group))
        return cached[1]

    @staticmethod
    def _im2col(x: Array, cols: Array, plan: _Plan, bufs: dict[str, Array]) -> None:
        """Every window of ``x`` (N, C, *spatial) into ``cols`` (N, C, *kernel, *out): a
        zero-bordered copy (``bufs["pad"]``) where the windows reach outside, then one
        strided copy."""
        src = _pad(bufs["pad"][: x.shape[0]], x, plan.begin) if plan.pad else x
        np.copyto(cols, windows_view(src, 2, plan.window, plan.out_dims))

    @staticmethod
    def _accumulates(group: int, b: Array | None, r: Array | None, dtype: Any) -> bool:
        """Whether the GEMM adds onto the bias/residual written first (a subclass with a
        one-pass epilogue says no)."""
        return _accumulates(group, b, r, dtype)

    @staticmethod
    def _epilogue(dst: Array, out: Array, b: Array | None, r: Array | None, with_relu: int,
                  clip: Any) -> None:
        """``out`` = activation(``dst`` + bias + residual), whichever are given."""
        n, m = dst.shape[:2]
        if b is not None:
            for d2 in dst.reshape(n, m, -1):
                add_per_row(d2, b, d2)
        if r is not None:
            np.add(dst, r.reshape(dst.shape), out=dst)
        if with_relu:
            relu(dst, dst)
        elif clip is not None:
            np.clip(dst, clip[0], clip[1], out=dst)
        if dst is not out:
            np.copyto(out, dst)

    #: im2col bytes above which the columns go in bands of output rows
    row_budget: ClassVar[int] = ROW_BUDGET

    @classmethod
    def _row_block(cls, ck_total: int, plan: _Plan, itemsize: int) -> int:
        """Output rows per im2col block, so that the block stays cache-sized."""
        per_row = ck_total * math.prod(plan.out_dims[1:]) * itemsize
        return max(1, min(plan.out_dims[0], cls.row_budget // max(per_row, 1)))

    def _blocked(self, x: Array, wg: Array, dst: Array, plan: _Plan, rows: int, group: int,
                 ck: int, bufs: dict[str, Array]) -> None:
        """im2col and GEMM a band of output rows at a time: the columns of a band stay in
        cache between the copy that writes them and the GEMM that reads them."""
        src = _pad(bufs["pad"], x, plan.begin) if plan.pad else x
        n, c = src.shape[:2]
        rest = tuple(plan.out_dims[1:])
        inner = math.prod(rest)
        mg = wg.shape[1]
        stride0, dil0 = plan.window.strides[0], plan.window.dilations[0]
        kernel = tuple(int(v) for v in plan.window.kernel)
        cols, res = bufs["band"], bufs["bandout"]
        for i in range(n):
            for r0 in range(0, plan.out_dims[0], rows):
                r1 = min(plan.out_dims[0], r0 + rows)
                span = (r1 - r0 - 1) * stride0 + (kernel[0] - 1) * dil0 + 1
                band = src[i:i + 1, :, r0 * stride0: r0 * stride0 + span]
                view = windows_view(band, 2, plan.window, (r1 - r0, *rest))
                part = cols.reshape(-1)[: c * math.prod(kernel) * (r1 - r0) * inner]
                part = part.reshape(1, c, *kernel, r1 - r0, *rest)
                np.copyto(part, view)
                got = res.reshape(-1)[: group * mg * (r1 - r0) * inner].reshape(
                    1, group, mg, (r1 - r0) * inner)
                np.matmul(wg, part.reshape(1, group, ck, (r1 - r0) * inner), out=got)
                np.copyto(dst[i:i + 1, :, r0:r1], got.reshape(1, group * mg, r1 - r0, *rest))


class Conv(ConvFusion, ConvKernel, schema.Conv):
    """Also absorbs what follows it (:class:`~mini_infer_core.plugin.ConvFusion`): a
    BatchNormalization or per-channel Mul/Add (folded into the weights and bias), an Add/Sum
    of a same-shaped tensor (a residual, added in place), and a Relu or Clip (applied in
    place). The ``__residual__``/``__relu__``/``__clip__`` fields record it."""
