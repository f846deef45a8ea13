"""Cast and ConstantOfShape: the element types a CuPy array holds (bool, integers, float16,
float32, float64)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DataType, DimsExprs, UnaryPlugin
from mini_infer_core.plugin.shapes import Shapes, Values, cast_values, filled_values

from ..serialization import DEVICE_TYPES, CudaPlugin
from ._common import array_module, shape_values

__all__ = ["Cast", "ConstantOfShape"]


#: Cast-1 names its target type (TensorProto names)
_ALIASES = {"FLOAT32": "FLOAT", "FLOAT64": "DOUBLE", "FLOAT16": "HALF"}


def _target(to: Any) -> DataType:
    if isinstance(to, str):
        name = _ALIASES.get(to.upper(), to.upper())
        if name not in DataType.__members__:
            raise PluginInterfaceError(f"Cast: unknown type name {to!r}")
        t = DataType[name]
    else:
        try:
            t = DataType(int(to))
        except ValueError as exc:
            raise PluginInterfaceError(f"Cast: unknown target type {to!r}") from exc
    if t not in DEVICE_TYPES:
        raise PluginInterfaceError(
            f"Cast: target type {t.name} is not supported on the cuda device (CuPy holds "
            f"{sorted(d.name for d in DEVICE_TYPES)})")
    return t


class Cast(CudaPlugin, UnaryPlugin):
    """Cast (opset 1: ``to`` is a type name; 6+: a type code; 19+: ``saturate`` and 24+:
    ``round_mode``, which only concern float8 types this device does not hold)."""

    mixed_floats = True
    attributes: ClassVar[dict[str, Any]] = {"to": REQUIRED, "saturate": 1, "round_mode": "up"}

    def setup(self) -> None:
        self.target = _target(self.attrs["to"])

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [self.target]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return cast_values(inputs[0].values, self.target)

    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        with np.errstate(all="ignore"):
            array_module(x, out).copyto(out, x, casting="unsafe")


class ConstantOfShape(CudaPlugin):
    """A tensor shaped by input 0's values (known when the engine is built), filled with the
    one-element ``value`` tensor (default float32 0)."""

    min_opset = 9
    shape_inputs = (0,)
    attributes: ClassVar[dict[str, Any]] = {"value": None}

    def setup(self) -> None:
        value = self.attrs["value"]
        fill = np.zeros((), np.float32) if value is None else np.asarray(value)
        if fill.size != 1:
            raise PluginInterfaceError(
                f"ConstantOfShape: 'value' must hold one element, it has {fill.size}")
        self.fill: np.ndarray[Any, Any] = fill.reshape(())
        if DataType.from_numpy(self.fill.dtype) not in DEVICE_TYPES:
            raise PluginInterfaceError(
                f"ConstantOfShape: value type {self.fill.dtype} is not supported on the cuda "
                "device")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(shape_values(inputs, 0, "ConstantOfShape", "shape"))]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [DataType.from_numpy(self.fill.dtype)]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        if self.fill.dtype.kind not in "iub":
            return None
        return filled_values(shape_values(inputs, 0, "ConstantOfShape", "shape"), self.fill)

    def compute(self, shape: Any, *, out: Any, **_: Any) -> None:
        out.fill(self.fill.item())
