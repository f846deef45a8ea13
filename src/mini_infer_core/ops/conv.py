"""Convolution: Conv, and the geometry every convolution shares (ConvInteger and QLinearConv
in :mod:`.qlinear` derive from :class:`ConvBase`).

The window (kernel, strides, dilations, pads, ``auto_pad``) is read from the attributes, the
kernel size defaulting to W's spatial dimensions; :meth:`ConvBase.geometry` resolves it for
concrete shapes (pads per axis and output sizes) once per shape, for every device.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs, shapes
from ..plugin.shapes import FLOAT_TYPES, Shapes
from ._schema import Op

__all__ = ["Conv"]

#: what the builder may fuse into a Conv (:class:`~mini_infer_core.plugin.ConvFusion`): a
#: residual input, a Relu, a Clip's bounds; the kernel applies them after the product
FUSED = {"__residual__": 0, "__relu__": 0, "__clip__": None}


class ConvBase(Op):
    """``X`` (N, C, *spatial) convolved with ``W`` (M, C / group, *kernel): N x M outputs of
    the window's output sizes."""

    #: the input holding W
    w_index: ClassVar[int] = 1

    def window(self, nd: int, kernel: Sequence[Any]) -> shapes.Window:
        """The window of ``nd`` spatial axes; ``kernel`` (W's spatial sizes) where the node
        has no ``kernel_shape``."""
        return shapes.window_from_attrs(self.op_type, nd, self.attrs, kernel)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x, w = list(inputs[0]), list(inputs[self.w_index])
        if len(x) < 3 or len(w) != len(x):
            raise PluginInterfaceError(
                f"{self.op_type}: X (rank {len(x)}) and W (rank {len(w)}) must have the same "
                "rank >= 3")
        group = self.attrs["group"]
        if x[1].is_constant() and w[1].is_constant() and (
                x[1].get_constant_value() != w[1].get_constant_value() * group):
            raise PluginInterfaceError(
                f"{self.op_type}: X has {x[1]} channels, W expects {w[1]} x group {group}")
        win = self.window(len(x) - 2, w[2:])
        return [[x[0], w[0], *shapes.symbolic_out_dims(x[2:], win)]]

    def geometry(self, xshape: Sequence[int], wshape: Sequence[int]
                 ) -> tuple[shapes.Window, shapes.Geometry]:
        """The window and its pads and output sizes for concrete X and W shapes (checked
        against each other and the attributes)."""
        group = self.attrs["group"]
        c, m = xshape[1], wshape[0]
        if c != wshape[1] * group or m % group:
            raise PluginInterfaceError(
                f"{self.op_type}: X {tuple(xshape)}, W {tuple(wshape)} and group {group} "
                "do not match")
        win = self.window(len(xshape) - 2, wshape[2:])
        if tuple(int(k) for k in win.kernel) != tuple(wshape[2:]):
            raise PluginInterfaceError(
                f"{self.op_type}: kernel_shape {win.kernel} differs from W's "
                f"{tuple(wshape[2:])}")
        return win, shapes.resolve(xshape[2:], win)


class Conv(ConvBase):
    """Also what the builder fused into it (``__residual__``: input 3 is added,
    ``__relu__``, ``__clip__``: bounds), kept through serialization."""

    dtypes = FLOAT_TYPES
    extra_attributes: ClassVar[dict[str, Any]] = FUSED
