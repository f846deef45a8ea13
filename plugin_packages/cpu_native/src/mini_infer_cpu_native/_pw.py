"""Short products over large maps (``_pw.c``): 1x1 convolutions of few channels over large
maps, and the stems' convolutions of a few input channels, summed with the map read once and
bias, residual, clamp and a fused activation (:data:`._native.Act`) in registers.

:func:`applies` says which convolutions take it; :func:`work_floats` sizes the caller's
gather buffer; :func:`pwconv2d_call` checks the arrays and makes the call. The arguments are
``mi_dconv2d_args`` (the direct convolution's struct, group 1), the weights as ONNX stores
them.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

from mini_infer_core.plugin.arrays import NDArray

from ._abi import DConv2dArgs
from ._act import act_isa
from ._dconv import fill_arrays
from ._native import NO_ACT, Act, Call, _call, _kernel

__all__ = ["MAX_C", "MAX_CHANNELS", "MAX_K", "MIN_PIXELS", "applies", "pwconv2d_call",
           "work_floats"]

Array = NDArray[Any]
#: input channels times taps at most (``_pw.c``'s MAX_K)
MAX_K = 256
#: 1x1: input and output channels at most, and output pixels at least. One thread, AVX2
#: (Zen), against the compiled GEMM, interleaved: 16-128 channels over 28x28-112x112 maps
#: 1.0-1.5x faster (24->72 @56x56: 1.39 -> 0.95 ms), 144-240 channels 1.1-1.3x (240->40
#: @28x28: 0.92 -> 0.68 ms), ResNet's 64<->256 @56x56 even; smaller maps are the short-row
#: GEMMs' (7x7-14x14)
MAX_CHANNELS = 256
MIN_PIXELS = 784
#: input channels at most of the direct (stem) case
MAX_C = 4

_pw = _kernel("mi_pwconv2d_f32", DConv2dArgs)
_work = _kernel("mi_pwconv2d_work", DConv2dArgs, ctypes.c_long)


def applies(xshape: Sequence[int], wshape: Sequence[int], group: int, strides: Sequence[int],
            begin: Sequence[int], out_dims: Sequence[int]) -> bool:
    """2-D, one group, where the AVX2 kernels run (:func:`._act.act_isa` 1: on AVX-512 CPUs
    the GEMM's own kernels are kept), and either a 1x1 stride-1 unpadded convolution of at
    most :data:`MAX_CHANNELS` input and output channels over :data:`MIN_PIXELS` pixels or
    more, or a convolution of at most :data:`MAX_C` input channels (a stem) over 8 output
    columns or more."""
    if len(xshape) != 4 or len(wshape) != 4 or group != 1 or act_isa() != 1:
        return False
    c, m, kernel = int(xshape[1]), int(wshape[0]), tuple(wshape[2:])
    if c * math.prod(kernel) > MAX_K or int(wshape[1]) != c:
        return False
    if (kernel == (1, 1) and tuple(strides) == (1, 1) and tuple(begin) == (0, 0)
            and tuple(out_dims) == tuple(xshape[2:])):
        return c <= MAX_CHANNELS and m <= MAX_CHANNELS and math.prod(out_dims) >= MIN_PIXELS
    return c <= MAX_C and int(out_dims[1]) >= 8


def _args(xshape: Sequence[int], wshape: Sequence[int], kernel: Sequence[int],
          strides: Sequence[int], dilations: Sequence[int], begin: Sequence[int],
          out_dims: Sequence[int]) -> DConv2dArgs:
    n, c, h, wd = (int(v) for v in xshape)
    return DConv2dArgs(None, None, None, None, None, None, n, c, h, wd, int(wshape[0]), 1,
                       int(kernel[0]), int(kernel[1]), int(strides[0]), int(strides[1]),
                       int(dilations[0]), int(dilations[1]), int(begin[0]), int(begin[1]),
                       int(out_dims[0]), int(out_dims[1]), 0.0, 0.0, 0, 0.0, 0.0)


def work_floats(xshape: Sequence[int], wshape: Sequence[int], kernel: Sequence[int],
                strides: Sequence[int], dilations: Sequence[int], begin: Sequence[int],
                out_dims: Sequence[int]) -> int:
    """The floats of the caller's gather buffer (one tile's K rows, or one band's copy)."""
    got = int(_work(_args(xshape, wshape, kernel, strides, dilations, begin, out_dims)))
    if got < 0:
        raise ValueError(f"mi_pwconv2d_work refused kernel {kernel} or stride {strides}")
    return got


def pwconv2d_call(x: Array, w: Array, b: Array | None, r: Array | None, y: Array, work: Array,
                  kernel: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
                  begin: Sequence[int], lo: float, hi: float, act: Act = NO_ACT) -> Call:
    """The call that writes ``y`` = act(clamp(conv(x, w) + b + r, lo, hi)), one group;
    ``act``: (code, alpha, beta) as :data:`._native.Act` says."""
    k = "mi_pwconv2d_f32"
    if x.ndim != 4 or w.ndim != 4 or y.ndim != 4:
        raise ValueError(f"{k}: x, w and y must be 4-D, not {x.shape}, {w.shape}, {y.shape}")
    n, c = x.shape[:2]
    m = w.shape[0]
    if w.shape[1] != c or y.shape[:2] != (n, m) or tuple(w.shape[2:]) != tuple(kernel):
        raise ValueError(f"{k}: x {x.shape}, w {w.shape}, y {y.shape} do not make a "
                         "convolution of one group")
    if r is not None and r.shape != y.shape:
        raise ValueError(f"{k}: the residual {r.shape} must have y's shape {y.shape}")
    args = _args(x.shape, w.shape, kernel, strides, dilations, begin, y.shape[2:])
    need = int(_work(args))
    if need < 0:
        raise ValueError(f"{k}: refused kernel {kernel} or stride {strides}")
    fill_arrays(args, k, x, w, b, r, y, work, need, lo, hi, act)
    return _call(_pw, args, x, w, b, r, y, work)
