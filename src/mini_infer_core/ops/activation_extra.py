"""More activations: Elu, Selu, Celu, HardSigmoid, HardSwish, PRelu, Softplus, Softsign, Mish,
ThresholdedRelu, Swish, Gelu and Shrink.

All but PRelu and Shrink take floating-point tensors only (float16, float, double, bfloat16);
PRelu also integers, Shrink any numeric type.
"""

from __future__ import annotations

from ..errors import PluginInterfaceError
from ._common import Versioned
from ._schema import FLOATS, BroadcastOp, UnaryOp

__all__ = [
    "Elu", "Selu_1", "Selu", "Celu", "HardSigmoid", "HardSwish", "PRelu", "Softplus", "Softsign",
    "Mish", "ThresholdedRelu", "Swish", "Gelu", "Shrink",
]


class FloatActivation(UnaryOp):
    """An activation of floating-point tensors."""

    dtypes = FLOATS


class Elu(FloatActivation):
    """``x`` for x >= 0, ``alpha * (exp(x) - 1)`` below."""


class Selu_1(Versioned, FloatActivation, opsets=(1, 5)):  # noqa: N801
    """Selu before opset 6: rounder defaults (alpha 1.6732, gamma 1.0507), ``consumed_inputs``."""


class Selu(Versioned, FloatActivation, opsets=(6, None)):
    """``gamma * x`` for x > 0, ``gamma * alpha * (exp(x) - 1)`` otherwise (opset 6+)."""


class Celu(FloatActivation):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""


class HardSigmoid(FloatActivation):
    """``max(0, min(1, alpha * x + beta))``."""


class HardSwish(FloatActivation):
    """``x * max(0, min(1, x / 6 + 0.5))``."""


class PRelu(BroadcastOp):
    """``slope * x`` for x < 0, ``x`` otherwise; ``slope`` broadcasts to ``x``."""


class Softplus(FloatActivation):
    """``log(exp(x) + 1)``."""


class Softsign(FloatActivation):
    """``x / (1 + |x|)``."""


class Mish(FloatActivation):
    """``x * tanh(softplus(x))``."""


class ThresholdedRelu(FloatActivation):
    """``x`` for x > alpha, 0 otherwise."""


class Swish(FloatActivation):
    """``x * sigmoid(alpha * x)``."""


class Gelu(FloatActivation):
    """``0.5 * x * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"``
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``."""

    def setup(self) -> None:
        if self.attrs["approximate"] not in ("none", "tanh"):
            raise PluginInterfaceError(
                f"Gelu: approximate must be 'none' or 'tanh', got {self.attrs['approximate']!r}")


class Shrink(UnaryOp):
    """``x + bias`` for x < -lambd, ``x - bias`` for x > lambd, 0 otherwise (any numeric
    type)."""
