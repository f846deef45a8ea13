"""Pooling: MaxPool, AveragePool (N-d), GlobalAveragePool, GlobalMaxPool.

The windows are sliding-window views of a padded copy of the input (kept per shape; its
border is filled once with -inf for max, 0 for average). The reduction runs tap by tap: for
each kernel offset, one vectorised ``np.maximum``/``np.add`` over the strided slice of all
windows -- the same windows as an ``as_strided`` (N, C, *out, *kernel) view, but about 10x
faster than reducing that view's small trailing axes.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DimsExprs, UnaryPlugin

from ..serialization import CpuPlugin
from ._geometry import (
    Window,
    needs_padding,
    pad_into,
    padded_extent,
    resolve,
    symbolic_out_dims,
    window_params,
)
from ._util import FLOATS, IntLike, Scratch

__all__ = ["MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"]

Array = NDArray[Any]


@dataclass(frozen=True)
class _Plan:
    begin: tuple[int, ...]
    ext: tuple[int, ...]
    pad: bool
    taps: tuple[tuple[Any, ...], ...]
    #: AveragePool: per-output divisor (None: the constant kernel size)
    divisor: Array | None


def _per_dim_counts(h: int, k: int, s: int, d: int, pb: int, pe: int, o: int,
                    include_pad: bool) -> Array:
    """How many taps of each output window fall inside the input (or input + pads)."""
    lo, hi = (-pb, h + pe) if include_pad else (0, h)
    pos = (np.arange(o)[:, None] * s - pb) + np.arange(k)[None, :] * d
    return ((pos >= lo) & (pos < hi)).sum(axis=1)  # type: ignore[no-any-return]


class _Pool(CpuPlugin, UnaryPlugin):
    is_max: ClassVar[bool] = True

    def setup(self) -> None:
        self.scratch = Scratch()

    def _window(self, nd: int) -> Window:
        a = self.attrs
        return window_params(self.op_type, nd, a["kernel_shape"], a["strides"],
                             a.get("dilations"), a["pads"], a["auto_pad"], a["ceil_mode"])

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(f"{self.op_type}: input rank {len(x)} < 3")
        return [[x[0], x[1], *symbolic_out_dims(x[2:], self._window(len(x) - 2))]]

    def _plan(self, x: Array) -> _Plan:
        key = ("plan", x.shape, x.dtype.str)
        plan: _Plan | None = self.scratch.get(key)
        if plan is not None:
            return plan
        spatial = x.shape[2:]
        win = self._window(len(spatial))
        begin, end, out_dims = resolve(spatial, win)
        ext = padded_extent(spatial, win, begin, out_dims)
        taps = tuple(
            (Ellipsis, *(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in
                         zip(tap, win.dilations, win.strides, out_dims, strict=True)))
            for tap in itertools.product(*(range(int(k)) for k in win.kernel)))
        divisor = None
        if not self.is_max:
            include = bool(self.attrs["count_include_pad"])
            counts = [_per_dim_counts(h, int(k), s, d, b, e, o, include) for h, k, s, d, b, e, o
                      in zip(spatial, win.kernel, win.strides, win.dilations, begin, end,
                             out_dims, strict=True)]
            full = np.ones((), np.int64)
            for cnt in counts:
                full = np.multiply.outer(full, cnt)
            if np.any(full != len(taps)):
                divisor = full.astype(x.dtype)
        plan = _Plan(tuple(begin), tuple(ext), needs_padding(spatial, begin, ext), taps,
                     divisor)
        self.scratch.put(key, plan)
        return plan

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        plan = self._plan(x)
        src = x
        if plan.pad:
            if self.is_max:
                fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            else:
                fill = 0
            buf = self.scratch.buffer("pad", x.shape[:2] + plan.ext, x.dtype, fill=fill)
            src = pad_into(buf, x, plan.begin)
        taps = plan.taps
        np.copyto(out, src[taps[0]])
        if self.is_max:
            for t in taps[1:]:
                np.maximum(out, src[t], out=out)
            return
        for t in taps[1:]:
            np.add(out, src[t], out=out)
        if plan.divisor is None:
            np.multiply(out, 1.0 / len(taps), out=out)
        else:
            np.divide(out, plan.divisor, out=out)


class MaxPool(_Pool):
    """Max pooling (opsets 1-22 attributes). Only the values output is produced; the
    ``storage_order`` attribute concerns the Indices output and is accepted, unused."""

    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": REQUIRED,
        "pads": None, "storage_order": 0, "strides": None}


class AveragePool(_Pool):
    dtypes = FLOATS
    is_max = False
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "count_include_pad": 0, "dilations": None,
        "kernel_shape": REQUIRED, "pads": None, "strides": None}


class _GlobalPool(CpuPlugin, UnaryPlugin):
    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x = list(inputs[0])
        return [x[:2] + [1] * (len(x) - 2)]


class GlobalAveragePool(_GlobalPool):
    dtypes = FLOATS

    def compute(self, x: Array, *, out: Array) -> None:
        np.mean(x, axis=tuple(range(2, x.ndim)), keepdims=True, out=out)


class GlobalMaxPool(_GlobalPool):
    def compute(self, x: Array, *, out: Array) -> None:
        np.max(x, axis=tuple(range(2, x.ndim)), keepdims=True, out=out)
