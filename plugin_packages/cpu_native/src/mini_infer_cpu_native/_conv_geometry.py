"""Conv's geometry (the first of its layers, :mod:`.conv`): the window, and float32 1-D
convolutions run as 2-D ones of height 1 (their attributes, shapes and arrays lifted); and
the small predicates and bounds the other layers share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import conv as _conv

from mini_infer_core.plugin import shapes
from mini_infer_core.plugin.arrays import NDArray

from ._derived import Derived
from ._kept import KeptCalls

__all__ = ["ConvGeometry", "bounds", "depthwise", "lift", "lift_shape", "one_d"]

Array = NDArray[Any]


def depthwise(xshape: Sequence[int], wshape: Sequence[int], group: int, dtype: Any) -> bool:
    """One 2-D filter per channel (group == C == M), float32: the compiled case."""
    return (len(xshape) == 4 and len(wshape) == 4 and xshape[1] == group == wshape[0] > 1
            and wshape[1] == 1 and np.dtype(dtype) == np.float32)


def one_d(attrs: dict[str, Any]) -> bool:
    """Whether a Conv's window attributes are those of one spatial axis (a 1-D convolution
    lifted to 2-D; without any, the 2-D defaults are the lifted window already)."""
    return any(attrs.get(k) is not None and len(attrs[k]) == n for k, n in (
        ("kernel_shape", 1), ("strides", 1), ("dilations", 1), ("pads", 2)))


def lift_shape(shape: Sequence[int]) -> tuple[int, ...]:
    """(N, C, L) as (N, C, 1, L)."""
    return (shape[0], shape[1], 1, shape[2])


def lift(a: Array | None) -> Any:
    """A 3-D array as the 4-D view of height 1, whatever its strides (None stays None)."""
    return None if a is None else a[:, :, None, :]


def bounds(relu: int, clip: Any) -> tuple[float, float]:
    """The clamp a fused Relu or Clip makes (none: no bounds)."""
    lo, hi = (0.0, np.inf) if relu else (clip or (-np.inf, np.inf))
    return float(lo), float(hi)


class ConvGeometry(KeptCalls, Derived, _conv.Conv):
    """cpu_basic's Conv with its window lifted for 1-D convolutions run as 2-D ones, and the
    state the layers above share: the compiled calls kept (:class:`._kept.KeptCalls`) and
    the arrays derived from the weights (:class:`._derived.Derived`)."""

    def window(self, nd: int, kernel: Sequence[Any]) -> Any:
        """The window; for a 1-D convolution run as a 2-D one of height 1 (``nd`` 2 while the
        node's attributes are 1-D) the 1-D window with a unit axis in front."""
        if nd == 2 and one_d(self.attrs):
            w1 = super().window(1, kernel[1:])
            return shapes.Window((1, *w1.kernel), (1, *w1.strides), (1, *w1.dilations),
                                 (0, w1.pads[0], 0, w1.pads[1]), w1.auto_pad, w1.ceil_mode)
        return super().window(nd, kernel)

    #: a 1-D convolution's W as (M, C/group, 1, K): (the 3-D array, its lifted view)
    _lifted_w: tuple[Array, Array] | None = None

    def _lifted(self, x: Array, w: Array, r: Array | None, out: Array
                ) -> tuple[Array, Array, Array | None, Array]:
        """A 1-D convolution's arrays as the 2-D ones of height 1 (as ``_layout`` sized the
        workspace): views, whatever the strides; W's kept while W stays the same array."""
        lifted = self._lifted_w
        if lifted is None or lifted[0] is not w:
            lifted = self._lifted_w = (w, lift(w))
        return lift(x), lifted[1], lift(r), lift(out)
