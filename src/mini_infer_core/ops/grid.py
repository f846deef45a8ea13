"""Spatial sampling: GridSample (opset 16: 2-D, bilinear/nearest/bicubic; opset 20+: N-d,
linear/nearest/cubic) and AffineGrid (opset 20)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs, IntLike
from ._common import Versioned
from ._schema import Op, ValueOp

__all__ = ["GridSample_16", "GridSample", "AffineGrid"]

#: the interpolation each GridSample mode names (opset 16's names and opset 20's)
MODES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear", "cubic": "cubic",
         "nearest": "nearest"}
PADDINGS = ("zeros", "border", "reflection")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class GridSampleBase(Versioned, Op):
    """X (N, C, *D) sampled at ``grid`` (N, *D_out, len(D)) of normalised coordinates;
    ``mode`` (interpolation: ``linear``, ``cubic`` or ``nearest``) and ``padding`` are
    checked once."""

    def setup(self) -> None:
        mode, pad = _text(self.attrs["mode"]), _text(self.attrs["padding_mode"])
        if mode not in MODES or pad not in PADDINGS:
            raise PluginInterfaceError(
                f"GridSample: unknown mode {mode!r} or padding_mode {pad!r}")
        self.mode, self.padding = MODES[mode], pad

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x, g = list(inputs[0]), list(inputs[1])
        if len(g) != len(x) or len(x) < 3:
            raise PluginInterfaceError("GridSample: X and grid must have the same rank >= 3")
        if g[-1].is_constant() and g[-1].get_constant_value() != len(x) - 2:
            raise PluginInterfaceError(
                f"GridSample: grid's last dim {g[-1]} != {len(x) - 2} spatial dims")
        return [[x[0], x[1], *g[1:-1]]]


class GridSample_16(GridSampleBase, opsets=(16, 19)):  # noqa: N801
    """Opsets 16-19: modes bilinear/nearest/bicubic."""


class GridSample(GridSampleBase, opsets=(20, None)):
    """Opset 20+: modes linear/nearest/cubic, any number of spatial dims."""


class AffineGrid(ValueOp):
    """grid[n, ..., :] = theta[n] @ (x, y[, z], 1) over the normalised base grid of
    ``size`` = (N, C, [D,] H, W): (N, [D,] H, W, len(size) - 2), from the values of
    ``size`` (data-dependent when they are only known at run time)."""

    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        size = self.ints(inputs, 1)
        if size is not None:
            return [[size[0], *size[2:], len(size) - 2]]
        theta, sz = inputs[0], inputs[1]
        assert theta is not None and sz is not None
        k = sz[0] if len(sz) == 1 else None
        if k is None or not k.is_constant():
            raise PluginInterfaceError("AffineGrid: size must be a 1-D tensor of static length")
        rank = k.get_constant_value()
        self.runtime(True)
        return [[theta[0], *self.unknown_dims(rank - 2), rank - 2]]
