"""``DequantizeLinear -> f -> QuantizeLinear`` with per-tensor parameters and one 8-bit type,
``f`` an elementwise float function of one tensor (HardSigmoid, HardSwish, Relu, Clip, Tanh,
Elu, or several of them in a row): 256 possible inputs, so the chain is exactly a table, made
here and looked up by mini-infer's ``ai.mini_infer::QLinearLookup`` (which takes NHWC, so a
MobileNetV3's HardSigmoid between two integer convolutions no longer runs in float between
reformats).

The table is the float32 arithmetic of the chain: dequantize ``(x - zp) * scale``, ``f`` in
float32, quantize (divide by the scale, round half to even, add the zero point, saturate).
Sigmoid and LeakyRelu have onnxruntime's own operators (:mod:`.qdq_ops`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..network import Node
from .qdq import _clip_bounds

if TYPE_CHECKING:
    from .rewrite import _Graph

__all__ = ["CHANNEL_LOOKUP", "LOOKUP", "LOOKUP_OPS", "channel_table", "lookup_table"]

#: the operators the rules make, as the builder asks the device for them
LOOKUP = "ai.mini_infer::QLinearLookup"
CHANNEL_LOOKUP = "ai.mini_infer::QLinearChannelLookup"
f32 = np.float32
Array = np.ndarray[Any, Any]


def _hard_sigmoid(x: Array, alpha: float, beta: float) -> Array:
    y: Array = np.maximum(f32(0), np.minimum(f32(1), f32(alpha) * x + f32(beta)))
    return y


def _elu(x: Array, alpha: float) -> Array:
    with np.errstate(over="ignore"):
        return np.where(x > 0, x, f32(alpha) * (np.exp(x) - f32(1))).astype(f32)


def _function(g: _Graph, node: Node) -> Callable[[Array], Array] | None:
    """``node``'s function of a float32 array (None: not one of the module's)."""
    a = node.fields.values_dict()
    op = node.op_type
    if op == "HardSigmoid":
        alpha, beta = float(a.get("alpha", 0.2)), float(a.get("beta", 0.5))
        return lambda x: _hard_sigmoid(x, alpha, beta)
    if op == "HardSwish":
        return lambda x: x * _hard_sigmoid(x, 1.0 / 6.0, 0.5)
    if op == "Relu":
        return lambda x: np.maximum(x, f32(0))
    if op == "Tanh":
        return np.tanh
    if op == "Elu":
        alpha = float(a.get("alpha", 1.0))
        return lambda x: _elu(x, alpha)
    if op == "Clip":
        bounds = _clip_bounds(g, node)  # constants only
        if bounds is None:
            return None
        lo, hi = f32(bounds[0]), f32(bounds[1])
        return lambda x: np.minimum(np.maximum(x, lo), hi)
    return None


#: the operators the rule takes (their inputs after the first: Clip's constant bounds)
LOOKUP_OPS = frozenset({"HardSigmoid", "HardSwish", "Relu", "Tanh", "Elu", "Clip"})


def lookup_table(g: _Graph, nodes: list[Node], x: list[Array], y: list[Array]
                 ) -> Array | None:
    """The 256 outputs of ``QuantizeLinear(nodes[-1](...nodes[0](DequantizeLinear(v))))`` for
    each bit pattern ``v`` of the 8-bit type (``x``: DequantizeLinear's scale and zero point,
    ``y``: QuantizeLinear's), in that type (None: a node is not one of the functions)."""
    fns = [_function(g, node) for node in nodes]
    if any(fn is None for fn in fns):
        return None
    (xs, xz), (ys, yz) = x, y
    if xz.dtype != yz.dtype or xs.dtype != np.float32 or ys.dtype != np.float32:
        return None
    values = np.arange(256, dtype=np.uint8).view(xz.dtype)
    deq = (values.astype(f32) - f32(xz.reshape(-1)[0])) * f32(xs.reshape(-1)[0])
    with np.errstate(all="ignore"):
        for fn in fns:
            assert fn is not None
            deq = fn(deq).astype(f32)
        r = np.rint(deq / f32(ys.reshape(-1)[0]))
    r += f32(yz.reshape(-1)[0])
    info = np.iinfo(yz.dtype)
    table: Array = np.clip(np.nan_to_num(r), info.min, info.max).astype(yz.dtype)
    return table


def _param(g: _Graph, name: str) -> Array | None:
    """A constant, or a DequantizeLinear of constants (``quantize_static`` writes
    BatchNormalization's scale, B, mean and var so: 8-bit or int32 values) as float32 the
    way DequantizeLinear computes it, ``(x - zero_point) * scale`` (None: neither)."""
    if name in g.constants:
        return g.constants[name]
    d = g.node(name, "DequantizeLinear")
    if d is None or len(d.inputs) < 2 or d.fields.values_dict().get("block_size", 0):
        return None
    x, scale = g.constants.get(d.inputs[0]), g.constants.get(d.inputs[1])
    zp = g.constants.get(d.inputs[2]) if len(d.inputs) > 2 and d.inputs[2] else None
    if (x is None or scale is None or scale.dtype != f32 or x.ndim > 1
            or x.dtype not in (np.uint8, np.int8, np.int32)
            or (zp is not None and zp.dtype != x.dtype) or scale.size not in (1, x.size)):
        return None
    z = np.zeros(1, np.int64) if zp is None else zp.reshape(-1).astype(np.int64)
    q = (x.reshape(-1).astype(np.int64) - z).astype(f32)
    v: Array = (q * scale.reshape(-1)).astype(f32)
    return v


def _batch_norm(g: _Graph, node: Node) -> tuple[Array, Array, Array, Array, float] | None:
    """An inference BatchNormalization's constant scale, B, mean, var (float32, one value per
    channel) and epsilon (None: not constants, training mode, or other types)."""
    a = node.fields.values_dict()
    if (node.op_type != "BatchNormalization" or len(node.inputs) != 5
            or len([t for t in node.outputs if t]) != 1 or int(a.get("training_mode", 0))):
        return None
    params = [_param(g, t) for t in node.inputs[1:]]
    if any(p is None or p.dtype != f32 for p in params):
        return None
    flat = [p.reshape(-1) for p in params if p is not None]
    if len({p.size for p in flat}) != 1:
        return None
    return flat[0], flat[1], flat[2], flat[3], float(a.get("epsilon", 1e-5))


def channel_table(g: _Graph, bn: Node, after: list[Node], x: list[Array], y: list[Array]
                  ) -> Array | None:
    """The ``(C, 256)`` outputs of ``QuantizeLinear(after(BatchNormalization(
    DequantizeLinear(v))))`` for each bit pattern ``v`` of the 8-bit type and each channel
    (``after``: Relu/Clip/... of :data:`LOOKUP_OPS` in a row; ``x``, ``y`` as for
    :func:`lookup_table`), BatchNormalization in float32 as onnxruntime's kernel computes it
    (``x * a + (B - mean * a)``, ``a = scale / sqrt(var + epsilon)``) (None: not an inference
    BatchNormalization of constants, or not one of the functions)."""
    found = _batch_norm(g, bn)
    fns = [_function(g, node) for node in after]
    if found is None or any(fn is None for fn in fns):
        return None
    scale, bias, mean, var, eps = found
    (xs, xz), (ys, yz) = x, y
    if xz.dtype != yz.dtype or xs.dtype != f32 or ys.dtype != f32:
        return None
    values = np.arange(256, dtype=np.uint8).view(xz.dtype)
    deq = (values.astype(f32) - f32(xz.reshape(-1)[0])) * f32(xs.reshape(-1)[0])
    with np.errstate(all="ignore"):
        a = (scale * (f32(1) / np.sqrt(var + f32(eps)))).astype(f32)
        b = (bias - mean * a).astype(f32)
        v = (deq[None, :] * a[:, None] + b[:, None]).astype(f32)
        for fn in fns:
            assert fn is not None
            v = fn(v).astype(f32)
        r = np.rint(v / f32(ys.reshape(-1)[0]))
    r += f32(yz.reshape(-1)[0])
    info = np.iinfo(yz.dtype)
    table: Array = np.ascontiguousarray(
        np.clip(np.nan_to_num(r), info.min, info.max).astype(yz.dtype))
    return table
