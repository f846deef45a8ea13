"""The error function in NumPy (which has none), accurate to ~1e-15 for float64.

Piecewise Chebyshev series, interpolated once at import from ``math.erf``/``math.erfc``:

* ``|x| < 1``: ``erf(x) = x * P(x**2)``;
* ``1 <= |x| < 6``: ``erf(x) = 1 - exp(-x**2) * Q(|x|)`` with ``Q(x) = erfc(x) * exp(x**2)``
  (smooth and slowly varying), on three sub-intervals;
* ``|x| >= 6``: ``+-1`` (``erfc(6) < 3e-17``).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["erf"]

Array = NDArray[Any]


def _interpolate(f: Any, lo: float, hi: float, deg: int) -> Array:
    from numpy.polynomial import chebyshev as cheb

    return cheb.chebinterpolate(
        np.vectorize(lambda u: f(lo + (u + 1.0) * (hi - lo) / 2.0)), deg)


def _small(t: float) -> float:
    r = math.sqrt(t)
    return math.erf(r) / r if r > 0 else 2.0 / math.sqrt(math.pi)


@functools.cache
def _coefficients() -> tuple[Array, list[tuple[float, float, Array]]]:
    """The series, made on first use: importing this module (with every activation kernel)
    imports no numpy.polynomial and computes nothing (start-up time, issue 30)."""
    tail = [(lo, hi, _interpolate(lambda x: math.erfc(x) * math.exp(x * x), lo, hi, deg))
            for lo, hi, deg in ((1.0, 2.0, 18), (2.0, 4.0, 22), (4.0, 6.0, 18))]
    return _interpolate(_small, 0.0, 1.0, 15), tail


def _series(coef: Array, v: Array, lo: float, hi: float) -> Array:
    from numpy.polynomial import chebyshev as cheb

    u = (v - (lo + hi) / 2.0) * (2.0 / (hi - lo))
    return cheb.chebval(u, coef.astype(v.dtype))  # type: ignore[no-any-return]


def erf(x: Array, out: Array) -> None:
    """``out[...] = erf(x)``; computed in float64 for float64 input, else in float32."""
    small, tail = _coefficients()
    wd = np.float64 if x.dtype == np.float64 else np.float32
    a: Array = np.abs(x).astype(wd)
    res = np.ones_like(a)
    m = a < 1.0
    if m.any():
        v = a[m]
        res[m] = v * _series(small, v * v, 0.0, 1.0)
    for lo, hi, coef in tail:
        m = (a >= lo) & (a < hi)
        if m.any():
            v = a[m]
            res[m] = 1.0 - np.exp(-v * v) * _series(coef, v, lo, hi)
    res[np.isnan(a)] = np.nan
    np.copysign(res, x.astype(wd, copy=False), out=res)
    out[...] = res
