"""Rearrangements: Expand, Tile, DepthToSpace, SpaceToDepth, ReverseSequence."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DimExpr, DimsExprs, broadcast_dims
from mini_infer_core.plugin.shapes import Shapes, Values, flat, norm_axis, value_array

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin, as_ints, emit

__all__ = ["Expand", "Tile_1", "Tile", "DepthToSpace", "SpaceToDepth_1", "SpaceToDepth",
           "ReverseSequence"]

Array = NDArray[Any]


def _count(dims: DimsExprs, op: str) -> int:
    """The (build-time constant) number of elements of a 1-D value input."""
    n = dims[0] if len(dims) else DimExpr.const(1)
    if not n.is_constant():
        raise PluginInterfaceError(f"{op}: the length of its shape input must be static")
    return n.get_constant_value()


class Expand(ValuePlugin):
    """Broadcast the input to ``shape`` (input 1) with NumPy rules (a 1 keeps the input dim)."""

    min_opset = 8
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        shape = self.values(inputs, 1)
        if self.runtime(shape is None):
            rank = max(len(inputs[0]), _count(inputs[1], "Expand"))
            return [list(self.unknown_dims(rank))]
        assert shape is not None
        return [list(broadcast_dims(list(inputs[0]), list(shape)))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr, shape = value_array(inputs[0]), inputs[1].values
        if arr is None or shape is None or not all(d.is_constant() for d in shape):
            return None
        target = np.broadcast_shapes(arr.shape, tuple(d.get_constant_value() for d in shape))
        return [flat(np.broadcast_to(arr, target))]

    def compute(self, x: Array, shape: Array, *, out: Array | None = None) -> Any:
        target = np.broadcast_shapes(x.shape, tuple(as_ints(shape)))
        return emit(np.broadcast_to(x, target), out)


class Tile_1(ValuePlugin):  # noqa: N801
    """Tile of opsets 1-5: repeat ``tiles`` (input 1) times along ``axis`` (input 2)."""

    op_type = "Tile"
    plugin_version = "1"
    max_opset = 5
    value_inputs = (1, 2)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        tiles, axis = self.ints(inputs, 1), self.ints(inputs, 2)
        if self.runtime(tiles is None or axis is None):
            return [list(self.unknown_dims(len(dims)))]
        assert tiles is not None and axis is not None
        a = norm_axis(axis[0], len(dims), "Tile axis")
        return [dims[:a] + [dims[a] * tiles[0]] + dims[a + 1:]]

    def compute(self, x: Array, tiles: Array, axis: Array, *, out: Array | None = None) -> Any:
        reps = [1] * x.ndim
        reps[norm_axis(as_ints(axis)[0], x.ndim)] = as_ints(tiles)[0]
        return emit(np.tile(x, reps), out)


class Tile(ValuePlugin):
    """Tile from opset 6: ``repeats`` (input 1) per axis."""

    min_opset = 6
    plugin_version = "6"
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        reps = self.values(inputs, 1)
        if self.runtime(reps is None):
            return [list(self.unknown_dims(len(dims)))]
        assert reps is not None
        if len(reps) != len(dims):
            raise PluginInterfaceError(f"Tile: {len(reps)} repeats for rank {len(dims)}")
        return [[d * r for d, r in zip(dims, reps, strict=True)]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr, reps = value_array(inputs[0]), inputs[1].values
        if arr is None or reps is None or not all(r.is_constant() for r in reps):
            return None
        return [flat(np.tile(arr, [r.get_constant_value() for r in reps]))]

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


def _check_mode(mode: str, op: str) -> None:
    if mode not in ("DCR", "CRD"):
        raise PluginInterfaceError(f"{op}: mode must be DCR or CRD, got {mode!r}")


class DepthToSpace(CpuPlugin):
    """(N, C, H, W) -> (N, C/b^2, H*b, W*b); ``mode`` DCR (default) or CRD (opset 11)."""

    attributes: ClassVar[dict[str, Any]] = {"blocksize": REQUIRED, "mode": "DCR"}

    def setup(self) -> None:
        _check_mode(self.attrs["mode"], "DepthToSpace")

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n, c, h, w = list(inputs[0])
        b = self.attrs["blocksize"]
        return [[n, c // (b * b), h * b, w * b]]

    def compute(self, x: Array, *, out: Array, blocksize: int, mode: str) -> None:
        np.copyto(out, depth_to_space(x, blocksize, mode))


class _SpaceToDepth(CpuPlugin):
    """(N, C, H, W) -> (N, C*b^2, H/b, W/b)."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n, c, h, w = list(inputs[0])
        b = self.attrs["blocksize"]
        return [[n, c * (b * b), h // b, w // b]]

    def compute(self, x: Array, *, out: Array, blocksize: int, mode: str = "DCR") -> None:
        np.copyto(out, space_to_depth(x, blocksize, mode))


class SpaceToDepth_1(_SpaceToDepth):  # noqa: N801
    """SpaceToDepth of opsets 1-27: blocks in depth-column-row order."""

    op_type = "SpaceToDepth"
    plugin_version = "1"
    max_opset = 27
    attributes: ClassVar[dict[str, Any]] = {"blocksize": REQUIRED}


class SpaceToDepth(_SpaceToDepth):
    """SpaceToDepth from opset 28: ``mode`` DCR (default) or CRD."""

    plugin_version = "28"
    min_opset = 28
    attributes: ClassVar[dict[str, Any]] = {"blocksize": REQUIRED, "mode": "DCR"}

    def setup(self) -> None:
        _check_mode(self.attrs["mode"], "SpaceToDepth")


class ReverseSequence(CpuPlugin):
    """Reverse the first ``sequence_lens[b]`` elements along ``time_axis`` of each batch b."""

    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"batch_axis": 1, "time_axis": 0}

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
