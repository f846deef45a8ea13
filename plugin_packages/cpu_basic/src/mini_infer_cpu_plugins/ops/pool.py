"""Pooling: MaxPool (with its Indices output), AveragePool, LpPool (N-d), GlobalAveragePool,
GlobalMaxPool, GlobalLpPool.

The windows are sliding-window views of a padded copy of the input (kept per shape; its
border is filled once with -inf for max, 0 for average and Lp). The reduction runs tap by
tap: for each kernel offset, one vectorised ``np.maximum``/``np.add`` over the strided slice
of all windows -- the same windows as an ``as_strided`` (N, C, *out, *kernel) view, but
about 10x faster than reducing that view's small trailing axes.

MaxPool's Indices (flat positions in the input, row-major or, with ``storage_order=1``,
column-major spatially) track the winning tap per output (first maximum in scan order); they
are computed only when the caller passes the second output buffer.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, IntLike, UnaryPlugin, shapes

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin
from ._geometry import pad_into
from ._nn_util import NN_FLOATS
from ._util import Scratch

__all__ = ["MaxPool_1", "MaxPool", "AveragePool", "LpPool_1", "LpPool", "GlobalAveragePool",
           "GlobalMaxPool", "GlobalLpPool_1", "GlobalLpPool"]

Array = NDArray[Any]


@dataclass(frozen=True)
class _Plan:
    begin: tuple[int, ...]
    ext: tuple[int, ...]
    pad: bool
    taps: tuple[tuple[Any, ...], ...]
    #: AveragePool: per-output divisor (None: the constant kernel size)
    divisor: Array | None
    #: MaxPool Indices: per-tap offset and per-output base of the flat input position
    #: (row-major or column-major spatial strides)
    tap_offsets: tuple[Array, Array] | None
    #: per spatial dim: (kernel, stride, dilation, out) for the separable reduction
    axes: tuple[tuple[int, int, int, int], ...] = ()


def _per_dim_counts(h: int, k: int, s: int, d: int, pb: int, pe: int, o: int,
                    include_pad: bool) -> Array:
    """How many taps of each output window fall inside the input (or input + pads)."""
    lo, hi = (-pb, h + pe) if include_pad else (0, h)
    pos = (np.arange(o)[:, None] * s - pb) + np.arange(k)[None, :] * d
    return ((pos >= lo) & (pos < hi)).sum(axis=1)  # type: ignore[no-any-return]


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


class _Pool(ValuePlugin, UnaryPlugin):
    """``ValuePlugin`` for its ``hidden`` fields: an importer's ``__num_outputs__``."""

    kind: ClassVar[str] = "max"

    def setup(self) -> None:
        self.scratch = Scratch()

    def _window(self, nd: int) -> shapes.Window:
        return shapes.window_from_attrs(self.op_type, nd, self.attrs)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(f"{self.op_type}: input rank {len(x)} < 3")
        return [[x[0], x[1], *shapes.symbolic_out_dims(x[2:], self._window(len(x) - 2))]
                ] * self.num_outputs

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], DataType.INT64][:self.num_outputs]

    def _plan(self, x: Array) -> _Plan:
        key = ("plan", x.shape, x.dtype.str)
        plan: _Plan | None = self.scratch.get(key)
        if plan is not None:
            return plan
        spatial = x.shape[2:]
        win = self._window(len(spatial))
        geo = shapes.resolve(spatial, win)
        begin, end, out_dims = geo
        ext = shapes.padded_extent(spatial, win, geo)
        taps = tuple(
            (Ellipsis, *(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in
                         zip(tap, win.dilations, win.strides, out_dims, strict=True)))
            for tap in itertools.product(*(range(int(k)) for k in win.kernel)))
        divisor = None
        if self.kind == "avg":
            include = bool(self.attrs["count_include_pad"])
            counts = [_per_dim_counts(h, int(k), s, d, b, e, o, include) for h, k, s, d, b, e, o
                      in zip(spatial, win.kernel, win.strides, win.dilations, begin, end,
                             out_dims, strict=True)]
            full = np.ones((), np.int64)
            for cnt in counts:
                full = np.multiply.outer(full, cnt)
            if np.any(full != len(taps)):
                divisor = full.astype(x.dtype)
        tables = None
        if self.kind == "max":
            tables = _index_tables(spatial, win, begin, out_dims,
                                   bool(self.attrs.get("storage_order", 0)))
        axes = tuple((int(k), s, d, o) for k, s, d, o in zip(
            win.kernel, win.strides, win.dilations, out_dims, strict=True))
        plan = _Plan(tuple(begin), tuple(ext), shapes.needs_padding(spatial, begin, ext), taps,
                     divisor, tables, axes)
        self.scratch.put(key, plan)
        return plan

    def _source(self, x: Array, plan: _Plan) -> Array:
        if not plan.pad:
            return x
        if self.kind == "max":
            fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        else:
            fill = 0
        buf = self.scratch.buffer("pad", x.shape[:2] + plan.ext, x.dtype, fill=fill)
        return pad_into(buf, x, plan.begin)

    def compute(self, x: Array, *, out: Any, **attrs: Any) -> None:
        plan = self._plan(x)
        if isinstance(out, tuple):
            y, idx = out[0], (out[1] if len(out) > 1 else None)
        else:
            y, idx = out, None
        if self.kind == "lp":
            p = attrs["p"]
            x = np.abs(x) if p == 1 else np.abs(x) ** p
        src = self._source(x, plan)
        taps = plan.taps
        if idx is None and y.flags.c_contiguous:
            self._separable(src, y, plan)
            if self.kind == "max":
                return
        else:
            np.copyto(y, src[taps[0]])
            if self.kind == "max":
                if idx is not None:
                    self._max_with_indices(src, x.shape, y, idx, plan)
                else:
                    for t in taps[1:]:
                        np.maximum(y, src[t], out=y)
                return
            for t in taps[1:]:
                np.add(y, src[t], out=y)
        if self.kind == "lp":
            p = attrs["p"]
            np.power(y, 1.0 / p, out=y)
        elif plan.divisor is None:
            np.multiply(y, 1.0 / len(taps), out=y)
        else:
            np.divide(y, plan.divisor, out=y)

    def _separable(self, src: Array, y: Array, plan: _Plan) -> None:
        """Max and sum reduce one spatial dim at a time: 2(k-1) passes for a k x k window
        instead of k*k - 1, each on a smaller array than the last."""
        op = np.maximum if self.kind == "max" else np.add
        cur = src
        last = len(plan.axes) - 1
        for dim, (k, s, d, o) in enumerate(plan.axes):
            axis = 2 + dim
            shape = cur.shape[:axis] + (o,) + cur.shape[axis + 1:]
            dst = y if dim == last else self.scratch.buffer(f"sep{dim}", shape, y.dtype)

            def tap(t: int, cur: Array = cur, axis: int = axis, s: int = s, d: int = d,
                    o: int = o) -> Array:
                return cur[(slice(None),) * axis + (slice(t * d, t * d + s * (o - 1) + 1, s),)]

            np.copyto(dst, tap(0))
            for t in range(1, k):
                op(dst, tap(t), out=dst)
            cur = dst

    def _max_with_indices(self, src: Array, shape: tuple[int, ...], y: Array, idx: Array,
                          plan: _Plan) -> None:
        """``y`` holds the first tap; finish the max, then find the first tap equal to it
        (taps in reverse, each overwriting: the earliest wins)."""
        assert plan.tap_offsets is not None
        offs, base = plan.tap_offsets
        taps = plan.taps
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


class MaxPool_1(_Pool):  # noqa: N801
    """Max pooling before opset 8: the values only."""

    op_type = "MaxPool"
    plugin_version = "1"
    max_opset = 7
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "kernel_shape": REQUIRED, "pads": None, "strides": None}


class MaxPool(_Pool):
    """Max pooling from opset 8, with the optional Indices output.

    Indices make MaxPool 3-6x slower, and the engine does not tell a plugin whether a
    node's optional output is used: the plugin declares the second output only when the
    importer passes the node's output count (field ``__num_outputs__``) and it is 2. The
    kernel computes Indices whenever it is given a second output buffer.
    """

    plugin_version = "8"
    min_opset = 8
    hidden_fields = ("__num_outputs__",)
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": REQUIRED,
        "pads": None, "storage_order": 0, "strides": None}

    @property
    def num_outputs(self) -> int:
        return 2 if int(self.hidden.get("__num_outputs__", 1)) >= 2 else 1


class AveragePool(_Pool):
    dtypes = NN_FLOATS
    kind = "avg"
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "count_include_pad": 0, "dilations": None,
        "kernel_shape": REQUIRED, "pads": None, "strides": None}


class LpPool_1(_Pool):  # noqa: N801
    """Opset 1: ``p`` is a float."""

    op_type = "LpPool"
    plugin_version = "1"
    max_opset = 1
    dtypes = NN_FLOATS
    kind = "lp"
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "kernel_shape": None, "p": 2.0, "pads": None, "strides": None}


class LpPool(_Pool):
    """(sum over the window of |x|^p)^(1/p); pads count as zeros."""

    plugin_version = "2"
    min_opset = 2
    dtypes = NN_FLOATS
    kind = "lp"
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": REQUIRED,
        "p": 2, "pads": None, "strides": None}


class _GlobalPool(CpuPlugin, UnaryPlugin):
    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x = list(inputs[0])
        return [x[:2] + [1] * (len(x) - 2)]


class GlobalAveragePool(_GlobalPool):
    dtypes = NN_FLOATS

    def compute(self, x: Array, *, out: Array) -> None:
        np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True, out=out)


class GlobalMaxPool(_GlobalPool):
    def compute(self, x: Array, *, out: Array) -> None:
        np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True, out=out)


class _GlobalLp(_GlobalPool):
    """(sum over the spatial axes of |x|^p)^(1/p)."""

    op_type = "GlobalLpPool"
    dtypes = NN_FLOATS

    def compute(self, x: Array, *, out: Array, p: float) -> None:
        axes = tuple(range(2, x.ndim))
        np.sum(np.abs(x) ** p, axis=axes, keepdims=True, out=out)
        np.power(out, 1.0 / p, out=out)


class GlobalLpPool_1(_GlobalLp):  # noqa: N801
    """Opset 1: ``p`` is a float."""

    op_type = "GlobalLpPool"
    plugin_version = "1"
    max_opset = 1
    attributes: ClassVar[dict[str, Any]] = {"p": 2.0}


class GlobalLpPool(_GlobalLp):
    plugin_version = "2"
    min_opset = 2
    attributes: ClassVar[dict[str, Any]] = {"p": 2}
