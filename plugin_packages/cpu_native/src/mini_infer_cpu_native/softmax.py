"""cpu_basic's Softmax and LogSoftmax with their float32 cases compiled (``_act.c``), in a
module of their own: an engine that names them imports neither the other activations nor
their families (issue 30)."""

from __future__ import annotations

from typing import Any

from mini_infer_cpu_plugins.ops import softmax as _softmax
from mini_infer_cpu_plugins.toolkit import SoftmaxKernel

from mini_infer_core.ops import schema_kernels
from mini_infer_core.plugin.arrays import NDArray

from ._act import softmax_call
from ._kept import Compiled, compiled

__all__ = ["LogSoftmax_1", "LogSoftmax_13", "Softmax_1", "Softmax_13"]

Array = NDArray[Any]


class _Softmax(Compiled, SoftmaxKernel):
    """Along ``axis`` (before opset 13: over the input flattened to 2-D at ``axis``), each
    row (or block of neighbouring positions along an inner axis) in one compiled pass."""

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        if x.ndim == 0 or not (compiled(x, out) and x.size == out.size):
            super().compute(x, out=out, axis=axis)
            return
        if x.size == 0:
            return
        xs, ys, a = self.operands(x, out)
        self._run((x, out), lambda: softmax_call(xs, ys, a, self.log))


Softmax_1, Softmax_13, LogSoftmax_1, LogSoftmax_13 = schema_kernels(
    _Softmax, _softmax.Softmax_1, _softmax.Softmax_13, _softmax.LogSoftmax_1,
    _softmax.LogSoftmax_13, module=__name__)

for _cls in (Softmax_1, Softmax_13, LogSoftmax_1, LogSoftmax_13):
    _cls.package = "mini-infer-cpu-native"  # errors about serialized data name us
