"""A Reshape's target shape computed from its input's own shape becomes a constant.

Exporters write ``Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), 2, C / 2, H, W))`` for a
batch they could not fix (torch's ShuffleNet channel shuffle, 16 of them). Where the batch is
symbolic, value inference knows every entry of that target but cannot fold it: the first
entry is ``batch``, so the Shape -> Gather -> Unsqueeze -> Concat chain ran on every call, with
the DequantizeLinear of an 8-bit tensor that only the Shape read. Here, after inference, a
Reshape (``allowzero`` 0) whose target's entries are each a constant or exactly its input's
dimension at the same index reads a constant instead, 0 at those entries (``allowzero`` 0:
"copy the input's dimension"), and the prune pass drops the chain that nothing reads any
more. The result is the same shape for every batch size.
"""

from __future__ import annotations

import numpy as np

from ..plugin import DataType, DimsExprs
from .state import BuildState, NodeWork

__all__ = ["constant_target"]


def constant_target(state: BuildState, work: NodeWork) -> bool:
    """Give ``work``'s Reshape a constant target where its computed one is (see the module);
    True if it did."""
    node = work.node
    if (node.op_type != "Reshape" or node.domain or len(work.inputs) != 2
            or not all(work.inputs) or work.inputs[1] in state.constants):
        return False
    zero = node.fields.get("allowzero")
    if zero is not None and int(zero.to_value()) != 0:
        return False
    x, target = state.dims.get(work.inputs[0]), state.dims.get(work.inputs[1])
    values = target.values if target is not None else None
    if x is None or values is None or not values:
        return False
    dims = list(x)
    out: list[int] = []
    for i, v in enumerate(values):
        if v.is_constant():
            out.append(int(v.get_constant_value()))
        elif i < len(dims) and v.same_as(dims[i]):
            out.append(0)  # allowzero 0: the input's dimension i
        else:
            return False
    arr = np.array(out, dtype=np.int64)
    name = f"{work.inputs[1]}:constant_target"
    state.constants[name] = arr
    state.dims[name] = DimsExprs.of_constant(arr)
    state.types[name] = DataType.INT64
    work.inputs[1] = name
    work.in_dims[1] = state.dims[name]
    return True
