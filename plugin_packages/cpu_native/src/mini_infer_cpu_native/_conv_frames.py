"""float32 3-D convolutions (video networks: R3D, R(2+1)D, SlowFast; volumetric U-Nets) as
2-D ones over gathered frames, so that they take the compiled 2-D paths (Winograd, the
compiled GEMM with its epilogue, the direct kernels) instead of cpu_basic's NumPy im2col.

Output frame ``t`` of a (KT, KH, KW) convolution sums KT 2-D convolutions, one per temporal
tap ``k``, of input frame ``f = t * st - pt + k * dt`` (none where ``f`` falls in the
padding). Stacking those KT frames along the channels makes it one 2-D convolution of
``KT * C`` channels with W reordered to (M, KT * C, KH, KW):

    xg (N * OT, KT * C, H, W)    xg[n * OT + t, k * C + c] = x[n, c, t * st - pt + k * dt]
    yg (N * OT, M, OH, OW)       = conv2d(xg, W')  (bias, residual, activation fused there)
    y  (N, M, OT, OH, OW)        y[n, :, t] = yg[n * OT + t]

The 2-D convolution is a plugin of this class of its own (the node's spatial window, its
fused activation), made when the node's workspace is first sized. xg, yg, the residual
gathered like yg and the inner convolution's own buffers are the node's workspace (planned
in the engine's arena, shared with the other nodes), so the inner plugin's compiled calls are
kept from run to run too. The cost over the 2-D work is the copies (``mi_planes_f32``, a
plane at a time on the pool): KT times the input in, the output (and residual) out; where
that outweighs what the 2-D paths save (a 1x1x1 convolution, deep layers over 7x7 maps),
cpu_basic's im2col is faster, so the two are the node's tactics (``frames``, ``im2col``),
timed by the builder. Untimed (a session's one-off build), ``frames`` where the 2-D
convolution has a spatial window and maps of 14x14 or more (R3D-18's layers at 1 thread,
against im2col: 0.54-0.87 of its time there; 1.3-2.3 times it for 1x1 windows and 7x7
maps). Grouped 3-D convolutions keep cpu_basic's path."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._abi import PlanesArgs
from ._native import _kernel, _run, usable

__all__ = ["ConvFrames"]

Array = NDArray[Any]

#: the hidden fields of the node that the inner 2-D convolution takes (its fused activation)
_CARRIED = ("__act__", "__act_args__")
#: the node's own buffers, before the inner convolution's
_GATHERED = ("frames_x", "frames_y", "frames_r")
_planes = _kernel("mi_planes_f32", PlanesArgs)


def _move(src: Array, dst: Array, dims: tuple[int, int, int, int],
          strides: tuple[int, int, int, int], pad: int, frames: int, plane: int) -> None:
    """dst's planes of ``plane`` floats from src's on the pool (``mi_planes_f32``: dst plane
    (i0, i1, i2, i3) is src plane i0 * s0 + i3 * s3 + f, f = i1 * s1 + i2 * s2 - pad, zeros
    where f is outside [0, frames))."""
    if dst.size != math.prod(dims) * plane or src.size % max(plane, 1):
        raise ValueError(f"mi_planes_f32: {dst.shape} is not {dims} planes of {plane}")
    _run(_planes, PlanesArgs(src.ctypes.data, dst.ctypes.data, *dims, *strides, pad, frames,
                             plane, src.size // max(plane, 1)))


class ConvFrames:
    """The 3-D path of cpu_native's Conv (a mixin: the plugin's plans, buffers, workspace,
    tactic and fused activation)."""

    name: str
    hidden: dict[str, Any]
    attrs: dict[str, Any]
    record: Any
    _calls: Any
    workspace: Any
    _plan: Any
    _plan_for: Any
    _buffers: Any

    #: (the node's W, W reordered for the frames), kept while W is the same array
    _frames_w: tuple[Array, Array] | None = None
    #: (x's and W's shapes, the inner 2-D convolution)
    _frames_inner: tuple[tuple[Any, ...], Any] | None = None

    #: a 3-D convolution's tactics: over gathered frames, or cpu_basic's im2col
    FRAME_TACTICS: ClassVar[tuple[str, ...]] = ("frames", "im2col")

    #: the smallest output map (OH * OW) an untimed node runs over frames
    FRAMES_MIN_MAP: ClassVar[int] = 14 * 14

    def _frames_case(self, xshape: Sequence[int], wshape: Sequence[int], itemsize: int,
                     group: int) -> bool:
        """float32 3-D, one group, and the tactic ``frames`` (untimed: a spatial window over
        maps of FRAMES_MIN_MAP or more)."""
        if not (len(xshape) == 5 and len(wshape) == 5 and itemsize == 4 and group == 1):
            return False
        tactic = self.hidden.get("__tactic__") or ""
        if tactic:
            return bool(tactic == "frames")
        out = self._plan_for(tuple(xshape), tuple(wshape), itemsize, group).out_dims
        return tuple(wshape[3:]) != (1, 1) and int(out[1]) * int(out[2]) >= self.FRAMES_MIN_MAP

    def get_tactics(self, input_shapes: Sequence[tuple[int, ...] | None]) -> list[str]:
        """A float32 3-D convolution of one group: ``frames`` and ``im2col``."""
        x, w = input_shapes[0], input_shapes[1]
        if x is not None and w is not None and len(x) == 5 and len(w) == 5 and \
                self.attrs["group"] == 1:
            return list(self.FRAME_TACTICS)
        tactics: list[str] = super().get_tactics(input_shapes)  # type: ignore[misc]
        return tactics

    def set_tactic(self, name: str) -> None:
        if name in self.FRAME_TACTICS:
            self.record("__tactic__", name)
            self._calls = None
            return
        super().set_tactic(name)  # type: ignore[misc]

    def _layout(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                group: int) -> list[tuple[str, tuple[int, ...]]]:
        """A 3-D convolution's gathered frames, its 2-D output and residual, then the inner
        2-D convolution's own buffers (in its order: its workspace is the rest)."""
        if not self._frames_case(xshape, wshape, itemsize, group):
            return super()._layout(xshape, wshape, itemsize, group)  # type: ignore[misc,no-any-return]
        plan = self._plan_for(xshape, wshape, itemsize, group)
        n, c, kt, m = xshape[0], xshape[1], wshape[2], wshape[0]
        ot, oh, ow = (int(v) for v in plan.out_dims)
        xg, yg = (n * ot, kt * c, *xshape[3:]), (n * ot, m, oh, ow)
        inner = self._frames_conv(xshape, wshape, plan)
        own = inner._layout(xg, (m, kt * c, *wshape[3:]), itemsize, 1)
        return [*zip(_GATHERED, (xg, yg, yg), strict=True), *own]

    def _frames(self, x: Array, w: Array, b: Array | None, r: Array | None, out: Array,
                group: int, relu: int, clip: Any) -> bool:
        """Run a float32 3-D convolution of one group over gathered frames (False: not
        this case, nothing done)."""
        if (not self._frames_case(x.shape, w.shape, x.itemsize, group)
                or x.dtype != np.float32 or w.dtype != np.float32
                or out.dtype != np.float32 or not usable(x, w, b, r, out)):
            return False
        n, c, t = x.shape[:3]
        m, _, kt, kh, kw = w.shape
        plan = self._plan(x, w, group)
        ot, oh, ow = (int(v) for v in plan.out_dims)
        win = plan.window
        st, dt, pt = int(win.strides[0]), int(win.dilations[0]), int(plan.begin[0])
        inner = self._frames_conv(x.shape, w.shape, plan)
        wf = self._frames_weights(w)
        bufs = self._buffers(x, w, group)
        self._frames_workspace(inner, bufs)
        xg, yg = bufs["frames_x"], bufs["frames_y"]
        hw, ohw = math.prod(x.shape[3:]), oh * ow
        # xg[n * OT + t, k * C + c] = x[n, c, t * st - pt + k * dt] (zeros in the padding)
        _move(x, xg, (n, ot, kt, c), (c * t, st, dt, t), pt, t, hw)
        rg = None
        if r is not None:  # rg[n * OT + t, m] = r[n, m, t]
            rg = bufs["frames_r"]
            _move(r, rg, (n, ot, 1, m), (m * ot, 1, 0, ot), 0, ot, ohw)
        inner.compute(xg, wf, b, rg, out=yg, group=1, __relu__=relu, __clip__=clip)
        # y[n, m, t] = yg[n * OT + t, m]
        _move(yg, out, (n, m, 1, ot), (ot * m, 1, 0, m), 0, m, ohw)
        return True

    #: (the node's workspace, the part of it the inner convolution gets)
    _frames_ws: tuple[Any, Any] | None = None

    def _frames_workspace(self, inner: Any, bufs: dict[str, Array]) -> None:
        """The inner convolution's workspace: the node's from the inner's first buffer on (the
        same object while the node's is, so that the inner kept calls stay valid); none
        where the node's buffers are not in its workspace (the plugin's own scratch)."""
        ws = self.workspace
        own = [k for k in bufs if k not in _GATHERED]
        if ws is None or not own or not np.may_share_memory(bufs[own[0]], ws):
            inner.workspace = None
            return
        kept = self._frames_ws
        if kept is None or kept[0] is not ws:
            kept = self._frames_ws = (ws, ws[bufs[own[0]].ctypes.data - ws.ctypes.data:])
        inner.workspace = kept[1]

    def _frames_weights(self, w: Array) -> Array:
        """W (M, C, KT, KH, KW) as (M, KT * C, KH, KW), made once per weight array."""
        kept = self._frames_w
        if kept is None or kept[0] is not w:
            m, c, kt, kh, kw = w.shape
            wf = np.ascontiguousarray(w.transpose(0, 2, 1, 3, 4)).reshape(m, kt * c, kh, kw)
            kept = self._frames_w = (w, wf)
        return kept[1]

    def _frames_conv(self, xshape: tuple[int, ...], wshape: tuple[int, ...], plan: Any) -> Any:
        """The inner 2-D convolution: the node's spatial window with its pads explicit (as the
        node's plan resolved them, auto_pad included) and its fused activation."""
        key = (xshape, wshape)
        kept = self._frames_inner
        if kept is not None and kept[0] == key:
            return kept[1]
        win = plan.window
        begin = [int(v) for v in plan.begin[1:]]
        end = [int(e) - int(s) - int(b) for e, s, b in zip(plan.ext[1:], xshape[3:], begin,
                                                              strict=True)]
        make: Any = type(self)  # cpu_native's Conv (this is its mixin)
        inner = make(
            f"{self.name}:frames", kernel_shape=[int(v) for v in wshape[3:]],
            strides=[int(v) for v in win.strides[1:]],
            dilations=[int(v) for v in win.dilations[1:]], pads=[*begin, *end], group=1,
            **{k: self.hidden[k] for k in _CARRIED if k in self.hidden})
        self._frames_inner = (key, inner)
        return inner
