"""Type conversion: Cast, CastLike, and BitCast (the same bits read as another type).

Integer (shape) values survive a Cast to an integer type, so ``Shape -> Cast -> ...`` chains
stay known when the engine is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import Values, cast_values
from ._schema import Op, UnaryOp

__all__ = ["Cast", "CastLike", "BitCast"]

#: ONNX TensorProto type names, code 1 first
_ONNX_NAMES = [
    "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16",
    "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
    "FLOAT8E8M0", "UINT2", "INT2"]
#: other spellings of a type name
_ALIASES = {"FLOAT32": "FLOAT", "FLOAT64": "DOUBLE", "HALF": "FLOAT16"}


def target_type(to: Any) -> DataType:
    """``to`` as a DataType: an ONNX type code, or (Cast-1) its name such as ``"FLOAT"``."""
    if isinstance(to, str):
        name = to.upper()
        name = _ALIASES.get(name, name)
        if name not in _ONNX_NAMES:
            raise PluginInterfaceError(f"Cast: unknown type name {to!r}")
        return DataType(_ONNX_NAMES.index(name) + 1)
    try:
        return DataType(int(to))
    except ValueError as exc:
        raise PluginInterfaceError(f"Cast: unknown target type {to!r}") from exc


class Cast(UnaryOp):
    """Cast (opset 1: ``to`` is a type name; 6+: a type code; 19+: ``saturate`` for float8;
    24+: ``round_mode`` for float8e8m0). ``target`` is the output type."""

    float_values = True  # exact on whole numbers

    def setup(self) -> None:
        self.target = target_type(self.attrs["to"])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.target]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return cast_values(inputs[0].values, self.target)


class CastLike(Op):
    """CastLike (opset 15): cast input 0 to the type of input 1."""

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]


class BitCast(UnaryOp):
    """BitCast (opset 26): the input's bytes read as type ``to``, of the same width (no value
    conversion; little endian); the shape stays. ``target`` is the output type."""

    def setup(self) -> None:
        self.target = target_type(self.attrs["to"])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        source = input_types[0]
        if DataType.STRING in (source, self.target) or source.itemsize != self.target.itemsize:
            raise PluginInterfaceError(
                f"BitCast: {source.name} cannot be read as {self.target.name}: BitCast needs "
                "two non-string types of one width (use Cast to convert values)")
        return [self.target]
