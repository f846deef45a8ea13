"""Dropout (schemas in :mod:`mini_infer_core.ops.dropout`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.ops import dropout as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._util import copy_into

__all__ = ["Dropout_1", "Dropout_10"]

Array = NDArray[Any]


class _Dropout(CpuPlugin, schema.DropoutBase):
    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        """Without a training_mode input, the output is the input: it may live in place."""
        return {} if len(inputs) > 2 and inputs[2] is not None else {0: (0, 0)}

    def compute(self, x: Array, *_inputs: Array | None, out: Any, **_: Any) -> None:
        # optional inputs ratio / training_mode (opset 12) are not used in inference
        if isinstance(out, tuple):
            copy_into(out[0], x)
            for mask in out[1:]:
                mask.fill(True)
        else:
            copy_into(out, x)


class Dropout_1(_Dropout, schema.Dropout_1):  # noqa: N801
    pass


class Dropout_10(_Dropout, schema.Dropout_10):  # noqa: N801
    """With ``training_mode`` true and a ratio above 0, elements are dropped with a
    Mersenne-Twister stream seeded by ``seed`` (0 when absent, so runs are reproducible) and
    the rest scaled by 1 / (1 - ratio), as onnx's reference does."""

    def compute(self, x: Array, *inputs: Array | None, out: Any, **attrs: Any) -> None:
        training = len(inputs) > 1 and inputs[1] is not None and bool(np.asarray(inputs[1]))
        ratio = float(np.asarray(inputs[0])) if inputs and inputs[0] is not None \
            else float(attrs.get("ratio", 0.5))
        if not training or ratio == 0:
            super().compute(x, *inputs, out=out)
            return
        seed = attrs.get("seed")
        rng = np.random.RandomState(0 if seed is None else int(seed))
        mask = rng.uniform(0.0, 1.0, x.shape) >= ratio
        y = out[0] if isinstance(out, tuple) else out
        np.multiply(x, mask, out=y)
        np.multiply(y, np.asarray(1.0 / (1.0 - ratio), dtype=y.dtype), out=y)
        if isinstance(out, tuple) and len(out) > 1:
            np.copyto(out[1], mask)
