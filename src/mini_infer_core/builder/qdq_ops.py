"""QDQ fusion beyond the products (:mod:`.qdq`): the operators ``quantize_static`` leaves
between two QDQ pairs become the integer operators onnxruntime runs there, so that the
activations stay 8-bit from one convolution to the next:

- ``DequantizeLinear(a) -> Add|Mul <- DequantizeLinear(b) -> QuantizeLinear`` ->
  ``com.microsoft::QLinearAdd`` / ``QLinearMul`` (broadcast as Add and Mul do);
- ``DequantizeLinear -> Sigmoid|LeakyRelu|GlobalAveragePool|AveragePool -> QuantizeLinear``
  -> ``QLinearSigmoid``, ``QLinearLeakyRelu``, ``QLinearGlobalAveragePool``,
  ``QLinearAveragePool`` (NCHW: ``channels_last`` 0);
- ``DequantizeLinear -> HardSigmoid|HardSwish|Relu|Clip|Tanh|Elu -> QuantizeLinear`` ->
  mini-infer's ``ai.mini_infer::QLinearLookup`` of the chain's 256-entry table
  (:mod:`.qdq_lookup`; MobileNetV3's HardSigmoid), and such a lookup of x times x itself
  (torch's HardSwish, ``x * HardSigmoid(x)``) -> one ``QLinearLookup`` of QLinearMul's
  arithmetic on each value of x;
- ``DequantizeLinear`` of every input -> ``Concat`` -> ``QuantizeLinear`` -> ``QLinearConcat``;
- ``DequantizeLinear -> MaxPool -> QuantizeLinear`` with the same scale, zero point and type
  on both sides -> mini-infer's ``ai.mini_infer::QMaxPool`` (which cpu_native takes NHWC), else
  ``MaxPool``, of the 8-bit tensor (the maximum commutes with a monotone
  quantization, and requantizing to the same parameters gives the values back), and so do
  the operators that only move values (Reshape, Transpose, Slice, Flatten, Squeeze,
  Unsqueeze, Identity: ShuffleNet's channel shuffle).

Every scale and zero point is one constant value (per tensor), as these operators take them,
and every zero point has one type (their outputs have their input's type: a uint8 result of an
int8 Add keeps its float nodes; NNCF's int8 activations are uint8 by then, :mod:`.qdq_prepare`).
A Relu or Clip before the QuantizeLinear is absorbed only where the quantization already clips
there (:func:`.qdq._requant`). A DequantizeLinear read by other nodes too stays for them; a
chain whose tensors are read elsewhere or are graph outputs is left as it is (it runs in
float).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..network import Node
from ..plugin import PluginField, PluginFieldCollection
from .qdq import _chain, _dq, _requant
from .qdq_lookup import CHANNEL_LOOKUP, LOOKUP, LOOKUP_OPS, channel_table, lookup_table

if TYPE_CHECKING:
    from .rewrite import _Graph

__all__ = ["MS_INTEGER", "qdq_between"]

MS = "com.microsoft"
MINI = "ai.mini_infer"  # mini-infer's own operators
_BINARY = {"Add": "QLinearAdd", "Mul": "QLinearMul"}
_UNARY = {"Sigmoid": "QLinearSigmoid", "LeakyRelu": "QLinearLeakyRelu",
          "GlobalAveragePool": "QLinearGlobalAveragePool", "AveragePool": "QLinearAveragePool"}
_POOL_ATTRS = ("auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads", "strides")
#: operators that only move or select values: on the 8-bit tensor where the parameters agree
_MOVES = frozenset({"Reshape", "Transpose", "Slice", "Flatten", "Squeeze", "Unsqueeze",
                    "Identity"})
#: mini-infer's own 8-bit MaxPool (as the builder asks the device for it)
QMAXPOOL = "ai.mini_infer::QMaxPool"
#: the com.microsoft operators these rules make (the builder asks whether the device has them)
MS_INTEGER = (*_BINARY.values(), *_UNARY.values(), "QLinearConcat")


def _dq1(g: _Graph, tensor: str) -> tuple[Node, list[str]] | None:
    """The DequantizeLinear making ``tensor`` with one scale and one zero point: (it, its
    inputs x, scale, zero point)."""
    d = _dq(g, tensor)
    if d is None or d[2].size != 1 or d[3].size != 1:
        return None
    return d[0], list(d[0].inputs[:3])


def _ms(like: Node, op: str, inputs: list[str], output: str, attrs: dict[str, Any],
        domain: str = MS) -> Node:
    fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
    return Node(f"{like.name}:{op}", op, domain, inputs, [output], fields, 1)


def _gone(g: _Graph, i: int, node: Node, dq_outputs: list[str], tail: list[str]) -> list[int]:
    """The node, the chain after it to its QuantizeLinear, and each DequantizeLinear that
    nothing else reads."""
    gone = [i, *_chain(g, tail)]
    for t in dict.fromkeys(dq_outputs):
        if g.private(t, node.inputs.count(t)):
            gone.append(g.producer[t])
    return gone


def qdq_between(g: _Graph, i: int, node: Node, ok: Any = lambda op: True,
                fresh: dict[str, Any] | None = None) -> tuple[list[int], Node] | None:
    """The rules of the module for ``node`` (``ok(op)``: whether the integer operator may be
    made, the device having a plugin for it; ``fresh``: where the constants made go)."""
    op = node.op_type
    if node.domain or not node.outputs or (len(node.outputs) > 1 and any(node.outputs[1:])):
        return None
    if op in LOOKUP_OPS and fresh is not None and ok(LOOKUP):
        return _lookup(g, i, node, fresh)
    if op == "BatchNormalization" and fresh is not None and ok(CHANNEL_LOOKUP):
        return _lookup(g, i, node, fresh, channel=True)
    if op in _MOVES:
        return _moved(g, i, node)
    if op in _BINARY or op == "Concat" or op in _UNARY or op == "MaxPool":
        inputs = [t for t in node.inputs if t]
        if not inputs or len(inputs) != len(node.inputs):
            return None
        dqs = [_dq1(g, t) for t in inputs]
        if any(d is None for d in dqs):
            return None
        found = [d for d in dqs if d is not None]
        out = _requant(g, node.outputs[0])
        if out is None:
            return None
        tail, result, yq = out
        y = [str(v) for v in yq.tolist()]
        # these operators' outputs have their (first) input's type: one 8-bit type throughout
        types = {g.constants[d[1][2]].dtype for d in found} | {g.constants[y[1]].dtype}
        if len(types) != 1:
            return None
        attrs = node.fields.values_dict()
        if op in _BINARY and len(found) == 2 and ok(_BINARY[op]):
            if op == "Mul" and fresh is not None and ok(LOOKUP):
                fused = _times_lookup(g, i, node, found, y, result, tail, fresh)
                if fused is not None:
                    return fused
            new = _ms(node, _BINARY[op], [*found[0][1], *found[1][1], *y], result, {})
        elif op == "Concat" and ok("QLinearConcat"):
            new = _ms(node, "QLinearConcat", [*y, *(t for d in found for t in d[1])], result,
                      {"axis": int(attrs["axis"])})
        elif op in _UNARY and len(found) == 1 and ok(_UNARY[op]):
            kept: dict[str, Any] = {}
            if op == "LeakyRelu":
                kept["alpha"] = float(attrs.get("alpha", 0.01))
            if op == "AveragePool":
                if any(int(d) != 1 for d in attrs.get("dilations") or ()):
                    return None
                kept = {k: v for k, v in attrs.items() if k in _POOL_ATTRS and v is not None}
            if op in ("GlobalAveragePool", "AveragePool"):
                kept["channels_last"] = 0
            new = _ms(node, _UNARY[op], [*found[0][1], *y], result, kept)
        elif op == "MaxPool" and len(found) == 1 and _same_params(g, found[0][1], y):
            if ok(QMAXPOOL):  # mini-infer's own: a device may take it NHWC
                kept = {k: v for k, v in attrs.items()
                        if k in (*_POOL_ATTRS, "dilations") and v is not None}
                new = _ms(node, "QMaxPool", [found[0][1][0]], result, kept, MINI)
            else:
                fields = PluginFieldCollection([PluginField.from_value(k, v)
                                                for k, v in attrs.items()])
                new = Node(f"{node.name}:MaxPool", "MaxPool", "", [found[0][1][0]], [result],
                           fields, max(node.opset, 12))
        else:
            return None
        return _gone(g, i, node, inputs, tail), new
    return None


def _times_lookup(g: _Graph, i: int, node: Node, found: list[tuple[Node, list[str]]],
                  y: list[str], result: str, tail: list[str], fresh: dict[str, Any]
                  ) -> tuple[list[int], Node] | None:
    """``x * lookup(x)`` between QDQ pairs (torch's HardSwish as MobileNetV3 exports it, x *
    HardSigmoid(x), whose HardSigmoid is a ``QLinearLookup`` of x by now) -> one
    ``QLinearLookup`` of x: QLinearMul's arithmetic (onnxruntime's, in float32: ``(a - za) *
    (b - zb) * (sa * sb / sc) + zc`` rounded half to even, saturated) on each of x's 256
    values and its table's entry, so the same bytes as the lookup then the QLinearMul, in one
    pass."""
    for p in (0, 1):
        (dx, xin), (dh, hin) = found[p], found[1 - p]
        j = g.producer.get(hin[0])
        if j is None:
            continue
        lk = g.nodes[j]
        if (lk is None or lk.op_type != "QLinearLookup" or lk.domain != MINI
                or lk.inputs[0] != xin[0] or lk.inputs[1] not in fresh or dx is dh
                or not g.private(hin[0]) or not g.private(dh.outputs[0])):
            continue
        table = fresh[lk.inputs[1]]
        consts = [g.constants.get(t) for t in (*xin[1:3], *hin[1:3], *y[:2])]
        if any(c is None or c.size != 1 for c in consts):
            return None
        sa, za, sb, zb, sc, zc = (np.float32(c.reshape(-1)[0]) for c in consts)  # type: ignore[union-attr]
        out = consts[5].dtype  # type: ignore[union-attr]
        if table.dtype != out or table.size != 256:
            return None
        x = np.arange(256, dtype=np.uint8).view(table.dtype)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            v = (x.astype(np.float32) - za) * (table.reshape(-1).astype(np.float32) - zb) * (
                sa * sb / sc)
            v += zc
            r = np.rint(v)
        info = np.iinfo(out)
        fused = np.clip(r, info.min, info.max).astype(out)
        name = f"{result}:qlookup_table"
        fresh[name] = fused
        chain = [*_gone(g, i, node, [dh.outputs[0]], tail), j]
        t = dx.outputs[0]  # the DequantizeLinear of x, read by nothing else now
        if t not in g.outputs and all(r_ == i or g.nodes[r_] is None
                                      for r_ in g.readers.get(t, [])):
            chain.append(g.producer[t])
        return chain, _ms(node, "QLinearLookup", [xin[0], name], result, {}, MINI)
    return None


def _same_params(g: _Graph, x: list[str], y: list[str]) -> bool:
    """Whether a DequantizeLinear's scale and zero point (``x``'s) are the QuantizeLinear's
    (``y``: scale, zero point), value and type."""
    xs, xz = g.constants.get(x[1]), g.constants.get(x[2])
    ys, yz = g.constants.get(y[0]), g.constants.get(y[1])
    if xs is None or xz is None or ys is None or yz is None:
        return False
    return (xz.dtype == yz.dtype and np.array_equal(xs.reshape(-1), ys.reshape(-1))
            and np.array_equal(xz.reshape(-1), yz.reshape(-1)))


def _moved(g: _Graph, i: int, node: Node) -> tuple[list[int], Node] | None:
    """``DequantizeLinear -> Reshape|Transpose|Slice|... -> QuantizeLinear`` with the same
    scale, zero point and type on both sides: the operator on the 8-bit tensor (its other
    inputs, shapes and indices, as they are)."""
    found = _dq1(g, node.inputs[0]) if node.inputs else None
    out = _requant(g, node.outputs[0]) if found is not None else None
    if found is None or out is None or len(out[0]) != 1:  # no Relu/Clip in between
        return None
    tail, result, yq = out
    if not _same_params(g, found[1], [str(v) for v in yq.tolist()]):
        return None
    new = Node(f"{node.name}:q", node.op_type, "", [found[1][0], *node.inputs[1:]], [result],
               node.fields, node.opset)
    return _gone(g, i, node, [node.inputs[0]], tail), new


def _lookup(g: _Graph, i: int, node: Node, fresh: dict[str, Any], channel: bool = False
            ) -> tuple[list[int], Node] | None:
    """``DequantizeLinear -> HardSigmoid|HardSwish|Relu|Clip|Tanh|Elu (one or several in a
    row) -> QuantizeLinear`` (per tensor, one 8-bit type) -> ``QLinearLookup`` of the chain's
    table (:mod:`.qdq_lookup`); with ``channel``, ``node`` an inference BatchNormalization
    (those functions may follow it) -> ``QLinearChannelLookup`` of one table per channel."""
    d = _dq(g, node.inputs[0]) if node.inputs and node.inputs[0] else None  # zp: x's type
    if d is None or d[2].size != 1 or d[3].size != 1:
        return None
    chain = [node]  # the functions in a row
    while True:
        t = chain[-1].outputs[0]
        readers = g.readers.get(t, [])
        nxt = g.nodes[readers[0]] if len(readers) == 1 and t not in g.outputs else None
        if (nxt is None or nxt.domain or nxt.op_type not in LOOKUP_OPS or not nxt.inputs
                or nxt.inputs[0] != t or t in nxt.inputs[1:]):
            break
        chain.append(nxt)
    out = _requant(g, chain[-1].outputs[0])
    if out is None:
        return None
    tail, result, yq = out
    y = [g.constants[str(yq[0])], g.constants[str(yq[1])]]
    table = (channel_table(g, node, chain[1:], [d[2], d[3]], y) if channel
             else lookup_table(g, chain, [d[2], d[3]], y))
    if table is None:  # not one of the functions, or another type out
        return None
    op = "QLinearChannelLookup" if channel else "QLinearLookup"
    name = f"{result}:{'qchannel' if channel else 'qlookup'}_table"
    fresh[name] = table
    new = _ms(node, op, [d[0].inputs[0], name], result, {}, MINI)
    return _gone(g, i, node, [node.inputs[0]], [*(n.outputs[0] for n in chain[1:]), *tail]), new
