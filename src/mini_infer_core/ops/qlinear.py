"""Quantized products: MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv.

The integer products output int32; the QLinear ones the output zero point's type (uint8
where it is absent). The convolutions have Conv's geometry (:class:`.conv.ConvBase`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes, matmul_dims
from ._schema import Op
from .conv import FUSED, ConvBase

__all__ = ["MatMulInteger", "QLinearMatMul", "ConvInteger", "QLinearConv"]


def _quantized_output(input_types: Sequence[DataType]) -> list[DataType]:
    """The type of y_zero_point (input 7), else x's."""
    return [input_types[7] if len(input_types) > 7 else input_types[0]]


class MatMulInteger(Op):
    """``(A - a_zero_point) @ (B - b_zero_point)`` as int32."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[1]), "MatMulInteger")]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT32]


class QLinearMatMul(Op):
    """``saturate(round((a - a_zp) @ (b - b_zp) * a_scale * b_scale / y_scale) + y_zp)``."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [matmul_dims(list(inputs[0]), list(inputs[3]), "QLinearMatMul")]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return _quantized_output(input_types)


class IntegerConvBase(ConvBase):
    """An integer convolution. Nothing is fused into one, but its fields include Conv's fused
    ones (always 0 / absent) so that engines written before keep loading."""

    extra_attributes: ClassVar[dict[str, Any]] = FUSED


class ConvInteger(IntegerConvBase):
    """int32 ``conv(x - x_zero_point, w - w_zero_point)``."""

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.INT32]


class QLinearConv(IntegerConvBase):
    """``saturate(round((conv(x - x_zp, w - w_zp) + B) * x_scale * w_scale / y_scale) +
    y_zp)``: W is input 3."""

    w_index = 3

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return _quantized_output(input_types)
