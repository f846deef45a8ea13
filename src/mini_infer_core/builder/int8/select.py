"""Which nodes of a float network an INT8 build quantizes, and why the others keep float.

A node is quantized where all of these hold:

- it is a Conv, a MatMul or a Gemm (transA 0, alpha = beta = 1) whose weights are a float32
  constant (a MatMul's 2-D B; a Gemm's bias, if any, a constant of one value per column);
- its operator is not pinned (``BuilderConfig.pins``: the pinned plugin runs it, in float);
- the plugin that would run its INT8 form -- the integer operator it becomes, QLinearConv
  for Conv and Gemm, QLinearMatMul for MatMul, chosen by pins and priorities as for any
  node -- takes INT8 there: asked ``supports_format_combination`` with the input and the
  output UINT8 and the weights INT8, each description carrying its ``scale`` and
  ``zero_point`` (TensorRT's ``PluginTensorDesc``). A plugin that declares only FLOAT (its
  ``dtypes``, or its own method) keeps the node float;
- it does at least ``min_work`` (``BuilderConfig.int8_min_work``) multiply-adds per value
  of its input, or that input is already quantized (the output of a node quantized before
  it): otherwise quantizing its float input costs about what the integer product saves
  (Magika's one-hot Dense layer: 64 per value, a slower build than float).

Every other Conv/MatMul/Gemm keeps float, with the reason in the build's ``int8`` report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...network import Network, Node
from ...plugin import (
    DataType,
    IPluginV2,
    IPluginV2DynamicExt,
    PluginFieldCollection,
    PluginTensorDesc,
    TensorFormat,
)
from ..selection import Selector
from .params import act_params, weight_params

__all__ = ["Candidate", "candidates", "confirm"]

_INTEGER_OP = {"Conv": "QLinearConv", "Gemm": "QLinearConv", "MatMul": "QLinearMatMul"}


@dataclass
class Candidate:
    """A node to quantize: its index, the weights' per-channel axis, the tensor quantized
    before it (its input) and after it (its output, or a Relu/Clip's after it)."""

    index: int
    node: Node
    axis: int
    x: str
    y: str
    clip: int | None  # the index of the Relu/Clip node whose output is ``y``


def _weights_axis(node: Node, w: np.ndarray[Any, Any], bias: np.ndarray[Any, Any] | None
                  ) -> tuple[int, str]:
    """The output-channel axis of the weights, or -1 and why they do not fit."""
    attrs = node.fields.values_dict()
    if node.op_type == "Conv":
        m, axis = (w.shape[0], 0) if w.ndim >= 3 else (0, -1)
    elif node.op_type == "MatMul":
        m, axis = (w.shape[1], 1) if w.ndim == 2 else (0, -1)
    else:
        if attrs.get("transA", 0) or float(attrs.get("alpha", 1.0)) != 1.0 \
                or float(attrs.get("beta", 1.0)) != 1.0 or w.ndim != 2:
            return -1, "Gemm with transA, alpha or beta other than 0, 1, 1"
        trans = bool(attrs.get("transB", 0))
        m, axis = (w.shape[0], 0) if trans else (w.shape[1], 1)
    if axis < 0:
        return -1, f"weights of rank {w.ndim}"
    if bias is not None and (bias.dtype != np.float32 or bias.size != m):
        return -1, "a bias that is not one float32 value per output channel"
    return axis, ""


def _takes(plugin: IPluginV2, descs: list[PluginTensorDesc], positions: list[int],
           num_inputs: int) -> bool:
    if isinstance(plugin, IPluginV2DynamicExt):
        return all(plugin.supports_format_combination(p, descs, num_inputs) for p in positions)
    return all(plugin.supports_format(descs[p].dtype, TensorFormat.LINEAR) for p in positions)


Quant = tuple[float | tuple[float, ...], int | tuple[int, ...]]


def _integer_plugin_takes_int8(selector: Selector, node: Node, device: str,
                               w: np.ndarray[Any, Any], axis: int, x_q: Quant = (1.0, 0),
                               w_q: Quant | None = None, y_q: Quant = (1.0, 0)) -> str:
    """Why the plugin of the node's integer operator does not take its INT8 tensors (x and
    y UINT8, W INT8, each with its scale and zero point: placeholders before calibration,
    the calibrated ones after), or "" where it does."""
    op = _INTEGER_OP[node.op_type]
    fields = node.fields if node.op_type == "Conv" else PluginFieldCollection([])
    rec = selector.candidate(Node(node.name, op, "", [], [], fields, 10), device)
    if rec is None:
        return f"no {op} plugin on {device}"
    plugin = rec.creator.create_plugin(f"{node.name}:{op}", fields)
    channels = int(w.shape[axis])
    w_q = w_q or ((1.0,) * channels, (0,) * channels)
    u8, i8 = DataType.UINT8, DataType.INT8
    lin = TensorFormat.LINEAR
    f = PluginTensorDesc((), DataType.FLOAT)
    # x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp -> y
    descs = [PluginTensorDesc((-1,), u8, lin, *x_q), f, PluginTensorDesc((), u8),
             PluginTensorDesc(tuple(w.shape), i8, lin, *w_q), f, PluginTensorDesc((), i8),
             f, PluginTensorDesc((), u8), PluginTensorDesc((-1,), u8, lin, *y_q)]
    if not _takes(plugin, descs, [0, 3, 8], 8):
        return (f"the integer plugin {rec.creator.plugin_namespace}::{rec.creator.name} "
                f"({rec.distribution}) does not take INT8")
    return ""


def confirm(network: Network, chosen: list[Candidate], ranges: dict[str, tuple[float, float]],
            selector: Selector, device: str, kept: dict[str, str]) -> list[Candidate]:
    """The candidates whose integer plugin still takes their INT8 tensors once their scales
    and zero points are known (a plugin may refuse some: a zero point, a per-channel
    scale); the others join ``kept``. A quantized reader of a dropped node's output keeps
    its own Q/DQ pair of that tensor (its range was calibrated all the same)."""
    out: list[Candidate] = []
    for c in chosen:
        if c.x not in ranges or c.y not in ranges:
            out.append(c)  # insert_qdq names the missing range
            continue
        w = network.constants[c.node.inputs[1]]
        _, ws = weight_params(w, c.axis)
        why = _integer_plugin_takes_int8(
            selector, c.node, device, w, c.axis, act_params(*ranges[c.x]),
            (tuple(float(v) for v in ws), (0,) * ws.size), act_params(*ranges[c.y]))
        if why:
            kept[c.node.name] = why + " with its calibrated scales"
        else:
            out.append(c)
    return out


def _work_per_value(node: Node, w: np.ndarray[Any, Any]) -> float:
    """Multiply-adds per value of the node's input: a Conv's output channels per group times
    its kernel size over its strides; a MatMul's or a Gemm's output columns."""
    attrs = node.fields.values_dict()
    if node.op_type == "Conv":
        group = int(attrs.get("group", 1))
        strides = attrs.get("strides") or (1,)
        return float(w.shape[0] // group * np.prod(w.shape[2:]) / np.prod(strides))
    if node.op_type == "Gemm" and attrs.get("transB", 0):
        return float(w.shape[0])
    return float(w.shape[1])


def candidates(network: Network, selector: Selector, device: str, min_work: float = 0
               ) -> tuple[list[Candidate], dict[str, str]]:
    """The nodes to quantize, and ``{node name: why it keeps float}`` for the others."""
    readers: dict[str, list[int]] = {}
    for i, n in enumerate(network.nodes):
        for x in n.inputs:
            if x:
                readers.setdefault(x, []).append(i)
    outputs = {t.name for t in network.outputs}
    found: list[Candidate] = []
    kept: dict[str, str] = {}
    for i, node in enumerate(network.nodes):
        if node.domain or node.op_type not in _INTEGER_OP or len(node.inputs) < 2:
            continue
        w = network.constants.get(node.inputs[1])
        bias = network.constants.get(node.inputs[2]) if len(node.inputs) > 2 and \
            node.inputs[2] else None
        if w is None or w.dtype != np.float32:
            kept[node.name] = "its weights are not a float32 constant"
            continue
        if len(node.inputs) > 2 and node.inputs[2] and bias is None:
            kept[node.name] = "its bias is not a constant"
            continue
        if node.inputs[0] in network.constants:
            kept[node.name] = "its input is a constant (folded at build time)"
            continue
        axis, why = _weights_axis(node, w, bias)
        pin = selector.pins.get(node.op_type)
        if not why and pin is not None:
            why = f"{node.op_type} is pinned to {pin!r}"
        why = why or _integer_plugin_takes_int8(selector, node, device, w, axis)
        work = _work_per_value(node, w)
        if not why and work < min_work and node.inputs[0] not in {c.y for c in found}:
            why = (f"{work:g} multiply-adds per input value, under {min_work} "
                   "(int8_min_work): quantizing its float input would cost about what the "
                   "integer product saves")
        if why:
            kept[node.name] = why
            continue
        y, clip = node.outputs[0], None
        after = readers.get(y, [])
        if len(after) == 1 and y not in outputs and _is_clip(network, network.nodes[after[0]]):
            clip = after[0]
            y = network.nodes[clip].outputs[0]
        found.append(Candidate(i, node, axis, node.inputs[0], y, clip))
    return found, kept


def _is_clip(network: Network, node: Node) -> bool:
    """A Relu, or a Clip with constant (or no) bounds."""
    if node.domain or node.op_type not in ("Relu", "Clip"):
        return False
    return all(not x or x in network.constants for x in node.inputs[1:])
