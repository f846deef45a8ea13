"""Fourier transforms: DFT (opset 17: ``axis`` attribute; opset 20: ``axis`` input) and STFT.

Signals are real (last dim 1) or complex as (real, imag) pairs (last dim 2). The output
length along the transformed axis depends on the values of the ``dft_length``/``axis``/
``frame_step``/``frame_length`` inputs, static when they are build-time constants;
otherwise the node turns data-dependent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs, IntLike
from ._common import Versioned
from ._schema import ValueOp

__all__ = ["DFT_17", "DFT", "STFT"]


class DftBase(Versioned, ValueOp):
    """DFT, every opset: inputs X, dft_length (and, opset 20, axis)."""

    #: opset 20: the axis is input 2 (default -2), not an attribute
    axis_from_input: ClassVar[bool] = False
    value_inputs: ClassVar[tuple[int, ...]] = (1,)

    def axis(self, axis_input: Any = None) -> int:
        """The transformed axis, given the run-time ``axis`` input (opset 20) if any."""
        if not self.axis_from_input:
            return int(self.attrs["axis"])
        return -2 if axis_input is None else int(axis_input)

    def _build_axis(self, inputs: Sequence[DimsExprs | None]) -> int | None:
        if not self.axis_from_input or len(inputs) < 3 or inputs[2] is None:
            return self.axis()
        vals = self.ints(inputs, 2)
        return vals[0] if vals else None

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        inv, one = bool(self.attrs["inverse"]), bool(self.attrs["onesided"])
        dims: list[IntLike] = list(x)
        dims[-1] = 1 if inv and one else 2
        axis = self._build_axis(inputs)
        has_len = len(inputs) > 1 and inputs[1] is not None
        length = self.ints(inputs, 1) if has_len else None
        if axis is None or (has_len and not length):
            self.runtime(True)
            return [[*self.unknown_dims(len(x) - 1), dims[-1]]]
        a = axis % len(x)
        if a == len(x) - 1:
            raise PluginInterfaceError("DFT: axis cannot be the last (real/imaginary) dim")
        n: IntLike = length[0] if length else x[a]
        if inv and one:
            dims[a] = n if length else (x[a] - 1) * 2
        elif one:
            dims[a] = n // 2 + 1
        else:
            dims[a] = n
        return [dims]


class DFT_17(DftBase, opsets=(17, 19)):  # noqa: N801
    """Opsets 17-19: ``axis`` attribute."""


class DFT(DftBase, opsets=(20, None)):
    """Opset 20+: ``axis`` input."""

    axis_from_input = True
    value_inputs = (1, 2)


class STFT(ValueOp):
    """Frames of ``frame_length`` every ``frame_step`` samples, times the window, DFT'd:
    (batch, 1 + (len - frame_length) // frame_step, bins, 2)."""

    value_inputs = (1, 3)

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        step = self.ints(inputs, 1)
        flen: IntLike | None = None
        window = inputs[2] if len(inputs) > 2 else None
        if len(inputs) > 3 and inputs[3] is not None:
            v = self.ints(inputs, 3)
            flen = v[0] if v else None
        elif window is not None:
            flen = window[0]
        else:
            flen = x[1]
        if not step or flen is None:
            self.runtime(True)
            return [[x[0], self.dynamic_dim("frames"), self.dynamic_dim("bins"), 2]]
        frames = (x[1] - flen) // step[0] + 1
        bins = flen // 2 + 1 if self.attrs["onesided"] else flen
        return [[x[0], frames, bins, 2]]
