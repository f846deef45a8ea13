"""Winograd F(2x2, 3x3) convolution: 3x3, stride 1, dilation 1, one group, float32.

Each 2x2 output tile is ``A^T [(G g G^T) * (B^T d B)] A`` for the 4x4 input patch ``d``: the
products become 16 GEMMs ``M_k (M, T) = U_k (M, C) @ V_k (C, T)`` over the T tiles, 2.25x
fewer multiplications than the direct convolution. The transforms are compiled
(``mi_wino_in_f32`` / ``mi_wino_out_f32``; the second adds bias and residual and clamps);
the GEMMs are one batched ``np.matmul`` (BLAS, all threads). Tile rows go in blocks whose
V and M stay under :data:`BLOCK_BYTES` (the buffers are the node's workspace in the engine's
arena, shared with every other node). Against cpu_basic's tap/im2col GEMMs on 2 cores:
1.0x for 64 channels, 1.2-1.7x from 128 channels up (VGG-19's and ResNet-50's layers).

Numerics: the transforms add and subtract values of similar size, so the result differs
from the direct sum by a few float32 ulps of the inputs' scale (the tests compare with
onnxruntime at rtol 1e-4).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._native import wino_in, wino_out

__all__ = ["BLOCK_BYTES", "MIN_CHANNELS", "MIN_CHANNELS_SMALL", "MIN_TILES", "applies",
           "buffers", "possible", "winograd_conv"]

Array = NDArray[Any]

#: V (16, C, T) and M (16, M, T) of one block of tile rows stay under this many bytes
#: (larger blocks make wider GEMMs: 32 MiB ran 10-40% faster than 1-4 MiB)
BLOCK_BYTES = 32 * 1024 * 1024
#: fewer input or output channels: im2col/taps are as fast (little to save, transforms cost)
MIN_CHANNELS = 32
#: fewer 2x2 tiles per image (an output under 15x15): the 16 GEMMs are too thin ...
MIN_TILES = 64
#: ... unless there are this many input channels and at least 7x7 tiles (14x14 outputs of
#: ResNet-50 and DenseNet-121: 1.3-1.7x; SqueezeNet's 13x13 with 48-64 channels: 0.9-1.1x)
MIN_CHANNELS_SMALL = 96


def possible(xshape: tuple[int, ...], wshape: tuple[int, ...], strides: Any, dilations: Any,
             group: int, out_dims: Any) -> bool:
    """Whether F(2x2, 3x3) computes this convolution at all (3x3, stride 1, one group)."""
    return (len(xshape) == 4 and tuple(wshape[2:]) == (3, 3) and group == 1
            and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1))


def applies(xshape: tuple[int, ...], wshape: tuple[int, ...], strides: Any, dilations: Any,
            group: int, out_dims: Any) -> bool:
    """The default where the builder has not timed the tactics: possible and expected to
    pay (channels and tiles over the thresholds above)."""
    if not possible(xshape, wshape, strides, dilations, group, out_dims):
        return False
    tiles = -(-out_dims[0] // 2) * -(-out_dims[1] // 2)
    if min(xshape[1], wshape[0]) < MIN_CHANNELS:
        return False
    return tiles >= MIN_TILES or (tiles >= 49 and xshape[1] >= MIN_CHANNELS_SMALL)


def _block(c: int, m: int, th: int, tw: int) -> int:
    """Tile rows per block."""
    return max(1, min(th, BLOCK_BYTES // (16 * (c + m) * tw * 4)))


def buffers(c: int, m: int, out_dims: Any) -> list[tuple[str, tuple[int, ...]]]:
    """The float32 buffers :func:`winograd_conv` needs: V and M of one block, one row set."""
    th, tw = -(-out_dims[0] // 2), -(-out_dims[1] // 2)
    block = _block(c, m, th, tw)
    return [("wino_v", (16 * c * block * tw,)), ("wino_m", (16 * m * block * tw,)),
            ("wino_rows", (8 * (2 * tw + 2),))]


def winograd_conv(x: Array, u: Array, b: Array | None, r: Array | None, out: Array,
                  begin: tuple[int, int], lo: float, hi: float, bufs: dict[str, Array]) -> None:
    """``out`` = clamp(conv3x3(x) + b + r, lo, hi), with ``u`` from :func:`._native.wino_weights`
    and the padding before ``begin``; ``bufs`` as :func:`buffers` lays them out."""
    n, c = x.shape[:2]
    m = u.shape[1]
    oh, ow = out.shape[2:]
    th, tw = -(-oh // 2), -(-ow // 2)
    block = _block(c, m, th, tw)
    v_all, m_all, rows = bufs["wino_v"], bufs["wino_m"], bufs["wino_rows"]
    for img in range(n):
        res = None if r is None else r[img]
        for ty0 in range(0, th, block):
            ty1 = min(th, ty0 + block)
            t = (ty1 - ty0) * tw
            v = v_all[: 16 * c * t].reshape(16, c, t)
            mm = m_all[: 16 * m * t].reshape(16, m, t)
            wino_in(x[img], v, rows, begin, tw, ty0, ty1)
            np.matmul(u, v, out=mm)
            wino_out(mm, out[img], b, res, rows, tw, ty0, ty1, lo, hi)
