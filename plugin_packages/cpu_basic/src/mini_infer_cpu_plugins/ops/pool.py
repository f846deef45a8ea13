"""Pooling: MaxPool (with its Indices output), AveragePool, LpPool (N-d; its classes in
:mod:`.lp_pool`), GlobalAveragePool, GlobalMaxPool.

Max, sum (average) and Lp windows are separable: the kernel reduces one spatial axis at a
time into a buffer (the last axis into the output), with about one NumPy call per kernel
tap -- the two widest taps share the first call. Nothing pads the input: a tap covers only
the outputs whose read falls inside the input; an output no tap reaches gets the fill (-inf
for max, 0 for sums). A window over the whole input is a plain reduction. The time goes into
memory traffic and into how NumPy iterates, hence:

* the channels go in chunks of about :data:`CHUNK_BYTES` of input, so that a chunk's
  intermediates stay in the L2 cache, and each chunk is finished there (sums times the
  reciprocal divisors, or the Lp root). The steps of a chunk (which call, on which slices of
  which views) are compiled once per shape and chunk size, with their buffers;
* NumPy runs a call whose operands do not flatten to 1-D (every other row; a map with its
  border rows cut off; a per-channel broadcast) through its ufunc buffer, 3-4x slower than
  a call on flat arrays. So an axis whose taps are all strided views of the flat input --
  its size is ``stride * out`` and the stride is 1, or it is the last axis -- runs as one
  flat call per tap over all channels and rows of the chunk: tap ``t`` of output ``i`` reads
  ``flat[(i * stride + t * dilation - pad) * slab]``. A read past the border of the axis
  wraps into the next row (or channel); those few border outputs are recomputed afterwards
  on their own. That covers stride-1 "same" pools along every axis, and stride-2 pools of
  even sizes along the last axis;
* the other axes (stride 2 along rows, odd sizes) reduce ranges of rows or columns.

MaxPool's Indices (flat positions in the input, row-major or, with ``storage_order=1``,
column-major spatially) track the winning tap per output (first maximum in scan order) on a
padded copy of the input (kept per shape; its border is filled once); they are computed only
when the caller passes the second output buffer.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.ops import pool as schema
from mini_infer_core.plugin import record, shapes
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._geometry import pad_into
from ._util import Scratch

__all__ = ["MaxPool_1", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"]

Array = NDArray[Any]

#: input bytes pooled per chunk of channels (the chunk's buffers then stay in the L2 cache)
CHUNK_BYTES = 256 * 1024
#: NumPy's ufunc buffer (elements) while pooling: the calls on strided rows copy through it,
#: a little faster with a smaller one than the default 8192 (and it is allocated per call)
BUFSIZE = 2048

#: one kernel tap along one axis: (offset, first, end): output ``i`` reads input
#: ``i * stride + offset``, for the outputs ``first <= i < end`` whose read is inside the input
Tap = tuple[int, int, int]
#: an operand of a step: (name of a view of the chunk, index into that view)
Operand = tuple[str, tuple[Any, ...]]
#: one NumPy call of a chunk: ``func(*args, out=out)``; each arg is an operand or a constant
Step = tuple[Any, Operand, tuple[Any, ...]]

_ALL = slice(None)


def _copy(a: Any, *, out: Array) -> None:
    np.copyto(out, a)


def _axis_taps(n_in: int, k: int, s: int, d: int, pad: int, n_out: int) -> tuple[Tap, ...]:
    """The taps of a window along one axis that read the input at all."""
    taps = []
    for t in range(k):
        off = t * d - pad
        first, end = max(0, -(off // s)), min(n_out, (n_in - 1 - off) // s + 1)
        if first < end:
            taps.append((off, first, end))
    return tuple(taps)


def _reduce(op: Any, src: str, dst: str, span: tuple[int, int], taps: Sequence[Tap], s: int,
            fill: Any) -> list[Step]:
    """Steps for ``dst[:, i] = op`` over ``taps`` of ``src[:, i * s + offset]`` (axis 1), for
    ``i`` in ``span``; outputs no tap reaches get ``fill``. The two widest taps start it in
    one call."""

    def seg(off: int, first: int, end: int) -> Operand:
        return src, (_ALL, slice(first * s + off, (end - 1) * s + off + 1, s))

    def part(first: int, end: int) -> Operand:
        return dst, (_ALL, slice(first, end))

    lo, hi = span
    taps = sorted(((o, max(f, lo), min(e, hi)) for o, f, e in taps if max(f, lo) < min(e, hi)),
                  key=lambda tap: tap[1] - tap[2])
    if not taps:
        return [(_copy, part(lo, hi), (fill,))]
    off, first, end = taps[0]
    steps: list[Step] = [(_copy, part(a, b), (fill,)) for a, b in ((lo, first), (end, hi))
                         if a < b]
    rest = list(taps[1:])
    if rest and max(first, rest[0][1]) < min(end, rest[0][2]):
        off2, first2, end2 = rest.pop(0)
        a, b = max(first, first2), min(end, end2)
        steps.append((op, part(a, b), (seg(off, a, b), seg(off2, a, b))))
        # the widest tap alone; the second alone comes with the rest
        steps += [(_copy, part(u, v), (seg(off, u, v),)) for u, v in ((first, a), (b, end))
                  if u < v]
        rest[:0] = [(off2, first2, a), (off2, b, end2)]
    else:
        steps.append((_copy, part(first, end), (seg(off, first, end),)))
    steps += [(op, part(u, v), (part(u, v), seg(o, u, v))) for o, u, v in rest if u < v]
    return steps


def _flat(op: Any, dst: str, n: int, reads: Sequence[tuple[str, int, int, int]]
          ) -> list[Step]:
    """Steps for ``dst[p] = op`` over ``reads`` ``(src, size, step, offset)`` of
    ``src[p * step + offset]``: 1-D views, for every ``p`` in range of all of them (the
    outputs left out are border outputs, fixed by the caller)."""
    first = max(0, *(-(o // st) for _, _, st, o in reads))
    end = min(n, *((size - 1 - o) // st + 1 for _, size, st, o in reads))

    def seg(src: str, st: int, o: int) -> Operand:
        return src, (0, slice(first * st + o, (end - 1) * st + o + 1, st))

    out: Operand = (dst, (0, slice(first, end)))
    (src, _, st, o), rest = reads[0], reads[1:]
    if not rest:
        return [(_copy, out, (seg(src, st, o),))]
    steps: list[Step] = [(op, out, (seg(src, st, o), seg(rest[0][0], rest[0][2], rest[0][3])))]
    return steps + [(op, out, (out, seg(src, st, o))) for src, _, st, o in rest[1:]]


def _run(steps: Sequence[Step], views: dict[str, Array]) -> None:
    for func, (name, index), args in steps:
        func(*(views[a[0]][a[1]] if isinstance(a, tuple) else a for a in args),
             out=views[name][index])


class _Grid:
    """The chunked separable reduction (see the module docstring) of one input shape: the
    steps of a chunk, compiled once per chunk size, on views of buffers kept with them.

    Each axis reduces 4-D views ``(a, axis, rows, row)``: ``a`` counts channels and the
    outputs of the axes before, ``rows * row`` elements follow each index of the axis (for
    the last axis, one). Per chunk, ``x`` is the input and ``c`` the output; a name + ``f``
    is the same memory as one flat row."""

    def __init__(self, spatial: Sequence[int], win: shapes.Window, begin: Sequence[int],
                 outs: Sequence[int], dtype: Any, kind: str, fill: Any,
                 finish: tuple[Any, Any] | None) -> None:
        self.ins, self.outs = tuple(spatial), tuple(outs)
        self.axes = tuple(zip(self.ins, (int(k) for k in win.kernel), win.strides,
                              win.dilations, begin, outs, strict=True))
        self.dtype, self.fill, self.finish = np.dtype(dtype), fill, finish
        self.op = np.maximum if kind == "max" else np.add
        #: one window, the whole input (a global pooling): a reduction of each channel
        self.whole = all(axis[1:] == (axis[0], 1, 1, 0, 1) for axis in self.axes)
        self.chunk = max(1, CHUNK_BYTES // (math.prod(self.ins) * self.dtype.itemsize))
        self._buffers: dict[str, Array] = {}
        self._programs: dict[int, tuple[list[Step], dict[str, Array]]] = {}

    def _buffer(self, views: dict[str, Array], name: str, shape: tuple[int, ...]) -> None:
        """A buffer as ``views[name]`` (and flat as ``views[name + "f"]``)."""
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.size < size:
            buf = self._buffers[name] = np.empty(size, self.dtype)
        views[name + "f"] = buf[:size].reshape(1, -1)
        views[name] = buf[:size].reshape(shape)

    def _axis(self, i: int, a: int, src: str, dst: str) -> list[Step]:
        """Steps reducing axis ``i`` of ``src`` into ``dst``. When every tap of the axis is
        a strided view of the flat input (``n_in == stride * n_out``, and the stride is 1
        unless the axis is the last one): a flat call per tap, then the border outputs
        (whose reads fall outside the input, and wrapped into the neighbouring row) on
        their own. Otherwise, or when most outputs are border outputs: row ranges."""
        n_in, k, s, d, pad, n_out = self.axes[i]
        slab = math.prod(self.ins[i + 1:]) if i < len(self.axes) - 1 else 1
        offs = [t * d - pad for t in range(k)]
        border = [j for j in range(n_out) if not all(0 <= j * s + o < n_in for o in offs)]
        if n_in != s * n_out or (s > 1 and slab > 1) or 2 * len(border) > n_out:
            return _reduce(self.op, src, dst, (0, n_out), _axis_taps(*self.axes[i]), s,
                           self.fill)
        steps = _flat(self.op, dst + "f", a * n_out * slab,
                      [(src + "f", a * n_in * slab, s, o * slab) for o in offs])
        for j in border:  # the taps inside the input
            out: Operand = (dst, (_ALL, j))
            args: list[Any] = [(src, (_ALL, j * s + o)) for o in offs if 0 <= j * s + o < n_in]
            if len(args) < 2:
                steps.append((_copy, out, (args[0] if args else self.fill,)))
                continue
            steps.append((self.op, out, tuple(args[:2])))
            steps += [(self.op, out, (out, arg)) for arg in args[2:]]
        return steps

    def _compile(self, m: int) -> tuple[list[Step], dict[str, Array]]:
        """The steps of a chunk of ``m`` channels, and the buffer views they use."""
        steps: list[Step] = []
        views: dict[str, Array] = {}
        src, a, last = "x", m, len(self.axes) - 1
        for i, (_, _, _, _, _, n_out) in enumerate(self.axes[:-1]):
            dst = f"d{i}"
            self._buffer(views, dst, (a, n_out, math.prod(self.ins[i + 1:-1]), self.ins[-1]))
            steps += self._axis(i, a, src, dst)
            a *= n_out
            src = f"s{i + 1}"  # the same buffer, viewed for the next axis
            rest = (-1, self.ins[-1]) if i + 1 < last else (1, 1)
            views[src] = views[dst].reshape(a, self.ins[i + 1], *rest)
            views[src + "f"] = views[dst + "f"]
        steps += self._axis(last, a, src, "c")
        if self.finish is not None:  # sums to averages or Lp norms: y = func(y, constant)
            func, const = self.finish  # a scalar, or per output (of every channel)
            out = ("cf", ()) if np.ndim(const) == 0 else ("cc", ())
            steps.append((func, out, (out, const)))
        return steps, views

    def run(self, x: Array, y: Array) -> None:
        """Pool ``x`` (N, C, *spatial), C-contiguous, into ``y`` (N, C, *out)."""
        nc = x.shape[0] * x.shape[1]
        xs, ys = x.reshape(nc, -1), y.reshape(nc, -1)
        if self.whole:
            self.op.reduce(xs, axis=1, out=ys[:, 0])
            if self.finish is not None:
                self.finish[0](ys, self.finish[1], out=ys)
            return
        first, width, wo = self.ins[0], self.ins[-1], self.outs[-1]
        step = -(-nc // max(1, round(nc / self.chunk)))  # chunks of even sizes
        bufsize = np.setbufsize(BUFSIZE)
        try:
            for c0 in range(0, nc, step):
                m = min(step, nc - c0)
                program = self._programs.get(m)
                if program is None:
                    program = self._programs[m] = self._compile(m)
                steps, views = program
                xc, yc = xs[c0:c0 + m], ys[c0:c0 + m]
                x4 = xc.reshape(m, first, -1, width) if len(self.ins) > 1 else xc.reshape(
                    m, width, 1, 1)
                _run(steps, {**views, "x": x4, "xf": xc.reshape(1, -1),
                             "c": yc.reshape(-1, wo, 1, 1), "cf": yc.reshape(1, -1),
                             "cc": yc})
        finally:
            np.setbufsize(bufsize)


@record(frozen=True)
class _Plan:
    begin: tuple[int, ...]
    ext: tuple[int, ...]
    pad: bool
    taps: tuple[tuple[Any, ...], ...]
    #: MaxPool Indices: per-tap offset and per-output base of the flat input position
    #: (row-major or column-major spatial strides)
    tap_offsets: tuple[Array, Array] | None
    #: the separable reduction (MaxPool Indices come from the taps on a padded copy)
    grid: _Grid
    #: value of the padding: -inf (or the integer minimum) for max, 0 for sums
    fill: Any


def _index_tables(spatial: Sequence[int], win: shapes.Window, begin: Sequence[int],
                  out_dims: Sequence[int], column_major: bool) -> tuple[Array, Array]:
    """(offset per tap, base per output position) of flat spatial input indices."""
    nd = len(spatial)
    mult = [1] * nd
    order = range(nd) if column_major else range(nd - 1, -1, -1)
    acc = 1
    for i in order:
        mult[i] = acc
        acc *= spatial[i]
    taps = itertools.product(*(range(int(k)) for k in win.kernel))
    offs = np.array([sum(t[i] * win.dilations[i] * mult[i] for i in range(nd)) for t in taps],
                    np.int64)
    base = np.zeros((), np.int64)
    for i in range(nd):
        base = np.add.outer(base, (np.arange(out_dims[i]) * win.strides[i] - begin[i])
                            * mult[i])
    return offs, base


class _Pool(CpuPlugin, schema.PoolBase):
    """The separable reduction (:class:`_Grid`); MaxPool's Indices from the taps of a padded
    copy of the input."""

    def setup(self) -> None:
        self.scratch = Scratch()

    def _plan(self, x: Array, p: float) -> _Plan:
        key = ("plan", x.shape, x.dtype.str)
        plan: _Plan | None = self.scratch.get(key)
        if plan is not None:
            return plan
        spatial = x.shape[2:]
        win, geo = self.geometry(spatial)
        ext = shapes.padded_extent(spatial, win, geo)
        taps = self.taps(win, geo)
        scale: Array | float = 1.0 / len(taps)
        divisor = self.divisor(spatial, win, geo)
        if divisor is not None:
            with np.errstate(divide="ignore"):
                scale = (1.0 / divisor).astype(x.dtype)
        tables = None
        fill = self.pad_value(x.dtype)
        if self.kind == "max":
            tables = _index_tables(spatial, win, geo.begin, geo.out,
                                   bool(self.attrs.get("storage_order", 0)))
        finish = {"avg": (np.multiply, np.reshape(scale, -1) if isinstance(scale, np.ndarray)
                          else scale), "lp": (np.power, 1.0 / p)}.get(self.kind)
        grid = _Grid(spatial, win, geo.begin, geo.out, x.dtype, self.kind, fill, finish)
        plan = _Plan(geo.begin, ext, shapes.needs_padding(spatial, geo.begin, ext), taps,
                     tables, grid, fill)
        self.scratch.put(key, plan)
        return plan
    def _source(self, x: Array, plan: _Plan) -> Array:
        if not plan.pad:
            return x
        buf = self.scratch.buffer("pad", x.shape[:2] + plan.ext, x.dtype, fill=plan.fill)
        return pad_into(buf, x, plan.begin)

    def compute(self, x: Array, *, out: Any, **attrs: Any) -> None:
        p = attrs.get("p", 1)
        if isinstance(out, tuple):
            y, idx = out[0], (out[1] if len(out) > 1 else None)
        else:
            y, idx = out, None
        if y.size == 0:  # an empty batch (or no channels): nothing to compute
            return
        plan = self._plan(x, p)
        if idx is not None:
            self._max_with_indices(self._source(x, plan), x.shape, y, idx, plan)
            return
        if self.kind == "lp":
            x = np.abs(x) if p == 1 else np.abs(x) ** p
        dst = y if y.flags.c_contiguous else self.scratch.buffer("out", y.shape, y.dtype)
        plan.grid.run(np.ascontiguousarray(x), dst)
        if dst is not y:
            np.copyto(y, dst)

    def _max_with_indices(self, src: Array, shape: tuple[int, ...], y: Array, idx: Array,
                          plan: _Plan) -> None:
        """The max of the taps of the padded input, then the first tap equal to it (taps in
        reverse, each overwriting: the earliest wins)."""
        assert plan.tap_offsets is not None
        offs, base = plan.tap_offsets
        taps = plan.taps
        np.copyto(y, src[taps[0]])
        for t in taps[1:]:
            np.maximum(y, src[t], out=y)
        arg = self.scratch.buffer("arg", y.shape, np.int64)
        mask = self.scratch.buffer("mask", y.shape, np.bool_)
        arg.fill(offs[-1])
        for k in range(len(taps) - 2, -1, -1):
            np.equal(src[taps[k]], y, out=mask)
            np.copyto(arg, offs[k], where=mask)
        n, c = shape[:2]
        per_image = int(np.prod(shape[2:], dtype=np.int64))
        np.add(arg, base, out=idx)
        idx += (np.arange(n * c, dtype=np.int64) * per_image).reshape(
            (n, c) + (1,) * (len(shape) - 2))


class MaxPool_1(_Pool, schema.MaxPool_1):  # noqa: N801
    """The values only."""


class MaxPool(_Pool, schema.MaxPool):
    """The kernel computes Indices whenever it is given a second output buffer."""


class AveragePool(_Pool, schema.AveragePool):
    """Sums times the reciprocal divisors."""


class GlobalAveragePool(CpuPlugin, schema.GlobalAveragePool):
    def compute(self, x: Array, *, out: Array) -> None:
        np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True, out=out)


class GlobalMaxPool(CpuPlugin, schema.GlobalMaxPool):
    def compute(self, x: Array, *, out: Array) -> None:
        np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True, out=out)
