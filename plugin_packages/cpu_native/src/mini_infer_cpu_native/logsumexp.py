"""cpu_basic's ReduceLogSumExp with its float32 case over the trailing axes compiled
(``_vec.c``'s ``mi_row_logsumexp_f32``: each row's largest finite value taken out, the sum of
the exponentials in double): the normalizer skl2onnx writes for naive Bayes (the class scores
of one row, then ``log_prob = scores - logsumexp``). cpu_basic's NumPy form makes seven NumPy
calls and a finiteness check for it, several microseconds at one row; this is one compiled
call bound to the step's arrays (``bind_run``).

Everything else (axes that are not the trailing ones, other dtypes, empty inputs, axes
computed at run time) is cpu_basic's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from mini_infer_cpu_plugins.serialization import CpuPlugin
from mini_infer_cpu_plugins.toolkit import as_ints

from mini_infer_core.ops import lazy_kernels
from mini_infer_core.plugin.arrays import NDArray

from ._native import Call, run_calls, usable
from ._vec import row_logsumexp_call

if TYPE_CHECKING:  # made when first named (``_lazy``, below)
    from mini_infer_cpu_plugins.ops.reduce import ReduceLogSumExp, ReduceLogSumExp_1

__all__ = ["ReduceLogSumExp", "ReduceLogSumExp_1"]

Array = NDArray[Any]


def _trailing(sel: Sequence[int] | None, ndim: int) -> int | None:
    """The first reduced axis where ``sel`` (None: all) is every axis from it to the last
    (None: it is not)."""
    if sel is None:
        return 0
    axes = sorted(sel)
    if not axes or axes != list(range(axes[0], ndim)):
        return None
    return int(axes[0])


def _call(x: Any, axes: Any, out: Any, reduce_axes: Callable[..., Any]) -> Call | None:
    """The compiled call for these arrays (None: not its case)."""
    if not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) or not x.ndim \
            or x.dtype != np.float32 or out.dtype != np.float32 or not x.size \
            or not usable(x, out):
        return None
    first = _trailing(reduce_axes(as_ints(axes), x.ndim), x.ndim)
    if first is None:
        return None
    rows = math.prod(x.shape[:first])
    if out.size != rows:
        return None
    return row_logsumexp_call(x, out, rows, x.size // rows)


class _LogSumExp(CpuPlugin):
    """ReduceLogSumExp (cpu_basic's reduction family after it in the bases)."""

    reduce_axes: Callable[[Sequence[int], int], tuple[int, ...] | None]

    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None,
                keepdims: int = 1, **kw: Any) -> Any:
        call = _call(x, axes, out, self.reduce_axes)
        if call is None:
            return super().compute(x, axes, out=out, keepdims=keepdims, **kw)
        run_calls([call])
        return None

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        x, out = inputs[0], outputs[0]
        axes = inputs[1] if len(inputs) > 1 else None
        if axes is not None and (not isinstance(axes, np.ndarray) or axes.flags.writeable):
            return None  # axes computed at run time: read on each run by compute
        call = _call(x, axes, out, self.reduce_axes)
        if call is None:
            bound: Callable[[], None] | None = super().bind_run(
                inputs, outputs, workspace)
            return bound
        return partial(run_calls, [call])


def _ours(cls: type[Any]) -> None:
    """Errors about serialized data name this distribution (the layout is cpu_basic's)."""
    cls.package = "mini-infer-cpu-native"


_BASIC = "mini_infer_cpu_plugins.ops.reduce"
_lazy = lazy_kernels(__name__, {
    "ReduceLogSumExp_1": (_LogSumExp, f"{_BASIC}:ReduceLogSumExp_1"),
    "ReduceLogSumExp": (_LogSumExp, f"{_BASIC}:ReduceLogSumExp"),
}, made=_ours)


def __getattr__(name: str) -> Any:
    return _lazy(name)
