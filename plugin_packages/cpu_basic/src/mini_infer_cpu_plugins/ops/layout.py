"""Rearrangements: Expand, Tile, DepthToSpace, SpaceToDepth, ReverseSequence -- NumPy kernels
(schemas in :mod:`mini_infer_core.ops.layout`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import layout as schema
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ..serialization import CpuPlugin
from ._dynamic import as_ints, emit

__all__ = ["Expand", "Tile_1", "Tile", "DepthToSpace", "SpaceToDepth_1", "SpaceToDepth",
           "ReverseSequence"]

Array = NDArray[Any]


class Expand(CpuPlugin, schema.Expand):
    def compute(self, x: Array, shape: Array, *, out: Array | None = None) -> Any:
        target = np.broadcast_shapes(x.shape, tuple(as_ints(shape)))
        return emit(np.broadcast_to(x, target), out)


class Tile_1(CpuPlugin, schema.Tile_1):  # noqa: N801
    def compute(self, x: Array, tiles: Array, axis: Array, *, out: Array | None = None) -> Any:
        reps = [1] * x.ndim
        reps[norm_axis(as_ints(axis)[0], x.ndim)] = as_ints(tiles)[0]
        return emit(np.tile(x, reps), out)


class Tile(CpuPlugin, schema.Tile):
    def compute(self, x: Array, repeats: Array, *, out: Array | None = None) -> Any:
        return emit(np.tile(x, as_ints(repeats)), out)


def depth_to_space(x: Array, b: int, mode: str) -> Array:
    n, c, h, w = x.shape
    if mode == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


def space_to_depth(x: Array, b: int, mode: str) -> Array:
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    y = y.transpose(0, 3, 5, 1, 2, 4) if mode == "DCR" else y.transpose(0, 1, 3, 5, 2, 4)
    return y.reshape(n, c * b * b, h // b, w // b)


class _Blocks(CpuPlugin, schema.BlockBase):
    def compute(self, x: Array, *, out: Array, blocksize: int, mode: str = "DCR") -> None:
        move = depth_to_space if self.to_space else space_to_depth
        np.copyto(out, move(x, blocksize, mode))


DepthToSpace, SpaceToDepth_1, SpaceToDepth = (
    type(op.__name__, (_Blocks, op), {"__module__": __name__})
    for op in (schema.DepthToSpace, schema.SpaceToDepth_1, schema.SpaceToDepth))


class ReverseSequence(CpuPlugin, schema.ReverseSequence):
    def compute(self, x: Array, sequence_lens: Array, *, out: Array, batch_axis: int,
                time_axis: int) -> None:
        b, t = norm_axis(batch_axis, x.ndim), norm_axis(time_axis, x.ndim)
        np.copyto(out, x)
        for i, n in enumerate(as_ints(sequence_lens)):
            src: list[Any] = [slice(None)] * x.ndim
            src[b], src[t] = i, slice(n - 1, None, -1) if n > 0 else slice(0, 0)
            dst: list[Any] = [slice(None)] * x.ndim
            dst[b], dst[t] = i, slice(0, max(n, 0))
            out[tuple(dst)] = x[tuple(src)]
