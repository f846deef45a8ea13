"""Reductions: ReduceSum, ReduceMean, ReduceMax, each in two versions -- ``axes`` as an
attribute (``*_1``: up to opset 12 for ReduceSum, 17 for the others) and ``axes`` as an
optional input with ``noop_with_empty_axes`` (from 13 for ReduceSum, 18 for the others).

No axes reduce everything, unless ``noop_with_empty_axes``: then the input is copied. An axes
input must be known when the engine is built; its values are recorded with the plugin, so
the kernel never reads them back from the GPU. Float16 sums and means accumulate in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.plugin import DimsExprs, UnaryPlugin
from mini_infer_core.plugin.shapes import Shapes, absent, const_ints, norm_axis, reduced_dims

from ..serialization import CudaPlugin
from ._common import Scratch, acc_dtype, array_module, host_ints, shape_values

__all__ = ["ReduceSum_1", "ReduceSum", "ReduceMean_1", "ReduceMean", "ReduceMax_1",
           "ReduceMax"]


Axes = tuple[int, ...] | None  # None: every axis; (): none (a copy)


class _Reduce(CudaPlugin, UnaryPlugin):
    """Axes from the ``axes`` attribute."""

    attributes: ClassVar[dict[str, Any]] = {"axes": None, "keepdims": 1}
    #: "sum", "mean" or "max"
    kind: ClassVar[str] = "sum"

    def setup(self) -> None:
        self.scratch = Scratch()

    def axes_for(self, inputs: Sequence[DimsExprs | None]) -> Axes:
        axes = self.attrs.get("axes")
        return None if axes is None else tuple(axes)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [reduced_dims(list(inputs[0]), self.axes_for(inputs),
                             bool(self.attrs["keepdims"]))]

    def run_axes(self, axes_input: Any) -> Axes:
        return self.axes_for([])

    def compute(self, x: Any, axes: Any | None = None, *, out: Any, keepdims: int,
                **_: Any) -> None:
        xp = array_module(x, out)
        sel = self.run_axes(axes)
        if sel == ():
            xp.copyto(out, x.reshape(out.shape))
            return
        if sel is not None:
            sel = tuple(sorted(norm_axis(a, x.ndim, "axis") for a in sel))
        keep = bool(keepdims)
        if self.kind == "max":
            if x.size == 0:
                out.fill(-np.inf if x.dtype.kind == "f" else
                         (False if x.dtype.kind == "b" else np.iinfo(x.dtype).min))
            else:
                xp.amax(x, axis=sel, keepdims=keep, out=out)
            return
        fn = xp.sum if self.kind == "sum" else xp.mean
        if x.dtype.kind != "f" or acc_dtype(x.dtype) == x.dtype:
            fn(x, axis=sel, keepdims=keep, dtype=x.dtype, out=out)
            return
        acc = self.scratch.buffer(xp, "acc", out.shape, acc_dtype(x.dtype))
        fn(x, axis=sel, keepdims=keep, dtype=acc.dtype, out=acc)
        xp.copyto(out, acc, casting="same_kind")


class _ReduceInput(_Reduce):
    """Axes from the optional input 1, recorded at build time."""

    attributes: ClassVar[dict[str, Any]] = {"keepdims": 1, "noop_with_empty_axes": 0}
    shape_inputs = (1,)
    hidden_fields = ("__axes__",)

    def axes_for(self, inputs: Sequence[DimsExprs | None]) -> Axes:
        axes: tuple[int, ...] = ()
        if not absent(inputs, 1):
            axes = tuple(const_ints(shape_values(inputs, 1, self.op_type, "axes"),
                                    self.op_type, "axes"))
        self.record("__axes__", list(axes))
        return axes if axes or self.attrs["noop_with_empty_axes"] else None

    def run_axes(self, axes_input: Any) -> Axes:
        got = self.hidden.get("__axes__")
        axes = tuple(got) if got is not None else tuple(host_ints(axes_input))
        return axes if axes or self.attrs["noop_with_empty_axes"] else None


class ReduceSum_1(_Reduce):  # noqa: N801
    op_type = "ReduceSum"
    plugin_version = "1"
    max_opset = 12


class ReduceSum(_ReduceInput):
    plugin_version = "13"
    min_opset = 13


class ReduceMean_1(_Reduce):  # noqa: N801
    op_type = "ReduceMean"
    plugin_version = "1"
    max_opset = 17
    kind = "mean"


class ReduceMean(_ReduceInput):
    plugin_version = "18"
    min_opset = 18
    kind = "mean"


class ReduceMax_1(_Reduce):  # noqa: N801
    op_type = "ReduceMax"
    plugin_version = "1"
    max_opset = 17
    kind = "max"


class ReduceMax(_ReduceInput):
    plugin_version = "18"
    min_opset = 18
    kind = "max"
