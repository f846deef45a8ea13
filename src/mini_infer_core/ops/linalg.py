"""Linear algebra: Det."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import PluginInterfaceError
from ..plugin import DimsExprs
from ..plugin.shapes import FLOAT_TYPES, Shapes
from ._schema import Op

__all__ = ["Det"]


class Det(Op):
    """Determinants of ``[*, M, M]``: shape ``[*]`` (a scalar for one matrix)."""

    dtypes = FLOAT_TYPES

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> Shapes:
        x = inputs[0]
        assert x is not None
        if len(x) < 2:
            raise PluginInterfaceError(f"Det: input must have rank >= 2, it has {len(x)}")
        m, n = x[-2], x[-1]
        if m.is_constant() and n.is_constant() and \
                m.get_constant_value() != n.get_constant_value():
            raise PluginInterfaceError(f"Det: matrices must be square, got {m} x {n}")
        return [list(x)[:-2]]
