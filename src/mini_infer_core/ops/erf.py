"""Erf, a family of its own: torch exports GELU as ``x * 0.5 * (1 + Erf(x / sqrt(2)))``, so
transformer engines name it, and an operator in :mod:`.math_unary` would make that whole
family's classes at their load (issue 30)."""

from __future__ import annotations

from ._schema import UnaryOp

__all__ = ["Erf"]


class Erf(UnaryOp):
    """The error function 2/sqrt(pi) * integral of e^(-t^2) from 0 to x; any numeric type
    (integers give 0 at 0, +-1 elsewhere)."""
