"""More activations: Elu, Selu, Celu, PRelu, Softplus, Softsign, Mish, ThresholdedRelu, Swish
and Shrink (schemas in :mod:`mini_infer_core.ops.activation_extra`; HardSigmoid and HardSwish:
:mod:`.hardswish`, Gelu: :mod:`.gelu`).

Each writes its result into ``out`` with at most one temporary; floating-point warnings
(``exp`` overflowing to inf for large inputs, whose limit is the right answer) are silenced.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.ops import activation_extra as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin

__all__ = [
    "Elu", "Selu_1", "Selu", "Celu", "PRelu", "Softplus", "Softsign", "Mish", "ThresholdedRelu",
    "Swish", "Shrink",
]

Array = NDArray[Any]


def _softplus(x: Array, out: Array) -> None:
    """``log(1 + exp(x))`` without overflow."""
    np.logaddexp(x, 0, out=out)


class Elu(CpuPlugin, schema.Elu):
    def compute(self, x: Array, *, out: Array, alpha: float, **_: Any) -> None:
        with np.errstate(over="ignore"):
            np.expm1(x, out=out)
        np.multiply(out, alpha, out=out)
        np.copyto(out, x, where=x >= 0)


class _Selu(CpuPlugin, schema.FloatActivation):
    def compute(self, x: Array, *, out: Array, alpha: float, gamma: float, **_: Any) -> None:
        with np.errstate(over="ignore"):
            np.expm1(x, out=out)
        np.multiply(out, alpha, out=out)
        np.copyto(out, x, where=x > 0)
        np.multiply(out, gamma, out=out)


class Selu_1(_Selu, schema.Selu_1):  # noqa: N801
    pass


class Selu(_Selu, schema.Selu):
    pass


class Celu(CpuPlugin, schema.Celu):
    def compute(self, x: Array, *, out: Array, alpha: float) -> None:
        np.divide(x, alpha, out=out)
        with np.errstate(over="ignore"):
            np.expm1(out, out=out)
        np.multiply(out, alpha, out=out)
        np.copyto(out, x, where=x > 0)


class PRelu(CpuPlugin, schema.PRelu):
    def compute(self, x: Array, slope: Array, *, out: Array, **_: Any) -> None:
        np.multiply(x, slope, out=out)
        np.copyto(out, np.broadcast_to(x, out.shape), where=np.broadcast_to(x >= 0, out.shape))


class Softplus(CpuPlugin, schema.Softplus):
    def compute(self, x: Array, *, out: Array) -> None:
        _softplus(x, out)


class Softsign(CpuPlugin, schema.Softsign):
    def compute(self, x: Array, *, out: Array) -> None:
        np.abs(x, out=out)
        np.add(out, 1, out=out)
        np.divide(x, out, out=out)


class Mish(CpuPlugin, schema.Mish):
    def compute(self, x: Array, *, out: Array) -> None:
        _softplus(x, out)
        np.tanh(out, out=out)
        np.multiply(out, x, out=out)


class ThresholdedRelu(CpuPlugin, schema.ThresholdedRelu):
    def compute(self, x: Array, *, out: Array, alpha: float) -> None:
        out.fill(0)
        np.copyto(out, x, where=x > alpha)


class Swish(CpuPlugin, schema.Swish):
    def compute(self, x: Array, *, out: Array, alpha: float) -> None:
        np.multiply(x, -alpha, out=out)
        with np.errstate(over="ignore"):
            np.exp(out, out=out)
        np.add(out, 1, out=out)
        np.divide(x, out, out=out)


class Shrink(CpuPlugin, schema.Shrink):
    def compute(self, x: Array, *, out: Array, bias: float, lambd: float) -> None:
        xf = x if x.dtype.kind == "f" else x.astype(np.float64)  # integers: cast back after
        res = np.where(xf < -lambd, xf + bias, np.where(xf > lambd, xf - bias, 0))
        np.copyto(out, res, casting="unsafe")
