"""cpu_basic's ReduceMean, GlobalAveragePool and Mul with the float32 cases of a
squeeze-and-excitation block compiled (``_vec.c``).

* ReduceMean over the trailing axes of a C-contiguous input (any ``keepdims``: the output's
  elements are the same; the axes an attribute or a constant input), and GlobalAveragePool
  (both blocked over the spatial axes where the builder chose it: :mod:`.blocked`):
  the mean of each row of the input seen as (leading elements, trailing elements), one
  vectorised pass (NumPy's reduction over the last two axes of (1, 72, 28, 28) took ~60 us
  here, this ~6);
* Mul of x (..., H, W) by a scale constant along the trailing axes (x[N, C, H, W] *
  s[N, C, 1, 1], either operand first): each row of x times its value.

Each call is checked and made once and bound to the step's arrays (``bind_run``: the Python
of ``compute`` cost more than these kernels on a squeeze-and-excitation's small maps).

Everything else (other axes, dtypes, broadcasts, strided views) is cpu_basic's.
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
from ._vec import row_mean_call, row_scale_call
from .blocked import BlockedBinary, BlockedGlobalPool, BlockedReduce

if TYPE_CHECKING:  # made when first named (``_lazy``, below)
    from mini_infer_cpu_plugins.ops.elementwise import Mul
    from mini_infer_cpu_plugins.ops.pool import GlobalAveragePool
    from mini_infer_cpu_plugins.ops.reduce import ReduceMean, ReduceMean_1

__all__ = ["GlobalAveragePool", "Mul", "ReduceMean", "ReduceMean_1"]

Array = NDArray[Any]


class _Cached:
    """The compiled call of the last run, run again while its arrays are the same objects
    (checked and made once: an engine's arena views stay)."""

    _vec_last: tuple[tuple[Any, ...], Call] | None = None

    def _replayed(self, arrays: tuple[Any, ...]) -> bool:
        """Whether the last call was for these very arrays (and has now run again)."""
        last = self._vec_last
        if last is None or not all(a is b for a, b in zip(last[0], arrays, strict=True)):
            return False
        run_calls([last[1]])
        return True

    def _run(self, arrays: tuple[Any, ...], call: Call) -> None:
        self._vec_last = (arrays, call)
        run_calls([call])


def _float32(*arrays: Array | None) -> bool:
    return all(a is None or (isinstance(a, np.ndarray) and a.dtype == np.float32)
               for a in arrays) and usable(*arrays)


def _trailing(sel: Sequence[int] | None, ndim: int) -> int | None:
    """The first reduced axis where ``sel`` (sorted, None: all) is every axis from it to the
    last (None: it is not)."""
    if sel is None:
        return 0
    if not sel or list(sel) != list(range(sel[0], ndim)):
        return None
    return int(sel[0])


def _mean_call(x: Array, out: Array, first: int) -> Call | None:
    """The call writing the means of the trailing axes of ``x`` from ``first`` into ``out``
    (None: not a case of the compiled kernel)."""
    rows = math.prod(x.shape[:first])
    cols = math.prod(x.shape[first:])
    if not _float32(x, out) or x.size == 0 or out.size != rows:
        return None
    return row_mean_call(x, out, rows, cols)


class _Mean(BlockedReduce, _Cached, CpuPlugin):
    """ReduceMean (with cpu_basic's reduction family, ``ReduceKernel``, after it); blocked
    over the spatial axes where the builder chose the blocked format (:mod:`.blocked`)."""

    reduce_axes: Callable[[Sequence[int], int], tuple[int, ...] | None]

    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None,
                keepdims: int = 1, **kw: Any) -> Any:
        if self._replayed((x, axes, out)):
            return None
        blocked = self._global_calls(x, out)  # blocked (NCHWc): blocked.py
        call = blocked[0] if blocked else None
        if call is None and isinstance(x, np.ndarray) and x.ndim and out is not None:
            first = _trailing(self.reduce_axes(as_ints(axes), x.ndim), x.ndim)
            call = None if first is None else _mean_call(x, out, first)
        if call is None:
            return super().compute(x, axes, out=out, keepdims=keepdims, **kw)
        self._run((x, axes, out), call)
        return None

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        x, out = inputs[0], outputs[0]
        if self._block():  # blocked (NCHWc): blocked.py
            return self._bound(lambda: self._global_calls(x, out))
        axes = inputs[1] if len(inputs) > 1 else None
        if not isinstance(x, np.ndarray) or not isinstance(out, np.ndarray) or not x.ndim or (
                axes is not None and (not isinstance(axes, np.ndarray) or axes.flags.writeable)):
            return None  # axes computed at run time: read on each run by compute
        first = _trailing(self.reduce_axes(as_ints(axes), x.ndim), x.ndim)
        call = None if first is None else _mean_call(x, out, first)
        return None if call is None else partial(run_calls, [call])


class _GlobalAveragePool(BlockedGlobalPool, _Cached, CpuPlugin):
    def compute(self, x: Array, *, out: Array) -> None:
        if self._replayed((x, out)):
            return
        blocked = self._global_calls(x, out)  # blocked (NCHWc): blocked.py
        call = blocked[0] if blocked else _mean_call(x, out, 2) if x.ndim >= 2 else None
        if call is None:
            super().compute(x, out=out)
            return
        self._run((x, out), call)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        x, out = inputs[0], outputs[0]
        if self._block():  # blocked (NCHWc): blocked.py
            return self._bound(lambda: self._global_calls(x, out))
        call = _mean_call(x, out, 2) if isinstance(x, np.ndarray) and isinstance(
            out, np.ndarray) and x.ndim >= 2 else None
        return None if call is None else partial(run_calls, [call])


def _scale_call(a: Array, b: Array, out: Array) -> Call | None:
    """``out = a * b`` where one operand is ``out``'s shape and the other one value per row
    of it over some trailing axes (None: another case)."""
    if not _float32(a, b, out):
        return None
    for x, s in ((a, b), (b, a)):
        if x.shape != out.shape or s.ndim > x.ndim or s.size == x.size or x.size == 0:
            continue
        shape = (1,) * (x.ndim - s.ndim) + s.shape
        lead = x.ndim
        while lead and shape[lead - 1] == 1:
            lead -= 1
        if shape[:lead] == x.shape[:lead]:
            rows = math.prod(x.shape[:lead])
            return row_scale_call(x, s, out, rows, x.size // max(rows, 1))
    return None


class _Mul(BlockedBinary, _Cached, CpuPlugin):
    _legacy: bool  # cpu_basic's binary family's, after this in Mul's bases
    #: the operands of the last run that were not a case of the compiled kernel (a graph's
    #: inputs and outputs are the same arrays from run to run: not checked again)
    _numpy_last: tuple[Any, ...] = ()

    def compute(self, a: Array, b: Array, *, out: Array, **kw: Any) -> None:
        key = (a, b, out)
        if len(self._numpy_last) == 3 and all(
                x is y for x, y in zip(self._numpy_last, key, strict=True)):
            super().compute(a, b, out=out, **kw)
            return
        if self._replayed(key):
            return
        blocked = self._binary_calls(a, b, out)  # blocked (NCHWc): blocked.py
        call = blocked[0] if blocked else None if self._legacy else _scale_call(a, b, out)
        if call is None:
            self._numpy_last = key
            super().compute(a, b, out=out, **kw)
            return
        self._run(key, call)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        if self._block():  # blocked (NCHWc): blocked.py
            return self._bound(lambda: self._binary_calls(inputs[0], inputs[1], outputs[0]))
        call = None if self._legacy else _scale_call(inputs[0], inputs[1], outputs[0])
        if call is None:
            bound: Callable[[], None] | None = super().bind_run(inputs, outputs, workspace)
            return bound
        return partial(run_calls, [call])


def _ours(cls: type[Any]) -> None:
    """Errors about serialized data name this distribution (the layout is cpu_basic's)."""
    cls.package = "mini-infer-cpu-native"


_BASIC = "mini_infer_cpu_plugins.ops"
#: each made when first named, so that an engine imports only the cpu_basic families it
#: names (reduce, pool and elementwise are 110 operator classes with their schemas; issue 30)
_lazy = lazy_kernels(__name__, {
    "ReduceMean_1": (_Mean, f"{_BASIC}.reduce:ReduceMean_1"),
    "ReduceMean": (_Mean, f"{_BASIC}.reduce:ReduceMean"),
    "GlobalAveragePool": (_GlobalAveragePool, f"{_BASIC}.pool:GlobalAveragePool"),
    "Mul": (_Mul, f"{_BASIC}.elementwise:Mul"),
}, made=_ours)


def __getattr__(name: str) -> Any:
    return _lazy(name)
