"""Normalizations along axes: Hardmax, LpNormalization, MeanVarianceNormalization."""

from __future__ import annotations

import math
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin.shapes import FLOAT_TYPES, norm_axis
from ._schema import UnaryOp

__all__ = ["Hardmax_1", "Hardmax", "LpNormalization", "MeanVarianceNormalization"]


class HardmaxBase(UnaryOp):
    """1 at the first maximum along ``axis``, 0 elsewhere."""

    dtypes = FLOAT_TYPES

    def operand(self, x: Any) -> tuple[Any, int]:
        """``x`` and the axis as the kernel reduces them."""
        return x, norm_axis(self.attrs["axis"], x.ndim)


class Hardmax_1(HardmaxBase):  # noqa: N801
    """Hardmax before opset 13: over the input coerced to 2-D at ``axis`` (default 1)."""

    plugin_version = "1"
    max_opset = 12

    def operand(self, x: Any) -> tuple[Any, int]:
        """A 2-D view of ``x``: the axes before ``axis`` as rows."""
        axis = self.attrs["axis"]
        a = axis + x.ndim if axis < 0 else axis
        if not 0 <= a <= x.ndim:
            raise PluginInterfaceError(f"Hardmax: axis {axis} out of range for rank {x.ndim}")
        rows = math.prod(x.shape[:a])
        return (x.reshape(rows, -1) if x.size else x.reshape(rows, 0)), 1


class Hardmax(HardmaxBase):
    """Hardmax from opset 13: along ``axis`` (default -1)."""

    plugin_version = "13"
    min_opset = 13


class LpNormalization(UnaryOp):
    """x / ||x||_p along ``axis`` (p is 1 or 2); a zero norm gives 0."""

    dtypes = FLOAT_TYPES

    def setup(self) -> None:
        if self.attrs["p"] not in (1, 2):
            raise PluginInterfaceError(
                f"LpNormalization: p must be 1 or 2, got {self.attrs['p']}")


class MeanVarianceNormalization(UnaryOp):
    """(x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over ``axes`` (default N, H, W)."""

    dtypes = FLOAT_TYPES
