"""Which compiled path a Conv takes (its second layer, :mod:`.conv`): direct (narrow
groups, :mod:`._dconv`; short products, :mod:`._pw`), Winograd (:mod:`._winograd`, timed
against the GEMM as the builder's tactics), the compiled GEMM (:mod:`._conv_gemm`,
:mod:`._tap_gemm`) or cpu_basic's; and the workspace that path needs."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError

from . import _conv_gemm, _dconv, _pw, _tap_gemm, _winograd
from ._act import act_isa
from ._conv_geometry import ConvGeometry, depthwise, lift_shape
from ._native import gemm_available

__all__ = ["ConvTactics"]


class ConvTactics(ConvGeometry):
    """The path of each convolution: tactics for a 3x3 stride-1 one (``winograd``,
    ``winograd4``, ``gemm``; ``__tactic__`` keeps the choice, "" until timed), and the
    predicates the run and the weights' packing follow."""

    TACTICS: ClassVar[tuple[str, ...]] = ("winograd", "winograd4", "gemm")
    #: output tile size of each Winograd tactic
    TILES: ClassVar[dict[str, int]] = {"winograd": 2, "winograd4": 4}

    def get_tactics(self, input_shapes: Sequence[tuple[int, ...] | None]) -> list[str]:
        """The tactics where Winograd can run and the choice is not obvious (>= 8 input and
        output channels per group, >= 4x4 tiles; F(4x4) from 4x4 tiles of 4x4); otherwise none
        to choose from."""
        x, w = input_shapes[0], input_shapes[1]
        if x is None or w is None or len(x) != 4 or len(w) != 4:
            return []
        group = self.attrs["group"]
        if self._direct(tuple(x), tuple(w), 4, group):
            return []
        plan = self._plan_for(tuple(x), tuple(w), 4, group)
        if not _winograd.possible(tuple(x), tuple(w), plan.window.strides,
                                  plan.window.dilations, group, plan.out_dims):
            return []
        if min(w[1], w[0] // group) < 8 or math.prod(_winograd.tiles(plan.out_dims, 2)) < 16:
            return []
        big = math.prod(_winograd.tiles(plan.out_dims, 4)) >= 16
        return [t for t in self.TACTICS if big or t != "winograd4"]

    def set_tactic(self, name: str) -> None:
        if name not in ("", *self.TACTICS):
            raise PluginInterfaceError(
                f"Conv: unknown tactic {name!r} (known: {', '.join(self.TACTICS)})")
        self.record("__tactic__", name)
        self._calls = None
        # the other tile sizes' transformed weights go (4x and 1.8x the weights): the build
        # times every tactic in turn, and kept they would all be held at once
        if self._derived_cache:
            tile = self.TILES.get(name)
            for key in [k for k in self._derived_cache
                        if isinstance(k, tuple) and k[0] == "winograd" and k[1] != tile]:
                del self._derived_cache[key]

    def _layout(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                group: int) -> list[tuple[str, tuple[int, ...]]]:
        """Winograd's buffers, as workspace planned in the arena; otherwise cpu_basic's (a
        float32 1-D convolution's for its 2-D form)."""
        if len(xshape) == 3 and itemsize == 4:
            xshape, wshape = lift_shape(xshape), lift_shape(wshape)
        tile = self._wino_tile(xshape, wshape, itemsize, group)
        plan = self._plan_for(xshape, wshape, itemsize, group)
        if tile:
            return _winograd.buffers(wshape[1], wshape[0] // group, plan.out_dims, tile)
        if self._own_gemm(xshape, wshape, itemsize, group):
            if _tap_gemm.applies(xshape, wshape, group, plan):
                return [("taps", (_tap_gemm.work_floats(xshape, wshape, plan),))]
            return _conv_gemm.buffers(xshape, wshape, plan)
        return super()._layout(xshape, wshape, itemsize, group)

    #: the answers of :meth:`_direct` and :meth:`_wino_tile` by their arguments (and what
    #: else they read: the tactic, the CPU's kernels): a plan asks them again and again for
    #: each convolution (Inception's first run asked ~750 times, a few ms)
    _paths: dict[tuple[object, ...], int] | None = None

    def _memo(self, key: tuple[object, ...], work: Callable[[], int]) -> int:
        if self._paths is None:
            self._paths = {}
        found = self._paths.get(key)
        if found is None:
            found = self._paths[key] = work()
        return found

    def _direct(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                group: int) -> bool:
        return bool(self._memo(("direct", tuple(xshape), tuple(wshape), itemsize, group,
                                act_isa()),
                               lambda: int(self._direct_now(xshape, wshape, itemsize, group))))

    def _direct_now(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                    group: int) -> bool:
        """float32 2-D convolutions of narrow groups (RegNet's groups of 8, depthwise ones:
        3x3 ones only where its AVX2 kernels run, the depthwise kernel of ``_kernels.c``
        doing their nine taps in one pass otherwise): summed directly (:mod:`._dconv`),
        weights as ONNX stores them, the fused activation in registers. Single-thread kernel
        times: RegNet's 3x3 groups of 8 2-6x faster than im2col + per-group GEMMs (208
        channels at 14x14: 0.80 -> 0.22 ms), MobileNetV3's 5x5 depthwise 1.5-3x (72 at
        56x56, stride 2: 1.0 -> 0.3 ms); with the AVX2 depthwise kernels, 3x3 stride 2 (64
        channels, 112x112) 1.3 -> 0.4 ms, 5x5 over 7x7-14x14 maps 0.4 -> 0.25-0.3 ms."""
        return itemsize == 4 and (_dconv.applies(xshape, wshape, group) and not (
            depthwise(xshape, wshape, group, np.float32) and tuple(wshape[2:]) == (3, 3)
            and act_isa() < 1) or self._short(xshape, wshape, group))

    def _short(self, xshape: tuple[int, ...], wshape: tuple[int, ...], group: int) -> bool:
        """float32 2-D convolutions whose product is short over a large map (:mod:`._pw`):
        1x1 ones of few channels (MobileNetV3's 16->64 over 112x112) and the stems of 3
        input channels, the map read once, no im2col, the epilogue in registers."""
        if len(xshape) != 4 or len(wshape) != 4 or group != 1:
            return False
        plan = self._plan_for(xshape, wshape, 4, group)
        return _pw.applies(xshape, wshape, group, plan.window.strides, plan.begin,
                           plan.out_dims)

    def _own_gemm(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                  group: int) -> bool:
        """2-D float32 convolutions that are neither depthwise nor Winograd: the compiled GEMM
        (where the CPU has AVX-512; otherwise cpu_basic's BLAS paths)."""
        return (len(xshape) == 4 and itemsize == 4 and gemm_available()
                and not depthwise(xshape, wshape, group, np.float32)
                and not self._direct(xshape, wshape, itemsize, group)
                and not self._wino_tile(xshape, wshape, itemsize, group))

    def _wino_tile(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                   group: int) -> int:
        """The Winograd output tile size this convolution runs (0: it does not)."""
        tactic = self.hidden.get("__tactic__") or ""
        return self._memo(("wino", tuple(xshape), tuple(wshape), itemsize, group, tactic,
                           act_isa()),
                          lambda: self._wino_now(xshape, wshape, itemsize, group, tactic))

    def _wino_now(self, xshape: tuple[int, ...], wshape: tuple[int, ...], itemsize: int,
                  group: int, tactic: str) -> int:
        if len(xshape) != 4 or itemsize != 4 or tactic == "gemm" or self._direct(
                xshape, wshape, itemsize, group):
            return 0
        plan = self._plan_for(xshape, wshape, itemsize, group)
        args = (xshape, wshape, plan.window.strides, plan.window.dilations, group,
                plan.out_dims)
        if tactic:
            return self.TILES[tactic] if _winograd.possible(*args) else 0
        return _winograd.applies(*args)
