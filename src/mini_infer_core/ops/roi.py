"""MaxUnpool and the region-of-interest pools MaxRoiPool and RoiAlign: output shapes and the
checked attributes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs, IntLike
from ._common import Versioned
from ._schema import Op, ValueOp

__all__ = ["MaxUnpool", "MaxRoiPool", "RoiAlign_10", "RoiAlign"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class MaxUnpool(ValueOp):
    """X scattered to the flat positions ``I`` (MaxPool's Indices) of a zero tensor shaped
    ``(in - 1) * stride - pads + kernel``; an ``output_shape`` input pads that result with
    zeros at the end of each dimension (onnx's reference semantics). A run-time
    ``output_shape`` makes the node data-dependent."""

    value_inputs = (2,)

    def unpooled(self, x: Sequence[Any]) -> list[Any]:
        """The unpooled shape of an input shaped ``x`` (ints or dimension expressions)."""
        k = list(self.attrs["kernel_shape"])
        nd = len(k)
        s = list(self.attrs["strides"] or [1] * nd)
        p = list(self.attrs["pads"] or [0] * (2 * nd))
        if len(x) != nd + 2:
            raise PluginInterfaceError(f"MaxUnpool: X rank {len(x)} != {nd} + 2")
        return [x[0], x[1], *((x[2 + i] - 1) * s[i] + (k[i] - p[i] - p[i + nd])
                              for i in range(nd))]

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        if len(inputs) > 2 and inputs[2] is not None:
            vals = self.ints(inputs, 2)
            if vals is not None:
                return [list(vals)]
            self.runtime(True)
            return [list[IntLike](self.unknown_dims(len(x)))]
        return [self.unpooled(list(x))]


class MaxRoiPool(Op):
    """Max over each of ``pooled_shape`` bins of every ROI (batch_id, x1, y1, x2, y2)."""

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        ph, pw = self.attrs["pooled_shape"]
        return [[inputs[1][0], inputs[0][1], ph, pw]]


class RoiAlignBase(Versioned, Op):
    """RoiAlign, every opset: (num_rois, C, output_height, output_width). ``half_pixel``:
    the coordinate transformation (opset 10 behaves as output_half_pixel); ``max_mode``:
    ``mode`` max (else avg)."""

    def setup(self) -> None:
        mode = _text(self.attrs["mode"]).lower()
        ctm = _text(self.attrs.get("coordinate_transformation_mode", "output_half_pixel"))
        if mode not in ("avg", "max") or ctm not in ("half_pixel", "output_half_pixel"):
            raise PluginInterfaceError(
                f"RoiAlign {self.name!r}: unknown mode {mode!r} or "
                f"coordinate_transformation_mode {ctm!r}")
        self.half_pixel, self.max_mode = ctm == "half_pixel", mode == "max"

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        a = self.attrs
        return [[inputs[1][0], inputs[0][1], a["output_height"], a["output_width"]]]


class RoiAlign_10(RoiAlignBase, opsets=(10, 15)):  # noqa: N801
    """Opsets 10-15: no coordinate_transformation_mode (output_half_pixel)."""


class RoiAlign(RoiAlignBase, opsets=(16, None)):
    """Opset 16+: coordinate_transformation_mode, half_pixel by default."""
