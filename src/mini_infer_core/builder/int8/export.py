"""The quantized network as an ONNX model (``BuilderConfig(save_qdq=...)``, ``mini-infer build
--save-qdq FILE``): QDQ format, which onnxruntime and other engines run as it is, so that the
INT8 build can be checked against an engine that is not ours."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ...errors import BuildError
from ...network import Network
from ...plugin import PluginField, PluginFieldType

__all__ = ["save_qdq", "to_onnx"]


def _attr(f: PluginField) -> Any:
    if f.type is PluginFieldType.GRAPH:
        return onnx.GraphProto.FromString(f.data.tobytes())
    if f.is_tensor:
        return numpy_helper.from_array(np.asarray(f.data))
    value = f.to_value()
    if isinstance(value, tuple):
        return list(value)
    return value


def _value_info(name: str, dtype: Any, shape: Any) -> onnx.ValueInfoProto:
    elem = dtype.value if dtype is not None else 0
    return helper.make_tensor_value_info(name, elem, shape)


def to_onnx(network: Network) -> onnx.ModelProto:
    """``network`` as an ONNX model (its constants as initializers)."""
    nodes = []
    for n in network.nodes:
        attrs = {f.name: _attr(f) for f in n.fields.fields if not f.name.startswith("__")}
        nodes.append(helper.make_node(n.op_type, n.inputs, n.outputs, name=n.name,
                                      domain=n.domain, **attrs))
    inits = [numpy_helper.from_array(np.asarray(a), name)
             for name, a in network.constants.items()]
    graph = helper.make_graph(
        nodes, network.name or "int8",
        [_value_info(t.name, t.dtype, t.shape) for t in network.inputs],
        [_value_info(t.name, t.dtype, t.shape) for t in network.outputs], inits)
    opsets = [helper.make_opsetid(d, v) for d, v in sorted(network.opsets.items())]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = min(model.ir_version, 9)
    return model


def save_qdq(network: Network, path: str | os.PathLike[str]) -> None:
    try:
        onnx.save(to_onnx(network), os.fspath(path))
    except OSError as exc:
        raise BuildError(f"cannot write the QDQ model to {path}: {exc.strerror or exc}"
                         ) from None
