"""Steps bound to the compiled calls their plugin kept (:class:`KeptCalls`), and the
elementwise kernels' last call run again (:class:`Compiled`).

Conv, Gemm and the pools make their compiled calls on a run and keep them with the arrays
they were made for; while the same arrays come back (an engine's arena views) ``compute``
runs them again. That check still costs ``enqueue``, ``compute`` and an identity test of
every array on each run (3-5 us of a small convolution: MobileNetV3's 1x1 convolutions over
7x7 maps take 20-60 us). :meth:`KeptCalls.bind_run` gives the plan a call that runs the step
through ``enqueue`` until a run finds its calls kept for the step's very arrays, and from
then on runs those calls alone (each call keeps its own arrays alive, so the bound step
holds its plan's calls even when another plan of the context makes the plugin keep others;
when the plugin drops its calls, a tactic set say, the step goes through ``enqueue`` again).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from mini_infer_core.plugin.arrays import NDArray

from ._native import Call, run_calls, usable

__all__ = ["Compiled", "KeptCalls", "compiled"]

Array = NDArray[Any]


class KeptCalls:
    """Mixin: ``bind_run`` from the ``(arrays, calls)`` a plugin keeps in :attr:`_calls`."""

    _calls: tuple[tuple[Any, ...], list[Call]] | None = None

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        enqueue = partial(self.enqueue, inputs, outputs, workspace, None)  # type: ignore[attr-defined]
        mine = {id(a) for a in (*inputs, *outputs, workspace) if a is not None}
        kept: list[list[Call]] = []

        def run() -> None:
            if kept:
                if self._calls is not None:
                    run_calls(kept[0])
                    return
                kept.clear()  # the plugin dropped its calls (a tactic set): made anew
            before = self._calls
            enqueue()
            after = self._calls
            # the run found the calls it keeps for exactly these arrays (made on the run
            # before, not replaced by this one): they are the step's from now on
            if after is not None and after is before and all(
                    a is None or id(a) in mine for a in after[0]):
                kept.append(after[1])

        return run


class Compiled(KeptCalls):
    """The compiled call of the last run, run again while its arrays are the same objects
    (their addresses, sizes and strides, checked when the call was made, stay valid while
    the call keeps them alive); kept for the plan's step (:class:`._kept.KeptCalls`: it runs
    the call alone, without ``enqueue`` and ``compute``'s checks, 5-8 us of Python a
    LayerNormalization)."""

    def _run(self, arrays: tuple[Any, ...], make: Callable[[], Call]) -> None:
        last = self._calls
        if last is None or len(last[0]) != len(arrays) or not all(
                a is b for a, b in zip(last[0], arrays, strict=True)):
            last = self._calls = (arrays, [make()])
        run_calls(last[1])


def compiled(*arrays: Array | None) -> bool:
    """float32 arrays the kernels take (None: an absent optional one)."""
    return all(a is None or a.dtype == np.float32 for a in arrays) and usable(*arrays)
