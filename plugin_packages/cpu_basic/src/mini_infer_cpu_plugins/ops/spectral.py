"""Fourier transforms: DFT (opset 17: ``axis`` attribute; opset 20: ``axis`` input) and
STFT, with NumPy's FFT (shapes and attributes are the schemas':
:mod:`mini_infer_core.ops.spectral`).

Signals are real (last dim 1) or complex as (real, imag) pairs (last dim 2); STFT also takes
a real signal of rank 2, (batch, length), as onnxruntime does and as PyTorch's exporter
writes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import spectral as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import emit
from ._util import kernels

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


class _DFT(CpuPlugin, schema.DftBase):
    def compute(self, x: Array, length: Array | None = None, axis_in: Array | None = None,
                *, out: Any = None, inverse: int, onesided: int, **_: Any) -> Any:
        n = None if length is None else int(length)
        return emit(dft(x, n, self.axis(axis_in), bool(inverse), bool(onesided)), out)


DFT_17, DFT = kernels(_DFT, schema.DFT_17, schema.DFT, module=__name__)


class STFT(CpuPlugin, schema.STFT):
    def compute(self, x: Array, step: Array, window: Array | None = None,
                frame_length: Array | None = None, *, out: Any = None,
                onesided: int) -> Any:
        n = int(frame_length) if frame_length is not None else (
            window.shape[0] if window is not None else x.shape[1])
        hop = int(step)
        if x.ndim == 2:  # (batch, length): real
            x = x[..., None]
        frames = 1 + (x.shape[1] - n) // hop
        z = _complex(x)
        idx = np.arange(frames)[:, None] * hop + np.arange(n)[None, :]
        seg = z[:, idx]
        if window is not None:
            seg = seg * window.astype(np.float64)
        spec = np.fft.fft(seg, n=n, axis=-1)
        if onesided:
            spec = spec[..., :n // 2 + 1]
        return emit(_pairs(spec).astype(x.dtype), out)
