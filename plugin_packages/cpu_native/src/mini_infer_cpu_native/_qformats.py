"""What the 8-bit plugins that take NHWC tensors share (``TensorFormat.HWC``, negotiated by
the builder's formats pass): which of a node's tensors are NHWC, and NCHW stand-ins for the
paths that compute in NCHW only."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from mini_infer_core.plugin import TensorFormat
from mini_infer_core.plugin.arrays import NDArray

__all__ = ["hwc_formats", "linear"]

Array = NDArray[Any]


def hwc_formats(plugin: Any, inputs: tuple[int, ...] = (0,)) -> tuple[bool, ...]:
    """Whether each of ``inputs``, then output 0, is NHWC (``TensorFormat.HWC``) in the
    formats the runtime configured the plugin with (LINEAR where it says nothing)."""
    ins = getattr(plugin, "input_descs", None) or []
    outs = getattr(plugin, "output_descs", None) or []

    def hwc(descs: list[Any], i: int) -> bool:
        return i < len(descs) and descs[i] is not None and descs[i].format is TensorFormat.HWC

    return (*(hwc(ins, i) for i in inputs), hwc(outs, 0))


@contextmanager
def linear(x: Array, out: Array, hwc: tuple[bool, ...]) -> Iterator[tuple[Array, Array]]:
    """(x, out) as C-contiguous NCHW arrays for a path that computes in NCHW: ``x`` and
    ``out`` are NCHW views (of NHWC arrays where ``hwc`` says so); an NHWC ``out`` gets the
    result when the block ends."""
    xc = np.ascontiguousarray(x) if hwc[0] else x
    oc = np.empty(out.shape, out.dtype) if hwc[-1] else out
    yield xc, oc
    if hwc[-1]:
        np.copyto(out, oc)
