"""The activation functions of RNN, GRU and LSTM on NumPy arrays (which ones, and their
alpha/beta, the schemas tell: :mod:`mini_infer_core.ops.rnn`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mini_infer_core.ops.rnn import Activation
from mini_infer_core.plugin.arrays import NDArray

__all__ = ["Act", "make_activation"]

Array = NDArray[Any]
Act = Callable[[Array], Array]


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def make_activation(act: Activation) -> Act:
    """The function ``act`` names, with its alpha and beta."""
    alpha, beta = act.alpha, act.beta
    fns: dict[str, Act] = {
        "sigmoid": _sigmoid,
        "tanh": np.tanh,
        "relu": lambda x: np.maximum(x, 0),
        "affine": lambda x: alpha * x + beta,
        "leakyrelu": lambda x: np.where(x >= 0, x, alpha * x),
        "thresholdedrelu": lambda x: np.where(x > alpha, x, 0),
        "scaledtanh": lambda x: alpha * np.tanh(beta * x),
        "hardsigmoid": lambda x: np.clip(alpha * x + beta, 0, 1),
        "elu": lambda x: np.where(x >= 0, x, alpha * (np.exp(np.minimum(x, 0)) - 1)),
        "softsign": lambda x: x / (1 + np.abs(x)),
        "softplus": lambda x: np.logaddexp(x, 0),
    }
    return fns[act.name]
