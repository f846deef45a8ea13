"""Comparisons Equal, Less, Greater (bool outputs, broadcasting, opset-1 ``broadcast``/
``axis``) and Where, with build-time values for shape computations."""

from __future__ import annotations

from typing import Any

from mini_infer_core.ops import logic as schema

from ..serialization import CudaPlugin
from ._common import array_module
from .elementwise import ufunc_kernel

__all__ = ["Equal", "Less", "Greater", "Where"]


Equal, Less, Greater = (ufunc_kernel(op, name, __name__) for op, name in (
    (schema.Equal, "equal"), (schema.Less, "less"), (schema.Greater, "greater")))


class Where(CudaPlugin, schema.Where):
    def compute(self, condition: Any, x: Any, y: Any, *, out: Any) -> None:
        xp = array_module(condition, x, y, out)
        xp.copyto(out, y)
        xp.copyto(out, x, where=condition)
