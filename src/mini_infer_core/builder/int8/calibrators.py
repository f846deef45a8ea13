"""Activation ranges from calibration batches, as TensorRT's calibrators find them.

- ``minmax`` (``IInt8MinMaxCalibrator``): the smallest and largest value seen;
- ``entropy`` (``IInt8EntropyCalibrator2``): a histogram of ``|x|`` (2,048 bins up to the
  largest magnitude seen; rebinned when a later batch goes further) and the threshold ``T``
  whose 128-level quantization of the histogram loses the least information (the smallest
  KL divergence between the clipped distribution and its quantized form, the outliers folded
  into the last bin), from 128 bins up; exact zeros are left out of the histogram (zero is
  exact at any threshold; a Relu's output spike at 0 otherwise drags the threshold down);
  the range is the min-max range clipped to ``[-T, T]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CALIBRATORS", "Collector", "EntropyCollector", "MinMaxCollector",
           "entropy_threshold"]

Array = np.ndarray[Any, Any]
BINS = 2048
LEVELS = 128


class MinMaxCollector:
    """The running min and max of a tensor."""

    name = "minmax"

    def __init__(self) -> None:
        self.lo, self.hi = np.inf, -np.inf

    def add(self, x: Array) -> None:
        if x.size:
            self.lo = min(self.lo, float(np.min(x)))
            self.hi = max(self.hi, float(np.max(x)))

    def range(self) -> tuple[float, float] | None:
        return (self.lo, self.hi) if self.lo <= self.hi else None


class EntropyCollector(MinMaxCollector):
    """The min and max, and a histogram of magnitudes for the KL-divergence threshold."""

    name = "entropy"

    def __init__(self) -> None:
        super().__init__()
        self.hist: Array = np.zeros(BINS, np.float64)
        self.top = 0.0  # the histogram covers [0, top]

    def add(self, x: Array) -> None:
        super().add(x)
        if not x.size:
            return
        mag = np.abs(x.astype(np.float32, copy=False)).reshape(-1)
        mag = mag[mag > 0]  # exact zeros (a Relu's half) are exact at any threshold
        if not mag.size:
            return
        top = float(mag.max())
        if top > self.top:
            if self.top > 0 and self.hist.any():  # rebin what was counted into the new range
                centers = (np.arange(BINS) + 0.5) * (self.top / BINS)
                idx = np.minimum((centers / top * BINS).astype(np.int64), BINS - 1)
                self.hist = np.bincount(idx, weights=self.hist, minlength=BINS)
            self.top = top
        if self.top > 0:
            counts, _ = np.histogram(mag, bins=BINS, range=(0.0, self.top))
            self.hist += counts

    def range(self) -> tuple[float, float] | None:
        r = super().range()
        if r is None or self.top <= 0:
            return r
        t = entropy_threshold(self.hist) * self.top / BINS
        return max(r[0], -t), min(r[1], t)


def entropy_threshold(hist: Array, levels: int = LEVELS) -> float:
    """The threshold (in bins, the upper edge) minimising KL(P || Q): P the histogram's first
    ``i`` bins with the rest folded into the last, Q that quantized to ``levels`` levels and
    spread back over the non-empty bins of each level."""
    hist = np.asarray(hist, np.float64)
    n = len(hist)
    if n <= levels or hist.sum() == 0:
        return float(n)
    best, best_i = np.inf, n
    tail = np.cumsum(hist[::-1])[::-1]  # tail[i] = sum(hist[i:])
    for i in range(levels, n + 1):
        p = hist[:i].copy()
        if i < n:
            p[-1] += tail[i]
        nonzero = p != 0
        # each of the `levels` groups of bins takes its sum (without the outliers), spread
        # evenly over its bins that P has non-empty
        edges = (np.arange(levels + 1) * i) // levels
        group = np.repeat(np.arange(levels), np.diff(edges))
        sums = np.bincount(group, weights=hist[:i], minlength=levels)
        counts = np.bincount(group, weights=nonzero.astype(np.float64), minlength=levels)
        q = np.where(nonzero, (sums / np.maximum(counts, 1))[group], 0.0)
        kl = _kl(_smooth(p), _smooth(q))
        if kl < best:
            best, best_i = kl, i
    return float(best_i)


def _smooth(p: Array, eps: float = 1e-4) -> Array:
    """``p`` normalized, its empty bins given ``eps`` taken evenly from the others (MXNet's
    and onnxruntime's ``smooth_distribution``), so that the divergence stays finite."""
    total = p.sum()
    if total == 0:
        return p
    p = p / total
    zeros = p == 0
    nz = int(np.count_nonzero(~zeros))
    if nz == 0:
        return p
    smoothed: Array = p + eps * zeros - (eps * int(zeros.sum()) / nz) * ~zeros
    return smoothed


def _kl(p: Array, q: Array) -> float:
    m = p > 0
    if q.sum() == 0 or np.any(q[m] <= 0):
        return np.inf
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


Collector = MinMaxCollector
CALIBRATORS: dict[str, type[MinMaxCollector]] = {"minmax": MinMaxCollector,
                                                  "entropy": EntropyCollector}
