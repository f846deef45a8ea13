"""Along-an-axis accumulations and triangles: CumSum, CumProd, Trilu (outputs shaped and
typed as input 0)."""

from __future__ import annotations

from typing import Any

from ..plugin.shapes import norm_axis
from ._schema import UnaryOp

__all__ = ["CumSum", "CumProd", "Trilu"]


def scalar_int(t: Any, default: int = 0) -> int:
    """The one integer of a 0-D or 1-element host tensor (``default`` when it is absent)."""
    return default if t is None else int(t.reshape(-1)[0])


class Accumulation(UnaryOp):
    """A running operation along the axis given by input 1 (a 0-D or 1-element tensor,
    negative counts from the end); ``exclusive`` shifts the result by one (starting from
    the identity), ``reverse`` runs from the end."""

    def axis_of(self, axis: Any, rank: int) -> int:
        """The axis the ``axis`` input names, in ``[0, rank)``."""
        return norm_axis(scalar_int(axis), rank, "axis")


class CumSum(Accumulation):
    """x[0], x[0] + x[1], ... along the axis."""


class CumProd(Accumulation):
    """x[0], x[0] * x[1], ... along the axis (opset 26)."""


class Trilu(UnaryOp):
    """The upper (``upper=1``) or lower triangle of the last two axes from diagonal ``k`` (the
    optional input 1, default 0, positive above the main diagonal); the rest is zero."""
