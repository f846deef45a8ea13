"""Pooling: MaxPool (opsets 1 and 8), AveragePool and GlobalAveragePool.

On the GPU, 1-D and 2-D float pooling is one RawKernel launch (``maxpool_2d`` /
``avgpool_2d``: one thread per output, the window walked in place, padding never read). The
other cases (N-d, integer MaxPool, NumPy) go tap by tap over a padded copy of the input (kept
per shape; its border filled once with -inf for max, 0 for average): one vectorised
``maximum``/``add`` per kernel offset over the strided slice of every window.

AveragePool divides by the number of taps inside the input, or with ``count_include_pad``
inside input + explicit pads (windows that ``ceil_mode`` lets overhang the end padding do not
count the overhang), as onnxruntime and the ONNX reference do.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, UnaryPlugin, shapes
from mini_infer_core.plugin.shapes import Shapes

from ..serialization import CudaPlugin
from . import _raw
from ._common import FLOATS, Scratch, acc_dtype, array_module
from .conv import as_2d

__all__ = ["MaxPool_1", "MaxPool", "AveragePool", "GlobalAveragePool"]



@dataclass(frozen=True)
class _Plan:
    window: shapes.Window
    geometry: shapes.Geometry
    ext: tuple[int, ...]
    taps: tuple[tuple[Any, ...], ...]
    #: AveragePool's per-output divisor (host), None where it is the kernel size everywhere
    divisor: np.ndarray[Any, Any] | None


def _counts(size: int, k: int, s: int, d: int, pb: int, pe: int, o: int, include: bool
            ) -> np.ndarray[Any, Any]:
    """Per output index: how many of its taps fall inside the input (or input + pads)."""
    lo, hi = (-pb, size + pe) if include else (0, size)
    pos = (np.arange(o)[:, None] * s - pb) + np.arange(k)[None, :] * d
    counts: np.ndarray[Any, Any] = ((pos >= lo) & (pos < hi)).sum(axis=1)
    return counts


class _Pool(CudaPlugin, UnaryPlugin):
    kind: ClassVar[str] = "max"

    def setup(self) -> None:
        self.scratch = Scratch()

    def _window(self, nd: int) -> shapes.Window:
        return shapes.window_from_attrs(self.op_type, nd, self.attrs)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(f"{self.op_type}: input rank {len(x)} < 3")
        return [[x[0], x[1], *shapes.symbolic_out_dims(x[2:], self._window(len(x) - 2))]]

    def _plan(self, x: Any) -> _Plan:
        key = ("plan", x.shape, x.dtype.str)
        plan: _Plan | None = self.scratch.get(key)
        if plan is not None:
            return plan
        spatial = x.shape[2:]
        win = self._window(len(spatial))
        geo = shapes.resolve(spatial, win)
        taps = tuple(
            (Ellipsis, *(slice(t * d, t * d + s * (o - 1) + 1, s) for t, d, s, o in
                         zip(tap, win.dilations, win.strides, geo.out, strict=True)))
            for tap in itertools.product(*(range(k) for k in win.kernel)))
        divisor = None
        if self.kind == "avg":
            include = bool(self.attrs["count_include_pad"])
            full = np.ones((), np.int64)
            for i, size in enumerate(spatial):
                full = np.multiply.outer(full, _counts(
                    size, win.kernel[i], win.strides[i], win.dilations[i], geo.begin[i],
                    geo.end[i], geo.out[i], include))
            if np.any(full != len(taps)):
                divisor = full.astype(acc_dtype(x.dtype))
        plan = _Plan(win, geo, shapes.padded_extent(spatial, win, geo), taps, divisor)
        self.scratch.put(key, plan)
        return plan

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
        (h, w), (kh, kw), (sh, sw), (ph, pw), (phe, pwe), (dh, dw), (oh, ow) = \
            as_2d(plan.window, plan.geometry, x.shape[2:])
        i32 = np.int32
        if self.kind == "max":
            _raw.launch("pool", "maxpool_2d", x.dtype, y.size, (
                x, y, i32(h), i32(w), i32(oh), i32(ow), i32(kh), i32(kw), i32(sh), i32(sw),
                i32(ph), i32(pw), i32(dh), i32(dw), np.int64(y.size)))
        else:
            include = i32(bool(self.attrs["count_include_pad"]))
            _raw.launch("pool", "avgpool_2d", x.dtype, y.size, (
                x, y, i32(h), i32(w), i32(oh), i32(ow), i32(kh), i32(kw), i32(sh), i32(sw),
                i32(ph), i32(pw), i32(phe), i32(pwe), i32(dh), i32(dw), include,
                np.int64(y.size)))

    def _taps(self, xp: Any, x: Any, y: Any, plan: _Plan) -> None:
        geo = plan.geometry
        src = x
        if shapes.needs_padding(x.shape[2:], geo.begin, plan.ext):
            if self.kind == "max":
                fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
            else:
                fill = 0
            src = self.scratch.buffer(xp, "pad", (*x.shape[:2], *plan.ext), x.dtype,
                                      fill=fill)
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


class MaxPool_1(_Pool):  # noqa: N801
    """Max pooling before opset 8 (no dilations, no ceil_mode, no Indices output)."""

    op_type = "MaxPool"
    plugin_version = "1"
    max_opset = 7
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "kernel_shape": REQUIRED, "pads": None, "strides": None}


class MaxPool(_Pool):
    """Max pooling from opset 8 (ceil_mode and dilations from 10).

    The optional Indices output is not produced (one output declared, as the cpu plugins do):
    a node that uses it does not build on this device.
    """

    plugin_version = "8"
    min_opset = 8
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": REQUIRED,
        "pads": None, "storage_order": 0, "strides": None}


class AveragePool(_Pool):
    dtypes = FLOATS
    kind = "avg"
    attributes: ClassVar[dict[str, Any]] = {
        "auto_pad": "NOTSET", "ceil_mode": 0, "count_include_pad": 0, "dilations": None,
        "kernel_shape": REQUIRED, "pads": None, "strides": None}


class GlobalAveragePool(CudaPlugin, UnaryPlugin):
    """Mean over the spatial axes (accumulated in float32 for float16)."""

    dtypes = FLOATS

    def setup(self) -> None:
        self.scratch = Scratch()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if len(x) < 3:
            raise PluginInterfaceError(f"GlobalAveragePool: input rank {len(x)} < 3")
        return [x[:2] + [1] * (len(x) - 2)]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]]

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
