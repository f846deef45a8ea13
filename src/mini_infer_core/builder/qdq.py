"""QDQ fusion for the rewrite pass: the chains onnxruntime's ``quantize_static`` writes (QDQ
format) become its integer operators, before plugins are chosen, as onnxruntime's own QDQ
transformer does:

- ``DequantizeLinear(x_q) -> Conv <- DequantizeLinear(w_q constant)`` (bias: a constant, the
  Identity of one as NNCF writes it, or the DequantizeLinear of an int32 constant)
  ``-> [Relu|Clip] -> QuantizeLinear`` -> ``QLinearConv``;
- ``DequantizeLinear(a_q) -> MatMul <- DequantizeLinear(b_q) -> [Relu|Clip] ->
  QuantizeLinear`` -> ``QLinearMatMul``;
- the same with a Gemm (2-D x, constant W, a bias, alpha = beta = 1) -> the 1x1 QLinearConv
  it is, between two Reshapes (QLinearMatMul has no bias).

Scales and zero points must be constants: x's, y's and a's one value, W's one value or one per
output channel (DequantizeLinear's ``axis`` 0), B's one value or one per column (a 2-D B,
``axis`` 1). A bias whose scale is x_scale * w_scale[m] (what ``quantize_static`` writes) is
taken as it is; any other is quantized to that scale (rounded half to even), as onnxruntime's
QDQ transformer does. A Relu or Clip (constant bounds) is absorbed where the output's
quantization already clips there: ``Q(clip(y, lo, hi)) = clip(Q(y), Q(lo), Q(hi))`` (Q is
monotone), the same as Q(y) where Q(lo) is the type's minimum and Q(hi) its maximum (a Relu:
the output's zero point is the minimum; Relu6: also 6 at or past the maximum). Anything else
keeps its float nodes (it still runs, unfused). The integer nodes run on whichever plugin
implements them (the compiled integer GEMM in mini-infer-cpu-native).

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

__all__ = ["qdq_conv", "qdq_gemm", "qdq_matmul"]

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


def _clip_bounds(g: _Graph, node: Node) -> tuple[float, float] | None:
    """A Relu's or a Clip's constant bounds."""
    if node.domain or node.op_type not in ("Relu", "Clip"):
        return None
    if node.op_type == "Relu":
        return 0.0, np.inf
    attrs = node.fields.values_dict()
    lo, hi = attrs.get("min", -np.inf), attrs.get("max", np.inf)
    for k, name in ((1, "min"), (2, "max")):
        if len(node.inputs) > k and node.inputs[k]:
            c = _const(g, node.inputs[k])
            if c is None or c.size != 1:
                return None
            lo, hi = (float(c), hi) if name == "min" else (lo, float(c))
    return float(lo), float(hi)


def _clips_already(bounds: tuple[float, float], scale: Array, zp: Array) -> bool:
    """Whether quantizing with ``scale`` and ``zp`` saturates at least where the clamp to
    ``bounds`` does: ``Q(clip(y, lo, hi)) = clip(Q(y), Q(lo), Q(hi))`` (Q is monotone), a
    no-op where Q(lo) is the type's minimum and Q(hi) its maximum."""
    info = np.iinfo(zp.dtype)
    s, z = float(scale.reshape(-1)[0]), int(zp.reshape(-1)[0])

    def q(v: float) -> float:
        return float(np.rint(np.float32(v) / np.float32(s))) + z if np.isfinite(v) else v

    return q(bounds[0]) <= info.min and q(bounds[1]) >= info.max


def _requant(g: _Graph, tensor: str) -> tuple[list[str], str, Array] | None:
    """The QuantizeLinear (after a Relu or Clip it makes redundant) reading ``tensor``: (the
    node outputs, the chain's result, [y_scale, y_zero_point] names) with one scalar scale
    and zero point."""
    names: list[str] = []
    readers = g.readers.get(tensor, [])
    if len(readers) != 1 or tensor in g.outputs:
        return None
    nxt = g.nodes[readers[0]]
    bounds = _clip_bounds(g, nxt) if nxt is not None else None
    if nxt is not None and bounds is not None:
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
    if bounds is not None and not _clips_already(bounds, scale, zp):
        return None  # the Relu/Clip clamps inside the output's range: keep it
    return [*names, nxt.outputs[0]], nxt.outputs[0], np.array(nxt.inputs[1:3])


def _chain(g: _Graph, tensors: list[str]) -> list[int]:
    return [g.producer[t] for t in tensors]


def _node(like: Node, op: str, inputs: list[str], output: str, attrs: dict[str, Any],
          opset: int = 10, suffix: str = "") -> Node:
    fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
    return Node(f"{like.name}:{op}{suffix}", op, "", inputs, [output], fields, opset)


def _replaced(g: _Graph, i: int, product: Node, bias_nodes: list[int], chain: list[str]
              ) -> list[int]:
    """The nodes one integer product replaces: the product (node ``i``), the bias's requantizing
    nodes, the chain after it (tensors ``chain``) up to its QuantizeLinear, and the
    DequantizeLinear nodes of x and
    the weights where nothing else reads them."""
    gone = [i, *bias_nodes, *_chain(g, chain)]
    for t in product.inputs[:2]:
        if g.private(t):
            gone.append(g.producer[t])
    return gone


def _bias(g: _Graph, name: str, x_scale: Array, w_scale: Array, m: int,
          fresh: dict[str, Array]) -> tuple[str, list[int]] | None:
    """The int32 bias input at scale x_scale * w_scale (a new constant where it had to be
    quantized), and the DequantizeLinear node it came from when that node goes."""
    if not name:
        return "", []
    want = (x_scale.reshape(()) * w_scale.reshape(-1)).astype(np.float32)
    d = _dq(g, name, (np.dtype(np.int32),))
    if d is None:
        b, gone = _const(g, name), []
        ident = g.node(name, "Identity") if b is None else None
        if ident is not None:  # NNCF's bias: Identity(constant)
            b = _const(g, ident.inputs[0])
            gone = _chain(g, [name]) if g.private(name) else []
        if b is None or b.dtype != np.float32 or b.size != m:
            return None
        value = b.reshape(-1).astype(np.float64)
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


_Dq = tuple[Node, str, Array, Array, int]
_Rq = tuple[list[str], str, Array]


def _operands(g: _Graph, node: Node) -> tuple[_Dq, _Dq, _Rq, Array | None] | None:
    """A product's two DequantizeLinear inputs (x with one scalar scale), the QuantizeLinear
    after it and the weights' quantized values where they are a constant, or None where the
    pattern is not there."""
    x = _dq(g, node.inputs[0])
    w = _dq(g, node.inputs[1])
    out = _requant(g, node.outputs[0])
    if x is None or w is None or out is None or node.inputs[0] == node.inputs[1] \
            or x[2].size != 1:
        return None
    return x, w, out, _const(g, w[1])


def qdq_conv(g: _Graph, i: int, conv: Node, fresh: dict[str, Array]
             ) -> tuple[list[int], Node] | None:
    """DequantizeLinear x and W -> Conv -> [Relu] -> QuantizeLinear as a QLinearConv."""
    if conv.op_type != "Conv" or len(conv.inputs) < 2:
        return None
    found = _operands(g, conv)
    if found is None:
        return None
    x, w, out, wq = found
    if (wq is None or wq.dtype not in _INT8 or wq.ndim < 3
            or not (w[2].size == 1 or (w[2].shape == (wq.shape[0],) and w[4] in (0, -wq.ndim)))):
        return None
    bias = _bias(g, conv.inputs[2] if len(conv.inputs) > 2 else "", x[2], w[2],
                 int(wq.shape[0]), fresh)
    if bias is None:
        return None
    gone = _replaced(g, i, conv, bias[1], out[0])
    attrs = {k: v for k, v in conv.fields.values_dict().items() if k in _CONV_ATTRS}
    inputs = [x[1], *x[0].inputs[1:3], w[1], *w[0].inputs[1:3], *out[2].tolist()]
    if bias[0]:
        inputs.append(bias[0])
    return gone, _node(conv, "QLinearConv", inputs, out[1], attrs)


def qdq_matmul(g: _Graph, i: int, mm: Node, fresh: dict[str, Array]
               ) -> tuple[list[int], Node] | None:
    """DequantizeLinear A and B -> MatMul -> [Relu] -> QuantizeLinear as a QLinearMatMul."""
    found = _operands(g, mm) if mm.op_type == "MatMul" and len(mm.inputs) == 2 else None
    if found is None:
        return None
    a, b, out, bq = found
    if b[2].size != 1:
        if bq is None or bq.ndim != 2 or b[2].shape != (bq.shape[1],) or b[4] not in (1, -1):
            return None
    gone = _replaced(g, i, mm, [], out[0])
    inputs = [a[1], *a[0].inputs[1:3], b[1], *b[0].inputs[1:3], *out[2].tolist()]
    return gone, _node(mm, "QLinearMatMul", inputs, out[1], {})


def qdq_gemm(g: _Graph, i: int, gemm: Node, fresh: dict[str, Array],
             extra: dict[str, tuple[list[Node], list[Node]]]
             ) -> tuple[list[int], Node] | None:
    """DequantizeLinear x (2-D) and W -> Gemm (a bias, alpha = beta = 1, x not transposed)
    -> [Relu|Clip] -> QuantizeLinear as the 1x1 QLinearConv it is: x reshaped to (N, K, 1, 1)
    before it, the output to (N, M) after it (``extra``, by the QLinearConv's name)."""
    attrs = gemm.fields.values_dict()
    if (gemm.op_type != "Gemm" or len(gemm.inputs) < 2 or attrs.get("transA", 0)
            or float(attrs.get("alpha", 1.0)) != 1.0 or float(attrs.get("beta", 1.0)) != 1.0):
        return None
    found = _operands(g, gemm)
    if found is None:
        return None
    x, w, out, wq = found
    trans_b = bool(attrs.get("transB", 0))
    if wq is None or wq.dtype not in _INT8 or wq.ndim != 2:
        return None
    m = int(wq.shape[0] if trans_b else wq.shape[1])
    if w[2].size != 1 and not (w[2].shape == (m,) and w[4] in ((0, -2) if trans_b else (1, -1))):
        return None
    bias = _bias(g, gemm.inputs[2] if len(gemm.inputs) > 2 else "", x[2], w[2], m, fresh)
    if bias is None:
        return None
    gone = _replaced(g, i, gemm, bias[1], out[0])
    w4, x4, y4 = (f"{gemm.name}:qdq_{s}" for s in ("w4", "x4", "y4"))
    shape4, shape2 = f"{gemm.name}:qdq_shape4", f"{gemm.name}:qdq_shape2"
    fresh[w4] = np.ascontiguousarray(wq if trans_b else wq.T).reshape(m, -1, 1, 1)
    fresh[shape4] = np.array([0, -1, 1, 1], np.int64)
    fresh[shape2] = np.array([0, -1], np.int64)
    inputs = [x4, *x[0].inputs[1:3], w4, *w[0].inputs[1:3], *out[2].tolist()]
    if bias[0]:
        inputs.append(bias[0])
    conv = _node(gemm, "QLinearConv", inputs, y4, {})
    extra[conv.name] = ([_node(gemm, "Reshape", [x[1], shape4], x4, {}, 14, ":in")],
                        [_node(gemm, "Reshape", [y4, shape2], out[1], {}, 14, ":out")])
    return gone, conv

