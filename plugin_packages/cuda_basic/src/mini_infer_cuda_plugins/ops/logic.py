"""Comparisons Equal, Less, Greater (bool outputs, broadcasting, opset-1 ``broadcast``/
``axis``) and Where, with build-time values for shape computations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mini_infer_core.plugin import (
    BroadcastPlugin,
    DataType,
    DimExpr,
    DimsExprs,
    broadcast_dims,
)
from mini_infer_core.plugin.shapes import Shapes, Values, const, elementwise_values

from ..serialization import CudaPlugin
from ._common import array_module
from .elementwise import Binary

__all__ = ["Equal", "Less", "Greater", "Where"]



class _Compare(Binary):
    attributes: ClassVar[dict[str, Any]] = {"broadcast": 0, "axis": None}
    #: the ufunc's name in NumPy and CuPy
    ufunc: ClassVar[str] = ""
    #: float inputs of any one type; the output is bool
    mixed_floats = False

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.BOOL]

    def apply(self, xp: Any, a: Any, b: Any, out: Any) -> None:
        getattr(xp, type(self).ufunc)(a, b, out=out)


def _equal_value(a: DimExpr, b: DimExpr) -> int:
    return 1 if a.same_as(b) else int(const(a) == const(b))


class Equal(_Compare):
    ufunc = "equal"
    value_fn = staticmethod(_equal_value)


class Less(_Compare):
    ufunc = "less"
    value_fn = staticmethod(lambda a, b: int(const(a) < const(b)))


class Greater(_Compare):
    ufunc = "greater"
    value_fn = staticmethod(lambda a, b: int(const(a) > const(b)))


class Where(CudaPlugin, BroadcastPlugin):
    """``x`` where ``condition`` else ``y``, all three broadcast together."""

    min_opset = 9

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(broadcast_dims(*inputs[:3]))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return elementwise_values(inputs[:3], lambda c, x, y: x if const(c) else y)

    def compute(self, condition: Any, x: Any, y: Any, *, out: Any) -> None:
        xp = array_module(condition, x, y, out)
        xp.copyto(out, y)
        xp.copyto(out, x, where=condition)
