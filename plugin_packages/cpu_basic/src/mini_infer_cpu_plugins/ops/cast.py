"""Type conversion: Cast, CastLike and BitCast, every ONNX element type (see ``_convert``;
schemas in :mod:`mini_infer_core.ops.cast`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from numpy.typing import NDArray

from mini_infer_core.ops import cast as schema
from mini_infer_core.plugin import DataType

from ..serialization import CpuPlugin
from ._convert import cast_into

__all__ = ["Cast", "CastLike", "BitCast"]

Array = NDArray[Any]


class Cast(CpuPlugin, schema.Cast):
    #: a Cast to its input's own type (exporters write them: silero-vad's STFT) is that
    #: input's bytes: placed inside the output, the step has nothing to do
    in_place_only = True

    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        same = inputs and inputs[0] is not None and inputs[0][1] == outputs[0][1]
        return {0: (0, 0)} if same else {}

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
