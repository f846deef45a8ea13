"""If with a condition known when the engine is built: the branch it takes replaces it.

Exporters write ``If(Equal(Shape(x)[k], 1), Squeeze, Identity)`` and the like; once the
shape is known (fixed dimensions, or ones value inference decides), the condition is a
constant, and the node becomes the nodes of its branch, built like any others: no subgraph
engine, no data-dependent node, and an output rank that may differ between the branches is
settled. ONNX names are unique across a model and its subgraphs, so the branch's nodes keep
their names; each branch output reaches the If's output through an Identity.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..importer import graph_nodes, tensor_value
from ..importer._proto import Unreadable, read_graph_bytes
from ..importer._tensors import Fallback
from ..network import Node
from ..plugin import DataType, DimsExprs, PluginFieldCollection
from .state import BuildState

__all__ = ["inline_if"]


def _condition(state: BuildState, name: str) -> bool | None:
    if name in state.constants:
        arr = state.constants[name]
        return bool(arr.reshape(-1)[0]) if arr.size == 1 else None
    dims = state.dims.get(name)
    values = dims.values if dims is not None else None
    if values is not None and len(values) == 1 and values[0].is_constant():
        return bool(values[0].get_constant_value())
    return None


def _opsets(text: str) -> dict[str, int]:
    out = {}
    for item in filter(None, text.split(";")):
        domain, _, version = item.rpartition(":")
        out[domain] = int(version)
    return out


def inline_if(state: BuildState, node: Node) -> list[Node] | None:
    """The nodes that replace ``node`` (an If whose condition is a build-time constant), with
    the branch's initializers and Constant values added to the build's constants; None when
    the node is no such If."""
    if node.op_type != "If" or node.domain or not node.inputs:
        return None
    taken = _condition(state, node.inputs[0])
    if taken is None:
        return None
    field = node.fields.get("then_branch" if taken else "else_branch")
    opsets = node.fields.get("__opset_imports__")
    if field is None or opsets is None:
        return None
    raw = field.data.tobytes()
    label = f"{node.name} ({'then' if taken else 'else'} branch)"
    try:  # the importer's own reader; onnx where it cannot (a narrow element type)
        body: Any = read_graph_bytes(raw)
        found, nodes = _branch(body, str(opsets.to_value()), node.name, label)
    except (Unreadable, Fallback, RecursionError):
        import onnx

        body = onnx.GraphProto()
        body.ParseFromString(raw)
        found, nodes = _branch(body, str(opsets.to_value()), node.name, label)
    for name, arr in found.items():
        state.constants[name] = arr
        state.dims[name] = DimsExprs.of_constant(arr)
        state.types[name] = DataType.from_numpy(arr.dtype)
    for k, out in enumerate(body.output):
        if k < len(node.outputs) and node.outputs[k]:
            nodes.append(Node(f"{node.name}/output{k}", "Identity", "", [out.name],
                              [node.outputs[k]], PluginFieldCollection(), node.opset))
    return nodes


def _branch(body: Any, opsets: str, name: str, label: str
            ) -> tuple[dict[str, np.ndarray], list[Node]]:
    found: dict[str, np.ndarray] = {t.name: tensor_value(t, name) for t in body.initializer}
    return found, graph_nodes(body, _opsets(opsets), found, None, label)
