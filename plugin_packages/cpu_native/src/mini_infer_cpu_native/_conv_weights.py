"""How a Conv's weights are stored and what is derived from them (its third layer,
:mod:`.conv`): packed by the build for the compiled GEMM (``__wpacked__``) or kept as ONNX
stores them, and made once per weight array: GEMM panels, each tap's panels, Winograd's
transformed weights, ONNX's order again where a packed W meets a path that reads it so, and
the weights of the taps that read the input (a dilated kernel's outer taps that read only
padding are left out)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mini_infer_core.plugin import Repacked
from mini_infer_core.plugin.arrays import NDArray

from . import _conv_gemm, _tap_gemm, _winograd
from ._conv_extra import live_taps
from ._conv_geometry import depthwise, lift_shape, one_d
from ._conv_tactics import ConvTactics

__all__ = ["ConvWeights"]

Array = NDArray[Any]


class ConvWeights(ConvTactics):
    """The weights of each path, packed by the build or derived once."""

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Any]:
        """The compiled GEMM's weights are stored packed in its panels (``Repacked``: the
        engine file keeps them so, and ``__wpacked__`` says it); the compiled depthwise kernel
        and the Winograd weight transform read them as ONNX stores them; the other paths as
        cpu_basic packs them."""
        w = constants[1] if len(constants) > 1 else None
        x = inputs[0]
        if w is not None and x is not None and x[0].is_static():
            xshape, wshape, group = x[0].to_tuple(), w.shape, self.attrs["group"]
            if len(xshape) == 3 and w.ndim == 3 and w.dtype == np.float32:  # run as 2-D
                xshape, wshape = lift_shape(xshape), lift_shape(wshape)
            if w.dtype == np.float32 and self._own_gemm(xshape, wshape, w.itemsize, group):
                return {1: Repacked(_conv_gemm.pack_weights(w, group).reshape(w.shape),
                                    self._weights_packed)}
            if depthwise(xshape, wshape, group, w.dtype) or self._direct(
                    xshape, wshape, w.itemsize, group) or self._wino_tile(
                    xshape, wshape, w.itemsize, group):
                return {} if w.flags.c_contiguous else {1: np.ascontiguousarray(w)}
        return super().pack_constants(inputs, constants)

    def _weights_packed(self) -> None:
        self.record("__wpacked__", 1)
        self._calls = None

    def _packed_gemm(self, w: Array, group: int) -> Array:
        """The weights packed for the compiled GEMM (per group): as the engine stores them
        (``__wpacked__``, the build packed them), else made at the first run."""
        if self.hidden.get("__wpacked__"):
            return w.reshape(-1)
        return self._derived(w, ("gemm", group), lambda w: _conv_gemm.pack_weights(w, group))

    def _tap_packed(self, w: Array) -> Array:
        """Each tap's weights packed for the compiled GEMM (:func:`._tap_gemm.tap_weights`),
        made once from W as the engine stores it."""
        return self._derived(w, "taps", lambda w: _tap_gemm.tap_weights(
            _conv_gemm.unpack_weights(w, 1) if self.hidden.get("__wpacked__") else w))

    def _winograd_weights(self, w: Array, tile: int, group: int) -> tuple[Array, Array | None]:
        """U = G g G^T of each group's weights (and U packed for the compiled GEMM, where it
        runs), computed once per weight array and tile size (the tactic timing switches between
        the sizes)."""
        return self._derived(w, ("winograd", tile, group),
                             lambda w: _winograd.weights(w, tile, group))

    def _onnx_weights(self, w: Array, group: int) -> Array:
        """W in ONNX's order: as stored, or unpacked once where the build packed it for a GEMM
        that does not run here (or that this convolution's path does not take)."""
        if not self.hidden.get("__wpacked__"):
            return w
        return self._derived(w, ("onnx", group), lambda w: _conv_gemm.unpack_weights(w, group))

    #: (x shape, W) -> the convolution of the taps that read the input and its weights, or
    #: None (every tap does)
    _pruned_cache: dict[tuple[Any, ...], tuple[ConvWeights, Array, Array] | None] | None = None

    def _pruned(self, x: Array, w: Array, group: int) -> tuple[ConvWeights, Array] | None:
        """A dense float32 2-D convolution whose outer taps read only padding for every output
        (DeepLabV3's ASPP: a 3x3 kernel dilated 36 over a 32x32 map, whose eight outer taps
        never reach the input) as the convolution of the taps that do, with their weights and
        the padding before moved by the taps left out: the same sums, a ninth of the work for
        the ASPP's last branch. None where every tap reads the input somewhere."""
        if (x.ndim != 4 or group != 1 or w.dtype != np.float32 or w.flags.writeable
                or one_d(self.attrs)):
            return None
        key = (x.shape, id(w))
        if self._pruned_cache is None:
            self._pruned_cache = {}
        if key in self._pruned_cache:
            got = self._pruned_cache[key]
            return None if got is None or got[2] is not w else (got[0], got[1])
        made = self._prune(x.shape, w)
        self._pruned_cache[key] = None if made is None else (*made, w)
        return made

    def _prune(self, xshape: tuple[int, ...], w: Array) -> tuple[ConvWeights, Array] | None:
        plan = self._plan_for(xshape, w.shape, 4, 1)  # W's shape, packed for the GEMM or not
        win = plan.window
        live = live_taps(xshape[2:], plan.out_dims, w.shape[2:], win.strides, win.dilations,
                         plan.begin)
        if live is None:
            return None
        keep, pads = live
        full = w if not self.hidden.get("__wpacked__") else _conv_gemm.unpack_weights(w, 1)
        wp = np.ascontiguousarray(full[:, :, keep[0][0]:keep[0][1], keep[1][0]:keep[1][1]])
        wp.flags.writeable = False
        attrs = {k: v for k, v in self.attrs.items() if v is not None}
        attrs.update(kernel_shape=[k1 - k0 for k0, k1 in keep], pads=pads, auto_pad="NOTSET")
        hidden = {k: v for k, v in self.hidden.items() if k in ("__act__", "__act_args__")}
        return type(self)(self.name, **attrs, **hidden), wp
