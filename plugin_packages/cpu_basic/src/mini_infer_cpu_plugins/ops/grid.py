"""Spatial sampling: GridSample (opset 16: 2-D, bilinear/nearest/bicubic; opset 20+: N-d,
linear/nearest/cubic) and AffineGrid.

GridSample is vectorised over every output position: the normalised grid coordinates are
mapped to input pixel coordinates (align_corners or not), out-of-range coordinates are
clamped (border) or reflected (reflection), and the 1 (nearest), 2^d (linear) or 4^d
(cubic) neighbours are gathered with fancy indexing, out-of-range neighbours reading 0
(zeros), the edge (border) or their reflection (reflection). Shapes and attributes are the
schemas' (:mod:`mini_infer_core.ops.grid`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import grid as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import emit
from ._util import kernels

__all__ = ["GridSample_16", "GridSample", "AffineGrid"]

Array = NDArray[Any]


def _reflect(x: Array, lo: float, hi: float) -> Array:
    """Reflect ``x`` by the nearer border until it lies in [lo, hi]."""
    rng = hi - lo
    if rng <= 0:
        return np.full_like(x, lo)
    below = x < lo
    above = x > hi
    dx = np.where(below, lo - x, np.where(above, x - hi, 0))
    n = np.trunc(dx / rng)
    r = dx - n * rng
    even = (n % 2) == 0
    low_side = np.where(even, lo + r, hi - r)
    high_side = np.where(even, hi - r, lo + r)
    return np.where(below, low_side, np.where(above, high_side, x))


def _cubic_coeffs(t: Array) -> list[Array]:
    a = -0.75

    def near(x: Array) -> Array:
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x: Array) -> Array:
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


class _GridSample(CpuPlugin, schema.GridSampleBase):
    def _fetch(self, img: Array, idx: list[Array], borders: list[tuple[float, float]]
               ) -> Array:
        """img (C, *D) at integer positions ``idx`` (each shaped as the output)."""
        dims = img.shape[1:]
        valid = None
        fixed = []
        for i, (ix, d) in enumerate(zip(idx, dims, strict=True)):
            if self.padding == "zeros":
                ok = (ix >= 0) & (ix < d)
                valid = ok if valid is None else valid & ok
            elif self.padding == "reflection":
                lo, hi = borders[i]
                ix = _reflect(ix.astype(np.float64), lo, hi).astype(np.int64)
            fixed.append(np.clip(ix, 0, d - 1))
        sel: tuple[Any, ...] = (slice(None), *fixed)
        vals: Array = img[sel]
        if valid is not None:
            vals = vals * valid
        return vals

    def compute(self, x: Array, grid: Array, *, out: Array, align_corners: int,
                **_: Any) -> None:
        nd = x.ndim - 2
        if grid.shape[-1] != nd:
            raise PluginInterfaceError(
                f"GridSample: grid's last dim {grid.shape[-1]} != {nd} spatial dims")
        dims = x.shape[2:]
        ct = np.result_type(grid.dtype, np.float32)
        g = grid.astype(ct)
        borders = [(0.0, d - 1.0) if align_corners else (-0.5, d - 0.5) for d in dims]
        for n in range(x.shape[0]):
            img = x[n]
            coords = []
            for i, d in enumerate(dims):
                v = g[n, ..., nd - 1 - i]
                c = (v + 1) / 2 * (d - 1) if align_corners else ((v + 1) * d - 1) / 2
                if self.mode == "nearest":
                    c = np.rint(c)
                lo, hi = borders[i]
                if self.padding == "border":
                    c = np.where((c < lo) | (c > hi), np.clip(c, 0, d - 1), c)
                elif self.padding == "reflection":
                    c = _reflect(c, lo, hi)
                coords.append(c)
            if self.mode == "nearest":
                out[n] = self._fetch(img, [c.astype(np.int64) for c in coords], borders)
                continue
            base = [np.floor(c).astype(np.int64) for c in coords]
            frac = [c - np.floor(c) for c in coords]
            if self.mode == "linear":
                offs: Sequence[int] = (0, 1)
                w = [[1 - f, f] for f in frac]
            else:
                offs = (-1, 0, 1, 2)
                w = [_cubic_coeffs(f) for f in frac]
            acc = np.zeros(out.shape[1:], np.float64)
            for combo in itertools.product(range(len(offs)), repeat=nd):
                wt = w[0][combo[0]]
                for i in range(1, nd):
                    wt = wt * w[i][combo[i]]
                idx = [base[i] + offs[combo[i]] for i in range(nd)]
                acc += self._fetch(img, idx, borders) * wt
            out[n] = acc


GridSample_16, GridSample = kernels(_GridSample, schema.GridSample_16, schema.GridSample,
                                    module=__name__)


class AffineGrid(CpuPlugin, schema.AffineGrid):
    def compute(self, theta: Array, size: Array, *, out: Any = None,
                align_corners: int) -> Any:
        spatial = [int(v) for v in size[2:]]
        axes = []
        for d in spatial:
            if align_corners:
                axes.append(np.linspace(-1.0, 1.0, d))
            else:
                axes.append((np.arange(d) * 2.0 + 1.0) / d - 1.0)
        mesh = np.meshgrid(*axes, indexing="ij")
        homo = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1)  # (*spatial, nd+1)
        flat = homo.reshape(-1, len(spatial) + 1)
        grid = np.einsum("nij,pj->npi", theta.astype(np.float64), flat)
        return emit(grid.reshape(theta.shape[0], *spatial, len(spatial)).astype(theta.dtype),
                    out)
