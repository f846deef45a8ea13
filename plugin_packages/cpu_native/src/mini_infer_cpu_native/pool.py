"""cpu_basic's MaxPool and AveragePool with their float32 2-D cases compiled (MaxPool's
Indices and everything else stay cpu_basic's), plain or channel-blocked
(:class:`.blocked.BlockedPool`). A module of its own so that an engine without pooling does
not import it (see :mod:`.conv`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import pool as _pool

from mini_infer_core.plugin import shapes
from mini_infer_core.plugin.arrays import NDArray

from ._kept import KeptCalls
from ._native import Call, pool2d_call, pool2d_work, run_calls, usable
from .blocked import BlockedPool

__all__ = ["AveragePool", "MaxPool", "MaxPool_1"]

Array = NDArray[Any]


class _CompiledPool(BlockedPool, KeptCalls):
    """2-D float32 max/average pooling without Indices, compiled; the rest is cpu_basic's."""

    kind: str
    attrs: dict[str, Any]
    scratch: Any

    #: the arrays of the last run and its call, run again while they are the same objects
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None

    def compute(self, x: Array, *, out: Any, **attrs: Any) -> None:
        kept = self._calls
        if kept is not None and kept[0][0] is x and kept[0][1] is out:
            run_calls(kept[1])  # an engine's arena views: the same call (~15 us less)
            return
        if self._blocked_pool(x, out, self.kind == "avg"):  # blocked (NCHWc): blocked.py
            return
        if isinstance(out, tuple) or x.ndim != 4 or not usable(x, out):
            super().compute(x, out=out, **attrs)  # type: ignore[misc]
            return
        key = ("native", x.shape)
        geo = self.scratch.get(key)
        if geo is None:
            win = shapes.window_from_attrs(self.op_type, 2, self.attrs)  # type: ignore[attr-defined]
            g = shapes.resolve(x.shape[2:], win)
            geo = self.scratch.put(key, (
                (int(win.kernel[0]), int(win.kernel[1])), (win.strides[0], win.strides[1]),
                (win.dilations[0], win.dilations[1]), (g.begin[0], g.begin[1]),
                (g.end[0], g.end[1])))
        work = self.scratch.buffer("native", (pool2d_work(x.shape[2], x.shape[3], *out.shape[2:]),),
                                   np.float32)
        kernel, strides, dilations, begin, end = geo
        calls = [pool2d_call(x, out, work, kernel, strides, dilations, begin, end,
                             average=self.kind == "avg",
                             include_pad=bool(self.attrs.get("count_include_pad", 0)))]
        self._calls = ((x, out), calls)
        run_calls(calls)


class MaxPool_1(_CompiledPool, _pool.MaxPool_1):  # noqa: N801
    op_type = "MaxPool"


class MaxPool(_CompiledPool, _pool.MaxPool):
    pass


class AveragePool(_CompiledPool, _pool.AveragePool):
    pass


# errors about serialized data name this distribution (the layout is cpu_basic's)
for _cls in (MaxPool_1, MaxPool, AveragePool):
    _cls.package = "mini-infer-cpu-native"
