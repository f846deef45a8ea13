"""More activations: Elu, Selu, Celu, PRelu, Softplus, Softsign, Mish, ThresholdedRelu, Swish
and Shrink (HardSigmoid and HardSwish: :mod:`.hardswish`; Gelu: :mod:`.gelu`; each a family of
its own, so that a MobileNetV3 or a transformer engine makes none of these classes: issue 30).

All but PRelu and Shrink take floating-point tensors only (float16, float, double, bfloat16);
PRelu also integers, Shrink any numeric type.
"""

from __future__ import annotations

from ._common import Versioned
from ._schema import FLOATS, BroadcastOp, UnaryOp

__all__ = [
    "Elu", "Selu_1", "Selu", "Celu", "PRelu", "Softplus", "Softsign", "Mish", "ThresholdedRelu",
    "Swish", "Shrink",
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


class Shrink(UnaryOp):
    """``x + bias`` for x < -lambd, ``x - bias`` for x > lambd, 0 otherwise (any numeric
    type)."""
