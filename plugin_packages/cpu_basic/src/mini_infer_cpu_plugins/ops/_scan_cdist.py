"""The Scan that skl2onnx writes for pairwise squared distances (k-NN, ``cdist``), run as one
array computation instead of one body run per scanned row.

Its body carries one state ``s`` [N, F] through unchanged (``Identity``) and, for each row
``x`` [F] of the scanned input, gives ``ReduceSumSquare(Sub(s, x), axes=[1], keepdims=0)``
[N] (perhaps through an ``Identity``). The iterations are independent, so their outputs
stacked [M, N] are ``sum((s - X[t]) ** 2, axis=1)`` for every t at once (the squares
added in feature order: within float rounding of the body's sum, which onnxruntime also
orders its own way). :func:`distance_body` recognises the body; :func:`scan_distances` computes it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from mini_infer_core.plugin.arrays import NDArray

__all__ = ["distance_body", "scan_distances"]

#: elements of (rows of X) x N x F held at once
_CHUNK = 1 << 20
#: pairs (rows of X x N) from which the sum is taken one feature at a time
_BY_FEATURE = 8192


def distance_body(graph: onnx.GraphProto) -> bool | None:
    """Whether ``graph`` is skl2onnx's squared-distance body: None if not, else whether the
    difference is ``s - x`` (True) or ``x - s`` (False; the squares are the same)."""
    if len(graph.input) != 2 or len(graph.output) != 2 or graph.initializer \
            or graph.sparse_initializer or not 3 <= len(graph.node) <= 4:
        return None
    state, row = (i.name for i in graph.input)
    out_state, out_scan = (o.name for o in graph.output)
    by_output = {}
    for node in graph.node:
        if node.domain not in ("", "ai.onnx") or len(node.output) != 1:
            return None
        by_output[node.output[0]] = node
    carried = by_output.get(out_state)
    if carried is None or carried.op_type != "Identity" or list(carried.input) != [state]:
        return None
    reduce = by_output.get(out_scan)
    if reduce is not None and reduce.op_type == "Identity":
        reduce = by_output.get(reduce.input[0])
    if reduce is None or reduce.op_type != "ReduceSumSquare" or len(reduce.input) != 1:
        return None
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in reduce.attribute}
    if list(attrs.get("axes", [])) not in ([1], [-1]) or attrs.get("keepdims", 1) != 0 \
            or set(attrs) - {"axes", "keepdims"}:
        return None
    sub = by_output.get(reduce.input[0])
    if sub is None or sub.op_type != "Sub" or sub.attribute:
        return None
    if list(sub.input) == [state, row]:
        return True
    if list(sub.input) == [row, state]:
        return False
    return None


def scan_distances(state: NDArray[Any], xs: NDArray[Any], state_first: bool
                   ) -> NDArray[Any] | None:
    """The stacked scan output [M, N] for state [N, F] and scanned rows [M, F] (None where
    the shapes or types are not the simple case: the body then runs as usual)."""
    if state.ndim != 2 or xs.ndim != 2 or state.shape[1] != xs.shape[1] \
            or state.dtype != xs.dtype or state.dtype.kind != "f":
        return None
    m, (n, f) = xs.shape[0], state.shape
    if m * n >= _BY_FEATURE:  # many pairs: one feature at a time over all of them
        out = np.zeros((m, n), state.dtype)
        for j in range(f):
            d = np.subtract.outer(xs[:, j], state[:, j])
            d *= d
            out += d
        return out
    out = np.empty((m, n), state.dtype)
    step = max(1, _CHUNK // max(n * f, 1))
    for t0 in range(0, m, step):
        block = xs[t0:t0 + step, None, :]
        d = state[None, :, :] - block if state_first else block - state[None, :, :]
        np.einsum("mnf,mnf->mn", d, d, out=out[t0:t0 + step])
    return out
