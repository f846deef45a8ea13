"""Normalisation over trailing axes or channel groups: LayerNormalization,
GroupNormalization (opset 18: per-group scale/bias; opset 21: per-channel), RMSNormalization.

Statistics are computed in float32 (float64 for float64 inputs), as ``stash_type`` asks
(:meth:`StashBase.stash_dtype`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, IntLike
from ..plugin.shapes import Shapes, norm_axis
from ._schema import FLOATS, Op

__all__ = ["LayerNormalization", "GroupNormalization_18", "GroupNormalization",
           "RMSNormalization"]


class StashBase(Op):
    dtypes = FLOATS

    def stash_dtype(self, dtype: Any) -> np.dtype[Any]:
        """The type statistics are computed in: float64 for float64 inputs or
        ``stash_type`` DOUBLE, float32 otherwise."""
        if np.dtype(dtype) == np.float64 or self.attrs.get("stash_type", 1) == 11:
            return np.dtype(np.float64)
        return np.dtype(np.float32)


class LayerNormalization(StashBase):
    """Y = (X - mean) / sqrt(var + epsilon) * Scale + B over axes [axis, rank); optional
    outputs Mean and InvStdDev (type ``stash_type``) shaped as X with 1s from ``axis`` on."""

    n_outputs = 3

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x: list[IntLike] = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(x))
        stat: list[IntLike] = [*x[:a], *([1] * (len(x) - a))]
        return [x, stat, stat]

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        u = DataType(self.attrs["stash_type"])
        return [input_types[0], u, u]


class GroupNormBase(StashBase):
    """Statistics per (n, group) of ``num_groups`` channel groups; from opset 21 ``scale``
    and ``bias`` hold one value per channel."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x = list(inputs[0])
        if len(x) > 1 and x[1].is_constant():
            self.check_groups(x[1].get_constant_value())
        return [x]

    def check_groups(self, channels: int) -> None:
        groups = self.attrs["num_groups"]
        if groups < 1 or channels % groups:
            raise PluginInterfaceError(
                f"GroupNormalization: {channels} channels are not divisible by {groups} "
                "groups")

    def per_channel(self, param: Any, channels: int) -> Any:
        """``scale`` or ``bias`` as one value per channel (a NumPy or CuPy array)."""
        return param


class GroupNormalization_18(GroupNormBase):  # noqa: N801
    """Opset 18: ``scale`` and ``bias`` hold one value per group."""

    plugin_version = "18"
    max_opset = 20

    def per_channel(self, param: Any, channels: int) -> Any:
        """Each group's value repeated for its channels."""
        return param.repeat(channels // self.attrs["num_groups"])


class GroupNormalization(GroupNormBase):
    plugin_version = "21"
    min_opset = 21


class RMSNormalization(StashBase):
    """Y = X / sqrt(mean(X^2 over axes [axis, rank)) + epsilon) * scale."""

    plugin_version = "23"

    def output_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[1]]
