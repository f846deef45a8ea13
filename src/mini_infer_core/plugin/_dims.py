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


#: a product of atoms: ((atom text, power), ...) sorted by text; () is the constant term
Monomial = tuple[tuple[str, int], ...]
#: a polynomial over atoms (symbols and operations that are not sums or products)
Poly = dict[Monomial, int]
_MIN_MAX = (DimensionOperation.MAX, DimensionOperation.MIN)
_COMMUTATIVE = (*_MIN_MAX, DimensionOperation.EQUAL)


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for atom, e in b:
        powers[atom] = powers.get(atom, 0) + e
    return tuple(sorted(powers.items()))


def _mono_div(a: Monomial, b: Monomial) -> Monomial | None:
    """``a / b`` when ``b`` divides ``a`` (every atom of b in a, to no higher power)."""
    powers = dict(a)
    for atom, e in b:
        if powers.get(atom, 0) < e:
            return None
        powers[atom] -= e
    return tuple(sorted((k, v) for k, v in powers.items() if v))


def _interval_mul(a: tuple[int | None, int | None], b: tuple[int | None, int | None]
                  ) -> tuple[int | None, int | None]:
    (alo, ahi), (blo, bhi) = a, b
    if alo is None or blo is None or alo < 0 or blo < 0:
        return None, None
    return alo * blo, (None if ahi is None or bhi is None else ahi * bhi)


class DimExpr:
    """An immutable integer expression. Build them with :class:`ExprBuilder` or operators.

    Sums, differences and products are kept as a polynomial in canonical form over *atoms*
    (symbols, and the operations that are no polynomial: floor and ceiling division, max,
    min, comparisons), so equal expressions are equal however they were built:
    ``(N * 12) // 12`` is ``N``, ``max(N, N)`` is ``N``, ``T * B - B * T`` is ``0``. Every
    expression's text is made once and is its identity (:meth:`same_as`)."""

    __slots__ = ("_value", "_symbol", "_op", "_args", "_poly", "_atoms", "_text",
                 "_symbols")

    def __init__(self, value: int | None = None, symbol: str | None = None,
                 op: DimensionOperation | None = None,
                 args: tuple[DimExpr, DimExpr] | None = None,
                 poly: Poly | None = None, atoms: dict[str, DimExpr] | None = None) -> None:
        self._value = value
        self._symbol = symbol
        self._op = op
        self._args = args
        if value is not None:
            self._poly: Poly = {(): value} if value else {}
            self._atoms: dict[str, DimExpr] = {}
            self._text = str(value)
            self._symbols: frozenset[str] = frozenset()
        elif poly is not None:  # a sum or product of atoms
            self._poly, self._atoms = poly, dict(atoms or {})
            self._text = _render(poly)
            self._symbols = frozenset().union(*(a._symbols for a in self._atoms.values()))
        else:  # an atom: a symbol, or an operation kept as it is
            if symbol is not None:
                self._text, self._symbols = symbol, frozenset((symbol,))
            else:
                assert op is not None and args is not None
                a, b = args
                if op in _MIN_MAX:  # max(a, b, c) for max(max(a, b), c)
                    parts = ", ".join(x._text for x in (*_chain(op, a), *_chain(op, b)))
                    self._text = f"{op.value}({parts})"
                else:
                    self._text = (f"{op.value}({a._text}, {b._text})"
                                  if op is DimensionOperation.CEIL_DIV
                                  else f"({a._text} {op.value} {b._text})")
                self._symbols = a._symbols | b._symbols
            self._poly, self._atoms = {((self._text, 1),): 1}, {self._text: self}

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
        return self._symbols

    def evaluate(self, bindings: Mapping[str, int]) -> int:
        if self._value is not None:
            return self._value
        if self._symbol is not None:
            return bindings[self._symbol]
        if self._op is not None:
            assert self._args is not None
            return _apply(self._op, self._args[0].evaluate(bindings),
                          self._args[1].evaluate(bindings))
        atoms = {k: a.evaluate(bindings) for k, a in self._atoms.items()}
        total = 0
        for mono, coeff in self._poly.items():
            term = coeff
            for atom, e in mono:
                term *= atoms[atom] ** e
            total += term
        return total

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
    def _of_poly(poly: Poly, atoms: dict[str, DimExpr]) -> DimExpr:
        poly = {m: c for m, c in poly.items() if c}
        if not poly:
            return DimExpr(value=0)
        if list(poly) == [()]:
            return DimExpr(value=poly[()])
        if len(poly) == 1:
            ((mono, coeff),) = poly.items()
            if coeff == 1 and len(mono) == 1 and mono[0][1] == 1:
                return atoms[mono[0][0]]
        used = {atom for mono in poly for atom, _ in mono}
        return DimExpr(poly=dict(sorted(poly.items(), key=lambda t: (t[0] == (), t[0]))),
                       atoms={k: v for k, v in atoms.items() if k in used})

    @staticmethod
    def operation(op: DimensionOperation, a: IntLike, b: IntLike) -> DimExpr:
        ea, eb = DimExpr.wrap(a), DimExpr.wrap(b)
        if ea._value is not None and eb._value is not None:
            return DimExpr(value=_apply(op, ea._value, eb._value))
        atoms = {**ea._atoms, **eb._atoms}
        if op in (DimensionOperation.SUM, DimensionOperation.SUB):
            sign = 1 if op is DimensionOperation.SUM else -1
            poly = dict(ea._poly)
            for m, c in eb._poly.items():
                poly[m] = poly.get(m, 0) + sign * c
            return DimExpr._of_poly(poly, atoms)
        if op is DimensionOperation.PROD:
            poly = {}
            for ma, ca in ea._poly.items():
                for mb, cb in eb._poly.items():
                    m = _mono_mul(ma, mb)
                    poly[m] = poly.get(m, 0) + ca * cb
            return DimExpr._of_poly(poly, atoms)
        simpler = _simplified(op, ea, eb)
        if simpler is not None:
            return simpler
        if op in _COMMUTATIVE and eb._text < ea._text:
            ea, eb = eb, ea
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
        if self._op is not None:
            assert self._args is not None
            return _op_bounds(self._op, self._args[0].bounds(), self._args[1].bounds())
        lo: int | None = 0
        hi: int | None = 0
        for mono, coeff in self._poly.items():
            t: tuple[int | None, int | None] = (coeff, coeff) if coeff >= 0 else (None, None)
            if coeff < 0:
                t = (1, 1)
            for atom, e in mono:
                for _ in range(e):
                    t = _interval_mul(t, self._atoms[atom].bounds())
            if coeff < 0:  # -|c| * [lo, hi] = [-|c| hi, -|c| lo]
                t = (None if t[1] is None else coeff * t[1],
                     None if t[0] is None else coeff * t[0])
            lo = None if lo is None or t[0] is None else lo + t[0]
            hi = None if hi is None or t[1] is None else hi + t[1]
        return lo, hi

    def same_as(self, o: IntLike) -> bool:
        """Equality of the canonical forms (``==`` keeps identity semantics for hashing)."""
        return self._text == DimExpr.wrap(o)._text

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"DimExpr({self})"

    def to_json(self) -> object:
        """A JSON-able form: an int, a symbol name, or ``[op, a, b]``."""
        if self._value is not None:
            return self._value
        if self._symbol is not None:
            return self._symbol
        if self._op is not None:
            assert self._args is not None
            return [self._op.name, self._args[0].to_json(), self._args[1].to_json()]
        total: object = None
        for mono, coeff in self._poly.items():
            term: object = coeff
            for atom, e in mono:
                for _ in range(e):
                    term = self._atoms[atom].to_json() if term == 1 else \
                        ["PROD", term, self._atoms[atom].to_json()]
            total = term if total is None else ["SUM", total, term]
        return total

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


def _render(poly: Poly) -> str:
    """The canonical text of a polynomial: terms in order, atoms then the coefficient."""
    parts = []
    for mono, coeff in poly.items():
        factors = [a if e == 1 else f"{a}^{e}" for a, e in mono]
        if not factors:
            parts.append((coeff, str(abs(coeff))))
        else:
            parts.append((coeff, " * ".join(factors + ([str(abs(coeff))] if abs(coeff) != 1
                                                       else []))))
    text = ""
    for k, (coeff, body) in enumerate(parts):
        text += (("-" if coeff < 0 else "") + body) if k == 0 else \
            ((" - " if coeff < 0 else " + ") + body)
    return f"({text})"


def _simplified(op: DimensionOperation, a: DimExpr, b: DimExpr) -> DimExpr | None:
    """An operation that is no polynomial, where it reduces: exact divisions, max/min and
    comparisons that structure or bounds decide."""
    if op in (DimensionOperation.FLOOR_DIV, DimensionOperation.CEIL_DIV):
        if b._value == 1:
            return a
        if len(b._poly) == 1:  # a divisor of one term: exact where it divides every term
            ((mb, cb),) = b._poly.items()
            if cb > 0:
                poly: Poly = {}
                for m, c in a._poly.items():
                    q = _mono_div(m, mb)
                    if q is None or c % cb:
                        return None
                    poly[q] = c // cb
                return DimExpr._of_poly(poly, {**a._atoms, **b._atoms})
        return None
    if op in _MIN_MAX:
        return _min_max(op, a, b)
    if op is DimensionOperation.EQUAL and a._text == b._text:
        return DimExpr(value=1)
    return None


def _chain(op: DimensionOperation, x: DimExpr) -> list[DimExpr]:
    """The arguments of a nest of ``op`` (max or min): ``[a, b, c]`` for ``max(max(a, b), c)``;
    ``[x]`` for anything else."""
    if x._op is not op:
        return [x]
    assert x._args is not None
    return _chain(op, x._args[0]) + _chain(op, x._args[1])


def _min_max(op: DimensionOperation, a: DimExpr, b: DimExpr) -> DimExpr:
    """``max(a, b)`` or ``min(a, b)`` in canonical form: the arguments of nested maxes (mins)
    taken together, each once; an argument another one bounds dropped (``max(min(C, N), N)``
    is ``N``, as is ``max(N, 0)`` and ``max(N - 1, N)``); the constants as one; the rest in
    the order of their text, nested from the left (shown as ``max(a, b, c)``)."""
    is_max = op is DimensionOperation.MAX
    other = DimensionOperation.MIN if is_max else DimensionOperation.MAX
    unique = {x._text: x for x in (*_chain(op, a), *_chain(op, b))}
    # absorption: max(x, min(x, y)) is x, min(x, max(x, y)) is x
    args = [x for x in unique.values()
            if not (x._op is other and any(y._text in unique for y in _chain(other, x)))]
    values = [x._value for x in args if x._value is not None]
    if len(values) > 1:
        args = [x for x in args if x._value is None] + [
            DimExpr(value=max(values) if is_max else min(values))]
    kept: list[DimExpr] = []  # none of them bounded by another
    for x in args:  # each pair's difference bounded once
        useless, beaten = False, []
        for y in kept:
            lo, hi = DimExpr.operation(DimensionOperation.SUB, x, y).bounds()  # of x - y
            x_below, y_below = hi is not None and hi <= 0, lo is not None and lo >= 0
            if x_below if is_max else y_below:  # y is the answer wherever x would be
                useless = True
                break
            if y_below if is_max else x_below:
                beaten.append(y)
        if not useless:
            kept = [y for y in kept if all(y is not b for b in beaten)] + [x]
    kept.sort(key=lambda x: x._text)
    result = kept[0]
    for x in kept[1:]:
        result = DimExpr(op=op, args=(result, x))
    return result


def _op_bounds(op: DimensionOperation, a: tuple[int | None, int | None],
               b: tuple[int | None, int | None]) -> tuple[int | None, int | None]:
    (alo, ahi), (blo, bhi) = a, b
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
