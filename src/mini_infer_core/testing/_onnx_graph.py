"""ONNX graph helpers for the light-model test utilities: consumers, constants, shapes
of weights, the role of a weight in the node that uses it."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import onnx
from onnx import ModelProto, NodeProto, TensorProto, helper, numpy_helper

__all__: list[str] = []  # private helpers of light_models and random_weights

_ONNX_DOMAINS = ("", "ai.onnx")
# Ops a weight may flow through (as input 0) before reaching the op that gives it its role.
_PASS_THROUGH_OPS = frozenset({"Unsqueeze", "Squeeze", "Reshape", "Flatten", "Identity"})
_MULTIPLICATIVE_OPS = frozenset({"Mul", "Div"})
_ADDITIVE_OPS = frozenset({"Add", "Sub", "Sum"})
_MAX_PASS_THROUGH = 16

Shape = tuple[int, ...]


# --------------------------------------------------------------------------- graph helpers


def _copy(model: ModelProto) -> ModelProto:
    out = ModelProto()
    out.CopyFrom(model)
    return out


def _constant_tensors(graph: onnx.GraphProto) -> dict[str, TensorProto]:
    """Initializers and ``Constant`` node values (with a ``value`` attribute), by name."""
    constants = {init.name: init for init in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.domain in _ONNX_DOMAINS:
            for attr in node.attribute:
                if attr.name == "value" and attr.type == onnx.AttributeProto.TENSOR:
                    constants[node.output[0]] = attr.t
    return constants


def _consumers(nodes: Sequence[NodeProto]) -> dict[str, list[tuple[int, int]]]:
    """For each value name: the (node index, input position) pairs that use it."""
    consumers: dict[str, list[tuple[int, int]]] = {}
    for index, node in enumerate(nodes):
        for position, name in enumerate(node.input):
            if name:
                consumers.setdefault(name, []).append((index, position))
    return consumers


def _subgraph_names(node: NodeProto) -> Iterator[str]:
    """Names used inside the subgraphs of ``node`` (If/Loop/Scan bodies), recursively."""
    for attr in node.attribute:
        graphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
        for sub in graphs:
            for sub_node in sub.node:
                yield from sub_node.input
                yield from _subgraph_names(sub_node)
            for value_info in sub.output:
                yield value_info.name


def _used_names(graph: onnx.GraphProto) -> set[str]:
    used = {value_info.name for value_info in graph.output}
    for node in graph.node:
        used.update(node.input)
        used.update(_subgraph_names(node))
    return used


def _attr(node: NodeProto, name: str, default: Any = None) -> Any:
    for attr in node.attribute:
        if attr.name == name:
            return helper.get_attribute_value(attr)
    return default


def _int_list(
    node: NodeProto, attr_name: str, input_position: int, constants: dict[str, TensorProto]
) -> list[int] | None:
    """An int list given as attribute (older opsets) or as constant input (newer opsets)."""
    value = _attr(node, attr_name)
    if value is not None:
        return [int(v) for v in value]
    if len(node.input) > input_position and node.input[input_position]:
        tensor = constants.get(node.input[input_position])
        if tensor is None:
            return None
        return [int(v) for v in numpy_helper.to_array(tensor).reshape(-1)]
    return None


def _propagate_shape(
    node: NodeProto, shape: Shape, constants: dict[str, TensorProto]
) -> Shape | None:
    """Output shape of a pass-through op whose input 0 has ``shape`` (None if unknown)."""
    op = node.op_type
    if op == "Identity":
        return shape
    if op == "Flatten":
        axis = int(_attr(node, "axis", 1))
        axis = axis + len(shape) if axis < 0 else axis
        return (math.prod(shape[:axis]), math.prod(shape[axis:]))
    if op == "Unsqueeze":
        axes = _int_list(node, "axes", 1, constants)
        if axes is None:
            return None
        rank = len(shape) + len(axes)
        dims = list(shape)
        for axis in sorted(a + rank if a < 0 else a for a in axes):
            dims.insert(axis, 1)
        return tuple(dims)
    if op == "Squeeze":
        axes = _int_list(node, "axes", 1, constants)
        if axes is None:
            return tuple(d for d in shape if d != 1)
        drop = {a + len(shape) if a < 0 else a for a in axes}
        return tuple(d for i, d in enumerate(shape) if i not in drop)
    if op == "Reshape":
        target_tensor = constants.get(node.input[1]) if len(node.input) > 1 else None
        if target_tensor is None:
            return None
        target = [int(v) for v in numpy_helper.to_array(target_tensor).reshape(-1)]
        allow_zero = bool(_attr(node, "allowzero", 0))
        dims = [
            shape[i] if d == 0 and not allow_zero and i < len(shape) else d
            for i, d in enumerate(target)
        ]
        if dims.count(-1) == 1:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = math.prod(shape) // known if known else 0
        return tuple(dims)
    return None


@dataclass
class _Weight:
    """A weight to draw: where it comes from and how it is used."""

    name: str
    shape: Shape
    user: int  # index of the node that uses it (-1: unused)
    position: int  # input position there
    seen_name: str  # its name there (differs when it flows through Unsqueeze/Reshape...)
    seen_shape: Shape  # its shape there (the original shape when it could not be tracked)


def _trace_weight(
    name: str,
    shape: Shape,
    nodes: Sequence[NodeProto],
    consumers: dict[str, list[tuple[int, int]]],
    constants: dict[str, TensorProto],
) -> _Weight:
    """Follow ``name`` through pass-through ops (as input 0) to the node that uses it."""
    current, current_shape = name, shape
    for _ in range(_MAX_PASS_THROUGH):
        uses = consumers.get(current, [])
        if not uses:
            break
        index, position = uses[0]
        node = nodes[index]
        if node.op_type in _PASS_THROUGH_OPS and node.domain in _ONNX_DOMAINS and position == 0:
            next_shape = _propagate_shape(node, current_shape, constants)
            current = node.output[0]
            current_shape = next_shape if next_shape is not None else current_shape
            continue
        return _Weight(name, shape, index, position, current, current_shape)
    return _Weight(name, shape, -1, -1, current, current_shape)


def _is_parameter_slot(node: NodeProto, position: int) -> bool:
    """Whether input ``position`` of ``node`` is a trainable parameter of a known op."""
    if node.domain not in _ONNX_DOMAINS:
        return False
    op = node.op_type
    if op in ("Conv", "ConvTranspose", "Gemm"):
        return position in (1, 2)
    if op == "BatchNormalization":
        return position in (1, 2, 3, 4)
    if op in ("InstanceNormalization", "PRelu"):
        return position in (1, 2)
    return op == "MatMul" or op in _MULTIPLICATIVE_OPS or op in _ADDITIVE_OPS


def _op(node: NodeProto) -> str:
    return node.op_type if node.domain in _ONNX_DOMAINS else ""
