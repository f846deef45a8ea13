"""Activations: Relu, LeakyRelu, Sigmoid, Tanh, Clip (Softmax and LogSoftmax: :mod:`.softmax`;
Dropout: :mod:`.dropout`; each a family of its own, so that an engine naming one imports only
its classes: issue 30)."""

from __future__ import annotations

from typing import Any, ClassVar

from ._schema import FLOATS, UnaryOp

__all__ = ["Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip_1", "Clip_11"]


class Relu(UnaryOp):
    """max(x, 0)."""


class LeakyRelu(UnaryOp):
    """x where x >= 0, alpha * x elsewhere."""

    dtypes = FLOATS


class Sigmoid(UnaryOp):
    """1 / (1 + exp(-x))."""

    dtypes = FLOATS


class Clip_1(UnaryOp):  # noqa: N801
    """Clip before opset 11: ``min``/``max`` attributes (absent: unbounded)."""

    plugin_version = "1"
    max_opset = 10
    attributes: ClassVar[dict[str, Any]] = {"min": None, "max": None, "consumed_inputs": None}


class Clip_11(UnaryOp):  # noqa: N801
    """Clip from opset 11: optional scalar ``min``/``max`` inputs."""

    plugin_version = "11"
    min_opset = 11


class Tanh(UnaryOp):
    dtypes = FLOATS
