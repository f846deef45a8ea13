"""ONNX → Network: opsets, initializers, Constant nodes, attributes as plugin fields.

External data (weights in separate files) is read only from inside the model's own folder;
a location that escapes it (``../``, an absolute path, a symlink out) is rejected.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ..errors import ModelImportError, UnsafeModelPathError
from ..network import Network, Node, TensorInfo
from ..plugin import DataType, PluginField, PluginFieldCollection, PluginFieldType

__all__ = ["parse_onnx", "load_onnx_model", "free_names", "graph_nodes", "tensor_value"]

_AT = onnx.AttributeProto


def load_onnx_model(source: str | os.PathLike[str] | bytes | onnx.ModelProto
                    ) -> tuple[onnx.ModelProto, Path | None]:
    """Read a model without following external data; returns (model, its folder)."""
    if isinstance(source, onnx.ModelProto):
        return source, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(source)), None
        except Exception as exc:
            raise ModelImportError(f"the bytes given are not an ONNX model: {exc}") from exc
    path = Path(source)
    if not path.is_file():
        raise ModelImportError(f"model file {str(path)!r} does not exist")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise ModelImportError(
            f"{str(path)!r} is not a readable ONNX model ({type(exc).__name__}: {exc}); "
            "check that the file is complete, or re-export it") from exc
    return model, path.resolve().parent


def _external_tensor(t: onnx.TensorProto, base: Path | None, where: str) -> np.ndarray[Any, Any]:
    info = {e.key: e.value for e in t.external_data}
    location = info.get("location", "")
    if base is None:
        raise ModelImportError(
            f"{where}: tensor {t.name!r} keeps its data in external file {location!r}, but the "
            "model was given in memory; load it from its file path instead")
    target = (base / location).resolve()
    if os.path.isabs(location) or not target.is_relative_to(base):
        raise UnsafeModelPathError(
            f"{where}: tensor {t.name!r} names external data {location!r}, which lies outside "
            f"the model's folder {str(base)!r}; mini-infer reads external data only from "
            "inside that folder. Move the data file next to the model and fix the location")
    if not target.is_file():
        raise ModelImportError(
            f"{where}: external data file {str(target)!r} for tensor {t.name!r} is missing")
    offset, length = int(info.get("offset", 0)), info.get("length")
    with open(target, "rb") as fh:
        fh.seek(offset)
        raw = fh.read(int(length)) if length is not None else fh.read()
    dtype = DataType.from_onnx(t.data_type).numpy
    shape = tuple(t.dims)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise ModelImportError(
            f"{where}: external data for {t.name!r} has {len(raw)} bytes, expected {expected}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _tensor(t: onnx.TensorProto, base: Path | None, where: str) -> np.ndarray[Any, Any]:
    if t.data_location == onnx.TensorProto.EXTERNAL:
        return _external_tensor(t, base, where)
    try:
        return numpy_helper.to_array(t)
    except Exception as exc:
        raise ModelImportError(f"{where}: tensor {t.name!r} cannot be read: {exc}") from exc


def _field(a: onnx.AttributeProto, base: Path | None, where: str) -> PluginField:
    if a.type == _AT.FLOAT:
        return PluginField(a.name, np.array(a.f, np.float32), PluginFieldType.FLOAT32)
    if a.type == _AT.INT:
        return PluginField(a.name, np.array(a.i, np.int64), PluginFieldType.INT64)
    if a.type == _AT.STRING:
        return PluginField(a.name, np.array(a.s), PluginFieldType.CHAR)
    if a.type == _AT.FLOATS:
        return PluginField(a.name, np.array(a.floats, np.float32), PluginFieldType.FLOAT32)
    if a.type == _AT.INTS:
        return PluginField(a.name, np.array(a.ints, np.int64), PluginFieldType.INT64)
    if a.type == _AT.STRINGS:
        return PluginField(a.name, np.array(list(a.strings)), PluginFieldType.CHAR)
    if a.type == _AT.TENSOR:
        arr = _tensor(a.t, base, where)
        return PluginField(a.name, arr, PluginFieldType.from_numpy(arr.dtype), is_tensor=True)
    if a.type == _AT.GRAPH:
        raw = np.frombuffer(a.g.SerializeToString(), dtype=np.uint8)
        return PluginField(a.name, raw, PluginFieldType.GRAPH)
    raise ModelImportError(
        f"{where}: attribute {a.name!r} has type {_AT.AttributeType.Name(a.type)}, which this "
        "version of mini-infer cannot import (lists of graphs and sparse tensors)")


def _constant_value(node: onnx.NodeProto, base: Path | None, where: str) -> np.ndarray[Any, Any]:
    if len(node.attribute) != 1:
        raise ModelImportError(f"{where}: Constant must have exactly one value attribute")
    a = node.attribute[0]
    if a.name == "value":
        return _tensor(a.t, base, where)
    simple = {"value_float": (a.f, np.float32), "value_floats": (list(a.floats), np.float32),
              "value_int": (a.i, np.int64), "value_ints": (list(a.ints), np.int64)}
    if a.name in simple:
        v, dt = simple[a.name]
        return np.array(v, dtype=dt)
    if a.name in ("value_string", "value_strings"):  # UTF-8 text, as string tensors hold it
        try:
            text = [b.decode() for b in ([a.s] if a.name == "value_string" else a.strings)]
        except UnicodeDecodeError as exc:
            raise ModelImportError(f"{where}: {a.name} is not UTF-8 text: {exc}") from exc
        strings = np.empty(len(text), dtype=object)
        strings[:] = text
        return strings.reshape(()) if a.name == "value_string" else strings
    raise ModelImportError(f"{where}: Constant with {a.name!r} is not supported")


def _value_info(vi: onnx.ValueInfoProto, where: str) -> TensorInfo:
    kind = vi.type.WhichOneof("value")
    if kind is None:  # no type given (allowed for outputs): the builder infers it
        return TensorInfo(vi.name, None, None)
    if kind != "tensor_type":
        raise ModelImportError(
            f"{where}: {vi.name!r} is a {kind.replace('_type', '')}; mini-infer supports tensor "
            "inputs and outputs only (sequence, optional and map types are not supported yet)")
    tt = vi.type.tensor_type
    dtype = DataType.from_onnx(tt.elem_type) if tt.elem_type else None
    shape: list[int | str | None] | None = None
    if tt.HasField("shape"):
        shape = []
        for d in tt.shape.dim:
            if d.HasField("dim_value") and d.dim_value >= 0:
                shape.append(int(d.dim_value))
            elif d.HasField("dim_param") and d.dim_param not in _UNNAMED:
                shape.append(d.dim_param)
            else:
                shape.append(None)
    return TensorInfo(vi.name, dtype, shape)


#: dim_params exporters write for "unknown" (paddle2onnx, some TF converters): not a name two
#: dimensions could share, so each such dimension is a symbol of its own
_UNNAMED = frozenset({"", "?", "-1", "None", "unk", "unknown"})


def _ordered_unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def free_names(graph: onnx.GraphProto) -> list[str]:
    """Names a (sub)graph reads without defining them: its outer-scope references."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {
        t.values.name for t in graph.sparse_initializer}
    used: list[str] = []
    for node in graph.node:
        used += [x for x in node.input if x and x not in defined]
        for a in node.attribute:
            subs = [a.g] if a.type == _AT.GRAPH else list(a.graphs)
            for sub in subs:
                used += [x for x in free_names(sub) if x not in defined]
        defined.update(node.output)
    return _ordered_unique(used)


def graph_nodes(g: onnx.GraphProto, opsets: dict[str, int],
                constants: dict[str, np.ndarray[Any, Any]], base: Path | None = None,
                label: str = "model") -> list[Node]:
    """The nodes of a graph (or a body of If, Loop, Scan) as network nodes; its Constant
    nodes' values go to ``constants``. A node with bodies gets the names they read from
    enclosing scopes as extra inputs (``__outer_scope__``) and the opsets
    (``__opset_imports__``)."""
    nodes: list[Node] = []
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        where = f"{label}: node {name!r} ({n.op_type})"
        domain = "" if n.domain == "ai.onnx" else n.domain
        if domain == "" and n.op_type == "Constant":
            constants[n.output[0]] = _constant_value(n, base, where)
            continue
        if domain not in opsets:
            raise ModelImportError(f"{where}: domain {domain!r} has no opset_import entry")
        fields = PluginFieldCollection(_field(a, base, where) for a in n.attribute)
        node_inputs = list(n.input)
        graphs = [a.g for a in n.attribute if a.type == _AT.GRAPH]
        if graphs:
            # names the subgraphs read from enclosing scopes become extra (implicit) inputs
            outer = _ordered_unique(x for g in graphs for x in free_names(g))
            extra = [PluginField.from_value("__opset_imports__", ";".join(
                f"{d}:{v}" for d, v in sorted(opsets.items())))]
            if outer:
                extra.append(PluginField.from_value("__outer_scope__", list(outer)))
                node_inputs += outer
            fields = PluginFieldCollection([*fields.fields, *extra])
        nodes.append(Node(name, n.op_type, domain, node_inputs, list(n.output), fields,
                          opsets[domain]))
    return nodes


def tensor_value(t: onnx.TensorProto, label: str = "model") -> np.ndarray[Any, Any]:
    """An initializer's value (a body's: its data is in the model, never external here)."""
    return _tensor(t, None, label)


def parse_onnx(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> Network:
    """Import an ONNX model (path, bytes or ModelProto) into a Network."""
    model, base = load_onnx_model(source)
    g = model.graph
    label = str(source) if isinstance(source, (str, os.PathLike)) else (g.name or "model")
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version)
              for o in model.opset_import}
    if "" not in opsets and model.ir_version < 3:
        opsets[""] = 1
    constants: dict[str, np.ndarray[Any, Any]] = {}
    for init in g.initializer:
        constants[init.name] = _tensor(init, base, f"{label}: initializer")
    inputs = [_value_info(vi, f"{label}: graph input") for vi in g.input
              if vi.name not in constants]
    outputs = [_value_info(vi, f"{label}: graph output") for vi in g.output]
    nodes = graph_nodes(g, opsets, constants, base, label)
    return Network(g.name or "model", inputs, outputs, nodes, constants, opsets, label)
