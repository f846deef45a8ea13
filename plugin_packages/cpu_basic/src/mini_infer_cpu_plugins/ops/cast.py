"""Type conversion: Cast, CastLike and BitCast, every ONNX element type (see ``_convert``;
schemas in :mod:`mini_infer_core.ops.cast`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.ops import cast as schema
from mini_infer_core.plugin import DataType, quiet_fp
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._convert import cast_into, is_native

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

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """A copy between NumPy's own numeric types bound (what ``cast_into`` does for
        them); strings, float8 and the like through ``enqueue``."""
        x, out = inputs[0], outputs[0]
        if not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) or \
                x.dtype.kind not in "biuf" or out.dtype.kind not in "biuf" or \
                not is_native(x.dtype) or not is_native(out.dtype):
            return None
        if x.dtype == out.dtype:
            return partial(np.copyto, out, x)
        return quiet_fp(partial(np.copyto, out, x, casting="unsafe"))


class CastLike(CpuPlugin, schema.CastLike):
    def compute(self, x: Array, like: Array, *, out: Array, saturate: int,
                round_mode: str) -> None:
        cast_into(out, x, DataType.from_numpy(out.dtype), bool(saturate), round_mode)


class BitCast(CpuPlugin, schema.BitCast):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        out[...] = x.view(out.dtype)  # NumPy's types are little endian here, as ONNX's
