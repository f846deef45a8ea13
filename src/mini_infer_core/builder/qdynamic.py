"""The dynamic-int8 chain onnxruntime's ``quantize_dynamic`` writes for each weight, as
onnxruntime's own MatMulIntegerToFloat fusion takes it::

    x_q, x_scale, x_zp = DynamicQuantizeLinear(x)
    s = Mul(x_scale, w_scale)                      # w_scale constant: one value or one per column
    y = Add(Mul(Cast(MatMulInteger(x_q, W, x_zp, w_zp), to=float), s), bias)   # Add optional

(the bias a float32 constant of N values, or the Identity of one, as torch's exporter writes
shared initializers)
-> ``com.microsoft::MatMulIntegerToFloat(x_q, W, x_scale, w_scale, x_zp, w_zp, bias)``: one
step where there were two (the scales' Mul ran on its own: 24 steps of a 4-layer BERT), the
same float32 arithmetic, ``float(acc) * (x_scale * w_scale) + bias``. Offered by the rewrite
pass (:mod:`.rewrite`) where the device has a MatMulIntegerToFloat plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..network import Node
from ..plugin import PluginFieldCollection

if TYPE_CHECKING:
    from .rewrite import _Graph

__all__ = ["integer_to_float"]

MS = "com.microsoft"
_FLOAT = 1  # TensorProto.FLOAT


def _reader(g: _Graph, tensor: str, op: str) -> Node | None:
    """The one node that reads ``tensor`` (no graph output), if it is an ``op``."""
    if not g.private(tensor):
        return None
    n = g.nodes[g.readers[tensor][0]]
    return n if n is not None and n.op_type == op and not n.domain else None


def _scales(g: _Graph, s: str) -> tuple[str, str] | None:
    """(x_scale, w_scale) of ``s = Mul(x_scale, w_scale)``: x_scale DynamicQuantizeLinear's
    (one value), w_scale a float32 constant."""
    mul = g.node(s, "Mul")
    if mul is None or len(mul.inputs) != 2 or not g.private(s):
        return None
    for k in (0, 1):
        x_scale, w_scale = mul.inputs[k], mul.inputs[1 - k]
        dql = g.node(x_scale, "DynamicQuantizeLinear")
        w = g.constants.get(w_scale)
        if (dql is not None and len(dql.outputs) > 1 and dql.outputs[1] == x_scale
                and w is not None and w.dtype == np.float32):
            return x_scale, w_scale
    return None


def integer_to_float(g: _Graph, i: int, mm: Node) -> tuple[list[int], Node] | None:
    """MatMulInteger -> Cast(float) -> Mul(scales) [-> Add(bias)] (see the module)."""
    if mm.op_type != "MatMulInteger" or len(mm.outputs) != 1 or not g.private(mm.outputs[0]):
        return None
    b = g.constants.get(mm.inputs[1])
    if b is None or b.ndim != 2:
        return None
    n = int(b.shape[1])
    cast = _reader(g, mm.outputs[0], "Cast")
    if cast is None or int(cast.fields.values_dict().get("to", 0)) != _FLOAT \
            or not g.private(cast.outputs[0]):
        return None
    mul = _reader(g, cast.outputs[0], "Mul")
    s = g.other(mul, cast.outputs[0]) if mul is not None else None
    found = _scales(g, s) if s else None
    if mul is None or s is None or found is None:
        return None
    x_scale, w_scale = found
    w = g.constants[w_scale]
    if w.size != 1 and w.shape != (n,):
        return None
    chain = [i, g.producer[cast.outputs[0]], g.producer[s], g.producer[mul.outputs[0]]]
    zps = (list(mm.inputs) + ["", ""])[2:4]
    inputs, out = [mm.inputs[0], mm.inputs[1], x_scale, w_scale, *zps], mul.outputs[0]
    add = _reader(g, out, "Add")
    bias = g.other(add, out) if add is not None else None
    if bias and bias not in g.constants:  # the exporter's Identity of an initializer
        ident = g.node(bias, "Identity")
        bias = ident.inputs[0] if ident is not None else bias
    arr = g.constants.get(bias) if bias else None
    if add is not None and bias and arr is not None and arr.dtype == np.float32 \
            and arr.shape == (n,):
        chain.append(g.producer[add.outputs[0]])
        inputs, out = [*inputs, bias], add.outputs[0]
    while inputs[-1] == "":
        inputs.pop()
    return chain, Node(f"{mm.name or out}:MatMulIntegerToFloat", "MatMulIntegerToFloat", MS,
                       inputs, [out], PluginFieldCollection([]), 1)
