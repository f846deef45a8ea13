"""cpu_basic's Erf, Gelu, Sigmoid, Swish, HardSigmoid, HardSwish, Tanh, LeakyRelu and
LayerNormalization with their float32 cases compiled (``_act.c``: one pass
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
from mini_infer_cpu_plugins.serialization import CpuPlugin

from mini_infer_core.ops import lazy_kernels
from mini_infer_core.plugin.arrays import NDArray
from mini_infer_core.plugin.shapes import norm_axis

from ._act import act_call, layer_norm_call
from ._kept import Compiled, compiled
from ._native import run_calls
from .blocked import BlockedUnary

if TYPE_CHECKING:  # made when first named (``_lazy``, below)
    from mini_infer_cpu_plugins.ops.activation import LeakyRelu, Sigmoid, Tanh
    from mini_infer_cpu_plugins.ops.activation_extra import Swish
    from mini_infer_cpu_plugins.ops.erf import Erf
    from mini_infer_cpu_plugins.ops.gelu import Gelu
    from mini_infer_cpu_plugins.ops.hardswish import HardSigmoid, HardSwish
    from mini_infer_cpu_plugins.ops.layer_norm import LayerNormalization

__all__ = ["Erf", "Gelu", "HardSigmoid", "HardSwish", "LayerNormalization", "LeakyRelu",
           "Sigmoid", "Swish", "Tanh"]

Array = NDArray[Any]


class _Elementwise(BlockedUnary, Compiled, CpuPlugin):
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
        if not (compiled(x, out) and x.size == out.size):
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
                and compiled(x, out) and x.size == out.size):
            return None
        op, alpha, beta = self._function(self.attrs)
        return partial(run_calls, [act_call(op, x, out, alpha, beta), *self._pad_calls(out)])


class _Gelu(_Elementwise):
    """Gelu: approximate "none" (erf) and "tanh"."""

    def _function(self, attrs: dict[str, Any]) -> tuple[str, float, float]:
        return ("gelu_tanh" if attrs["approximate"] == "tanh" else "gelu"), 0.0, 0.0


class _LayerNormalization(Compiled, CpuPlugin):
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
                or not (compiled(x, scale, b, y, mean, inv) and y.size == x.size)):
            super().compute(x, scale, b, out=out, axis=axis, epsilon=epsilon,
                            stash_type=stash_type)
            return
        self._run((x, scale, b, y, mean, inv),
                  lambda: layer_norm_call(x, scale, b, y, rows, float(epsilon), mean, inv))


def _ours(cls: type[Any]) -> None:
    """Errors about serialized data name this distribution (the layout is cpu_basic's)."""
    cls.package = "mini-infer-cpu-native"


_BASIC = "mini_infer_cpu_plugins.ops"
#: every kernel made when first named, with its cpu_basic base's module (activation, erf,
#: activation_extra, hardswish, gelu, layer_norm: their schemas too): an engine imports
#: only the families it names (issue 30)
_lazy = lazy_kernels(__name__, {
    "Sigmoid": (_Elementwise, f"{_BASIC}.activation:Sigmoid"),
    "Tanh": (_Elementwise, f"{_BASIC}.activation:Tanh"),
    "LeakyRelu": (_Elementwise, f"{_BASIC}.activation:LeakyRelu"),
    "Erf": (_Elementwise, f"{_BASIC}.erf:Erf"),
    "Swish": (_Elementwise, f"{_BASIC}.activation_extra:Swish"),
    "HardSigmoid": (_Elementwise, f"{_BASIC}.hardswish:HardSigmoid"),
    "HardSwish": (_Elementwise, f"{_BASIC}.hardswish:HardSwish"),
    "Gelu": (_Gelu, f"{_BASIC}.gelu:Gelu"),
    "LayerNormalization": (_LayerNormalization, f"{_BASIC}.layer_norm:LayerNormalization"),
}, made=_ours)


def __getattr__(name: str) -> Any:
    return _lazy(name)
