"""Padding and cropping: Pad (every version), CenterCropPad, Col2Im.

Pad's ``pads`` are ``[x1_begin, x2_begin, ..., x1_end, x2_end, ...]``; negative ones crop.
Modes: constant, reflect, edge, and wrap (opset 19).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from ..errors import PluginInterfaceError
from ..plugin import DimExpr, DimsExprs, IntLike
from ..plugin.shapes import Shapes, norm_axis
from ._schema import Op, ValueOp
from .shape import value_count

__all__ = ["Pad_1", "Pad_2", "Pad_11", "Pad", "CenterCropPad", "Col2Im"]

P = TypeVar("P", int, IntLike)


def full_pads(pads: Sequence[P], rank: int, axes: Sequence[int] | None) -> list[P | int]:
    """``pads`` over ``axes`` (all when None) as begin/end pads of every axis."""
    ax = list(range(rank)) if axes is None else [norm_axis(a, rank, "Pad axis") for a in axes]
    if len(pads) != 2 * len(ax):
        raise PluginInterfaceError(f"Pad: {len(pads)} pads for {len(ax)} axes")
    out: list[P | int] = [0] * (2 * rank)
    for k, a in enumerate(ax):
        out[a], out[a + rank] = pads[k], pads[k + len(ax)]
    return out


def padded_dims(dims: Sequence[DimExpr], pads: Sequence[IntLike]) -> list[DimExpr]:
    rank = len(dims)
    if len(pads) != 2 * rank:
        raise PluginInterfaceError(f"Pad: {len(pads)} pads for rank {rank}")
    return [d + pads[i] + pads[i + rank] for i, d in enumerate(dims)]


class Pad_1(Op):  # noqa: N801
    """Pad of opset 1: ``paddings`` attribute."""

    plugin_version = "1"
    max_opset = 1

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [padded_dims(list(inputs[0]), self.attrs["paddings"])]


class Pad_2(Op):  # noqa: N801
    """Pad of opsets 2-10: ``pads`` attribute."""

    plugin_version = "2"
    min_opset = 2
    max_opset = 10

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [padded_dims(list(inputs[0]), self.attrs["pads"])]


class PadBase(ValueOp):
    """Pad with ``pads``, optional ``constant_value`` (and, from opset 18, ``axes``) inputs."""

    def pads(self, inputs: Sequence[DimsExprs | None], rank: int) -> list[IntLike] | None:
        """The begin/end pads of every axis as known at build time (None: not known)."""
        vals = self.values(inputs, 1)
        if vals is None:
            return None
        if len(inputs) < 4 or inputs[3] is None:
            return list(vals)
        axes = self.ints(inputs, 3)
        return None if axes is None else full_pads(vals, rank, axes)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        pads = self.pads(inputs, len(dims))
        if self.runtime(pads is None):
            return [self.unknown_dims(len(dims))]
        assert pads is not None
        return [padded_dims(dims, pads)]


class Pad_11(PadBase):  # noqa: N801
    """Pad of opsets 11-17: ``pads`` and optional ``constant_value`` inputs."""

    plugin_version = "11"
    min_opset = 11
    max_opset = 17
    value_inputs = (1,)


class Pad(PadBase):
    """Pad from opset 18: optional ``axes`` input (pads then cover those axes only); ``wrap``
    mode from opset 19."""

    plugin_version = "18"
    min_opset = 18
    value_inputs = (1, 3)


class CenterCropPad(ValueOp):
    """Crop or zero-pad ``axes`` (all by default) to ``shape`` (input 1), centred (an odd
    difference puts the extra element at the end)."""

    value_inputs = (1,)

    def axes(self, rank: int) -> list[int]:
        """The axes cropped or padded, of an input of ``rank``."""
        axes = self.attrs["axes"]
        return list(range(rank)) if axes is None else [
            norm_axis(a, rank, "CenterCropPad axis") for a in axes]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims: list[DimExpr] = list(inputs[0])
        shape = self.values(inputs, 1)
        axes = self.axes(len(dims))
        out = list(dims)
        if self.runtime(shape is None):
            for a in axes:
                out[a] = self.dynamic_dim(f"d{a}")
            return [out]
        assert shape is not None
        for a, s in zip(axes, shape, strict=True):
            out[a] = s
        return [out]


class Col2Im(ValueOp):
    """The inverse of im2col: (N, C*prod(block), L) blocks summed into (N, C, *image_shape)."""

    value_inputs = (1, 2)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n, ck = list(inputs[0])[:2]
        image, block = self.values(inputs, 1), self.ints(inputs, 2)
        if self.runtime(image is None or block is None):
            nd = value_count(inputs[1], "Col2Im", "the length of image_shape")
            return [[n, self.dynamic_dim("c"), *self.unknown_dims(nd)]]
        assert image is not None and block is not None
        return [[n, ck // math.prod(block), *image]]
