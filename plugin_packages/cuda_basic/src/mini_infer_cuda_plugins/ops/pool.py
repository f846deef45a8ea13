"""Pooling: MaxPool (opsets 1 and 8), AveragePool and GlobalAveragePool.

On the GPU, 1-D and 2-D float pooling is one RawKernel launch (``maxpool_2d`` /
``avgpool_2d``: one thread per output, the window walked in place, padding never read). The
other cases (N-d, integer MaxPool, NumPy) go tap by tap over a padded copy of the input (kept
per shape; its border filled once with -inf for max, 0 for average): one vectorised
``maximum``/``add`` per kernel offset over the strided slice of every window.

The geometry (pads, taps, AveragePool's divisors) is the schema's
(:mod:`mini_infer_core.ops.pool`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import pool as schema
from mini_infer_core.plugin import shapes

from ..serialization import CudaPlugin
from . import _raw
from ._common import Scratch, acc_dtype, array_module
from .conv import as_2d, window_args

__all__ = ["MaxPool_1", "MaxPool", "AveragePool", "GlobalAveragePool"]


@dataclass(frozen=True)
class _Plan:
    window: shapes.Window
    geometry: shapes.Geometry
    ext: tuple[int, ...]
    taps: tuple[schema.Tap, ...]
    #: AveragePool's per-output divisor (host), None where it is the kernel size everywhere
    divisor: np.ndarray[Any, Any] | None


class _Pool(CudaPlugin, schema.PoolBase):
    def setup(self) -> None:
        self.scratch = Scratch()

    def _plan(self, x: Any) -> _Plan:
        """The plan of ``x``'s shape and type, made once."""
        key = ("plan", x.shape, x.dtype.str)
        plan: _Plan | None = self.scratch.get(key)
        return plan or self.scratch.put(key, self._new_plan(x.shape[2:], x.dtype))

    def _new_plan(self, spatial: tuple[int, ...], dtype: Any) -> _Plan:
        win, geo = self.geometry(spatial)
        divisor = self.divisor(spatial, win, geo)
        return _Plan(win, geo, shapes.padded_extent(spatial, win, geo), self.taps(win, geo),
                     None if divisor is None else divisor.astype(acc_dtype(dtype)))

    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        xp = array_module(x, out)
        plan = self._plan(x)
        if xp is not np and plan.window.nd <= 2 and x.dtype in _raw.SUFFIX:
            dst = out if out.flags.c_contiguous else \
                self.scratch.buffer(xp, "dst", out.shape, out.dtype)
            self._raw_kernel(xp.ascontiguousarray(x), dst, plan)
            if dst is not out:
                xp.copyto(out, dst)
            return
        self._taps(xp, x, out, plan)

    def _raw_kernel(self, x: Any, y: Any, plan: _Plan) -> None:
        window = window_args(plan.window, plan.geometry, x.shape[2:])
        if self.kind == "max":
            _raw.launch("pool", "maxpool_2d", x.dtype, y.size,
                        (x, y, *window, np.int64(y.size)))
        else:
            phe, pwe = as_2d(plan.window, plan.geometry, x.shape[2:])[4]
            include = np.int32(bool(self.attrs["count_include_pad"]))
            _raw.launch("pool", "avgpool_2d", x.dtype, y.size, (
                x, y, *window, np.int32(phe), np.int32(pwe), include, np.int64(y.size)))

    def _taps(self, xp: Any, x: Any, y: Any, plan: _Plan) -> None:
        geo = plan.geometry
        src = x
        if shapes.needs_padding(x.shape[2:], geo.begin, plan.ext):
            src = self.scratch.buffer(xp, "pad", (*x.shape[:2], *plan.ext), x.dtype,
                                      fill=self.pad_value(x.dtype))
            inner = (slice(None), slice(None), *(slice(b, b + s) for b, s in
                                                 zip(geo.begin, x.shape[2:], strict=True)))
            xp.copyto(src[inner], x)
        if self.kind == "max":
            xp.copyto(y, src[plan.taps[0]])
            for t in plan.taps[1:]:
                xp.maximum(y, src[t], out=y)
            return
        acc = y if acc_dtype(y.dtype) == y.dtype else \
            self.scratch.buffer(xp, "acc", y.shape, acc_dtype(y.dtype))
        xp.copyto(acc, src[plan.taps[0]])
        for t in plan.taps[1:]:
            xp.add(acc, src[t], out=acc)
        if plan.divisor is None:
            xp.multiply(acc, 1.0 / len(plan.taps), out=acc)
        else:
            xp.divide(acc, self.scratch.constant(xp, "divisor", plan.divisor), out=acc)
        if acc is not y:
            xp.copyto(y, acc, casting="same_kind")


class _NoIndices(_Pool):
    """MaxPool's optional Indices output is not produced here: a node that uses it is refused
    when the engine is built (with the schema's ``__num_outputs__``)."""

    @property
    def num_outputs(self) -> int:
        if int(self.hidden.get("__num_outputs__", 1)) >= 2:
            raise PluginInterfaceError(
                f"{self.op_type}: the Indices output is not computed on the cuda device; "
                "build for the cpu device (or drop the Indices output)")
        return 1


MaxPool_1, MaxPool, AveragePool = (
    type(base.__name__, (_NoIndices, base), {"__module__": __name__})
    for base in (schema.MaxPool_1, schema.MaxPool, schema.AveragePool))


class GlobalAveragePool(CudaPlugin, schema.GlobalAveragePool):
    """Mean over the spatial axes (accumulated in float32 for float16)."""

    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Any, *, out: Any) -> None:
        xp = array_module(x, out)
        axes = tuple(range(2, x.ndim))
        acc = acc_dtype(x.dtype)
        if acc == x.dtype:
            xp.mean(x, axis=axes, keepdims=True, out=out)
            return
        tmp = self.scratch.buffer(xp, "acc", out.shape, acc)
        xp.mean(x, axis=axes, dtype=acc, keepdims=True, out=tmp)
        xp.copyto(out, tmp, casting="same_kind")
