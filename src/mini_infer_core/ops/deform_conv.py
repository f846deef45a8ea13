"""Deformable convolution: DeformConv (opset 19).

The window is Conv's (:class:`~mini_infer_core.ops.conv.ConvBase`: ``kernel_shape`` or W's
spatial sizes, ``strides``, ``dilations``, ``pads``; DeformConv has no ``auto_pad``); each
kernel tap samples X at its place moved by ``offset`` (bilinearly, zero outside X), scaled
by ``mask`` when given.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs
from ..plugin.shapes import FLOAT_TYPES, Shapes
from .conv import ConvBase

__all__ = ["DeformConv"]


class DeformConv(ConvBase):
    """X ``(N, C, *spatial)``, W ``(oC, C / group, *kernel)``, offset
    ``(N, offset_group * prod(kernel) * nd, *out)``, optional B ``(oC)`` and mask
    ``(N, offset_group * prod(kernel), *out)``: Y ``(N, oC, *out)``."""

    dtypes = FLOAT_TYPES

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        out = super().output_shapes(inputs)
        x = inputs[0]
        if x[1].is_constant() and x[1].get_constant_value() % int(self.attrs["offset_group"]):
            raise PluginInterfaceError(
                f"DeformConv: {x[1]} channels do not split into offset_group "
                f"{self.attrs['offset_group']} groups")
        return out
