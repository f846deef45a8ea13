"""cpu_basic's Resize (opsets 11+) with its float32 linear and nearest cases of the last two
axes compiled (``_resize.c``): bilinear upsampling in segmentation heads (LRASPP,
DeepLabV3) and nearest upsampling in detector necks (YOLOv8) ran in float64 NumPy gathers
and einsums (365 ms of LRASPP's 900 at 512x512).

The tables (source rows and columns and their weights) follow cpu_basic's coordinate and
rounding rules (:func:`mini_infer_cpu_plugins.ops.resize.axis_taps`) and are made once per
input shape and plan; the compiled call is kept while the node's arrays are the same objects.
Blocked (CHW16 / CHW8) where the builder chose it: the same tables over whole channel blocks
(``mi_bresize_f32``). Anything else (cubic, antialiased downscaling, tf_crop_and_resize,
other axes, other dtypes, strided arrays) is cpu_basic's.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import resize as _resize

from mini_infer_core.plugin.arrays import NDArray

from ._native import Call, run_calls, usable
from ._resize import Tables, resize2d_call, tables
from .blocked import BlockedResize

__all__ = ["Resize", "Resize_11"]

Array = NDArray[Any]


class _Compiled2d(BlockedResize):
    """The compiled Resize where :func:`._resize.tables` applies (over whole channel blocks
    where the builder chose the blocked format: :class:`.blocked.BlockedResize`)."""

    opts: dict[str, Any]
    #: (input shape, plan) -> tables (None: the kernel does not apply)
    _rz_tables: dict[Any, Tables | None] | None = None
    #: the call of the last run and what it was made for (x, out, plan)
    _rz_last: tuple[tuple[Any, ...], Call] | None = None

    def compute(self, x: Array, *ins: Array | None, out: Any = None, **kw: Any) -> Any:
        if isinstance(out, np.ndarray) and self._resized(x, ins, out):  # blocked
            return None
        if x.dtype != np.float32 or x.ndim < 2 or not (
                out is None or (isinstance(out, np.ndarray) and out.dtype == np.float32)):
            return super().compute(x, *ins, out=out, **kw)  # type: ignore[misc]
        steps = tuple(self.plan(x.shape, *self.operands(x, *ins)))
        if self._rz_tables is None:
            self._rz_tables = {}
        key = (x.shape, steps)
        if key not in self._rz_tables:
            self._rz_tables[key] = tables(x.shape, steps, self.opts)
        tab = self._rz_tables[key]
        shape = list(x.shape)
        for s in steps:
            shape[s.axis] = s.size
        target = np.empty(shape, np.float32) if out is None else out
        if tab is None or tuple(target.shape) != tuple(shape) or not usable(x, target):
            return super().compute(x, *ins, out=out, **kw)  # type: ignore[misc]
        last = self._rz_last
        made = (x, target, steps)
        if last is None or not (last[0][0] is x and last[0][1] is target
                                and last[0][2] == steps):
            work = np.empty(2 * shape[-1], np.float32)  # the caller's two row buffers
            last = self._rz_last = (made, resize2d_call(x, target, tab, work))
        run_calls([last[1]])
        return target if out is None else None


class Resize_11(_Compiled2d, _resize.Resize_11):  # type: ignore[misc]  # noqa: N801
    pass


class Resize(_Compiled2d, _resize.Resize):  # type: ignore[misc]  # cpu_basic makes it
    pass


for _cls in (Resize_11, Resize):
    _cls.package = "mini-infer-cpu-native"
