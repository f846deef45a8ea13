"""Kernels whose output shapes depend on the *values* of some inputs (axes, pads, K, ...).

``ValuePlugin`` reads those values at build time when they are known (constants, or computed
from shapes); the output shapes are then exact. When they are not known (a tensor computed at
run time), instead of refusing the model the plugin turns *data-dependent*: the dimensions it
cannot tell become fresh symbols (``self.dynamic_dim``), and the engine calls
``compute(*inputs, **attributes)`` without ``out`` and takes the arrays it returns.

The value inputs are named in ``value_inputs``. An index also in ``shape_inputs`` stays
required at build time (the engine refuses a ``shape_inputs`` input computed at run time, and
``values`` raises), which keeps the older contract of Reshape, Unsqueeze and ConstantOfShape.
Whether a plugin instance became data-dependent survives ``clone()`` and ``serialize()``.

The device-independent shape and value helpers (``value_array``, ``flat``...) are in
:mod:`mini_infer_core.plugin.shapes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimExpr, DimsExprs
from mini_infer_core.plugin.shapes import absent, input_values

from ..serialization import CpuPlugin

__all__ = ["ValuePlugin", "emit", "as_ints"]

Array = NDArray[Any]


class ValuePlugin(CpuPlugin):
    """A plugin whose output shapes read the values of the inputs in ``value_inputs``."""

    #: inputs whose values the output shapes need; known ones arrive in ``DimsExprs.values``
    value_inputs: ClassVar[tuple[int, ...]] = ()

    # -- values ---------------------------------------------------------------------------
    def values(self, inputs: Sequence[DimsExprs | None], index: int
               ) -> tuple[DimExpr, ...] | None:
        """The build-time values of input ``index`` (``()`` for an empty one), else None."""
        if absent(inputs, index):
            return None
        vals = input_values(inputs, index)
        if vals is None and index in self.shape_inputs:
            raise PluginInterfaceError(
                f"{self.op_type}: the values of input {index} must be known when the engine "
                "is built (a constant or computed from shapes only)")
        return vals

    def ints(self, inputs: Sequence[DimsExprs | None], index: int) -> list[int] | None:
        """The values of input ``index`` when they are all build-time constants, else None."""
        vals = self.values(inputs, index)
        if vals is None or not all(v.is_constant() for v in vals):
            return None
        return [v.get_constant_value() for v in vals]

    def runtime(self, dynamic: bool = True) -> bool:
        """Record whether the output shapes are known only at run time; returns ``dynamic``."""
        return self.mark_data_dependent(dynamic)

    def unknown_dims(self, rank: int, label: str = "d") -> list[DimExpr]:
        """``rank`` dimensions known only once the node has run."""
        return [self.dynamic_dim(f"{label}{i}") for i in range(rank)]


def as_ints(x: Array | None) -> list[int]:
    """An integer input tensor as a list of Python ints (empty for an absent input)."""
    if x is None:
        return []
    return [int(v) for v in np.asarray(x).reshape(-1)]


def emit(result: Any, out: Any) -> Any:
    """Write ``result`` into ``out``; with no ``out`` (a data-dependent call) return it.

    Several outputs are tuples on both sides. Returned arrays never alias an input."""
    if out is None:
        if isinstance(result, tuple):
            return tuple(_own(r) for r in result)
        return _own(result)
    if isinstance(out, tuple):
        for o, r in zip(out, result, strict=True):
            _copy(o, r)
    else:
        _copy(out, result)
    return None


def _own(r: Any) -> Any:
    r = np.asarray(r)
    return r.copy() if r.base is not None else r


def _copy(out: Array, r: Any) -> None:
    r = np.asarray(r)
    if r.shape != out.shape and r.size == out.size:
        r = r.reshape(out.shape)
    np.copyto(out, r, casting="unsafe")
