"""Recurrent layers: RNN, GRU, LSTM (all opsets; ``layout`` from 14): output shapes, the
directions, and the activation functions with their alpha/beta.

Inputs X, W, R, B, sequence_lens, initial_h (LSTM: initial_c, P); outputs Y and the final
states Y_h (LSTM: Y_c). ``layout`` 0: X (seq, batch, input), Y (seq, dirs, batch, hidden);
1: X (batch, seq, input), Y (batch, seq, dirs, hidden).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs, IntLike
from ._common import Versioned
from ._schema import Op

__all__ = ["RNN", "GRU_1", "GRU", "LSTM"]

#: activation name -> (uses alpha, uses beta, default alpha, default beta)
_PARAMS: dict[str, tuple[bool, bool, float, float]] = {
    "affine": (True, True, 1.0, 0.0), "leakyrelu": (True, False, 0.01, 0.0),
    "thresholdedrelu": (True, False, 1.0, 0.0), "scaledtanh": (True, True, 1.0, 1.0),
    "hardsigmoid": (True, True, 0.2, 0.5), "elu": (True, False, 1.0, 0.0),
}
#: every activation a recurrent operator may name (lower case)
ACTIVATIONS = ("sigmoid", "tanh", "relu", "softsign", "softplus", *_PARAMS)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Activation(NamedTuple):
    """One activation function: its lower-case name and its alpha and beta."""

    name: str
    alpha: float
    beta: float


def directions(direction: Any) -> list[bool]:
    """Per direction: whether it runs reversed."""
    d = _text(direction)
    if d in ("forward", "foward"):  # GRU-1's schema spells its default "foward"
        return [False]
    if d == "reverse":
        return [True]
    if d == "bidirectional":
        return [False, True]
    raise PluginInterfaceError(f"unknown direction {d!r}")


def activations(names: Sequence[Any] | None, defaults: Sequence[str], n_dirs: int,
                alphas: Sequence[float] | None, betas: Sequence[float] | None
                ) -> list[Activation]:
    """The activation functions, ``len(defaults)`` per direction; alpha/beta values are
    taken in order by the functions that use them."""
    lst = [_text(n).lower() for n in names] if names else list(defaults) * n_dirs
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
        if name not in ACTIVATIONS:
            raise PluginInterfaceError(f"unknown recurrent activation {name!r} (known: "
                                       f"{', '.join(ACTIVATIONS)})")
        ua, ub, da, db = _PARAMS.get(name, (False, False, 0.0, 0.0))
        a = al.pop(0) if ua and al else da
        b = be.pop(0) if ub and be else db
        out.append(Activation(name, float(a), float(b)))
    return out


class RecurrentBase(Versioned, Op):
    """RNN, GRU and LSTM: ``gates`` blocks in W/R, ``n_state`` states (H; LSTM: H and C),
    ``default_acts`` the activations of one direction when the model gives none."""

    gates: ClassVar[int] = 1
    n_state: ClassVar[int] = 1
    n_outputs = 2
    default_acts: ClassVar[tuple[str, ...]] = ("tanh",)

    def setup(self) -> None:
        a = self.attrs
        try:
            #: per direction, whether it runs reversed
            self.reverse = directions(a["direction"])
            #: ``len(default_acts)`` activations per direction
            self.acts = activations(a["activations"], self.default_acts, len(self.reverse),
                                    a["activation_alpha"], a["activation_beta"])
        except PluginInterfaceError as exc:
            raise PluginInterfaceError(f"{self.op_type} {self.name!r}: {exc}") from exc

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        """Y and the ``n_state`` final-state outputs (Y_h, Y_c)."""
        x, w, r = list(inputs[0]), list(inputs[1]), list(inputs[2])
        if len(x) != 3 or len(r) != 3:
            raise PluginInterfaceError(f"{self.op_type}: X and R must be 3-D")
        nd = len(self.reverse)
        if w and w[0].is_constant() and w[0].get_constant_value() != nd:
            raise PluginInterfaceError(
                f"{self.op_type} {self.name!r}: W has {w[0]} directions, direction "
                f"{self.attrs['direction']!r} needs {nd}")
        h: IntLike = self.attrs["hidden_size"] if self.attrs["hidden_size"] else r[2]
        if self.attrs.get("layout", 0):
            y: list[IntLike] = [x[0], x[1], nd, h]
            st: list[IntLike] = [x[0], nd, h]
        else:
            y = [x[0], nd, x[1], h]
            st = [nd, x[1], h]
        return [y] + [list(st) for _ in range(self.n_state)]


class RNN(RecurrentBase):
    """H = f(X W^T + H R^T + Wb + Rb)."""


class GRUBase(RecurrentBase):
    """Gates z, r, h (f = sigmoid, g = tanh by default)."""

    gates = 3
    default_acts = ("sigmoid", "tanh")


class GRU_1(GRUBase, opsets=(1, 2)):  # noqa: N801
    """Opsets 1-2 (no linear_before_reset)."""


class GRU(GRUBase, opsets=(3, None)):
    """Opset 3+: linear_before_reset."""


class LSTM(RecurrentBase):
    """Gates i, o, f, c with optional peepholes (f = sigmoid, g = h = tanh by default);
    ``input_forget`` couples f = 1 - i."""

    gates = 4
    n_state = 2
    n_outputs = 3
    default_acts = ("sigmoid", "tanh", "tanh")
