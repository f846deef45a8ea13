"""Padding and cropping: Pad (every version), CenterCropPad, Col2Im.

Pad's ``pads`` are ``[x1_begin, x2_begin, ..., x1_end, x2_end, ...]``; negative ones crop.
Modes: constant, reflect, edge, and wrap (opset 19).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DimExpr, DimsExprs, IntLike
from mini_infer_core.plugin.shapes import Shapes, norm_axis

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin, as_ints, emit

__all__ = ["Pad_1", "Pad_2", "Pad_11", "Pad", "CenterCropPad", "Col2Im"]

Array = NDArray[Any]

_MODES = ("constant", "reflect", "edge", "wrap")


def full_pads(pads: Sequence[int], rank: int, axes: Sequence[int] | None) -> list[int]:
    """``pads`` over ``axes`` (all when None) as begin/end pads of every axis."""
    ax = list(range(rank)) if axes is None else [norm_axis(a, rank, "Pad axis") for a in axes]
    if len(pads) != 2 * len(ax):
        raise PluginInterfaceError(f"Pad: {len(pads)} pads for {len(ax)} axes")
    out = [0] * (2 * rank)
    for k, a in enumerate(ax):
        out[a], out[a + rank] = pads[k], pads[k + len(ax)]
    return out


def pad(x: Array, pads: Sequence[int], mode: str, value: Any) -> Array:
    rank = x.ndim
    begin, end = pads[:rank], pads[rank:]
    crop = tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0))
                 for i, (b, e) in enumerate(zip(begin, end, strict=True)))
    x = x[crop]
    width = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end, strict=True)]
    if mode == "constant":
        return np.pad(x, width, mode="constant", constant_values=value)
    if mode not in _MODES:
        raise PluginInterfaceError(f"Pad: unknown mode {mode!r}")
    return np.pad(x, width, mode=mode)  # type: ignore[call-overload, no-any-return]


def padded_dims(dims: Sequence[DimExpr], pads: Sequence[IntLike]) -> list[DimExpr]:
    rank = len(dims)
    return [d + pads[i] + pads[i + rank] for i, d in enumerate(dims)]


class Pad_1(CpuPlugin):  # noqa: N801
    """Pad of opset 1: ``paddings`` attribute."""

    op_type = "Pad"
    plugin_version = "1"
    max_opset = 1
    attributes: ClassVar[dict[str, Any]] = {"paddings": REQUIRED, "mode": "constant",
                                            "value": 0.0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(padded_dims(list(inputs[0]), self.attrs["paddings"]))]

    def compute(self, x: Array, *, out: Array, paddings: Sequence[int], mode: str,
                value: float) -> None:
        np.copyto(out, pad(x, paddings, mode, value))


class Pad_2(CpuPlugin):  # noqa: N801
    """Pad of opsets 2-10: ``pads`` attribute."""

    op_type = "Pad"
    plugin_version = "2"
    min_opset = 2
    max_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"pads": REQUIRED, "mode": "constant", "value": 0.0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(padded_dims(list(inputs[0]), self.attrs["pads"]))]

    def compute(self, x: Array, *, out: Array, pads: Sequence[int], mode: str,
                value: float) -> None:
        np.copyto(out, pad(x, pads, mode, value))


class _PadInputs(ValuePlugin):
    """Pad with ``pads``, optional ``constant_value`` (and, from opset 18, ``axes``) inputs."""

    attributes: ClassVar[dict[str, Any]] = {"mode": "constant"}

    def _pads(self, inputs: Sequence[DimsExprs | None], rank: int) -> list[IntLike] | None:
        vals = self.values(inputs, 1)
        if vals is None:
            return None
        if len(inputs) < 4 or inputs[3] is None:
            return list(vals)
        axes = self.ints(inputs, 3)
        if axes is None:
            return None
        ax = [norm_axis(a, rank, "Pad axis") for a in axes]
        out: list[IntLike] = [0] * (2 * rank)
        if len(vals) != 2 * len(ax):
            raise PluginInterfaceError(f"Pad: {len(vals)} pads for {len(ax)} axes")
        for k, a in enumerate(ax):
            out[a], out[a + rank] = vals[k], vals[k + len(ax)]
        return out

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        pads = self._pads(inputs, len(dims))
        if self.runtime(pads is None):
            return [list(self.unknown_dims(len(dims)))]
        assert pads is not None
        if len(pads) != 2 * len(dims):
            raise PluginInterfaceError(f"Pad: {len(pads)} pads for rank {len(dims)}")
        return [list(padded_dims(dims, pads))]

    def compute(self, x: Array, pads: Array, constant_value: Array | None = None,
                axes: Array | None = None, *, out: Array | None = None, mode: str) -> Any:
        value = 0 if constant_value is None or constant_value.size == 0 else \
            np.asarray(constant_value).reshape(-1)[0]
        full = full_pads(as_ints(pads), x.ndim, None if axes is None else as_ints(axes))
        return emit(pad(x, full, mode, value), out)


class Pad_11(_PadInputs):  # noqa: N801
    """Pad of opsets 11-17: ``pads`` and optional ``constant_value`` inputs."""

    op_type = "Pad"
    plugin_version = "11"
    min_opset = 11
    max_opset = 17
    value_inputs = (1,)


class Pad(_PadInputs):
    """Pad from opset 18: optional ``axes`` input (pads then cover those axes only); ``wrap``
    mode from opset 19."""

    plugin_version = "18"
    min_opset = 18
    value_inputs = (1, 3)


class CenterCropPad(ValuePlugin):
    """Crop or zero-pad ``axes`` (all by default) to ``shape`` (input 1), centred (an odd
    difference puts the extra element at the end)."""

    min_opset = 18
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"axes": None}

    def _axes(self, rank: int) -> list[int]:
        axes = self.attrs["axes"]
        return list(range(rank)) if axes is None else [
            norm_axis(a, rank, "CenterCropPad axis") for a in axes]

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims: list[DimExpr] = list(inputs[0])
        shape = self.values(inputs, 1)
        axes = self._axes(len(dims))
        out = list(dims)
        if self.runtime(shape is None):
            for a in axes:
                out[a] = self.dynamic_dim(f"d{a}")
            return [list(out)]
        assert shape is not None
        for a, s in zip(axes, shape, strict=True):
            out[a] = s
        return [list(out)]

    def compute(self, x: Array, shape: Array, *, out: Array | None = None,
                axes: Sequence[int] | None) -> Any:
        target = list(x.shape)
        for a, s in zip(self._axes(x.ndim), as_ints(shape), strict=True):
            target[a] = s
        res = np.zeros(target, x.dtype)
        src, dst = [], []
        for d, t in zip(x.shape, target, strict=True):
            if t <= d:
                o = (d - t) // 2
                src.append(slice(o, o + t))
                dst.append(slice(0, t))
            else:
                o = (t - d) // 2
                src.append(slice(0, d))
                dst.append(slice(o, o + d))
        res[tuple(dst)] = x[tuple(src)]
        return emit(res, out)


class Col2Im(ValuePlugin):
    """The inverse of im2col: (N, C*prod(block), L) blocks summed into (N, C, *image_shape)."""

    min_opset = 18
    value_inputs = (1, 2)
    attributes: ClassVar[dict[str, Any]] = {"dilations": None, "pads": None, "strides": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        n, ck = list(inputs[0])[:2]
        image, block = self.values(inputs, 1), self.ints(inputs, 2)
        if self.runtime(image is None or block is None):
            return [[n, self.dynamic_dim("c"), *self.unknown_dims(_nd(inputs[1]))]]
        assert image is not None and block is not None
        return [[n, ck // math.prod(block), *image]]

    def compute(self, x: Array, image_shape: Array, block_shape: Array, *,
                out: Array | None = None, dilations: Sequence[int] | None,
                pads: Sequence[int] | None, strides: Sequence[int] | None) -> Any:
        image, block = as_ints(image_shape), as_ints(block_shape)
        nd = len(image)
        dil = list(dilations or [1] * nd)
        st = list(strides or [1] * nd)
        pd = list(pads or [0] * (2 * nd))
        n, ck, _ = x.shape
        c = ck // math.prod(block)
        nblocks = [(image[i] + pd[i] + pd[i + nd] - dil[i] * (block[i] - 1) - 1) // st[i] + 1
                   for i in range(nd)]
        cols = x.reshape(n, c, *block, *nblocks)
        acc = np.zeros([n, c] + [image[i] + pd[i] + pd[i + nd] for i in range(nd)], x.dtype)
        for k in itertools.product(*(range(b) for b in block)):
            where = tuple(slice(k[i] * dil[i], k[i] * dil[i] + st[i] * (nblocks[i] - 1) + 1,
                                st[i]) for i in range(nd))
            acc[(slice(None), slice(None)) + where] += cols[(slice(None), slice(None)) + k]
        crop = tuple(slice(pd[i], pd[i] + image[i]) for i in range(nd))
        return emit(acc[(slice(None), slice(None)) + crop], out)


def _nd(dims: DimsExprs) -> int:
    n = dims[0] if len(dims) else DimExpr.const(1)
    if not n.is_constant():
        raise PluginInterfaceError("Col2Im: the length of image_shape must be static")
    return n.get_constant_value()
