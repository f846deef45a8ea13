"""Shared pieces of RNN, GRU and LSTM: activation functions and the input layout."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimsExprs, IntLike

from ._nn_util import to_str

__all__ = ["Act", "activations", "directions", "rnn_output_shapes"]

Array = NDArray[Any]
Act = Callable[[Array], Array]

#: name -> (uses alpha, uses beta, default alpha, default beta)
_PARAMS: dict[str, tuple[bool, bool, float, float]] = {
    "affine": (True, True, 1.0, 0.0), "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0), "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5), "elu": (True, False, 1.0, 0.0),
}


def _sigmoid(x: Array) -> Array:
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-x))


def _make(name: str, alpha: float, beta: float) -> Act:
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
    if name not in fns:
        raise PluginInterfaceError(f"unknown recurrent activation {name!r}")
    return fns[name]


def activations(names: Sequence[Any] | None, defaults: Sequence[str], n_dirs: int,
                alphas: Sequence[float] | None, betas: Sequence[float] | None
                ) -> list[Act]:
    """The activation functions, ``len(defaults)`` per direction; alpha/beta values are
    taken in order by the functions that use them."""
    lst = [to_str(n).lower() for n in names] if names else list(defaults) * n_dirs
    if len(lst) == len(defaults) and n_dirs == 2:
        lst = lst * 2
    if len(lst) > len(defaults) * n_dirs and not alphas and not betas:
        lst = lst[:len(defaults) * n_dirs]  # RNN's default lists two, forward uses one
    if len(lst) != len(defaults) * n_dirs:
        raise PluginInterfaceError(
            f"{len(lst)} activations given, {len(defaults) * n_dirs} expected")
    al, be = list(alphas or []), list(betas or [])
    out = []
    for name in lst:
        ua, ub, da, db = _PARAMS.get(name, (False, False, 0.0, 0.0))
        a = al.pop(0) if ua and al else da
        b = be.pop(0) if ub and be else db
        out.append(_make(name, a, b))
    return out


def directions(direction: Any) -> list[bool]:
    """Per direction: whether it runs reversed."""
    d = to_str(direction)
    if d in ("forward", "foward"):
        return [False]
    if d == "reverse":
        return [True]
    if d == "bidirectional":
        return [False, True]
    raise PluginInterfaceError(f"unknown direction {d!r}")


def rnn_output_shapes(inputs: Sequence[DimsExprs], attrs: dict[str, Any], n_state: int
                      ) -> list[list[IntLike]]:
    """Y and the ``n_state`` final-state outputs (Y_h, Y_c)."""
    x, r = list(inputs[0]), list(inputs[2])
    if len(x) != 3 or len(r) != 3:
        raise PluginInterfaceError("recurrent op: X and R must be 3-D")
    nd = len(directions(attrs["direction"]))
    h: IntLike = attrs["hidden_size"] if attrs["hidden_size"] else r[2]
    if attrs.get("layout", 0):
        y: list[IntLike] = [x[0], x[1], nd, h]
        st: list[IntLike] = [x[0], nd, h]
    else:
        y = [x[0], nd, x[1], h]
        st = [nd, x[1], h]
    return [y] + [list(st) for _ in range(n_state)]
