"""Type conversion: Cast and CastLike, every ONNX element type (see ``_convert``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, IntLike, UnaryPlugin
from mini_infer_core.plugin.shapes import Values, cast_values

from ..serialization import CpuPlugin
from ._convert import cast_into

__all__ = ["Cast", "CastLike"]

Array = NDArray[Any]

#: ONNX TensorProto type names, code 1 first
_ONNX_NAMES = [
    "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16",
    "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
    "FLOAT8E8M0", "UINT2", "INT2"]


def _target(to: Any) -> DataType:
    """``to`` as a DataType: an ONNX type code, or (Cast-1) its name such as ``"FLOAT"``."""
    if isinstance(to, str):
        name = to.upper()
        aliases = {"FLOAT32": "FLOAT", "FLOAT64": "DOUBLE"}
        name = aliases.get(name, name)
        if name not in _ONNX_NAMES:
            raise PluginInterfaceError(f"Cast: unknown type name {to!r}")
        return DataType(_ONNX_NAMES.index(name) + 1)
    try:
        return DataType(int(to))
    except ValueError as exc:
        raise PluginInterfaceError(f"Cast: unknown target type {to!r}") from exc


class Cast(CpuPlugin, UnaryPlugin):
    """Cast (opset 1: ``to`` is a type name; 6+: a type code; 19+: ``saturate`` for float8;
    24+: ``round_mode`` for float8e8m0)."""

    attributes: ClassVar[dict[str, Any]] = {"to": REQUIRED, "saturate": 1, "round_mode": "up"}

    def setup(self) -> None:
        self.target = _target(self.attrs["to"])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.target]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return cast_values(inputs[0].values, self.target)

    def compute(self, x: Array, *, out: Array, saturate: int, round_mode: str,
                **_: Any) -> None:
        cast_into(out, x, self.target, bool(saturate), round_mode)


class CastLike(CpuPlugin):
    """CastLike (opset 15): cast input 0 to the type of input 1."""

    min_opset = 15
    attributes: ClassVar[dict[str, Any]] = {"saturate": 1, "round_mode": "up"}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [list(inputs[0])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]

    def compute(self, x: Array, like: Array, *, out: Array, saturate: int,
                round_mode: str) -> None:
        cast_into(out, x, DataType.from_numpy(out.dtype), bool(saturate), round_mode)
