"""Normalisation: BatchNormalization, InstanceNormalization and LRN.

Inference BatchNormalization is ``y = x * a + b`` per channel with ``a = scale / sqrt(var +
epsilon)`` and ``b = bias - mean * a``; training mode (opset 14+) normalises with the batch
statistics (:meth:`BatchNormalization.train`, written with array methods only, so that it
runs on NumPy and CuPy arrays alike).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs
from ..plugin.shapes import FLOAT_TYPES, Shapes
from ._schema import FLOATS, UnaryOp, onnx_attributes

__all__ = ["BatchNormalization", "InstanceNormalization", "LRN"]


def acc_dtype(dtype: Any) -> np.dtype[Any]:
    """The type statistics are computed in: float64 for float64, float32 for every narrower
    float."""
    return np.dtype(np.float64) if np.dtype(dtype) == np.float64 else np.dtype(np.float32)


class BatchNormalization(UnaryOp):
    """y = (x - mean) / sqrt(var + epsilon) * scale + B.

    Legacy attributes (``spatial``, ``is_test``, ``consumed_inputs``, ``momentum``) are
    accepted; ``spatial=0`` takes per-activation parameters shaped as ``x.shape[1:]``.
    ``training_mode=1`` (opset 14+) normalises with the batch statistics and also outputs
    running_mean and running_var (input_mean * momentum + batch_mean * (1 - momentum)).
    A Relu after it may be fused (``__relu__``, see
    :class:`~mini_infer_core.plugin.BatchNormFusion`).
    """

    dtypes = FLOATS
    extra_attributes: ClassVar[dict[str, Any]] = {"__relu__": 0}
    # onnx's, but ``consumed_inputs`` (required by BatchNormalization-1 only) is optional:
    # one schema covers every opset
    attributes: ClassVar[dict[str, Any]] = {
        **(onnx_attributes("BatchNormalization") or {}), "consumed_inputs": None,
        **extra_attributes}

    @property
    def num_outputs(self) -> int:
        return 3 if self.attrs["training_mode"] else 1

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if not self.attrs["training_mode"]:
            return [x]
        return [x, list(inputs[3]), list(inputs[4])]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0], input_types[3], input_types[4]][:self.num_outputs]

    def per_channel(self, x: Any, scale: Any) -> bool:
        """Whether the parameters hold one value per channel (else per activation:
        ``spatial=0``)."""
        return bool(scale.size == (x.shape[1] if x.ndim > 1 else 1))

    def train(self, x: Any, scale: Any, bias: Any, mean: Any, var: Any
              ) -> tuple[Any, Any, Any]:
        """Training mode: ``y`` normalised with the batch statistics, and the running mean
        and variance, in :func:`acc_dtype` (the kernel casts them to the outputs)."""
        eps, momentum = self.attrs["epsilon"], self.attrs["momentum"]
        dt = acc_dtype(x.dtype)
        axes = (0, *range(2, x.ndim))
        xa = x.astype(dt)
        bm = xa.mean(axis=axes)
        bv = xa.var(axis=axes)
        pshape = (-1,) + (1,) * (x.ndim - 2)
        y = (xa - bm.reshape(pshape)) / (bv.reshape(pshape) + dt.type(eps)) ** 0.5
        y = y * scale.astype(dt).reshape(pshape) + bias.astype(dt).reshape(pshape)
        return (y, mean.astype(dt) * momentum + bm * (1 - momentum),
                var.astype(dt) * momentum + bv * (1 - momentum))


class InstanceNormalization(UnaryOp):
    """y = scale * (x - mean) / sqrt(var + epsilon) + B, statistics per (n, c) over the
    spatial axes."""

    dtypes = FLOATS


class LRN(UnaryOp):
    """Local response normalisation across channels (ONNX):
    ``y = x / (bias + alpha / size * square_sum) ** beta``, square_sum over the channels
    ``[c - lead, c + size - 1 - lead]`` (:attr:`lead` = floor((size - 1) / 2))."""

    dtypes = FLOAT_TYPES

    def setup(self) -> None:
        if self.attrs["size"] < 1:
            raise PluginInterfaceError(f"LRN: size must be >= 1, got {self.attrs['size']}")

    @property
    def lead(self) -> int:
        """How many channels before a channel its window covers."""
        return int(self.attrs["size"] - 1) // 2
