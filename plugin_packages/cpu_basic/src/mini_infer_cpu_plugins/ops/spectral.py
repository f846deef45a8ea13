"""Fourier transforms: DFT (opset 17: ``axis`` attribute; opset 20: ``axis`` input) and
STFT, with NumPy's FFT.

Signals are real (last dim 1) or complex as (real, imag) pairs (last dim 2). The output
length along the transformed axis depends on the values of ``dft_length``/``axis``/
``frame_step``/``frame_length`` inputs, static when they are build-time constants;
otherwise the node turns data-dependent (``ValuePlugin``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimsExprs, IntLike

from ._dynamic import ValuePlugin

__all__ = ["DFT_17", "DFT", "STFT"]

Array = NDArray[Any]


def _complex(x: Array) -> Array:
    """(..., 1 | 2) -> complex (...)."""
    if x.shape[-1] == 1:
        return x[..., 0].astype(np.float64)
    if x.shape[-1] != 2:
        raise PluginInterfaceError(f"DFT: the last dim must be 1 or 2, got {x.shape[-1]}")
    return x[..., 0].astype(np.float64) + 1j * x[..., 1].astype(np.float64)


def _pairs(z: Array) -> Array:
    return np.stack([z.real, z.imag], axis=-1)


def dft(x: Array, length: int | None, axis: int, inverse: bool, onesided: bool) -> Array:
    axis = axis % x.ndim
    if axis == x.ndim - 1:
        raise PluginInterfaceError("DFT: axis cannot be the last (real/imaginary) dim")
    z = _complex(x)
    if inverse:
        if onesided:
            n = length if length is not None else 2 * (x.shape[axis] - 1)
            res = np.fft.irfft(z, n=n, axis=axis)[..., None]
        else:
            res = _pairs(np.fft.ifft(z, n=length or x.shape[axis], axis=axis))
    else:
        full = np.fft.fft(z, n=length or x.shape[axis], axis=axis)
        if onesided:
            full = np.take(full, np.arange(full.shape[axis] // 2 + 1), axis=axis)
        res = _pairs(full)
    return res.astype(x.dtype)


class _DftBase(ValuePlugin):
    axis_from_input: ClassVar[bool] = False

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        return True

    def _axis(self, inputs: Sequence[DimsExprs | None]) -> int | None:
        if not self.axis_from_input:
            return int(self.attrs["axis"])
        if len(inputs) < 3 or inputs[2] is None:
            return -2
        vals = self.ints(inputs, 2)
        return vals[0] if vals else None

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        inv, one = bool(self.attrs["inverse"]), bool(self.attrs["onesided"])
        dims: list[IntLike] = list(x)
        dims[-1] = 1 if inv and one else 2
        axis = self._axis(inputs)
        has_len = len(inputs) > 1 and inputs[1] is not None
        length = self.ints(inputs, 1) if has_len else None
        if axis is None or (has_len and not length):
            self.runtime(True)
            return [[*(self.dynamic_dim(f"d{i}") for i in range(len(x) - 1)), dims[-1]]]
        a = axis % len(x)
        n: IntLike = length[0] if length else x[a]
        if inv and one:
            dims[a] = n if length else (x[a] - 1) * 2
        elif one:
            dims[a] = n // 2 + 1
        else:
            dims[a] = n
        return [dims]

    def compute(self, x: Array, length: Array | None = None, axis_in: Array | None = None,
                *, out: Any = None, inverse: int, onesided: int, **attrs: Any) -> Any:
        if self.axis_from_input:
            ax = -2 if axis_in is None else int(axis_in)
        else:
            ax = int(attrs["axis"])
        n = None if length is None else int(length)
        y = dft(x, n, ax, bool(inverse), bool(onesided))
        if out is None:
            return y
        np.copyto(out, y)
        return None


class DFT_17(_DftBase):  # noqa: N801
    op_type = "DFT"
    plugin_version = "17"
    min_opset = 17
    max_opset = 19
    attributes: ClassVar[dict[str, Any]] = {"axis": 1, "inverse": 0, "onesided": 0}


class DFT(_DftBase):
    plugin_version = "20"
    min_opset = 20
    axis_from_input = True
    attributes: ClassVar[dict[str, Any]] = {"inverse": 0, "onesided": 0}


class STFT(ValuePlugin):
    """Frames of ``frame_length`` every ``frame_step`` samples, times the window, DFT'd:
    (batch, 1 + (len - frame_length) // frame_step, bins, 2)."""

    min_opset = 17
    attributes: ClassVar[dict[str, Any]] = {"onesided": 1}

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        return True

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        step = self.ints(inputs, 1)
        flen: IntLike | None = None
        if len(inputs) > 3 and inputs[3] is not None:
            v = self.ints(inputs, 3)
            flen = v[0] if v else None
        elif len(inputs) > 2 and inputs[2] is not None:
            flen = inputs[2][0]
        else:
            flen = x[1]
        if not step or flen is None:
            self.runtime(True)
            return [[x[0], self.dynamic_dim("frames"), self.dynamic_dim("bins"), 2]]
        frames = (x[1] - flen) // step[0] + 1
        bins = flen // 2 + 1 if self.attrs["onesided"] else flen
        return [[x[0], frames, bins, 2]]

    def compute(self, x: Array, step: Array, window: Array | None = None,
                frame_length: Array | None = None, *, out: Any = None,
                onesided: int) -> Any:
        n = int(frame_length) if frame_length is not None else (
            window.shape[0] if window is not None else x.shape[1])
        hop = int(step)
        frames = 1 + (x.shape[1] - n) // hop
        z = _complex(x)
        idx = np.arange(frames)[:, None] * hop + np.arange(n)[None, :]
        seg = z[:, idx]
        if window is not None:
            seg = seg * window.astype(np.float64)
        spec = np.fft.fft(seg, n=n, axis=-1)
        if onesided:
            spec = spec[..., :n // 2 + 1]
        y = _pairs(spec).astype(x.dtype)
        if out is None:
            return y
        np.copyto(out, y)
        return None
