"""QuantizeLinear, DequantizeLinear (per tensor, per axis, blocked; int2/4/8/16, float8 and
float4e2m1 quantized types) and DynamicQuantizeLinear: their output types."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Shapes
from ._schema import Op, UnaryOp

__all__ = ["QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"]

#: the types a tensor may be quantized to
QUANT_TYPES: frozenset[DataType] = frozenset({
    DataType.UINT8, DataType.INT8, DataType.UINT16, DataType.INT16, DataType.UINT4,
    DataType.INT4, DataType.UINT2, DataType.INT2, DataType.FLOAT8E4M3FN,
    DataType.FLOAT8E4M3FNUZ, DataType.FLOAT8E5M2, DataType.FLOAT8E5M2FNUZ,
    DataType.FLOAT4E2M1})


def _dtype_attr(code: int, op: str, what: str) -> DataType | None:
    if not code:
        return None
    try:
        return DataType(code)
    except ValueError as exc:
        raise PluginInterfaceError(f"{op}: {what} {code} is not an ONNX type") from exc


class QuantizeLinear(UnaryOp):
    """``y = saturate(round(x / y_scale) + y_zero_point)``, round half to even.

    The output type is y_zero_point's, else ``output_dtype`` (opset 21), else uint8.
    ``axis`` (13) selects per-axis scales, ``block_size`` (21) blocked ones; ``saturate``
    (19) applies to float8 outputs; ``precision`` (23) is the type ``x / y_scale`` is
    computed in (default: x's type).
    """

    def setup(self) -> None:
        self.output_dtype = _dtype_attr(self.attrs["output_dtype"], "QuantizeLinear",
                                        "output_dtype")
        self.precision = _dtype_attr(self.attrs["precision"], "QuantizeLinear", "precision")
        if self.output_dtype is not None and self.output_dtype not in QUANT_TYPES:
            raise PluginInterfaceError(
                f"QuantizeLinear: output_dtype {self.output_dtype.name} is not a quantized type")

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        # an absent zero point is reported as FLOAT, which is never a quantized type
        zp = input_types[2] if len(input_types) > 2 else None
        if zp in QUANT_TYPES:
            assert zp is not None
            if self.output_dtype is not None and self.output_dtype is not zp:
                raise PluginInterfaceError(
                    f"QuantizeLinear: output_dtype {self.output_dtype.name} differs from the "
                    f"zero point's type {zp.name}")
            return [zp]
        return [self.output_dtype or DataType.UINT8]


class DequantizeLinear(UnaryOp):
    """``y = (x - x_zero_point) * x_scale`` (float8/float4 inputs have no zero point).

    The output has the scale's type, or ``output_dtype`` (opset 23).
    """

    def setup(self) -> None:
        self.output_dtype = _dtype_attr(self.attrs["output_dtype"], "DequantizeLinear",
                                        "output_dtype")

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.output_dtype or input_types[1]]


class DynamicQuantizeLinear(Op):
    """uint8 quantization with a scale and zero point computed from x's range (which is
    widened to include 0): outputs y, y_scale, y_zero_point."""

    n_outputs = 3

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(inputs[0]), [], []]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.UINT8, input_types[0], DataType.UINT8]
