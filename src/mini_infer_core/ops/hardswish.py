"""HardSigmoid and HardSwish (MobileNetV3's gates and activations), floating-point tensors."""

from __future__ import annotations

from ._schema import FLOATS, UnaryOp

__all__ = ["HardSigmoid", "HardSwish"]


class HardSigmoid(UnaryOp):
    """``max(0, min(1, alpha * x + beta))``."""

    dtypes = FLOATS


class HardSwish(UnaryOp):
    """``x * max(0, min(1, x / 6 + 0.5))``."""

    dtypes = FLOATS
