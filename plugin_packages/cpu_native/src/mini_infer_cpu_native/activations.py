"""cpu_basic's Erf, Gelu, Sigmoid, Swish, HardSigmoid, HardSwish, Tanh, LeakyRelu, Softmax,
LogSoftmax and LayerNormalization with their float32 cases compiled (``_act.c``: one pass
over memory, vectorised for AVX-512F or AVX2+FMA where the CPU has them).

Each class is the cpu_basic plugin (same fields, shape inference and serialized form) whose
``compute`` runs the compiled kernel for float32, C-contiguous, aligned arrays and hands
anything else (float64, float16, integers for Erf, strided views, LayerNormalization with a
float64 ``stash_type`` or a scale or bias that is not one value per normalised element) to
the NumPy kernel it inherits. The compiled call is made (and its arrays checked) once, and
run again while the node's arrays are the same objects (an engine's arena views).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import activation as _activation
from mini_infer_cpu_plugins.serialization import CpuPlugin
from mini_infer_cpu_plugins.toolkit import SoftmaxKernel

from mini_infer_core.ops import lazy_kernels, schema_kernels
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ._act import act_call, layer_norm_call, softmax_call
from ._kept import KeptCalls
from ._native import Call, run_calls, usable
from .blocked import BlockedUnary

if TYPE_CHECKING:  # made when first named (``_lazy``, below)
    from mini_infer_cpu_plugins.ops.activation_extra import Gelu, HardSigmoid, HardSwish, Swish
    from mini_infer_cpu_plugins.ops.erf import Erf
    from mini_infer_cpu_plugins.ops.layer_norm import LayerNormalization

__all__ = ["Erf", "Gelu", "HardSigmoid", "HardSwish", "LayerNormalization", "LeakyRelu",
           "LogSoftmax_1", "LogSoftmax_13", "Sigmoid", "Softmax_1", "Softmax_13", "Swish",
           "Tanh"]

Array = NDArray[Any]


class _Compiled(KeptCalls):
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


def _compiled(*arrays: Array | None) -> bool:
    """float32 arrays the kernels take (None: an absent optional one)."""
    return all(a is None or a.dtype == np.float32 for a in arrays) and usable(*arrays)


class _Elementwise(BlockedUnary, _Compiled, CpuPlugin):
    """One compiled function of x, or the cpu_basic kernel: the function ``_FUNCTIONS``
    names for the operator, with the attributes it lists (at most two) as its alpha and beta
    (0.0 for those it does not name)."""

    #: operator -> (the compiled function, the attributes it takes as alpha and beta)
    _FUNCTIONS: ClassVar[dict[str, tuple[str, tuple[str, ...]]]] = {
        "Erf": ("erf", ()), "Sigmoid": ("sigmoid", ()), "Tanh": ("tanh", ()),
        "HardSwish": ("hard_swish", ()), "Swish": ("swish", ("alpha",)),
        "LeakyRelu": ("leaky_relu", ("alpha",)),
        "HardSigmoid": ("hard_sigmoid", ("alpha", "beta")),
    }

    def _function(self, attrs: dict[str, Any]) -> tuple[str, float, float]:
        """The kernel's function and its alpha, beta for these attributes."""
        function, params = self._FUNCTIONS[self.op_type]
        alpha, beta = (*(float(attrs[p]) for p in params), 0.0, 0.0)[:2]
        return function, alpha, beta

    def compute(self, x: Array, *, out: Array, **attrs: Any) -> None:
        if not (_compiled(x, out) and x.size == out.size):
            super().compute(x, out=out, **attrs)
            return
        op, alpha, beta = self._function(attrs)
        self._run((x, out), lambda: act_call(op, x, out, alpha, beta))
        run_calls(self._pad_calls(out))  # blocked (NCHWc): blocked.py

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        """The compiled call bound to the step's arrays: a gate of a few values (MobileNetV3's
        HardSigmoid on (1, C, 1, 1)) cost ~10 us of Python per run through ``compute``."""
        x, out = inputs[0], outputs[0]
        if not (isinstance(x, np.ndarray) and isinstance(out, np.ndarray)
                and _compiled(x, out) and x.size == out.size):
            return None
        op, alpha, beta = self._function(self.attrs)
        return partial(run_calls, [act_call(op, x, out, alpha, beta), *self._pad_calls(out)])


Sigmoid, Tanh, LeakyRelu = schema_kernels(
    _Elementwise, _activation.Sigmoid, _activation.Tanh, _activation.LeakyRelu,
    module=__name__)


class _Gelu(_Elementwise):
    """Gelu: approximate "none" (erf) and "tanh"."""

    def _function(self, attrs: dict[str, Any]) -> tuple[str, float, float]:
        return ("gelu_tanh" if attrs["approximate"] == "tanh" else "gelu"), 0.0, 0.0


class _Softmax(_Compiled, SoftmaxKernel):
    """Along ``axis`` (before opset 13: over the input flattened to 2-D at ``axis``), each
    row (or block of neighbouring positions along an inner axis) in one compiled pass."""

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        if x.ndim == 0 or not (_compiled(x, out) and x.size == out.size):
            super().compute(x, out=out, axis=axis)
            return
        if x.size == 0:
            return
        xs, ys, a = self.operands(x, out)
        self._run((x, out), lambda: softmax_call(xs, ys, a, self.log))


Softmax_1, Softmax_13, LogSoftmax_1, LogSoftmax_13 = schema_kernels(
    _Softmax, _activation.Softmax_1, _activation.Softmax_13, _activation.LogSoftmax_1,
    _activation.LogSoftmax_13, module=__name__)


class _LayerNormalization(_Compiled, CpuPlugin):
    """LayerNormalization: float32 statistics (``stash_type`` 1), a scale and bias of one
    value per normalised element: each row's mean, variance and output in one compiled pass
    over memory, Mean and InvStdDev written where asked. Everything else is cpu_basic's."""

    def compute(self, x: Array, scale: Array, b: Array | None = None, *, out: Any,
                axis: int, epsilon: float, stash_type: int) -> None:
        outs = out if isinstance(out, tuple) else (out,)
        y = outs[0]
        mean = outs[1] if len(outs) > 1 else None
        inv = outs[2] if len(outs) > 2 else None
        if x.size == 0:
            return  # nothing to write (cpu_basic's reshape would fail on it)
        a = norm_axis(axis, x.ndim) if x.ndim else 0
        rows = math.prod(x.shape[:a])
        n = x.size // rows
        if (stash_type != 1 or y is None or n == 0 or scale.size != n
                or (b is not None and b.size != n)
                or not (_compiled(x, scale, b, y, mean, inv) and y.size == x.size)):
            super().compute(x, scale, b, out=out, axis=axis, epsilon=epsilon,
                            stash_type=stash_type)
            return
        self._run((x, scale, b, y, mean, inv),
                  lambda: layer_norm_call(x, scale, b, y, rows, float(epsilon), mean, inv))


def _ours(cls: type[Any]) -> None:
    """Errors about serialized data name this distribution (the layout is cpu_basic's)."""
    cls.package = "mini-infer-cpu-native"


for _cls in (Sigmoid, Tanh, LeakyRelu, Softmax_1, Softmax_13, LogSoftmax_1, LogSoftmax_13):
    _ours(_cls)

_BASIC = "mini_infer_cpu_plugins.ops"
#: the kernels whose cpu_basic base is of another family (erf, activation_extra,
#: layer_norm: 80 operator classes with their schemas), made when first named: an engine
#: that names none of them imports none of those modules (issue 30)
_lazy = lazy_kernels(__name__, {
    "Erf": (_Elementwise, f"{_BASIC}.erf:Erf"),
    "Swish": (_Elementwise, f"{_BASIC}.activation_extra:Swish"),
    "HardSigmoid": (_Elementwise, f"{_BASIC}.activation_extra:HardSigmoid"),
    "HardSwish": (_Elementwise, f"{_BASIC}.activation_extra:HardSwish"),
    "Gelu": (_Gelu, f"{_BASIC}.activation_extra:Gelu"),
    "LayerNormalization": (_LayerNormalization, f"{_BASIC}.layer_norm:LayerNormalization"),
}, made=_ours)


def __getattr__(name: str) -> Any:
    return _lazy(name)
