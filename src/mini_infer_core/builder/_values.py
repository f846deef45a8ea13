"""Build-time values of small integer tensors (shape computations).

A plugin may implement ``output_values(inputs)``; what it returns is checked here (one entry
per output, flattened, as many values as the output has elements) and kept in the tensor's
``DimsExprs.values``, where consumers that declared the input in ``shape_inputs`` read it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..plugin import DataType, DimExpr, DimsExprs, IPluginV2
from ..plugin import _adapter as adapter
from ..plugin._dims import MAX_VALUES

__all__ = ["output_values", "constant_values"]

_INT_TYPES = {DataType.INT64, DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT8,
              DataType.UINT16, DataType.UINT32, DataType.UINT64, DataType.BOOL}
#: float types whose values are kept where the plugin's inference is exact for them
_FLOAT_TYPES = {DataType.FLOAT, DataType.DOUBLE, DataType.HALF, DataType.BFLOAT16}


def output_values(plugin: IPluginV2, in_dims: Sequence[DimsExprs | None],
                  out_dims: Sequence[DimsExprs], out_types: Sequence[DataType]
                  ) -> list[tuple[DimExpr, ...] | None]:
    none: list[tuple[DimExpr, ...] | None] = [None] * len(out_dims)
    ability = adapter.values_of(plugin)
    if ability is None:
        return none
    try:
        got = ability.output_values(in_dims)  # type: ignore[arg-type]  # None: absent input
    except (ValueError, TypeError, IndexError, KeyError, AttributeError):
        return none  # a value inference that does not apply is simply unknown
    if not got:
        return none
    out: list[tuple[DimExpr, ...] | None] = []
    for vals, d, t in zip(list(got) + [None] * len(out_dims), out_dims, out_types,
                          strict=False):
        exact = t in _INT_TYPES or (t in _FLOAT_TYPES and ability.float_values)
        if vals is None or not exact or not d.is_static():
            out.append(None)
            continue
        exprs = tuple(DimExpr.wrap(v) for v in vals)
        n = 1
        for x in d.to_tuple():
            n *= x
        out.append(exprs if len(exprs) == n and n <= MAX_VALUES else None)
    return out


def constant_values(values: tuple[DimExpr, ...] | None) -> bool:
    return values is not None and all(v.is_constant() for v in values)
