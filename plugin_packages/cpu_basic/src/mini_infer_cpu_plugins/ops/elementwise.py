"""Elementwise arithmetic: broadcasting binary operators, Sum and unary math functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.plugin import BroadcastPlugin, DimsExprs, UnaryPlugin, broadcast_dims

from ..serialization import CpuPlugin
from ._util import FLOATS, IntLike

__all__ = ["Add", "Sub", "Mul", "Div", "Pow", "Sum", "Exp", "Log", "Sqrt", "Neg", "Abs"]

Array = NDArray[Any]


def _legacy_align(b_rank: int, a_rank: int, broadcast: int, axis: int | None) -> int:
    """Trailing singleton dims to append to B for opset<7 ``broadcast=1, axis=k``."""
    if not broadcast or axis is None:
        return 0
    k = axis + a_rank if axis < 0 else axis
    return max(0, a_rank - k - b_rank)


class _Binary(CpuPlugin, BroadcastPlugin):
    """A two-input broadcasting operator. Opset<7 legacy ``broadcast``/``axis`` supported."""

    attributes: ClassVar[dict[str, Any]] = {
        "broadcast": 0, "axis": None, "consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        a, b = inputs[0], list[IntLike](inputs[1])
        b = b + [1] * _legacy_align(len(b), len(a), self.attrs["broadcast"], self.attrs["axis"])
        return [list(broadcast_dims(a, b))]

    def compute(self, a: Array, b: Array, *, out: Array, broadcast: int = 0,
                axis: int | None = None, **_: Any) -> None:
        extra = _legacy_align(b.ndim, a.ndim, broadcast, axis)
        if extra:
            b = b.reshape(b.shape + (1,) * extra)
        self.apply(a, b, out)

    def apply(self, a: Array, b: Array, out: Array) -> None:
        raise NotImplementedError


class Add(_Binary):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        np.add(a, b, out=out)


class Sub(_Binary):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        np.subtract(a, b, out=out)


class Mul(_Binary):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        np.multiply(a, b, out=out)


class Div(_Binary):
    def apply(self, a: Array, b: Array, out: Array) -> None:
        if out.dtype.kind in "iu":
            # ONNX integer division truncates toward zero (as C); float->int casts truncate
            with np.errstate(divide="ignore", invalid="ignore"):
                np.divide(a, b, out=out, casting="unsafe")
        else:
            np.divide(a, b, out=out)


class Pow(_Binary):
    """X ** Y; the output has X's type (Y may have another type from opset 12)."""

    attributes: ClassVar[dict[str, Any]] = {"broadcast": 0, "axis": None}

    def apply(self, a: Array, b: Array, out: Array) -> None:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            np.power(a, b, out=out, casting="unsafe")


class Sum(CpuPlugin, BroadcastPlugin):
    """Variadic elementwise sum with multidirectional broadcasting."""

    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}

    def compute(self, *xs: Array, out: Array, **_: Any) -> None:
        if len(xs) == 1:
            np.copyto(out, xs[0])
            return
        np.add(xs[0], xs[1], out=out)
        for x in xs[2:]:
            np.add(out, x, out=out)


class _Unary(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"consumed_inputs": None}


class Exp(_Unary):
    dtypes = FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(over="ignore"):
            np.exp(x, out=out)


class Log(_Unary):
    dtypes = FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(divide="ignore", invalid="ignore"):
            np.log(x, out=out)


class Sqrt(_Unary):
    dtypes = FLOATS

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        with np.errstate(invalid="ignore"):
            np.sqrt(x, out=out)


class Neg(_Unary):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        np.negative(x, out=out)


class Abs(_Unary):
    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        np.abs(x, out=out)
