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

And two of the QOperator format (``quantize_static`` with ``QuantFormat.QOperator``): a
``MaxPool`` of an 8-bit operator's output is the ``QMaxPool`` it is (which cpu_native runs
NHWC, in the region of the integer convolutions), and ``com.microsoft::QGemm`` with an 8-bit
output is a 1x1 ``QLinearConv`` between two Reshapes (the integer GEMM, not NumPy).
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


#: operators whose (first) output is 8-bit: a MaxPool of it is QMaxPool (QOperator graphs)
_BYTES_OUT = frozenset({"QuantizeLinear", "QLinearConv", "QLinearMatMul",
                        "com.microsoft::QLinearAdd", "com.microsoft::QLinearMul",
                        "com.microsoft::QLinearConcat", "com.microsoft::QLinearAveragePool",
                        "com.microsoft::QLinearGlobalAveragePool",
                        "com.microsoft::QLinearSigmoid", "com.microsoft::QLinearLeakyRelu",
                        "ai.mini_infer::QMaxPool"})


def _byte_pools(nodes: list[Node]) -> int:
    """``MaxPool`` (no Indices) of an 8-bit operator's output (as QOperator graphs write
    ResNet's stem pooling) -> ``ai.mini_infer::QMaxPool``, in place; how many."""
    producer = {o: n for n in nodes for o in n.outputs[:1] if o}
    done = 0
    for i, pool in enumerate(nodes):
        src = producer.get(pool.inputs[0]) if pool.inputs else None
        if (pool.op_type != "MaxPool" or pool.domain or src is None
                or src.qualified_op not in _BYTES_OUT or len(pool.outputs) != 1
                or (src.op_type == "QuantizeLinear"
                    and src.fields.values_dict().get("output_dtype", 0))):
            continue
        attrs = {k: v for k, v in pool.fields.values_dict().items()
                 if k in _POOL and v is not None}
        fields = PluginFieldCollection([PluginField.from_value(k, v) for k, v in attrs.items()])
        nodes[i] = Node(f"{pool.name}:QMaxPool", "QMaxPool", "ai.mini_infer", [pool.inputs[0]],
                        list(pool.outputs), fields, 1)
        producer[pool.outputs[0]] = nodes[i]
        done += 1
    return done


def _qgemm_as_conv(nodes: list[Node], constants: dict[str, Any], fresh: dict[str, Any]
                   ) -> int:
    """``com.microsoft::QGemm`` with an 8-bit output (y_scale given), A not transposed,
    alpha 1, constant B and a bias of one value per column (or none) -> the 1x1
    ``QLinearConv`` it is, between two Reshapes (A to (N, K, 1, 1), the result to (N, M)), as
    :func:`.qdq.qdq_gemm` does for a QDQ Gemm; in place, how many."""
    done = 0
    for i in range(len(nodes) - 1, -1, -1):
        q = nodes[i]
        ins = list(q.inputs) + [""] * (9 - len(q.inputs))
        attrs = q.fields.values_dict()
        b = constants.get(ins[3])
        if (q.qualified_op != "com.microsoft::QGemm" or not ins[7] or len(q.outputs) != 1
                or attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0
                or b is None or b.ndim != 2 or b.dtype not in (np.uint8, np.int8)):
            continue
        trans_b = bool(attrs.get("transB", 0))
        m = int(b.shape[0] if trans_b else b.shape[1])
        bias = constants.get(ins[6]) if ins[6] else None
        if ins[6] and (bias is None or bias.dtype != np.int32 or bias.size != m):
            continue
        name = q.name or q.outputs[0]
        w4, x4, y4 = (f"{name}:qop_{s}" for s in ("w4", "x4", "y4"))
        shape4, shape2 = f"{name}:qop_shape4", f"{name}:qop_shape2"
        fresh[w4] = np.ascontiguousarray(b if trans_b else b.T).reshape(m, -1, 1, 1)
        fresh[shape4] = np.array([0, -1, 1, 1], np.int64)
        fresh[shape2] = np.array([0, -1], np.int64)
        conv_in = [x4, ins[1], ins[2], w4, ins[4], ins[5], ins[7], ins[8]]
        if bias is not None:
            fresh[f"{name}:qop_bias"] = bias.reshape(m)
            conv_in.append(f"{name}:qop_bias")
        empty = PluginFieldCollection([])
        nodes[i:i + 1] = [
            Node(f"{name}:in", "Reshape", "", [ins[0], shape4], [x4], empty, 14),
            Node(f"{name}:QLinearConv", "QLinearConv", "", conv_in, [y4], empty, 10),
            Node(f"{name}:out", "Reshape", "", [y4, shape2], list(q.outputs), empty, 14)]
        done += 1
    return done


def prepare_qdq(network: Network, integer: Callable[[str], bool]) -> tuple[Network, list[str]]:
    """The two rewrites of the module (``integer(op)``: whether the device has a plugin for
    the qualified operator); what was done."""
    nodes = list(network.nodes)
    outputs = {t.name for t in network.outputs}
    fresh: dict[str, Any] = {}
    retyped = _as_uint8(nodes, network.constants, outputs, fresh)
    constants = {**network.constants, **fresh} if fresh else network.constants
    qmaxpool = integer("ai.mini_infer::QMaxPool")
    moved = _pool_moved(nodes, constants, outputs, qmaxpool)
    pools = _byte_pools(nodes) if qmaxpool else 0
    convs = _qgemm_as_conv(nodes, constants, fresh) if integer("QLinearConv") else 0
    if convs:
        constants = {**network.constants, **fresh}
    done = [f"{k} {what}" for k, what in (
        (retyped, "int8 QuantizeLinear/DequantizeLinear pairs as uint8"),
        (moved, "MaxPool before their DequantizeLinear"),
        (pools, "MaxPool of 8-bit tensors as QMaxPool"),
        (convs, "QGemm as 1x1 QLinearConv")) if k]
    if not done:
        return network, done
    return replace(network, nodes=nodes, constants=constants), done
