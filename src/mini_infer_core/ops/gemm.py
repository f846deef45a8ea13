"""Matrix products: Gemm (which absorbs a Relu after it) and MatMul."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..plugin import DimsExprs, Fusion
from ..plugin.shapes import FLOAT_TYPES, Shapes, gemm_dims, matmul_dims
from ._schema import Op

__all__ = ["Gemm", "MatMul"]


class Gemm(Op):
    """Y = alpha * A' @ B' + beta * C, C optional (from opset 11) and broadcast; a Relu
    after it is absorbed (``__relu__``: fully connected layers), the kernel applies it."""

    dtypes = FLOAT_TYPES
    extra_attributes: ClassVar[dict[str, Any]] = {"__relu__": 0}
    fusable: ClassVar[frozenset[str]] = frozenset({"Relu"})

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        if op_type != "Relu" or self.attrs["__relu__"]:
            return None
        self.attrs["__relu__"] = 1
        return Fusion()

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [gemm_dims(inputs[0], inputs[1], self.attrs["transA"], self.attrs["transB"])]


class MatMul(Op):
    """NumPy matmul semantics: 1-D operands promoted, batch dimensions broadcast."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]))]
