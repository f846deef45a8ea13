"""Cast, BitCast and ConstantOfShape: the element types a CuPy array holds (bool, integers, float16,
float32, float64; schemas in :mod:`mini_infer_core.ops.cast` and ``.generator``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import cast, generator
from mini_infer_core.plugin import DataType

from ..serialization import DEVICE_TYPES, CudaPlugin
from ._common import array_module
from .shape import BuildTimeValues

__all__ = ["Cast", "BitCast", "ConstantOfShape"]


def _on_device(t: DataType, what: str) -> None:
    if t not in DEVICE_TYPES:
        raise PluginInterfaceError(
            f"{what} {t.name} is not supported on the cuda device (CuPy holds "
            f"{sorted(d.name for d in DEVICE_TYPES)})")


class _ToTarget(CudaPlugin):
    """An output of the type ``to`` names (``self.target``), which the device must hold."""

    mixed_floats = True

    def setup(self) -> None:
        super().setup()
        _on_device(self.target, f"{self.op_type}: target type")  # type: ignore[attr-defined]


class Cast(_ToTarget, cast.Cast):
    """``saturate`` and ``round_mode`` only concern float8 types this device does not hold."""

    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        with np.errstate(all="ignore"):
            array_module(x, out).copyto(out, x, casting="unsafe")


class BitCast(_ToTarget, cast.BitCast):
    """The bytes viewed as the other type, copied on the stream."""

    def compute(self, x: Any, *, out: Any, **_: Any) -> None:
        array_module(x, out).copyto(out, x.view(out.dtype))


class ConstantOfShape(CudaPlugin, BuildTimeValues, generator.ConstantOfShape):
    """The shape (input 0) must be known when the engine is built."""

    def setup(self) -> None:
        super().setup()
        _on_device(DataType.from_numpy(self.fill.dtype), "ConstantOfShape: value type")

    def compute(self, shape: Any, *, out: Any, **_: Any) -> None:
        out.fill(self.fill.item())
