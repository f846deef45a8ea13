"""Gelu (opset 20; the builder also fuses torch's Erf form into it), floating-point tensors."""

from __future__ import annotations

from ..errors import PluginInterfaceError
from ._schema import FLOATS, UnaryOp

__all__ = ["Gelu"]


class Gelu(UnaryOp):
    """``0.5 * x * (1 + erf(x / sqrt(2)))``, or with ``approximate="tanh"``
    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``."""

    dtypes = FLOATS

    def setup(self) -> None:
        if self.attrs["approximate"] not in ("none", "tanh"):
            raise PluginInterfaceError(
                f"Gelu: approximate must be 'none' or 'tanh', got {self.attrs['approximate']!r}")
