"""The direct convolution of narrow groups (``_dconv.c``): depthwise convolutions and groups
of a few channels (RegNet's 8), summed in registers with bias, residual, clamp and a fused
activation (:data:`._native.Act`).

:func:`applies` says which convolutions take it; :func:`work_floats` sizes the caller's copy
of a group's inputs; :func:`dconv2d_call` checks the arrays and makes the call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

from mini_infer_core.plugin.arrays import NDArray

from ._abi import DConv2dArgs
from ._kernels import address
from ._native import NO_ACT, Act, Call, _call, _kernel

__all__ = ["MAX_WIDTH", "MIN_GROUPS", "applies", "dconv2d_call", "fill_arrays", "work_floats"]

Array = NDArray[Any]
#: input and output channels per group at most: wider groups are GEMMs worth their copies
MAX_WIDTH = 16
#: groups at least (two or three narrow groups: small layers the GEMM paths serve as well)
MIN_GROUPS = 4

_dconv = _kernel("mi_dconv2d_f32", DConv2dArgs)
_work = _kernel("mi_dconv2d_work", DConv2dArgs, ctypes.c_long)


def applies(xshape: Sequence[int], wshape: Sequence[int], group: int) -> bool:
    """2-D, :data:`MIN_GROUPS` groups or more of at most :data:`MAX_WIDTH` input and output
    channels each."""
    return (len(xshape) == 4 and len(wshape) == 4 and group >= MIN_GROUPS
            and xshape[1] % group == 0 and wshape[0] % group == 0
            and xshape[1] // group <= MAX_WIDTH and wshape[0] // group <= MAX_WIDTH)


def _args(xshape: Sequence[int], wshape: Sequence[int], group: int, kernel: Sequence[int],
          strides: Sequence[int], dilations: Sequence[int], begin: Sequence[int],
          out_dims: Sequence[int]) -> DConv2dArgs:
    n, c, h, wd = (int(v) for v in xshape)
    return DConv2dArgs(None, None, None, None, None, None, n, c, h, wd, int(wshape[0]),
                       group, int(kernel[0]), int(kernel[1]), int(strides[0]),
                       int(strides[1]), int(dilations[0]), int(dilations[1]), int(begin[0]),
                       int(begin[1]), int(out_dims[0]), int(out_dims[1]), 0.0, 0.0, 0, 0.0,
                       0.0)


def work_floats(xshape: Sequence[int], wshape: Sequence[int], group: int,
                kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                begin: Sequence[int], out_dims: Sequence[int]) -> int:
    """The floats of the caller's work array (one group's inputs, bordered, by phase)."""
    got = int(_work(_args(xshape, wshape, group, kernel, strides, dilations, begin,
                          out_dims)))
    if got < 0:
        raise ValueError(f"mi_dconv2d_work refused group {group} or stride {strides}")
    return got


def dconv2d_call(x: Array, w: Array, b: Array | None, r: Array | None, y: Array, work: Array,
                 group: int, kernel: Sequence[int], strides: Sequence[int],
                 dilations: Sequence[int], begin: Sequence[int], lo: float, hi: float,
                 act: Act = NO_ACT) -> Call:
    """The call that writes ``y`` = act(clamp(conv(x, w) + b + r, lo, hi)); ``act``: (code,
    alpha, beta) as :data:`._native.Act` says."""
    k = "mi_dconv2d_f32"
    if x.ndim != 4 or w.ndim != 4 or y.ndim != 4:
        raise ValueError(f"{k}: x, w and y must be 4-D, not {x.shape}, {w.shape}, {y.shape}")
    n, c = x.shape[:2]
    m = w.shape[0]
    if (c % group or m % group or w.shape[1] != c // group or y.shape[:2] != (n, m)
            or tuple(w.shape[2:]) != tuple(kernel)):
        raise ValueError(f"{k}: x {x.shape}, w {w.shape}, y {y.shape} do not make a "
                         f"convolution of {group} groups")
    if r is not None and r.shape != y.shape:
        raise ValueError(f"{k}: the residual {r.shape} must have y's shape {y.shape}")
    args = _args(x.shape, w.shape, group, kernel, strides, dilations, begin, y.shape[2:])
    need = int(_work(args))
    if need < 0:
        raise ValueError(f"{k}: refused group {group} or stride {strides}")
    fill_arrays(args, k, x, w, b, r, y, work, need, lo, hi, act)
    return _call(_dconv, args, x, w, b, r, y, work)


def fill_arrays(args: DConv2dArgs, k: str, x: Array, w: Array, b: Array | None,
                r: Array | None, y: Array, work: Array, need: int, lo: float, hi: float,
                act: Act) -> None:
    """The arrays (checked), bounds and fused activation of a ``mi_dconv2d_args`` (also
    :mod:`._pw`'s)."""
    m = w.shape[0]
    args.x = address(x, x.size, False, k, "x")
    args.w = address(w, w.size, False, k, "w")
    args.bias = None if b is None else address(b, m, False, k, "bias")
    args.res = None if r is None else address(r, y.size, False, k, "res")
    args.y = address(y, y.size, True, k, "y")
    args.work = address(work, need, True, k, "work")
    args.lo, args.hi = float(lo), float(hi)
    args.act, args.act_alpha, args.act_beta = int(act[0]), float(act[1]), float(act[2])
