"""HannWindow, HammingWindow, BlackmanWindow and MelWeightMatrix (schemas:
:mod:`mini_infer_core.ops.windows`), computed in float64 and cast to ``output_datatype``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import windows as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import emit

__all__ = ["HannWindow", "HammingWindow", "BlackmanWindow", "MelWeightMatrix"]

Array = NDArray[Any]


def _int(x: Array, what: str, op: str) -> int:
    a = np.asarray(x)
    if a.size != 1:
        raise PluginInterfaceError(f"{op}: {what} must be a scalar, it has shape {a.shape}")
    return int(a.reshape(-1)[0])


def cosine_window(size: int, periodic: bool, coefficients: tuple[float, ...]) -> Array:
    """``sum_k (-1)^k a_k cos(2 pi k n / N)`` for n < size, N = size (periodic) or
    size - 1 (symmetric; a window of one sample is 1)."""
    span = size if periodic else size - 1
    if span <= 0:
        return np.ones(max(size, 0))
    phase = 2 * np.pi * np.arange(size) / span
    out = np.full(size, coefficients[0])
    for k, a in enumerate(coefficients[1:], 1):
        out += (-1) ** k * a * np.cos(k * phase)
    return out


class _Window(CpuPlugin, schema.WindowBase):
    #: a_0, a_1, ... of the cosine sum
    coefficients: ClassVar[tuple[float, ...]] = ()

    def compute(self, size: Array, *, out: Array | None = None, periodic: int,
                output_datatype: int) -> Any:
        n = _int(size, "size", self.op_type)
        if n < 0:
            raise PluginInterfaceError(f"{self.op_type} {self.name!r}: size {n} is negative")
        dtype = self.output_types([])[0].numpy
        return emit(cosine_window(n, bool(periodic), self.coefficients).astype(dtype), out)


class HannWindow(_Window, schema.HannWindow):
    coefficients = (0.5, 0.5)


class HammingWindow(_Window, schema.HammingWindow):
    coefficients = (25 / 46, 21 / 46)


class BlackmanWindow(_Window, schema.BlackmanWindow):
    coefficients = (0.42, 0.5, 0.08)


def mel_weight_matrix(mels: int, dft_length: int, sample_rate: int, lower: float,
                      upper: float) -> Array:
    """``[dft_length // 2 + 1, mels]`` triangles on the mel scale, peaks 1.0: band i rises
    from FFT bin f[i] to f[i + 1] and falls to f[i + 2], f the ``mels + 2`` points evenly
    spaced in mel between the edges, as FFT bins ``floor((dft_length + 1) * hz /
    sample_rate)``."""
    bins = dft_length // 2 + 1
    low = 2595 * np.log10(1 + lower / 700)
    high = 2595 * np.log10(1 + upper / 700)
    step = (high - low) / (mels + 2)
    hz = 700 * (10 ** ((low + step * np.arange(mels + 2)) / 2595) - 1)
    f = np.floor((dft_length + 1) * hz / sample_rate).astype(np.int64)
    left, center, right = f[:-2], f[1:-1], f[2:]
    j = np.arange(bins)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        rise = np.where(center > left, (j - left) / (center - left), 1.0)
        fall = (right - j) / (right - center)
    out = np.zeros((bins, mels))
    up = (j >= left) & (j <= center)
    out[up] = np.broadcast_to(rise, out.shape)[up]
    down = (j >= center) & (j < right)
    out[down] = np.broadcast_to(fall, out.shape)[down]
    return out


class MelWeightMatrix(CpuPlugin, schema.MelWeightMatrix):
    def compute(self, num_mel_bins: Array, dft_length: Array, sample_rate: Array,
                lower_edge_hertz: Array, upper_edge_hertz: Array, *,
                out: Array | None = None, output_datatype: int) -> Any:
        op = f"MelWeightMatrix {self.name!r}"
        mels, dft = _int(num_mel_bins, "num_mel_bins", op), _int(dft_length, "dft_length", op)
        rate = _int(sample_rate, "sample_rate", op)
        if mels <= 0 or dft <= 0 or rate <= 0:
            raise PluginInterfaceError(f"{op}: num_mel_bins ({mels}), dft_length ({dft}) and "
                                       f"sample_rate ({rate}) must be positive")
        lower = float(np.asarray(lower_edge_hertz).reshape(-1)[0])
        upper = float(np.asarray(upper_edge_hertz).reshape(-1)[0])
        dtype = self.output_types([])[0].numpy
        return emit(mel_weight_matrix(mels, dft, rate, lower, upper).astype(dtype), out)
