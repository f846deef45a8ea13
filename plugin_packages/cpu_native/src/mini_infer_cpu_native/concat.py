"""cpu_basic's Concat with its float32 copies compiled and kept.

DenseNet-121 concatenates every earlier feature map of a block before each layer: 58
Concats of 3-27 inputs, 36 MB copied per image (an input the engine placed in one Concat's
output is copied into all the others), 13.5 ms of its 224 at one thread, about half of it
NumPy's per-input slicing and ``copyto``. Here an input that is a contiguous run of the
output (every axis before ``axis`` of size 1: a batch of one) is copied plane by plane with
the compiled im2col (a 1x1 window over (1, C, 1, inner): one ``memcpy`` a plane, split
over the planes on the library's pool), and the calls are kept while the node's arrays are
the same objects (an engine's arena views). Other inputs (a shape's int64 pieces, axes after
one of more than one) into a C-contiguous output are ``np.copyto`` calls into their slice of
it, kept the same way: cpu_basic's path found its slices and checked which inputs the engine
had placed in the output on every run, 15-20 us of Python per node, where a transformer's
exported graph builds a shape from four int64 values with a Concat 3-5 times a layer
(MiniLM's 32 Concats: 2.2 ms of 64 at one thread, onnxruntime's 0.3 ms). A single input,
or an output that is not C-contiguous, is cpu_basic's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from mini_infer_cpu_plugins.ops import shape as _shape
from mini_infer_cpu_plugins.toolkit import in_place

from mini_infer_core.plugin import shapes
from mini_infer_core.plugin.arrays import NDArray

from ._kept import KeptCalls
from ._native import Call, im2col_call, run_calls, usable
from .blocked import BlockedConcat

__all__ = ["Concat"]

Array = NDArray[Any]


class Concat(BlockedConcat, KeptCalls, _shape.Concat):
    """float32, contiguous, every axis before ``axis`` of size 1: compiled copies of the
    inputs the engine did not place in the output, kept while the arrays stay the same."""

    #: the calls of the last run and the arrays they were made for
    _calls: tuple[tuple[Any, ...], list[Call]] | None = None

    def compute(self, *xs: Array, out: Array, axis: int) -> None:
        key = (*xs, out)
        kept = self._calls
        if kept is not None and len(kept[0]) == len(key) and all(
                a is k for a, k in zip(kept[0], key, strict=True)):
            run_calls(kept[1])
            return
        blocked = self._concat_calls(xs, out)  # blocked (NCHWc): blocked.py
        if blocked:
            self._calls = (key, blocked)
            run_calls(blocked)
            return
        ax = shapes.norm_axis(axis, out.ndim)
        if len(xs) == 1 or not out.flags.c_contiguous:
            super().compute(*xs, out=out, axis=axis)
            return
        if any(d != 1 for d in out.shape[:ax]) or not usable(out, *xs):
            self._calls = (key, _copies(xs, out, ax))
            run_calls(self._calls[1])
            return
        inner = math.prod(out.shape[ax + 1:])
        flat = out.reshape(-1)
        calls: list[Call] = []
        pos = 0
        for x in xs:
            size = x.size
            part = flat[pos: pos + size]
            pos += size
            if size == 0 or in_place(x, part):  # the engine put it there already
                continue
            planes = x.shape[ax]
            src = x.reshape(1, planes, 1, inner)
            calls.append(im2col_call(src, part.reshape(1, planes, 1, inner), (1, 1), (1, 1),
                                     (1, 1), (0, 0), (0, 1), inner))
        self._calls = (key, calls)
        run_calls(calls)


def _copies(xs: tuple[Array, ...], out: Array, ax: int) -> list[Call]:
    """``np.copyto`` of each input into its slice of ``out`` along ``ax``, but those the
    engine already placed there."""
    lead, pos = (slice(None),) * ax, 0
    calls: list[Call] = []
    for x in xs:
        part = out[(*lead, slice(pos, pos + x.shape[ax]))]
        pos += x.shape[ax]
        if x.size and not in_place(x, part):
            calls.append((np.copyto, (part, x)))
    return calls


Concat.package = "mini-infer-cpu-native"
