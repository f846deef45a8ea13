"""QDQ fusion for the rewrite pass: the chains onnxruntime's ``quantize_static`` writes (QDQ
format) become its integer operators, before plugins are chosen, as onnxruntime's own QDQ
transformer does:

- ``DequantizeLinear(x_q) -> Conv <- DequantizeLinear(w_q constant)`` (bias: a constant, or
  the DequantizeLinear of an int32 constant) ``-> [Relu] -> QuantizeLinear`` ->
  ``QLinearConv``;
- ``DequantizeLinear(a_q) -> MatMul <- DequantizeLinear(b_q) -> [Relu] -> QuantizeLinear`` ->
  ``QLinearMatMul``.

Scales and zero points must be constants: x's, y's and a's one value, W's one value or one per
output channel (DequantizeLinear's ``axis`` 0), B's one value or one per column (a 2-D B,
``axis`` 1). A bias whose scale is x_scale * w_scale[m] (what ``quantize_static`` writes) is
taken as it is; any other is quantized to that scale (rounded half to even), as onnxruntime's
QDQ transformer does. A Relu is absorbed where the output's quantization already clips at 0
(its zero point is the type's minimum): ``Q(max(y, 0)) = max(Q(y), Q(0))``, and Q(0) is that
minimum. Anything else keeps its float nodes (it still runs, unfused). The integer nodes run
on whichever plugin implements them (the compiled integer GEMM in mini-infer-cpu-native).

A chain is rewritten only where its intermediate tensors are read by nothing else; a
DequantizeLinear read by other nodes too stays for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..network import Node
from ..plugin import PluginField, PluginFieldCollection

if TYPE_CHECKING:
    from .rewrite import _Graph

__all__ = ["qdq_conv", "qdq_matmul"]

Array = np.ndarray[Any, Any]
_INT8 = (np.dtype(np.uint8), np.dtype(np.int8))
_CONV_ATTRS = ("auto_pad", "dilations", "group", "kernel_shape", "pads", "strides")


def _const(g: _Graph, name: str) -> Array | None:
    return g.constants.get(name) if name else None


def _dq(g: _Graph, tensor: str, zps: tuple[np.dtype[Any], ...] = _INT8
        ) -> tuple[Node, str, Array, Array, int] | None:
    """The DequantizeLinear making ``tensor``: (it, x, scale, zero point, axis) where its
    scale (float32) and zero point (of ``zps``) are constants."""
    d = g.node(tensor, "DequantizeLinear")
    if d is None or len(d.inputs) < 3 or tensor in g.outputs:
        return None
    scale, zp = _const(g, d.inputs[1]), _const(g, d.inputs[2])
    attrs = d.fields.values_dict()
    if (scale is None or zp is None or scale.dtype != np.float32 or zp.dtype not in zps
            or attrs.get("block_size", 0) or (zp.size != 1 and scale.shape != zp.shape)):
        return None
    return d, d.inputs[0], scale, zp, int(attrs.get("axis", 1))


def _requant(g: _Graph, tensor: str) -> tuple[list[str], str, Array] | None:
    """The QuantizeLinear (after an absorbable Relu) reading ``tensor``: (the node names,
    the chain's result, [y_scale, y_zero_point] names) with one scalar scale and zero point."""
    names: list[str] = []
    readers = g.readers.get(tensor, [])
    if len(readers) != 1 or tensor in g.outputs:
        return None
    nxt = g.nodes[readers[0]]
    relu = nxt is not None and nxt.op_type == "Relu" and not nxt.domain
    if relu:
        assert nxt is not None
        names.append(nxt.outputs[0])
        tensor = nxt.outputs[0]
        readers = g.readers.get(tensor, [])
        if len(readers) != 1 or tensor in g.outputs:
            return None
        nxt = g.nodes[readers[0]]
    if nxt is None or nxt.op_type != "QuantizeLinear" or nxt.domain or len(nxt.inputs) < 3:
        return None
    scale, zp = _const(g, nxt.inputs[1]), _const(g, nxt.inputs[2])
    attrs = nxt.fields.values_dict()
    if (scale is None or zp is None or scale.size != 1 or zp.size != 1
            or scale.dtype != np.float32 or zp.dtype not in _INT8
            or attrs.get("output_dtype", 0) or attrs.get("block_size", 0)):
        return None
    if relu and int(zp.reshape(-1)[0]) != np.iinfo(zp.dtype).min:
        return None  # the Relu clips inside the output's range: keep it
    return [*names, nxt.outputs[0]], nxt.outputs[0], np.array(nxt.inputs[1:3])


def _chain(g: _Graph, tensors: list[str]) -> list[int]:
    return [g.producer[t] for t in tensors]


def _node(like: Node, op: str, inputs: list[str], output: str, attrs: dict[str, Any]
          ) -> Node:
    fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
    return Node(f"{like.name}:{op}", op, "", inputs, [output], fields, 10)


def _bias(g: _Graph, name: str, x_scale: Array, w_scale: Array, m: int,
          fresh: dict[str, Array]) -> tuple[str, list[int]] | None:
    """The int32 bias input at scale x_scale * w_scale (a new constant where it had to be
    quantized), and the DequantizeLinear node it came from when that node goes."""
    if not name:
        return "", []
    want = (x_scale.reshape(()) * w_scale.reshape(-1)).astype(np.float32)
    d = _dq(g, name, (np.dtype(np.int32),))
    if d is None:
        b = _const(g, name)
        if b is None or b.dtype != np.float32 or b.size != m:
            return None
        value, gone = b.reshape(-1).astype(np.float64), []
    else:
        node, raw, scale, zp, _ = d
        b = _const(g, raw)
        if b is None or b.size != m or b.dtype != np.int32:
            return None
        gone = _chain(g, [name]) if g.private(name) else []
        if not np.any(zp) and np.array_equal(np.broadcast_to(scale.reshape(-1), (m,)),
                                             np.broadcast_to(want, (m,))):
            return raw, gone
        value = (b.reshape(-1).astype(np.float64) - zp.astype(np.float64).reshape(-1)
                 ) * scale.astype(np.float64).reshape(-1)
    q = np.rint(value / np.broadcast_to(want.astype(np.float64), (m,)))
    if np.any(np.abs(q) > 2**31 - 1):
        return None
    new = f"{name}:qdq_int32"
    fresh[new] = q.astype(np.int32)
    return new, gone


def qdq_conv(g: _Graph, i: int, conv: Node, fresh: dict[str, Array]
             ) -> tuple[list[int], Node] | None:
    """DequantizeLinear x and W -> Conv -> [Relu] -> QuantizeLinear as a QLinearConv."""
    if conv.op_type != "Conv" or len(conv.inputs) < 2:
        return None
    x = _dq(g, conv.inputs[0])
    w = _dq(g, conv.inputs[1])
    out = _requant(g, conv.outputs[0])
    if x is None or w is None or out is None or conv.inputs[0] == conv.inputs[1]:
        return None
    wq = _const(g, w[1])
    if (x[2].size != 1 or wq is None or wq.dtype not in _INT8 or wq.ndim < 3
            or not (w[2].size == 1 or (w[2].shape == (wq.shape[0],) and w[4] in (0, -wq.ndim)))):
        return None
    bias = _bias(g, conv.inputs[2] if len(conv.inputs) > 2 else "", x[2], w[2],
                 int(wq.shape[0]), fresh)
    if bias is None:
        return None
    gone = [i, *bias[1], *_chain(g, out[0])]
    for t in conv.inputs[:2]:
        if g.private(t):
            gone.append(g.producer[t])
    attrs = {k: v for k, v in conv.fields.values_dict().items() if k in _CONV_ATTRS}
    inputs = [x[1], *x[0].inputs[1:3], w[1], *w[0].inputs[1:3], *out[2].tolist()]
    if bias[0]:
        inputs.append(bias[0])
    return gone, _node(conv, "QLinearConv", inputs, out[1], attrs)


def qdq_matmul(g: _Graph, i: int, mm: Node, fresh: dict[str, Array]
               ) -> tuple[list[int], Node] | None:
    """DequantizeLinear A and B -> MatMul -> [Relu] -> QuantizeLinear as a QLinearMatMul."""
    if mm.op_type != "MatMul" or len(mm.inputs) != 2 or mm.inputs[0] == mm.inputs[1]:
        return None
    a = _dq(g, mm.inputs[0])
    b = _dq(g, mm.inputs[1])
    out = _requant(g, mm.outputs[0])
    if a is None or b is None or out is None or a[2].size != 1:
        return None
    if b[2].size != 1:
        bq = _const(g, b[1])
        if bq is None or bq.ndim != 2 or b[2].shape != (bq.shape[1],) or b[4] not in (1, -1):
            return None
    gone = [i, *_chain(g, out[0])]
    for t in mm.inputs:
        if g.private(t):
            gone.append(g.producer[t])
    inputs = [a[1], *a[0].inputs[1:3], b[1], *b[0].inputs[1:3], *out[2].tolist()]
    return gone, _node(mm, "QLinearMatMul", inputs, out[1], {})
