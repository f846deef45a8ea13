"""Spatial sampling: GridSample (opset 16: 2-D, bilinear/nearest/bicubic; opset 20+: N-d,
linear/nearest/cubic) and AffineGrid.

GridSample is vectorised over every output position: the normalised grid coordinates are
mapped to input pixel coordinates (align_corners or not), out-of-range coordinates are
clamped (border) or reflected (reflection), and the 1 (nearest), 2^d (linear) or 4^d
(cubic) neighbours are gathered with fancy indexing, out-of-range neighbours reading 0
(zeros), the edge (border) or their reflection (reflection).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimsExprs, IntLike

from ..serialization import CpuPlugin
from ._dynamic import ValuePlugin
from ._nn_util import to_str

__all__ = ["GridSample_16", "GridSample", "AffineGrid"]

Array = NDArray[Any]

_MODE_NAMES = {"bilinear": "linear", "bicubic": "cubic", "linear": "linear",
               "cubic": "cubic", "nearest": "nearest"}
_PADDINGS = ("zeros", "border", "reflection")


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


class GridSample(CpuPlugin):
    plugin_version = "20"
    min_opset = 20
    attributes: ClassVar[dict[str, Any]] = {
        "align_corners": 0, "mode": "linear", "padding_mode": "zeros"}

    def setup(self) -> None:
        mode = to_str(self.attrs["mode"])
        pad = to_str(self.attrs["padding_mode"])
        if mode not in _MODE_NAMES or pad not in _PADDINGS:
            raise PluginInterfaceError(
                f"GridSample: unknown mode {mode!r} or padding_mode {pad!r}")
        self.mode, self.padding = _MODE_NAMES[mode], pad

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        x, g = list(inputs[0]), list(inputs[1])
        if len(g) != len(x) or len(x) < 3:
            raise PluginInterfaceError("GridSample: X and grid must have the same rank >= 3")
        return [[x[0], x[1], *g[1:-1]]]

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


class GridSample_16(GridSample):  # noqa: N801
    """Opset 16: 2-D only, modes bilinear/nearest/bicubic."""

    op_type = "GridSample"
    plugin_version = "16"
    min_opset = 16
    max_opset = 19
    attributes: ClassVar[dict[str, Any]] = {
        "align_corners": 0, "mode": "bilinear", "padding_mode": "zeros"}


class AffineGrid(ValuePlugin):
    """grid[n, ..., :] = theta[n] @ (x, y[, z], 1) over the normalised base grid of
    ``size`` = (N, C, [D,] H, W); shape from the values of ``size`` (data-dependent when
    they are only known at run time)."""

    min_opset = 20
    attributes: ClassVar[dict[str, Any]] = {"align_corners": 0}

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        return True

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        size = self.ints(inputs, 1)
        if size is not None:
            return [[size[0], *size[2:], len(size) - 2]]
        k = inputs[1][0] if len(inputs[1]) == 1 else None
        if k is None or not k.is_constant():
            raise PluginInterfaceError("AffineGrid: size must be a 1-D tensor of static length")
        rank = k.get_constant_value()
        self.runtime(True)
        return [[inputs[0][0], *(self.dynamic_dim(f"d{i}") for i in range(rank - 2)),
                 rank - 2]]

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
        y = grid.reshape(theta.shape[0], *spatial, len(spatial)).astype(theta.dtype)
        if out is None:
            return y
        np.copyto(out, y)
        return None
