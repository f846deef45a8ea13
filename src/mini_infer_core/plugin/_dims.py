"""Dimension expressions for dynamic shapes (TensorRT's IDimensionExpr / IExprBuilder).

A :class:`DimExpr` is a constant, a named symbol (a dynamic input dimension) or an operation
on two expressions. Expressions over constants fold at once, so a static network never holds
anything but constants. Python operators work on them: ``(h + 2 * pad - k) // stride + 1``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Union

#: the builder keeps the values (and contents) of constants of at most this many elements
MAX_VALUES = 64

__all__ = ["DimensionOperation", "DimExpr", "DimsExprs", "ExprBuilder", "IntLike", "MAX_VALUES"]


class DimensionOperation(enum.Enum):
    SUM = "+"
    PROD = "*"
    MAX = "max"
    MIN = "min"
    SUB = "-"
    EQUAL = "=="
    LESS = "<"
    FLOOR_DIV = "//"
    CEIL_DIV = "ceil_div"


def _apply(op: DimensionOperation, a: int, b: int) -> int:
    if op is DimensionOperation.SUM:
        return a + b
    if op is DimensionOperation.PROD:
        return a * b
    if op is DimensionOperation.MAX:
        return max(a, b)
    if op is DimensionOperation.MIN:
        return min(a, b)
    if op is DimensionOperation.SUB:
        return a - b
    if op is DimensionOperation.EQUAL:
        return int(a == b)
    if op is DimensionOperation.LESS:
        return int(a < b)
    if op is DimensionOperation.FLOOR_DIV:
        return a // b
    return -(-a // b)  # CEIL_DIV


IntLike = Union[int, "DimExpr"]


class DimExpr:
    """An immutable integer expression. Build them with :class:`ExprBuilder` or operators."""

    __slots__ = ("_value", "_symbol", "_op", "_args")

    def __init__(
        self,
        value: int | None = None,
        symbol: str | None = None,
        op: DimensionOperation | None = None,
        args: tuple[DimExpr, DimExpr] | None = None,
    ) -> None:
        self._value = value
        self._symbol = symbol
        self._op = op
        self._args = args

    # -- TensorRT's IDimensionExpr ------------------------------------------------------
    def is_constant(self) -> bool:
        return self._value is not None

    def get_constant_value(self) -> int:
        if self._value is None:
            raise ValueError(f"dimension {self} is not a build-time constant")
        return self._value

    # -- evaluation -----------------------------------------------------------------------
    @property
    def symbols(self) -> frozenset[str]:
        if self._symbol is not None:
            return frozenset((self._symbol,))
        if self._args is not None:
            return self._args[0].symbols | self._args[1].symbols
        return frozenset()

    def evaluate(self, bindings: Mapping[str, int]) -> int:
        if self._value is not None:
            return self._value
        if self._symbol is not None:
            return bindings[self._symbol]
        assert self._op is not None and self._args is not None
        return _apply(self._op, self._args[0].evaluate(bindings), self._args[1].evaluate(bindings))

    # -- construction ---------------------------------------------------------------------
    @staticmethod
    def const(value: int) -> DimExpr:
        return DimExpr(value=int(value))

    @staticmethod
    def sym(name: str) -> DimExpr:
        return DimExpr(symbol=name)

    @staticmethod
    def wrap(x: IntLike) -> DimExpr:
        return x if isinstance(x, DimExpr) else DimExpr(value=int(x))

    @staticmethod
    def operation(op: DimensionOperation, a: IntLike, b: IntLike) -> DimExpr:
        ea, eb = DimExpr.wrap(a), DimExpr.wrap(b)
        if ea._value is not None and eb._value is not None:
            return DimExpr(value=_apply(op, ea._value, eb._value))
        # a few identities keep symbolic shapes readable
        if op is DimensionOperation.PROD and (eb._value == 1 or ea._value == 1):
            return ea if eb._value == 1 else eb
        if op in (DimensionOperation.SUM, DimensionOperation.SUB) and eb._value == 0:
            return ea
        if op is DimensionOperation.SUM and ea._value == 0:
            return eb
        if op in (DimensionOperation.FLOOR_DIV, DimensionOperation.CEIL_DIV) and eb._value == 1:
            return ea
        return DimExpr(op=op, args=(ea, eb))

    def __add__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.SUM, self, o)

    def __radd__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.SUM, o, self)

    def __sub__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.SUB, self, o)

    def __rsub__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.SUB, o, self)

    def __mul__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.PROD, self, o)

    def __rmul__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.PROD, o, self)

    def __floordiv__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.FLOOR_DIV, self, o)

    def __rfloordiv__(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.FLOOR_DIV, o, self)

    def ceil_div(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.CEIL_DIV, self, o)

    def max(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.MAX, self, o)

    def min(self, o: IntLike) -> DimExpr:
        return DimExpr.operation(DimensionOperation.MIN, self, o)

    def bounds(self) -> tuple[int | None, int | None]:
        """What the expression can be, ``(lowest, highest)`` (None: unbounded), knowing that
        every symbol is a dimension (never negative). Comparisons decide with it where
        values alone cannot: a dimension is never -1."""
        if self._value is not None:
            return self._value, self._value
        if self._symbol is not None:
            return 0, None
        assert self._op is not None and self._args is not None
        (alo, ahi), (blo, bhi) = self._args[0].bounds(), self._args[1].bounds()
        op = self._op

        def add(x: int | None, y: int | None) -> int | None:
            return None if x is None or y is None else x + y

        if op is DimensionOperation.SUM:
            return add(alo, blo), add(ahi, bhi)
        if op is DimensionOperation.SUB:
            return (None if alo is None or bhi is None else alo - bhi,
                    None if ahi is None or blo is None else ahi - blo)
        if op is DimensionOperation.PROD and alo is not None and blo is not None \
                and alo >= 0 and blo >= 0:
            return alo * blo, (None if ahi is None or bhi is None else ahi * bhi)
        if op is DimensionOperation.MAX:
            return (None if alo is None and blo is None else max(x for x in (alo, blo)
                                                                 if x is not None),
                    None if ahi is None or bhi is None else max(ahi, bhi))
        if op is DimensionOperation.MIN:
            return (None if alo is None or blo is None else min(alo, blo),
                    None if ahi is None and bhi is None else min(x for x in (ahi, bhi)
                                                                 if x is not None))
        if op in (DimensionOperation.FLOOR_DIV, DimensionOperation.CEIL_DIV) and \
                blo is not None and blo == bhi and blo > 0 and alo is not None:
            return _apply(op, alo, blo), (None if ahi is None else _apply(op, ahi, blo))
        if op in (DimensionOperation.EQUAL, DimensionOperation.LESS):
            return 0, 1
        return None, None

    def same_as(self, o: IntLike) -> bool:
        """Structural equality (``==`` is kept for identity semantics of hashing)."""
        other = DimExpr.wrap(o)
        return str(self) == str(other)

    def __str__(self) -> str:
        if self._value is not None:
            return str(self._value)
        if self._symbol is not None:
            return self._symbol
        assert self._op is not None and self._args is not None
        a, b = self._args
        if self._op in (DimensionOperation.MAX, DimensionOperation.MIN,
                        DimensionOperation.CEIL_DIV):
            return f"{self._op.value}({a}, {b})"
        return f"({a} {self._op.value} {b})"

    def __repr__(self) -> str:
        return f"DimExpr({self})"

    def to_json(self) -> object:
        """A JSON-able form: an int, a symbol name, or ``[op, a, b]``."""
        if self._value is not None:
            return self._value
        if self._symbol is not None:
            return self._symbol
        assert self._op is not None and self._args is not None
        return [self._op.name, self._args[0].to_json(), self._args[1].to_json()]

    @staticmethod
    def from_json(obj: object) -> DimExpr:
        if isinstance(obj, bool):
            raise ValueError("bad dimension expression")
        if isinstance(obj, int):
            return DimExpr.const(obj)
        if isinstance(obj, str):
            return DimExpr.sym(obj)
        if isinstance(obj, list) and len(obj) == 3 and isinstance(obj[0], str):
            op = DimensionOperation[obj[0]]
            return DimExpr.operation(op, DimExpr.from_json(obj[1]), DimExpr.from_json(obj[2]))
        raise ValueError(f"bad dimension expression {obj!r}")


class DimsExprs(Sequence[DimExpr]):
    """The shape of a tensor as dimension expressions.

    ``values`` is set for small integer tensors whose *contents* are known at build time
    (constants such as Reshape's target shape): a plugin declaring the input in its
    ``shape_inputs`` receives them here. ``array`` holds the contents of a small constant of
    any element type.
    """

    __slots__ = ("_dims", "values", "array")

    def __init__(self, dims: Sequence[IntLike], values: Sequence[IntLike] | None = None,
                 array: Any = None) -> None:
        self._dims = tuple(DimExpr.wrap(d) for d in dims)
        self.values: tuple[DimExpr, ...] | None = (
            None if values is None else tuple(DimExpr.wrap(v) for v in values)
        )
        #: the contents of a small constant tensor of any type (e.g. Resize's float scales),
        #: as a read-only NumPy array; None when the tensor is not a build-time constant
        self.array = array

    @classmethod
    def of_constant(cls, array: Any) -> DimsExprs:
        """The shape of a build-time constant, as the builder hands it to plugins: small
        integer and bool tensors, and float ones whose elements are all whole numbers, carry
        their ``values`` (flattened); small tensors of any type their ``array`` (read-only)."""
        values = None
        if array.size <= MAX_VALUES and array.dtype.kind in "iub":
            values = [int(v) for v in array.reshape(-1)]
        elif array.size <= MAX_VALUES and array.dtype.kind == "f":
            flat = array.reshape(-1).astype(float)
            if all(math.isfinite(v) and v == int(v) and abs(v) < 2**53 for v in flat):
                values = [int(v) for v in flat]
        view = None
        if array.size <= MAX_VALUES and not array.dtype.hasobject:
            view = array.view()
            view.flags.writeable = False
        return cls(array.shape, values=values, array=view)

    @property
    def nb_dims(self) -> int:
        return len(self._dims)

    def __len__(self) -> int:
        return len(self._dims)

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        if isinstance(i, slice):
            return list(self._dims[i])
        return self._dims[i]

    def __iter__(self) -> Iterator[DimExpr]:
        return iter(self._dims)

    def is_static(self) -> bool:
        return all(d.is_constant() for d in self._dims)

    def to_tuple(self) -> tuple[int, ...]:
        return tuple(d.get_constant_value() for d in self._dims)

    def display(self) -> tuple[int | str, ...]:
        return tuple(d.get_constant_value() if d.is_constant() else str(d) for d in self._dims)

    def evaluate(self, bindings: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(d.evaluate(bindings) for d in self._dims)

    def __repr__(self) -> str:
        return f"DimsExprs({self.display()})"


class ExprBuilder:
    """TensorRT's IExprBuilder: makes constants and operations."""

    def constant(self, value: int) -> DimExpr:
        return DimExpr.const(value)

    def operation(self, op: DimensionOperation, a: IntLike, b: IntLike) -> DimExpr:
        return DimExpr.operation(op, a, b)
