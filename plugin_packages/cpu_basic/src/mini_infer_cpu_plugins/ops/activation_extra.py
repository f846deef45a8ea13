"""More activations: Elu, Selu, Celu, HardSigmoid, HardSwish, PRelu, Softplus, Softsign, Mish,
ThresholdedRelu, Swish, Gelu and Shrink.

Each writes its result into ``out`` with at most one temporary; floating-point warnings
(``exp`` overflowing to inf for large inputs, whose limit is the right answer) are silenced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import BroadcastPlugin, DimsExprs, IntLike, UnaryPlugin, broadcast_dims

from ..serialization import CpuPlugin
from ._erf import erf

__all__ = [
    "Elu", "Selu_1", "Selu", "Celu", "HardSigmoid", "HardSwish", "PRelu", "Softplus", "Softsign",
    "Mish", "ThresholdedRelu", "Swish", "Gelu", "Shrink",
]

Array = NDArray[Any]


def _softplus(x: Array, out: Array) -> None:
    """``log(1 + exp(x))`` without overflow."""
    np.logaddexp(x, 0, out=out)


class Elu(CpuPlugin, UnaryPlugin):
    """``x`` for x >= 0, ``alpha * (exp(x) - 1)`` below."""

    attributes: ClassVar[dict[str, Any]] = {"alpha": 1.0, "consumed_inputs": None}

    def compute(self, x: Array, *, out: Array, alpha: float, **_: Any) -> None:
        with np.errstate(over="ignore"):
            np.expm1(x, out=out)
        np.multiply(out, alpha, out=out)
        np.copyto(out, x, where=x >= 0)


class Selu(CpuPlugin, UnaryPlugin):
    """``gamma * x`` for x > 0, ``gamma * alpha * (exp(x) - 1)`` otherwise (opset 6+)."""

    plugin_version = "6"
    min_opset = 6
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}

    def compute(self, x: Array, *, out: Array, alpha: float, gamma: float, **_: Any) -> None:
        with np.errstate(over="ignore"):
            np.expm1(x, out=out)
        np.multiply(out, alpha, out=out)
        np.copyto(out, x, where=x > 0)
        np.multiply(out, gamma, out=out)


class Selu_1(Selu):  # noqa: N801
    """Selu before opset 6: other (rounder) defaults, ``consumed_inputs``."""

    op_type = "Selu"
    plugin_version = "1"
    min_opset = 1
    max_opset = 5
    attributes: ClassVar[dict[str, Any]] = {
        "alpha": 1.6732000112533569, "gamma": 1.0506999492645264, "consumed_inputs": None}


class Celu(CpuPlugin, UnaryPlugin):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    min_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"alpha": 1.0}

    def compute(self, x: Array, *, out: Array, alpha: float) -> None:
        np.divide(x, alpha, out=out)
        with np.errstate(over="ignore"):
            np.expm1(out, out=out)
        np.multiply(out, alpha, out=out)
        np.copyto(out, x, where=x > 0)


class HardSigmoid(CpuPlugin, UnaryPlugin):
    """``max(0, min(1, alpha * x + beta))``."""

    attributes: ClassVar[dict[str, Any]] = {"alpha": 0.2, "beta": 0.5, "consumed_inputs": None}

    def compute(self, x: Array, *, out: Array, alpha: float, beta: float, **_: Any) -> None:
        np.multiply(x, alpha, out=out)
        np.add(out, beta, out=out)
        np.clip(out, 0, 1, out=out)


class HardSwish(CpuPlugin, UnaryPlugin):
    """``x * max(0, min(1, x / 6 + 0.5))``."""

    min_opset = 14

    def compute(self, x: Array, *, out: Array) -> None:
        np.multiply(x, 1.0 / 6.0, out=out)
        np.add(out, 0.5, out=out)
        np.clip(out, 0, 1, out=out)
        np.multiply(out, x, out=out)


class PRelu(CpuPlugin, BroadcastPlugin):
    """``slope * x`` for x < 0, ``x`` otherwise; ``slope`` broadcasts to ``x``."""

    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [list(broadcast_dims(inputs[0], inputs[1]))]

    def compute(self, x: Array, slope: Array, *, out: Array, **_: Any) -> None:
        np.multiply(x, slope, out=out)
        np.copyto(out, np.broadcast_to(x, out.shape), where=np.broadcast_to(x >= 0, out.shape))


class Softplus(CpuPlugin, UnaryPlugin):
    """``log(exp(x) + 1)``."""

    def compute(self, x: Array, *, out: Array) -> None:
        _softplus(x, out)


class Softsign(CpuPlugin, UnaryPlugin):
    """``x / (1 + |x|)``."""

    def compute(self, x: Array, *, out: Array) -> None:
        np.abs(x, out=out)
        np.add(out, 1, out=out)
        np.divide(x, out, out=out)


class Mish(CpuPlugin, UnaryPlugin):
    """``x * tanh(softplus(x))``."""

    min_opset = 18

    def compute(self, x: Array, *, out: Array) -> None:
        _softplus(x, out)
        np.tanh(out, out=out)
        np.multiply(out, x, out=out)


class ThresholdedRelu(CpuPlugin, UnaryPlugin):
    """``x`` for x > alpha, 0 otherwise."""

    min_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"alpha": 1.0}

    def compute(self, x: Array, *, out: Array, alpha: float) -> None:
        out.fill(0)
        np.copyto(out, x, where=x > alpha)


class Swish(CpuPlugin, UnaryPlugin):
    """``x * sigmoid(alpha * x)``."""

    min_opset = 24
    attributes: ClassVar[dict[str, Any]] = {"alpha": 1.0}

    def compute(self, x: Array, *, out: Array, alpha: float) -> None:
        np.multiply(x, -alpha, out=out)
        with np.errstate(over="ignore"):
            np.exp(out, out=out)
        np.add(out, 1, out=out)
        np.divide(x, out, out=out)


class Gelu(CpuPlugin, UnaryPlugin):
    """``0.5 * x * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"``
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``."""

    min_opset = 20
    attributes: ClassVar[dict[str, Any]] = {"approximate": "none"}

    def setup(self) -> None:
        if self.attrs["approximate"] not in ("none", "tanh"):
            raise PluginInterfaceError(
                f"Gelu: approximate must be 'none' or 'tanh', got {self.attrs['approximate']!r}")

    def compute(self, x: Array, *, out: Array, approximate: str) -> None:
        if approximate == "tanh":
            np.multiply(x, x, out=out)
            np.multiply(out, 0.044715, out=out)
            np.add(out, 1, out=out)
            np.multiply(out, x, out=out)
            np.multiply(out, math.sqrt(2.0 / math.pi), out=out)
            np.tanh(out, out=out)
        else:
            np.multiply(x, 1.0 / math.sqrt(2.0), out=out)
            erf(out, out)
        np.add(out, 1, out=out)
        np.multiply(out, x, out=out)
        np.multiply(out, 0.5, out=out)


class Shrink(CpuPlugin, UnaryPlugin):
    """``x + bias`` for x < -lambd, ``x - bias`` for x > lambd, 0 otherwise (any numeric
    type; integer results are computed in float64 and cast back)."""

    min_opset = 9
    attributes: ClassVar[dict[str, Any]] = {"bias": 0.0, "lambd": 0.5}

    def compute(self, x: Array, *, out: Array, bias: float, lambd: float) -> None:
        xf = x if x.dtype.kind == "f" else x.astype(np.float64)
        res = np.where(xf < -lambd, xf + bias, np.where(xf > lambd, xf - bias, 0))
        np.copyto(out, res, casting="unsafe")
