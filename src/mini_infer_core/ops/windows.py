"""Signal windows and the mel filter bank: HannWindow, HammingWindow, BlackmanWindow,
MelWeightMatrix (opset 17).

The output length is given by input values (the window ``size``; ``dft_length`` and
``num_mel_bins``): exact when they are known at build time, otherwise the node turns
data-dependent. The element type is the ``output_datatype`` attribute (FLOAT by default).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DataType, DimsExprs, IntLike
from ..plugin.shapes import Shapes
from ._schema import ValueOp

__all__ = ["HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"]


class _Typed(ValueOp):
    """An output of the ``output_datatype`` element type."""

    def output_types(self, input_types: Sequence[DataType | None]) -> list[DataType]:
        code = int(self.attrs["output_datatype"])
        try:
            return [DataType(code)]
        except ValueError:
            raise PluginInterfaceError(
                f"{self.op_type}: output_datatype {code} is not an ONNX element type"
            ) from None


class WindowBase(_Typed):
    """``[size]`` samples of a cosine-sum window; ``periodic`` 1 computes a window of
    ``size + 1`` and drops the last sample, 0 a symmetric one."""

    value_inputs = (0,)

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        size = self.ints(inputs, 0)
        if self.runtime(not size):
            return [[self.dynamic_dim("size")]]
        assert size
        if size[0] < 0:
            raise PluginInterfaceError(f"{self.op_type}: size {size[0]} is negative")
        return [[size[0]]]


class HannWindow(WindowBase):
    """0.5 - 0.5 cos(2 pi n / N)."""


class HammingWindow(WindowBase):
    """25/46 - 21/46 cos(2 pi n / N)."""


class BlackmanWindow(WindowBase):
    """0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""


class MelWeightMatrix(_Typed):
    """``[dft_length // 2 + 1, num_mel_bins]`` triangular filters (peaks 1.0) on the mel scale
    ``2595 log10(1 + f / 700)`` between ``lower_edge_hertz`` and ``upper_edge_hertz``."""

    value_inputs = (0, 1)

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        mels, dft = self.ints(inputs, 0), self.ints(inputs, 1)
        if self.runtime(not mels or not dft):
            return [[self.dynamic_dim("bins"), self.dynamic_dim("mels")]]
        assert mels and dft
        bins: IntLike = dft[0] // 2 + 1
        return [[bins, mels[0]]]
