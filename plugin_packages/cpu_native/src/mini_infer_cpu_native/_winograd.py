"""Winograd convolution, F(2x2, 3x3) and F(4x4, 3x3): 3x3, stride 1, dilation 1, float32;
grouped convolutions one group after the other.

Each ``tile`` x ``tile`` output tile (2 or 4) is ``A^T [(G g G^T) * (B^T d B)] A`` for the
(tile + 2)^2 input patch ``d``: the products become (tile + 2)^2 GEMMs
``M_k (M, T) = U_k (M, C) @ V_k (C, T)`` over the T tiles, 2.25x (F(2x2)) or 4x (F(4x4))
fewer multiplications than the direct convolution. The transforms are compiled
(``_winograd.c``; the output transform adds bias and residual and clamps);
the GEMMs are one batched compiled GEMM on the library's pool (``_gemm.c``; one batched
``np.matmul`` where the CPU lacks AVX-512). Tile rows go in blocks whose
V and M stay under :data:`BLOCK_BYTES` (the buffers are the node's workspace in the engine's
arena, shared with every other node). Against cpu_basic's tap/im2col GEMMs on 2 cores:
1.0x for 64 channels, 1.2-1.7x from 128 channels up (VGG-19's and ResNet-50's layers).

Numerics: the transforms add and subtract values of similar size, so the result differs
from the direct sum by a few float32 ulps of the inputs' scale for F(2x2) and by some more
for F(4x4), whose transforms multiply by up to 8 (the tests compare with onnxruntime at
rtol 1e-4 and a tolerance relative to the output's scale).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._native import (
    NO_ACT,
    Act,
    Call,
    gemm_available,
    gemm_batch_call,
    pack_a,
    run_calls,
    wino_in_call,
    wino_out_call,
    wino_weights,
)

__all__ = ["BLOCK_BYTES", "BLOCK_PER_WEIGHTS", "MIN_CHANNELS", "MIN_CHANNELS_SMALL",
           "MIN_OUT_CHANNELS", "MIN_TILES", "MIN_TILES_4",
           "applies", "buffers", "possible", "tiles", "weights", "winograd_calls", "winograd_conv"]

Array = NDArray[Any]

#: V (16, C, T) and M (16, M, T) of one block of tile rows stay under this many bytes, or
#: under :data:`BLOCK_PER_WEIGHTS` times U's bytes where that is more: small blocks stay in
#: L2 between the transforms and the GEMMs (PP-OCR's 96 -> 24 channels at 160x160, V of 40
#: MiB in blocks of 32 MiB: 27 -> 13-14 ms on one core), and each block, GEMMs of its own,
#: reads all of U again: blocks of a few times U's size keep that under V's own traffic
#: (ResNet-50's 256-channel layers: one block)
BLOCK_BYTES = 1024 * 1024
BLOCK_PER_WEIGHTS = 4
#: fewer input channels: im2col/taps are as fast (little to save, transforms cost) ...
MIN_CHANNELS = 32
#: ... and fewer output channels (PP-OCR's 96 -> 24 channels, one core, against
#: onnxruntime: 160x160 1.8x -> 1.1x, 80x80 1.7x -> 1.3x; 16 -> 16 channels: slower)
MIN_OUT_CHANNELS = 16
#: fewer 2x2 tiles per image (an output under 15x15): the 16 GEMMs are too thin ...
MIN_TILES = 64
#: ... unless there are this many input channels and at least 7x7 tiles (14x14 outputs of
#: ResNet-50 and DenseNet-121: 1.3-1.7x; SqueezeNet's 13x13 with 48-64 channels: 0.9-1.1x)
MIN_CHANNELS_SMALL = 96
#: 4x4 tiles from which F(4x4, 3x3) is the default (outputs from 120x120: with blocks that
#: stay in L2, F(2x2) was as fast or faster up to 80x80 on one core, 10-45% at 28x28 and
#: 56x56 with 32-64 output channels; F(4x4) 10% faster at 160x160)
MIN_TILES_4 = 900


def possible(xshape: tuple[int, ...], wshape: tuple[int, ...], strides: Any, dilations: Any,
             group: int, out_dims: Any) -> bool:
    """Whether F(2x2, 3x3) computes this convolution at all (3x3, stride 1; groups of more
    than one input channel each, one group after the other: not depthwise)."""
    return (len(xshape) == 4 and tuple(wshape[2:]) == (3, 3) and wshape[1] > 1
            and tuple(strides) == (1, 1) and tuple(dilations) == (1, 1))


def applies(xshape: tuple[int, ...], wshape: tuple[int, ...], strides: Any, dilations: Any,
            group: int, out_dims: Any) -> int:
    """The default where the builder has not timed the tactics: the output tile size (0: no
    Winograd) where it is possible and expected to pay (channels and tiles over the
    thresholds above; F(4x4) from :data:`MIN_TILES_4` 4x4 tiles)."""
    if not possible(xshape, wshape, strides, dilations, group, out_dims):
        return 0
    th, tw = tiles(out_dims, 2)
    c = wshape[1]  # input channels per group
    if c < MIN_CHANNELS or wshape[0] // group < MIN_OUT_CHANNELS:
        return 0
    if math.prod(tiles(out_dims, 4)) >= MIN_TILES_4:
        return 4
    return 2 if th * tw >= MIN_TILES or (th * tw >= 49 and c >= MIN_CHANNELS_SMALL) else 0


def _block(c: int, m: int, th: int, tw: int, tile: int) -> int:
    """Tile rows per block."""
    k = (tile + 2) ** 2
    limit = max(BLOCK_BYTES, BLOCK_PER_WEIGHTS * k * m * c * 4)
    return max(1, min(th, limit // (k * (c + m) * tw * 4)))


def tiles(out_dims: Any, tile: int) -> tuple[int, int]:
    """Tile rows and columns covering an output of ``out_dims``."""
    return -(-out_dims[0] // tile), -(-out_dims[1] // tile)


def buffers(c: int, m: int, out_dims: Any, tile: int = 2) -> list[tuple[str, tuple[int, ...]]]:
    """The float32 buffers :func:`winograd_conv` needs for ``c`` input and ``m`` output channels
    (of one group): V and M of one block, one row set."""
    th, tw = tiles(out_dims, tile)
    block = _block(c, m, th, tw, tile)
    k = (tile + 2) ** 2
    return [("wino_v", (k * c * block * tw,)), ("wino_m", (k * m * block * tw,)),
            ("wino_rows", (2 * (tile + 2) * (tile * tw + 2),))]


def weights(w: Array, tile: int, group: int = 1) -> tuple[Array, Array | None]:
    """U (group, (tile + 2)^2, M/group, C/group) of :func:`._native.wino_weights` for each
    group, and each U_k packed for the compiled GEMM, one after the other (None without
    it). Where the packed form exists U's values are not read again: only its shape is
    kept (a view of one zero), so that the weights are held once (4x their size for F(4x4))."""
    mg = w.shape[0] // group
    parts = [wino_weights(w[g * mg:(g + 1) * mg], tile) for g in range(group)]
    # one group (most convolutions): its U as a view, not a stacked copy
    u = parts[0][None] if group == 1 else np.stack(parts)
    if not gemm_available():
        return u, None
    step = u.shape[2] * u.shape[3]
    packed = np.empty(u.size, np.float32)
    for i, uk in enumerate(uk for ug in u for uk in ug):  # packed in place, one after another
        pack_a(uk, packed[i * step:(i + 1) * step])
    return np.broadcast_to(np.zeros((), u.dtype), u.shape), packed


def _matmul(u: Array, v: Array, out: Array) -> None:
    """The products where the compiled GEMM does not run (a call returns None: see
    :func:`._native.run_calls`)."""
    np.matmul(u, v, out=out)


def winograd_conv(x: Array, u: Array, b: Array | None, r: Array | None, out: Array,
                  begin: tuple[int, int], lo: float, hi: float, bufs: dict[str, Array],
                  packed: Array | None = None) -> None:
    """``out`` = clamp(conv3x3(x) + b + r, lo, hi), with ``u`` from :func:`weights` (its second
    axis, 16 or 36, says the tile size; its first, the groups, each computed in turn) and the
    padding before ``begin``; ``bufs`` as :func:`buffers` lays them out; ``packed`` (from
    :func:`weights`): the products on the compiled GEMM."""
    run_calls(winograd_calls(x, u, b, r, out, begin, lo, hi, bufs, packed))


def winograd_calls(x: Array, u: Array, b: Array | None, r: Array | None, out: Array,
                   begin: tuple[int, int], lo: float, hi: float, bufs: dict[str, Array],
                   packed: Array | None = None, act: Act = NO_ACT) -> list[Call]:
    """The calls that compute :func:`winograd_conv`, in order (``act``, :data:`._native.Act`:
    applied after the clamp)."""
    n = x.shape[0]
    group, k, m, c = u.shape
    tile = 2 if k == 16 else 4
    th, tw = tiles(out.shape[2:], tile)
    block = _block(c, m, th, tw, tile)
    v_all, m_all, rows = bufs["wino_v"], bufs["wino_m"], bufs["wino_rows"]
    calls: list[Call] = []
    for img in range(n):
        for g in range(group):
            xg, yg = x[img, g * c:(g + 1) * c], out[img, g * m:(g + 1) * m]
            bg = None if b is None else b[g * m:(g + 1) * m]
            rg = None if r is None else r[img, g * m:(g + 1) * m]
            pg = None if packed is None else packed[g * k * m * c:(g + 1) * k * m * c]
            for ty0 in range(0, th, block):
                ty1 = min(th, ty0 + block)
                t = (ty1 - ty0) * tw
                v = v_all[: k * c * t].reshape(k, c, t)
                mm = m_all[: k * m * t].reshape(k, m, t)
                calls.append(wino_in_call(xg, v, rows, begin, tw, ty0, ty1, tile))
                if pg is None:
                    calls.append((_matmul, (u[g], v, mm)))
                else:
                    calls.append(gemm_batch_call(pg, m, c, v, mm))
                calls.append(wino_out_call(mm, yg, bg, rg, rows, tw, ty0, ty1, lo, hi, tile,
                                           act))
    return calls
