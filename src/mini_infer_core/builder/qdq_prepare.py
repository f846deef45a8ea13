"""Two exact rewrites of a QDQ graph before its chains are fused (:mod:`.qdq`,
:mod:`.qdq_ops`), for what NNCF writes (its default symmetric preset):

- **int8 activations as uint8**: ``QuantizeLinear(x, s, z: int8) -> DequantizeLinear(s, z)``
  gives the same floats as the pair with ``uint8`` and ``z + 128`` (``clamp(round(x / s) + z,
  -128, 127) + 128`` is ``clamp(round(x / s) + z + 128, 0, 255)``, and the difference from the
  zero point, all DequantizeLinear reads, is the same integer). NNCF quantizes every activation
  that may be negative to int8 with zero point 0 and those after a Relu to uint8, so its
  residual Adds read one of each (no one-type ``QLinearAdd``) and its convolutions read int8
  activations; as uint8 the whole network has one 8-bit type, the integer GEMM's own. Only a
  pair whose QuantizeLinear's output is read by DequantizeLinear nodes alone, each with the
  same scale, zero point and axis, and is no graph output, is changed (weights, constants, are
  not QuantizeLinear outputs).
- **MaxPool after its DequantizeLinear**: ``DequantizeLinear(q) -> MaxPool`` whose output is
  not quantized again (NNCF leaves ResNet's stem pooling so: the next convolution and the
  residual Add read its float output) becomes ``MaxPool(q) -> DequantizeLinear``: a positive
  scale makes dequantization monotone, so the maximum commutes with it (the padding, minus
  infinity, is never the maximum of a window with an element of the image). The convolution
  and the Add then read a DequantizeLinear and are fused; the MaxPool is mini-infer's 8-bit
  ``ai.mini_infer::QMaxPool`` where the device has it, else ``MaxPool`` (opset 12 takes 8 bits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..network import Network, Node
from ..plugin import PluginField, PluginFieldCollection

__all__ = ["prepare_qdq"]

_POOL = ("auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides")


def _readers(nodes: list[Node]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for x in n.inputs:
            if x:
                out.setdefault(x, []).append(i)
    return out


def _params(n: Node, constants: dict[str, Any]) -> tuple[Any, Any, int] | None:
    """A QuantizeLinear's or DequantizeLinear's constant float32 scale, zero point and
    axis (no blocks, no output_dtype)."""
    if n.domain or len(n.inputs) < 3:
        return None
    s, z = constants.get(n.inputs[1]), constants.get(n.inputs[2])
    attrs = n.fields.values_dict()
    if (s is None or z is None or s.dtype != np.float32 or attrs.get("block_size", 0)
            or attrs.get("output_dtype", 0) or (z.size != 1 and z.shape != s.shape)):
        return None
    return s, z, int(attrs.get("axis", 1)) if s.size != 1 else 1


def _as_uint8(nodes: list[Node], constants: dict[str, Any], outputs: set[str],
              fresh: dict[str, Any]) -> int:
    """The int8 activation pairs retyped in place (``nodes``); how many."""
    readers = _readers(nodes)
    changed = 0
    for i, q in enumerate(nodes):
        if q.op_type != "QuantizeLinear" or q.domain or q.inputs[0] in constants:
            continue
        p = _params(q, constants)
        y = q.outputs[0] if q.outputs else ""
        if p is None or p[1].dtype != np.int8 or not y or y in outputs:
            continue
        rs = readers.get(y, [])
        if not rs or not all(_same(nodes[j], y, p, constants) for j in rs):
            continue
        z = f"{q.inputs[2]}:as_uint8"
        fresh[z] = np.asarray(p[1].astype(np.int16) + 128).astype(np.uint8)
        for j in {i, *rs}:
            n = nodes[j]
            nodes[j] = replace(n, inputs=[*n.inputs[:2], z, *n.inputs[3:]])
        changed += 1
    return changed


def _same(d: Node, y: str, p: tuple[Any, Any, int], constants: dict[str, Any]) -> bool:
    """Whether ``d`` is a DequantizeLinear of ``y`` (its first input only) with ``p``."""
    if d.op_type != "DequantizeLinear" or d.domain or d.inputs[0] != y or y in d.inputs[1:]:
        return False
    r = _params(d, constants)
    return (r is not None and r[1].dtype == p[1].dtype and r[2] == p[2]
            and np.array_equal(r[0], p[0]) and np.array_equal(r[1], p[1]))


def _pool_moved(nodes: list[Node], constants: dict[str, Any], outputs: set[str],
                qmaxpool: bool) -> int:
    """``DequantizeLinear -> MaxPool`` (not quantized after) -> ``MaxPool ->
    DequantizeLinear``, in place; how many."""
    readers = _readers(nodes)
    producer = {o: i for i, n in enumerate(nodes) for o in n.outputs if o}
    moved: dict[int, tuple[Node, Node]] = {}
    gone: set[int] = set()
    for i in range(len(nodes)):
        pool = nodes[i]
        if (pool.op_type != "MaxPool" or pool.domain or len(pool.outputs) != 1
                or not pool.inputs or pool.inputs[0] not in producer):
            continue
        j = producer[pool.inputs[0]]
        d = nodes[j]
        p = _params(d, constants) if d.op_type == "DequantizeLinear" else None
        y = pool.outputs[0]
        if (p is None or p[0].size != 1 or not np.all(p[0] > 0) or d.inputs[0] in constants
                or p[1].dtype not in (np.uint8, np.int8) or y in outputs
                or any(nodes[r].op_type == "QuantizeLinear" for r in readers.get(y, []))):
            continue  # a QuantizeLinear after it: qdq_ops' rule takes the three
        attrs = {k: v for k, v in pool.fields.values_dict().items()
                 if k in _POOL and v is not None}
        fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
        q = f"{y}:q"
        new = (Node(f"{pool.name}:QMaxPool", "QMaxPool", "ai.mini_infer", [d.inputs[0]], [q],
                    fields, 1) if qmaxpool else
               Node(f"{pool.name}:MaxPool", "MaxPool", "", [d.inputs[0]], [q], fields,
                    max(pool.opset, 12)))
        dq = replace(d, name=f"{d.name}:after_pool", inputs=[q, *d.inputs[1:]], outputs=[y])
        moved[i] = new, dq
        if len(readers.get(d.outputs[0], [])) == 1 and d.outputs[0] not in outputs:
            gone.add(j)  # the DequantizeLinear read by nothing else
    for i in sorted(moved, reverse=True):
        nodes[i:i + 1] = moved[i]
    for j in sorted(gone, reverse=True):  # before each MaxPool: its index unchanged
        del nodes[j]
    return len(moved)


def prepare_qdq(network: Network, integer: Callable[[str], bool]) -> tuple[Network, list[str]]:
    """The two rewrites of the module (``integer(op)``: whether the device has a plugin for
    the qualified operator); what was done."""
    nodes = list(network.nodes)
    outputs = {t.name for t in network.outputs}
    fresh: dict[str, Any] = {}
    retyped = _as_uint8(nodes, network.constants, outputs, fresh)
    constants = {**network.constants, **fresh} if fresh else network.constants
    moved = _pool_moved(nodes, constants, outputs, integer("ai.mini_infer::QMaxPool"))
    done = ([f"{retyped} int8 QuantizeLinear/DequantizeLinear pairs as uint8"] if retyped
            else []) + ([f"{moved} MaxPool before their DequantizeLinear"] if moved else [])
    if not done:
        return network, done
    return replace(network, nodes=nodes, constants=constants), done
