"""cpu_basic's Conv with its float32 NCHW cases compiled: the run of the compiled calls
(:mod:`._conv_geometry`, :mod:`._conv_tactics` and :mod:`._conv_weights` are its layers).

A module of its own, like :mod:`.pool`, :mod:`.normalization` and :mod:`.gemm`, so that an
engine imports the kernels it names and not its neighbours' (issue 30). The class is the
cpu_basic plugin (same fields, fusions, shape inference and serialized form) whose ``compute``
takes the compiled kernel when the case is one it has (:mod:`._native`) and hands anything
else (float64, grouped 3-D, arrays that are not contiguous or aligned, grouped convolutions
on a CPU without AVX-512) to the NumPy kernel it inherits. The wrappers of :mod:`._native`
check every array again before a call; one they refuse here (a bug) fails the run with the
node named (the engine wraps it in an ``ExecutionError``), never a read or write past an
array. Engines built with these plugins name this distribution, so loading them needs it
installed.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import conv as _conv
from mini_infer_cpu_plugins.toolkit import blas_available as available
from mini_infer_cpu_plugins.toolkit import blas_gemm

from mini_infer_core.plugin.arrays import NDArray

from . import _conv_gemm, _dconv, _pw, _tap_gemm, _winograd
from ._conv_extra import ACTS, act_after, act_code
from ._conv_frames import ConvFrames
from ._conv_geometry import bounds, depthwise
from ._conv_weights import ConvWeights
from ._native import (
    NO_ACT,
    Act,
    Call,
    bias_act,
    dwconv2d,
    dwconv2d_work,
    im2col,
    run_calls,
    usable,
)
from .blocked import BlockedConv

__all__ = ["Conv"]

Array = NDArray[Any]


class Conv(ConvFrames, BlockedConv, ConvWeights):
    """float32, 2-D: depthwise convolutions with bias, residual and Relu/Clip in one compiled
    pass per channel; 3x3 stride-1 convolutions by Winograd F(2x2, 3x3) or F(4x4, 3x3)
    (:mod:`._winograd`); on AVX2 CPUs 1x1 convolutions of few channels over large maps and the
    stems of 1-4 input channels summed with the map read once (:mod:`._pw`); every other one
    on the compiled GEMM with its epilogue in registers (:mod:`._conv_gemm`; on CPUs
    without AVX-512, cpu_basic's BLAS paths with a one-pass compiled epilogue). Everything
    else is cpu_basic's.

    Tactics (timed by the builder) for a 3x3 stride-1 convolution: ``winograd`` (F(2x2, 3x3)),
    ``winograd4`` (F(4x4, 3x3), offered from 4x4 tiles of 4x4 up) or ``gemm``;
    ``__tactic__`` keeps the choice ("" until timed: :func:`._winograd.applies` decides).
    ``__wpacked__`` = 1: the engine stores W in the compiled GEMM's panels (built so).

    Besides Relu and Clip it absorbs a HardSigmoid, HardSwish, Sigmoid or Swish after the
    product (and residual): ConvFusion records it in ``__act__`` (the name) and
    ``__act_args__`` (alpha, beta); the compiled GEMM's epilogue, the direct and Winograd
    convolutions apply it to the clamped sums before they are stored, the other paths after
    (``mi_act_f32`` over the output, NumPy for float64). MobileNetV3's HardSwish and
    EfficientNet's SiLU nodes are gone from the engine.

    float32 1-D convolutions (audio front-ends: STFT as a convolution, wav2vec2's feature
    encoder, Whisper's stem) run as 2-D ones of height 1 (:meth:`window` lifts the 1-D
    attributes; the arrays are reshaped views, W packed at build time for the lifted shape),
    so they take the same compiled paths instead of cpu_basic's NumPy im2col; float32 3-D
    ones (video networks) as 2-D ones over their input frames stacked along the channels
    (:mod:`._conv_frames`)."""

    hidden_fields: ClassVar[tuple[str, ...]] = (*_conv.Conv.hidden_fields, "__tactic__",
                                                "__wpacked__", "__act__", "__act_args__")
    #: also the activations every path here applies after the clamp (in the epilogues of the
    #: compiled GEMM, the direct and Winograd convolutions; after cpu_basic's otherwise)
    fusable: ClassVar[frozenset[str]] = _conv.Conv.fusable | frozenset(ACTS)


    #: the compiled calls of the last run and the arrays they were made for (input, weights,
    #: bias, residual, output, workspace): while the same objects come back (an engine's
    #: arena views, its constants), the addresses in the calls stay valid
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None

    def compute(self, x: Array, w: Array, b: Array | None = None, r: Array | None = None,
                *, out: Array, group: int, __relu__: int = 0, __clip__: Any = None,
                **kw: Any) -> None:
        key = (x, w, b, r, out, self.workspace)
        if self._calls is not None and all(
                a is k for a, k in zip(self._calls[0], key, strict=True)):
            run_calls(self._calls[1])  # the same arrays as last time: the same calls
            return
        if self._blocked_conv(key, x, w, b, r, out, group, *bounds(__relu__, __clip__),
                              act_code(self.hidden)):  # blocked (NCHWc): blocked.py
            return
        if x.ndim == 3 and x.dtype == np.float32:  # 1-D as 2-D of height 1
            x, w, r, out = self._lifted(x, w, r, out)
        elif x.ndim == 5 and self._frames(x, w, b, r, out, group, __relu__, __clip__):
            return  # 3-D as 2-D over gathered frames (_conv_frames.py)
        self._compute(key, x, w, b, r, out, group, __relu__, __clip__, **kw)

    def _compute(self, key: tuple[Any, ...], x: Array, w: Array, b: Array | None,
                 r: Array | None, out: Array, group: int, __relu__: int, __clip__: Any,
                 **kw: Any) -> None:
        """The compiled paths (2-D arrays; ``key``: the arrays as the node got them, for the
        kept calls), else cpu_basic's; then the fused activation where the path has not
        applied it."""
        pruned = self._pruned(x, w, group)
        if pruned is not None:
            conv, wp = pruned
            conv.compute(x, wp, b, r, out=out, group=group, __relu__=__relu__,
                         __clip__=__clip__, **kw)
            return
        act = act_code(self.hidden)
        if self._direct(x.shape, w.shape, x.itemsize, group) and usable(x, w, b, r, out):
            self._calls = (key, self._direct_calls(x, w, b, r, out, group, __relu__, __clip__,
                                                   act))
            run_calls(self._calls[1])
            return
        if self._own_gemm(x.shape, w.shape, x.itemsize, group) and usable(x, b, r, out):
            lo, hi = bounds(__relu__, __clip__)
            plan = self._plan(x, w, group)
            if _tap_gemm.applies(x.shape, w.shape, group, plan):  # taps mostly on padding
                calls = _tap_gemm.tap_calls(x, self._tap_packed(w), b, r, out, plan, lo, hi,
                                            self.hidden, self._buffers(x, w, group)["taps"])
            else:
                calls = _conv_gemm.gemm_conv_calls(
                    x, self._packed_gemm(w, group), b, r, out, plan, group, lo, hi,
                    self._buffers(x, w, group), act)
            self._calls = (key, calls)
            run_calls(calls)
            return
        w = self._onnx_weights(w, group)  # packed for a GEMM that cannot run here: undone once
        tile = self._wino_tile(x.shape, w.shape, 4, group) if w.dtype == np.float32 else 0
        if tile and usable(x, b, r, out):
            begin = self._plan(x, w, group).begin
            lo, hi = bounds(__relu__, __clip__)
            u, packed = self._winograd_weights(w, tile, group)
            calls = _winograd.winograd_calls(x, u, b, r, out, (begin[0], begin[1]), lo, hi,
                                             self._buffers(x, w, group), packed, act)
            self._calls = (key, calls)
            run_calls(calls)
            return
        if depthwise(x.shape, w.shape, group, x.dtype) and usable(x, w, b, r, out):
            plan = self._plan(x, w, group)
            win = plan.window
            lo, hi = bounds(__relu__, __clip__)
            ext = (plan.ext[0], plan.ext[1])
            work = self.scratch.buffer("native", (dwconv2d_work(ext, plan.out_dims[0]),),
                                       np.float32)
            dwconv2d(x, w, b, r, out, work, (int(win.kernel[0]), int(win.kernel[1])),
                     (win.strides[0], win.strides[1]), (win.dilations[0], win.dilations[1]),
                     (plan.begin[0], plan.begin[1]), ext, lo, hi)
        else:
            super().compute(x, w, b, r, out=out, group=group, __relu__=__relu__,
                            __clip__=__clip__, **kw)
        act_after(self.hidden, out)

    def _direct_calls(self, x: Array, w: Array, b: Array | None, r: Array | None, out: Array,
                      group: int, relu: int, clip: Any, act: Act = NO_ACT) -> list[Call]:
        plan = self._plan(x, w, group)
        win = plan.window
        geo = ((int(win.kernel[0]), int(win.kernel[1])), (win.strides[0], win.strides[1]),
               (win.dilations[0], win.dilations[1]), (plan.begin[0], plan.begin[1]))
        if self._short(x.shape, w.shape, group):
            w = self._onnx_weights(w, group)  # built where the GEMM ran: ONNX's order
            work = self.scratch.buffer("pw", (_pw.work_floats(x.shape, w.shape, *geo,
                                                              plan.out_dims),), np.float32)
            return [_pw.pwconv2d_call(x, w, b, r, out, work, *geo, *bounds(relu, clip), act)]
        need = _dconv.work_floats(x.shape, w.shape, group, *geo, plan.out_dims)
        work = self.scratch.buffer("dconv", (need,), np.float32)
        lo, hi = bounds(relu, clip)
        return [_dconv.dconv2d_call(x, w, b, r, out, work, group, *geo, lo, hi, act)]

    @staticmethod
    def _im2col(x: Array, cols: Array, plan: Any, bufs: dict[str, Array]) -> None:
        """2-D float32: compiled, reading the input in place (no padded copy)."""
        if x.ndim != 4 or not usable(x, cols):
            _conv.Conv._im2col(x, cols, plan, bufs)
            return
        win = plan.window
        im2col(x, cols, (int(win.kernel[0]), int(win.kernel[1])),
               (win.strides[0], win.strides[1]), (win.dilations[0], win.dilations[1]),
               (plan.begin[0], plan.begin[1]), (0, plan.out_dims[0]), plan.out_dims[1])

    def _blocked(self, x: Array, wg: Array, dst: Array, plan: Any, rows: int, group: int,
                 ck: int, bufs: dict[str, Array]) -> None:
        """2-D float32, one group, columns over cpu_basic's budget (16 MiB; smaller bands ran
        slower on 2 cores): each band's columns by the compiled im2col, then one BLAS GEMM
        straight into the band's rows of the output (no copy back). AlexNet-sized 5x5 layer:
        18.3 -> 16.9 ms."""
        if x.ndim != 4 or group != 1 or not usable(x, wg, dst) or not available(np.float32):
            super()._blocked(x, wg, dst, plan, rows, group, ck, bufs)
            return
        win = plan.window
        oh, ow = plan.out_dims
        band = bufs["band"].reshape(-1)
        w2 = wg[0]
        for i in range(x.shape[0]):
            out = dst[i].reshape(w2.shape[0], oh * ow)
            for r0 in range(0, oh, rows):
                r1 = min(oh, r0 + rows)
                cols = band[: ck * (r1 - r0) * ow].reshape(ck, (r1 - r0) * ow)
                im2col(x[i: i + 1], cols, (int(win.kernel[0]), int(win.kernel[1])),
                       (win.strides[0], win.strides[1]), (win.dilations[0], win.dilations[1]),
                       (plan.begin[0], plan.begin[1]), (r0, r1), ow)
                blas_gemm(w2, cols, out[:, r0 * ow: r1 * ow])

    @staticmethod
    def _accumulates(group: int, b: Array | None, r: Array | None, dtype: Any) -> bool:
        """float32: the GEMM writes the output and one compiled pass adds the rest."""
        return dtype != np.float32 and _conv.Conv._accumulates(group, b, r, dtype)

    @staticmethod
    def _epilogue(dst: Array, out: Array, b: Array | None, r: Array | None, with_relu: int,
                  clip: Any) -> None:
        if (b is None and r is None and not with_relu and clip is None) or not usable(
                dst, b, r):
            _conv.Conv._epilogue(dst, out, b, r, with_relu, clip)
            return
        lo, hi = bounds(with_relu, clip)
        bias_act(dst, b, None if r is None else r.reshape(dst.shape), lo, hi)
        if dst is not out:
            np.copyto(out, dst)


# errors about serialized data name this distribution (the layout is cpu_basic's)
Conv.package = "mini-infer-cpu-native"
