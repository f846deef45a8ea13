"""Type conversion: Cast, CastLike and BitCast, every ONNX element type (see ``_convert``;
schemas in :mod:`mini_infer_core.ops.cast`)."""

from __future__ import annotations

from typing import Any

from numpy.typing import NDArray

from mini_infer_core.ops import cast as schema
from mini_infer_core.plugin import DataType

from ..serialization import CpuPlugin
from ._convert import cast_into

__all__ = ["Cast", "CastLike", "BitCast"]

Array = NDArray[Any]


class Cast(CpuPlugin, schema.Cast):
    def compute(self, x: Array, *, out: Array, saturate: int, round_mode: str,
                **_: Any) -> None:
        cast_into(out, x, self.target, bool(saturate), round_mode)


class CastLike(CpuPlugin, schema.CastLike):
    def compute(self, x: Array, like: Array, *, out: Array, saturate: int,
                round_mode: str) -> None:
        cast_into(out, x, DataType.from_numpy(out.dtype), bool(saturate), round_mode)


class BitCast(CpuPlugin, schema.BitCast):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        out[...] = x.view(out.dtype)  # NumPy's types are little endian here, as ONNX's
