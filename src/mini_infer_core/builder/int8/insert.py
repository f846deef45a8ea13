"""QuantizeLinear/DequantizeLinear pairs in a float network, where the builder's QDQ rewrite
(builder/qdq.py) then fuses each quantized node into its integer plugin:

- the input ``x`` of a quantized node: ``x -> Q -> DQ -> node`` (u8, asymmetric: the scale
  and zero point from the calibrated range, widened to hold 0); float readers of ``x`` keep
  reading ``x``; one pair per tensor, shared by its quantized readers;
- the weights: per-channel symmetric s8 (``scale[c] = max |W[c]| / 127``, values rounded half
  to even and clipped to [-127, 127]) as an int8 constant and a DequantizeLinear on the
  output-channel axis;
- the output ``y`` (after a Relu or Clip that alone reads it): its producer writes
  ``y@float``, then ``Q -> DQ -> y``, so every reader (and a graph output) reads what it read
  before; a quantized reader of ``y`` takes the DequantizeLinear directly (8 bits between
  integer plugins once fused; where ``y`` is a graph output, they read a DequantizeLinear of
  their own, which the rewrite can fuse).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import CalibrationError
from ...network import Network, Node
from ...plugin import PluginField, PluginFieldCollection
from .params import act_params, weight_params
from .select import Candidate

__all__ = ["insert_qdq"]

Array = np.ndarray[Any, Any]
QDQ_OPSET = 13  # per-axis DequantizeLinear


def _qdq(x: str, q: str, dq: str, scale: str, zp: str, name: str, axis: int | None = None
         ) -> list[Node]:
    fields = PluginFieldCollection([PluginField.from_value("axis", axis)] if axis is not None
                                   else [])
    nodes = [] if not x else [Node(f"{name}:quantize", "QuantizeLinear", "", [x, scale, zp],
                                   [q], PluginFieldCollection([]), QDQ_OPSET)]
    return [*nodes, Node(f"{name}:dequantize", "DequantizeLinear", "", [q, scale, zp], [dq],
                         fields, QDQ_OPSET)]


def insert_qdq(network: Network, chosen: Sequence[Candidate],
               ranges: dict[str, tuple[float, float]]) -> Network:
    """The network with Q/DQ pairs around ``chosen`` (their tensors' ranges in ``ranges``)."""
    consts: dict[str, Array] = dict(network.constants)
    before: dict[int, list[Node]] = {}   # nodes to put before node i
    after: dict[int, list[Node]] = {}    # ... and after it
    renamed: dict[int, Node] = {}
    made: dict[str, str] = {}  # tensor -> its DequantizeLinear output
    graph_outputs = {t.name for t in network.outputs}

    def params(t: str) -> tuple[str, str]:
        if t not in ranges:
            raise CalibrationError(f"no calibrated range for tensor {t!r}: the calibration "
                                   "cache was made for other nodes; calibrate again")
        s, z = act_params(*ranges[t])
        consts[f"{t}@int8:scale"] = np.array(s, np.float32)
        consts[f"{t}@int8:zero_point"] = np.array(z, np.uint8)
        return f"{t}@int8:scale", f"{t}@int8:zero_point"

    for c in chosen:
        last = c.clip if c.clip is not None else c.index
        src = renamed.get(last, network.nodes[last])
        renamed[last] = dataclasses.replace(src, outputs=[f"{c.y}@float", *src.outputs[1:]])
        s, z = params(c.y)
        after.setdefault(last, []).extend(
            _qdq(f"{c.y}@float", f"{c.y}@int8", c.y, s, z, f"{c.y}@int8"))
        made[c.y] = c.y
        if c.y in graph_outputs:  # the rewrite fuses no DequantizeLinear making one
            made[c.y] = f"{c.y}@int8:dq"
            after[last].extend(_qdq("", f"{c.y}@int8", made[c.y], s, z, f"{c.y}@int8:reader"))
    for c in chosen:
        node = renamed.get(c.index, network.nodes[c.index])
        x = c.x
        if x not in made:
            s, z = params(x)
            before.setdefault(c.index, []).extend(
                _qdq(x, f"{x}@int8", f"{x}@int8:dq", s, z, f"{x}@int8"))
            made[x] = f"{x}@int8:dq"
        w = node.inputs[1]
        wq, ws = weight_params(network.constants[w], c.axis)
        key = f"{w}@int8:{c.node.name}"
        consts[key], consts[f"{key}:scale"] = wq, ws
        consts[f"{key}:zero_point"] = np.zeros(ws.shape, np.int8)
        before.setdefault(c.index, []).extend(
            _qdq("", key, f"{key}:dq", f"{key}:scale", f"{key}:zero_point", key, c.axis))
        renamed[c.index] = dataclasses.replace(
            node, inputs=[made[x], f"{key}:dq", *node.inputs[2:]])
    nodes: list[Node] = []
    for i, n in enumerate(network.nodes):
        nodes.extend(before.get(i, []))
        nodes.append(renamed.get(i, n))
        nodes.extend(after.get(i, []))
    read = {x for n in nodes for x in n.inputs} | {t.name for t in network.outputs}
    if not any(f.type.name == "GRAPH" for n in nodes for f in n.fields.fields):
        for c in chosen:  # float weights no node reads any more (a body could: then kept)
            if c.node.inputs[1] not in read:
                consts.pop(c.node.inputs[1], None)
    opsets = dict(network.opsets)
    opsets[""] = max(opsets.get("", QDQ_OPSET), QDQ_OPSET)
    return dataclasses.replace(network, nodes=nodes, constants=consts, opsets=opsets)
