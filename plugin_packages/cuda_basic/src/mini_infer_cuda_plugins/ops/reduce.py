"""Reductions: ReduceSum, ReduceMean, ReduceMax, both versions (``axes`` attribute, ``axes``
input) -- CuPy reductions into ``out`` (schemas, axes and shapes in
:mod:`mini_infer_core.ops.reduce`).

An axes input must be known when the engine is built; its values are recorded with the plugin
(``__axes__``), so the kernel never reads them back from the GPU. Float16 sums and means
accumulate in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mini_infer_core.ops import reduce as schema
from mini_infer_core.plugin import DimsExprs
from mini_infer_core.plugin.shapes import absent, const_ints

from ..serialization import CudaPlugin
from ._common import Scratch, acc_dtype, array_module, host_ints, shape_values

__all__ = ["ReduceSum_1", "ReduceSum", "ReduceMean_1", "ReduceMean", "ReduceMax_1",
           "ReduceMax"]


class _Reduce(CudaPlugin, schema.ReduceBase):
    def setup(self) -> None:
        self.scratch = Scratch()

    def compute(self, x: Any, axes: Any | None = None, *, out: Any, keepdims: int,
                **_: Any) -> None:
        xp = array_module(x, out)
        recorded = self.hidden.get("__axes__")
        sel = self.reduce_axes(host_ints(axes) if recorded is None else recorded, x.ndim)
        if sel == ():
            xp.copyto(out, x.reshape(out.shape))
            return
        if x.size == 0:
            out.fill(self.empty_value(x.dtype))
            return
        keep = bool(keepdims)
        if self.op_type == "ReduceMax":
            xp.amax(x, axis=sel, keepdims=keep, out=out)
            return
        fn = xp.sum if self.op_type == "ReduceSum" else xp.mean
        if x.dtype.kind != "f" or acc_dtype(x.dtype) == x.dtype:
            fn(x, axis=sel, keepdims=keep, dtype=x.dtype, out=out)
            return
        acc = self.scratch.buffer(xp, "acc", out.shape, acc_dtype(x.dtype))
        fn(x, axis=sel, keepdims=keep, dtype=acc.dtype, out=acc)
        xp.copyto(out, acc, casting="same_kind")


class _ReduceInput(_Reduce, schema.ReduceInputBase):
    """The axes input is required at build time and recorded."""

    shape_inputs = (1,)
    hidden_fields = ("__axes__",)

    def build_axes(self, inputs: Sequence[DimsExprs | None]) -> list[int] | None:
        axes = [] if absent(inputs, 1) else const_ints(
            shape_values(inputs, 1, self.op_type, "axes"), self.op_type, "axes")
        self.record("__axes__", axes)
        return axes


ReduceSum_1, ReduceMean_1, ReduceMax_1, ReduceSum, ReduceMean, ReduceMax = (
    type(op.__name__, (family, op), {"__module__": __name__}) for family, op in (
        (_Reduce, schema.ReduceSum_1), (_Reduce, schema.ReduceMean_1),
        (_Reduce, schema.ReduceMax_1), (_ReduceInput, schema.ReduceSum),
        (_ReduceInput, schema.ReduceMean), (_ReduceInput, schema.ReduceMax)))
