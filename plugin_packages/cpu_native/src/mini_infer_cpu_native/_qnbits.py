"""Calls of ``_qnbits.c``: MatMulNBits' 4-bit weights packed in the kernel's panels, and the
product (float or int8 compute) on the library's pool.

The panels (see ``_qnbits.c``): 16 columns each, groups of 8 k of 64 bytes, byte ``j * 4 + t``
holding ``q[k0 + t][j]`` low and ``q[k0 + 4 + t][j]`` high; the last partial panel of ``w``
columns ``w * 4`` bytes per group. The kernel reads the scales and zero points as float32
``(panels, k_blocks, 16)`` (:func:`panel_params`) and the partial panel padded to 16 columns
(:func:`last_panel`). The wrappers check every array before the call, as :mod:`._qgemm`'s do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._abi import NBitsArgs, NBitsPackArgs
from ._native import _kernel
from ._qgemm import IsaChoice, _check, _ptr

__all__ = ["ISAS", "PANEL", "last_panel", "nbits_args", "nbits_isa", "nbits_supported",
           "pack_q4", "panel_params", "run_nbits", "unpack_q4", "use_nbits_isa"]

Array = NDArray[Any]

#: the kernels by the level mi_nbits_isa reports
ISAS = ("plain", "avx2", "avx512vnni")
#: columns per panel
PANEL = 16

_pack = _kernel("mi_nbits_pack_q4", NBitsPackArgs)
_gemm = _kernel("mi_nbits_gemm_f32", NBitsArgs)

_isas = IsaChoice("nbits", ISAS)
#: the 4-bit GEMM's kernels in use, whether this CPU runs an ISA's, tests' choice
nbits_isa, nbits_supported, use_nbits_isa = _isas.current, _isas.supported, _isas.use


def pack_q4(b: Array, n: int, kb: int, block: int) -> Array:
    """B (uint8, ``n * kb * block / 2`` bytes in the ONNX order ``[N, k_blocks, blob]``) in
    the kernel's panels: the same bytes count, B's shape."""
    kn = "mi_nbits_pack_q4"
    if b.dtype != np.uint8 or b.size != n * kb * block // 2:
        raise ValueError(f"{kn}: b must be {n * kb * block // 2} uint8 values, not {b.dtype} "
                         f"{b.shape}")
    src = np.ascontiguousarray(b)
    out = np.empty(b.shape, np.uint8)
    if b.size:
        _check(_pack, NBitsPackArgs(src.ctypes.data, _ptr(out, (np.uint8,), b.size, True, kn,
                                                          "out"), n, kb, block))
    return out


def _values(packed: Array, n: int, kp: int) -> Array:
    """The 4-bit values ``(n, kp)`` of a packed B (NumPy)."""
    flat = packed.reshape(-1)
    out = np.empty((n, kp), np.uint8)
    half = kp // 2
    for j0 in range(0, n, PANEL):
        w = min(PANEL, n - j0)
        groups = flat[j0 * half:(j0 + w) * half].reshape(kp // 8, w, 4)
        both = np.concatenate([groups & 15, groups >> 4], axis=2)  # (g, w, 8): k = 8g + t
        out[j0:j0 + w] = both.transpose(1, 0, 2).reshape(w, kp)
    return out


def unpack_q4(packed: Array, n: int, kb: int, block: int) -> Array:
    """:func:`pack_q4` undone (NumPy): B in the ONNX order, ``packed``'s shape."""
    v = _values(packed, n, kb * block)
    out: Array = (v[:, 0::2] | (v[:, 1::2] << 4)).reshape(packed.shape)
    return out


def last_panel(packed: Array, n: int, kb: int, block: int) -> Array | None:
    """The partial last panel padded with zero columns to 16 (None: there is none)."""
    w = n % PANEL
    if w == 0:
        return None
    kp = kb * block
    tail = packed.reshape(-1)[(n - w) * kp // 2:].reshape(kp // 8, w, 4)
    out = np.zeros((kp // 8, PANEL, 4), np.uint8)
    out[:, :w] = tail
    return out


def panel_params(x: Array, n: int, kb: int) -> Array:
    """Per-block values ``(n, kb)`` (scales or zero points) as float32 ``(panels, kb, 16)``,
    zeros past column n."""
    panels = -(-n // PANEL)
    padded = np.zeros((panels * PANEL, kb), np.float32)
    padded[:n] = x.reshape(n, kb)
    return np.ascontiguousarray(padded.reshape(panels, PANEL, kb).transpose(0, 2, 1))


def nbits_args(a: Array, packed: Array, blast: Array | None, scales: Array, zp: Array | None,
               bias: Array | None, c: Array, *, kb: int, block: int, int8: bool) -> NBitsArgs:
    """The checked arguments of ``c (M, N) = a (M, K) . dequantize(B)^T + bias`` (float32,
    C-contiguous), to run with :func:`run_nbits`: ``packed`` from :func:`pack_q4`, ``blast``
    from :func:`last_panel`, ``scales`` and ``zp`` (None: 8) from :func:`panel_params`;
    ``int8``: A quantized to int8 per block (accuracy_level 4)."""
    kn = "mi_nbits_gemm_f32"
    if a.ndim != 2 or c.ndim != 2 or a.shape[0] != c.shape[0]:
        raise ValueError(f"{kn}: a {a.shape} and c {c.shape} are not (M, K) and (M, N)")
    (m, k), n = a.shape, c.shape[1]
    kp, panels = kb * block, -(-n // PANEL)
    if k > kp:
        raise ValueError(f"{kn}: K = {k} is more than k_blocks * block_size = {kp}")
    if (blast is None) != (n % PANEL == 0):
        raise ValueError(f"{kn}: blast must be given exactly where N = {n} is not a multiple "
                         f"of {PANEL}")
    f32 = (np.float32,)
    args = NBitsArgs(
        _ptr(a, f32, m * k, False, kn, "a"), _ptr(packed, (np.uint8,), n * kp // 2, False, kn,
                                                  "bp"),
        _ptr(blast, (np.uint8,), kp * 8, False, kn, "blast"),
        _ptr(scales, f32, panels * kb * PANEL, False, kn, "scales"),
        _ptr(zp, f32, panels * kb * PANEL, False, kn, "zp"),
        _ptr(bias, f32, n, False, kn, "bias"), _ptr(c, f32, m * n, True, kn, "c"),
        m, n, k, kb, block, k, n, int(int8))
    args._keep = (a, packed, blast, scales, zp, bias, c)
    return args


def run_nbits(args: NBitsArgs) -> None:
    """Run a product made by :func:`nbits_args` (again: its arrays are kept alive by it)."""
    _check(_gemm, args)
