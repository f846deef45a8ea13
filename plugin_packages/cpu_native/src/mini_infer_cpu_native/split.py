"""Split bound to its step's arrays: the parts are the planned outputs' lengths along the
axis, so a plan's Split is its copies alone (precomputed views of the input, one
``np.copyto`` each), without working out the sizes, splitting and emitting on every run
(silero-vad's LSTM cell, exported as Gemm, Split and activations: 24 -> ~3 us a run). Every
other run (outside a plan, or an output not asked for) is cpu_basic's ``compute``. Blocked
on channels where the builder chose the blocked format (:class:`.blocked.BlockedSplit`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import split as _split

from mini_infer_core.plugin.arrays import NDArray

from ._native import run_calls
from .blocked import BlockedSplit
from .catalog import NativeCreator

__all__ = ["NativeCreator", "Split", "Split_1", "Split_2", "Split_13"]

Array = NDArray[Any]


def _copies(pairs: list[tuple[Array, Array]]) -> None:
    for dst, src in pairs:
        np.copyto(dst, src)


class _Bound(BlockedSplit):
    """``bind_run`` of the Split plugins (mixed before cpu_basic's class), and the blocked
    split on channels where the builder chose the blocked format (:mod:`.blocked`)."""

    def compute(self, x: Array, *ins: Any, out: Any = None, **kw: Any) -> Any:
        if self._block() and out is not None:
            calls = self._split_calls(x, out if isinstance(out, tuple) else (out,))
            if calls is not None:
                run_calls(calls)
                return None
        return super().compute(x, *ins, out=out, **kw)  # type: ignore[misc]

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        if self._block():
            return self._bound(lambda: self._split_calls(inputs[0], outputs))
        x = inputs[0] if inputs else None
        if not isinstance(x, np.ndarray) or not x.ndim or not outputs or not all(
                isinstance(o, np.ndarray) and o.ndim == x.ndim and o.dtype == x.dtype
                for o in outputs):
            return None
        a = self.axis(x.ndim)
        pairs, at = [], 0
        for o in outputs:
            n = o.shape[a]
            src = x[(slice(None),) * a + (slice(at, at + n),)]
            if src.shape != o.shape:
                return None
            pairs.append((o, src))
            at += n
        if at != x.shape[a]:
            return None
        return lambda: _copies(pairs)


class Split_1(_Bound, _split.Split_1):  # type: ignore[misc]  # noqa: N801
    pass


class Split_2(_Bound, _split.Split_2):  # type: ignore[misc]  # noqa: N801
    pass


class Split_13(_Bound, _split.Split_13):  # type: ignore[misc]  # noqa: N801
    pass


class Split(_Bound, _split.Split):  # type: ignore[misc]
    pass


for _cls in (Split_1, Split_2, Split_13, Split):
    _cls.package = "mini-infer-cpu-native"
