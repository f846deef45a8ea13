"""Rearrangements: Expand, Tile, DepthToSpace, SpaceToDepth, ReverseSequence.

Expand and Tile pass build-time values through (``output_values``); targets and repeats
computed at run time make them data-dependent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs, broadcast_dims
from ..plugin.shapes import Shapes, Values, flat, norm_axis, value_array
from ._common import Versioned
from ._schema import Op, UnaryOp, ValueOp
from .shape import value_count

__all__ = ["Expand", "Tile_1", "Tile", "DepthToSpace", "SpaceToDepth_1", "SpaceToDepth",
           "ReverseSequence"]


def _constant_values(dims: DimsExprs) -> list[int] | None:
    vals = dims.values
    if vals is None or not all(v.is_constant() for v in vals):
        return None
    return [v.get_constant_value() for v in vals]


class Expand(ValueOp):
    """Broadcast the input to ``shape`` (input 1) with NumPy rules (a 1 keeps the input dim)."""

    float_values = True  # exact on whole numbers

    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        shape = self.values(inputs, 1)
        if self.runtime(shape is None):
            n = value_count(inputs[1], "Expand", "the length of its shape input")
            return [self.unknown_dims(max(len(inputs[0]), n))]
        assert shape is not None
        return [broadcast_dims(list(inputs[0]), list(shape))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr, shape = value_array(inputs[0]), _constant_values(inputs[1])
        if arr is None or shape is None:
            return None
        return [flat(np.broadcast_to(arr, np.broadcast_shapes(arr.shape, tuple(shape))))]


class Tile_1(Versioned, ValueOp, opsets=(1, 5)):  # noqa: N801
    """Tile of opsets 1-5: repeat ``tiles`` (input 1) times along ``axis`` (input 2)."""

    value_inputs = (1, 2)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        tiles, axis = self.ints(inputs, 1), self.ints(inputs, 2)
        if self.runtime(tiles is None or axis is None):
            return [self.unknown_dims(len(dims))]
        assert tiles is not None and axis is not None
        a = norm_axis(axis[0], len(dims), "Tile axis")
        return [dims[:a] + [dims[a] * tiles[0]] + dims[a + 1:]]


class Tile(Versioned, ValueOp, opsets=(6, None)):
    """Tile from opset 6: ``repeats`` (input 1) per axis."""

    float_values = True  # exact on whole numbers
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        reps = self.values(inputs, 1)
        if self.runtime(reps is None):
            return [self.unknown_dims(len(dims))]
        assert reps is not None
        if len(reps) != len(dims):
            raise PluginInterfaceError(f"Tile: {len(reps)} repeats for rank {len(dims)}")
        return [[d * r for d, r in zip(dims, reps, strict=True)]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr, reps = value_array(inputs[0]), _constant_values(inputs[1])
        return None if arr is None or reps is None else [flat(np.tile(arr, reps))]


class BlockBase(UnaryOp):
    """DepthToSpace and SpaceToDepth: ``blocksize`` x ``blocksize`` blocks moved between
    the channels and the spatial axes of an NCHW tensor, in ``mode`` DCR or CRD."""

    #: True: channels to space (DepthToSpace)
    to_space: ClassVar[bool] = False

    def setup(self) -> None:
        mode = self.attrs.get("mode", "DCR")
        if mode not in ("DCR", "CRD"):
            raise PluginInterfaceError(f"{self.op_type}: mode must be DCR or CRD, got {mode!r}")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n, c, h, w = list(inputs[0])
        b = self.attrs["blocksize"]
        if self.to_space:
            return [[n, c // (b * b), h * b, w * b]]
        return [[n, c * (b * b), h // b, w // b]]


class DepthToSpace(BlockBase):
    """(N, C, H, W) -> (N, C/b^2, H*b, W*b); ``mode`` DCR (default) or CRD (opset 11)."""

    to_space = True


class SpaceToDepth_1(Versioned, BlockBase, opsets=(1, 27)):  # noqa: N801
    """SpaceToDepth of opsets 1-27: blocks in depth-column-row order."""


class SpaceToDepth(Versioned, BlockBase, opsets=(28, None)):
    """SpaceToDepth from opset 28: ``mode`` DCR (default) or CRD."""


class ReverseSequence(Op):
    """Reverse the first ``sequence_lens[b]`` elements along ``time_axis`` of each batch b."""
