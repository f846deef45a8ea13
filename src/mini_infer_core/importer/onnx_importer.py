"""ONNX → Network: opsets, initializers, Constant nodes, attributes as plugin fields.

External data (weights in separate files) is read only from inside the model's own folder;
a location that escapes it (``../``, an absolute path, a symlink out) is rejected.

A model file (or bytes) is read by the importer's own wire-format reader (_proto.py), so that
importing it needs no ``import onnx`` (half a second with ml_dtypes); a model that reader
cannot read, or that holds a tensor of an element type NumPy has no plain dtype for
(bfloat16, float8, int4, ...), is read again with onnx, as is a ``ModelProto`` given.
``MINI_INFER_ONNX_READER=onnx`` reads every model with onnx (the tests compare the two).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ModelImportError, UnsafeModelPathError
from ..network import Network, Node, TensorInfo
from ..plugin import DataType, PluginField, PluginFieldCollection, PluginFieldType
from ..plugin._kinds import kind_from_proto
from ._proto import Message, Unreadable, read_model, read_model_bytes
from ._tensors import Fallback, own_array

if TYPE_CHECKING:
    from pathlib import Path

    import onnx

    from ._wire import Block

__all__ = ["parse_onnx", "load_onnx_model", "free_names", "graph_nodes", "tensor_value"]


class _AT:
    """onnx.AttributeProto's type codes."""

    FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS = 1, 2, 3, 4, 5, 6, 7, 8
    TENSORS, GRAPHS, SPARSE_TENSOR, SPARSE_TENSORS, TYPE_PROTO, TYPE_PROTOS = \
        9, 10, 11, 12, 13, 14
    NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "INT", 3: "STRING", 4: "TENSOR", 5: "GRAPH",
             6: "FLOATS", 7: "INTS", 8: "STRINGS", 9: "TENSORS", 10: "GRAPHS",
             11: "SPARSE_TENSOR", 12: "SPARSE_TENSORS", 13: "TYPE_PROTO", 14: "TYPE_PROTOS"}


#: TensorProto.data_location's EXTERNAL
_EXTERNAL = 1


def _check_path(path: str | os.PathLike[str]) -> None:
    """That ``path`` is a file (os.path's checks: pathlib is imported only to say what is
    wrong, a cold start's cost, issue 30)."""
    if os.path.isfile(path):
        return
    from pathlib import Path

    if os.path.isdir(path):
        raise ModelImportError(f"{str(Path(path))!r} is a folder, not a model file; give the "
                               "path of the .onnx file (or engine file) in it")
    raise ModelImportError(f"model file {str(Path(path))!r} does not exist")


def load_onnx_model(source: str | os.PathLike[str] | bytes | onnx.ModelProto
                    ) -> tuple[onnx.ModelProto, Path | None]:
    """Read a model with onnx, without following external data; returns (model, its
    folder)."""
    import onnx

    if isinstance(source, onnx.ModelProto):
        return source, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        try:
            return onnx.load_from_string(bytes(source)), None
        except Exception as exc:
            raise ModelImportError(f"the bytes given are not an ONNX model: {exc}") from exc
    from pathlib import Path

    path = Path(source)
    _check_path(path)
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise ModelImportError(
            f"{str(path)!r} is not a readable ONNX model ({type(exc).__name__}: {exc}); "
            "check that the file is complete, or re-export it") from exc
    return model, path.resolve().parent


def _external_tensor(t: Any, folder: str | None, where: str) -> np.ndarray[Any, Any]:
    from pathlib import Path

    info = {e.key: e.value for e in t.external_data}
    base = None if folder is None else Path(folder)
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
    dtype = _elem_type(t.data_type, f"tensor {t.name!r}", where).numpy
    shape = tuple(t.dims)
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise ModelImportError(
            f"{where}: external data for {t.name!r} has {len(raw)} bytes, expected {expected}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def _tensor(t: Any, base: str | None, where: str, file: Any = None) -> np.ndarray[Any, Any]:
    """A tensor's value: onnx's TensorProto through numpy_helper, the own reader's through
    own_array (``file``: the model file open, for a raw_data left there as a Span)."""
    if t.data_location == _EXTERNAL:
        return _external_tensor(t, base, where)
    try:
        if isinstance(t, Message):
            arr = own_array(t, file)
        else:
            from onnx import numpy_helper

            arr = numpy_helper.to_array(t)
    except Fallback:
        raise
    except Exception as exc:
        raise ModelImportError(f"{where}: tensor {t.name!r} cannot be read: {exc}") from exc
    try:
        DataType.from_numpy(arr.dtype)
    except ValueError:
        import onnx

        kind = onnx.TensorProto.DataType.Name(t.data_type)
        raise ModelImportError(
            f"{where}: tensor {t.name!r} has element type {kind} ({arr.dtype}), which "
            "mini-infer does not support; convert the model's weights to a supported type "
            "(float32, float16, int64, ...)") from None
    return arr


def _field(a: Any, base: str | None, where: str, file: Any = None) -> PluginField:
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
        arr = _tensor(a.t, base, where, file)
        return PluginField(a.name, arr, PluginFieldType.from_numpy(arr.dtype), is_tensor=True)
    if a.type == _AT.GRAPH:
        body = a.g.raw if isinstance(a.g, Message) else a.g.SerializeToString()
        raw = np.frombuffer(body, dtype=np.uint8)
        return PluginField(a.name, raw, PluginFieldType.GRAPH)
    if a.type == _AT.TYPE_PROTO:  # Optional's type: as text, seq(tensor(float)[2,?])
        try:
            kind, dtype, dims = kind_from_proto(a.tp)
        except ValueError as exc:
            raise ModelImportError(f"{where}: attribute {a.name!r}: {exc}") from exc
        return PluginField.from_value(a.name, kind.type_string(dtype, dims))
    raise ModelImportError(
        f"{where}: attribute {a.name!r} has type {_AT.NAMES.get(a.type, a.type)}, which this "
        "version of mini-infer cannot import (lists of graphs and sparse tensors)")


def _text(value: Any, what: str, where: str) -> str:
    """A string field of the model; protobuf hands over bytes where a file holds text that is
    not UTF-8 (a corrupt or mutated file), which must not reach the builder."""
    if isinstance(value, str):
        return value
    raise ModelImportError(
        f"{where}: {what} is not valid UTF-8 text ({bytes(value)[:40]!r}); the model file is "
        "corrupt or was not written by an ONNX exporter: re-export it")


def _elem_type(code: int, what: str, where: str) -> DataType:
    try:
        return DataType.from_onnx(code)
    except ValueError:
        raise ModelImportError(
            f"{where}: {what} has element type code {code}, which is no ONNX element type "
            f"mini-infer knows (1..{max(t.value for t in DataType)}); the model is corrupt or "
            "newer than this version of mini-infer") from None


def _names(values: Iterable[Any], what: str, where: str) -> list[str]:
    return [_text(v, what, where) for v in values]


def _body_texts(g: Any, where: str) -> None:
    """Every name of a body (and of the bodies in it) is text: names a body reads from the
    enclosing scope become its node's inputs before the body itself is imported."""
    for what, items in (("input", g.input), ("output", g.output),
                        ("initializer", g.initializer)):
        _names((t.name for t in items), f"a body {what} name", where)
    for i, n in enumerate(g.node):
        at = f"{where}: body {_text(g.name, 'a body name', where)!r} node {i}"
        for what, items in (("an operator type", [n.op_type]), ("a node name", [n.name]),
                            ("a domain", [n.domain]), ("an input name", n.input),
                            ("an output name", n.output),
                            ("an attribute name", [a.name for a in n.attribute])):
            _names(items, what, at)
        for a in n.attribute:
            for sub in [a.g] if a.type == _AT.GRAPH else list(a.graphs):
                _body_texts(sub, at)


def _constant_value(node: Any, base: str | None, where: str, file: Any = None
                    ) -> np.ndarray[Any, Any]:
    if len(node.output) != 1:
        raise ModelImportError(f"{where}: Constant must have exactly one output, it has "
                               f"{len(node.output)}")
    if len(node.attribute) != 1:
        raise ModelImportError(f"{where}: Constant must have exactly one value attribute")
    a = node.attribute[0]
    if a.name == "value":
        return _tensor(a.t, base, where, file)
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


def _value_info(vi: Any, where: str) -> TensorInfo:
    """A graph input or output: a tensor, or a sequence, optional or map of tensors (the
    element type and shape of the innermost tensor, and what wraps it)."""
    if vi.type.WhichOneof("value") is None:  # no type (allowed for outputs): inferred
        return TensorInfo(vi.name, None, None)
    inner = vi.type  # the innermost tensor's element type is checked as a tensor's would be
    while (w := inner.WhichOneof("value")) in ("sequence_type", "optional_type", "map_type"):
        inner = inner.map_type.value_type if w == "map_type" else getattr(inner, w).elem_type
    if w == "tensor_type" and inner.tensor_type.elem_type:
        _elem_type(inner.tensor_type.elem_type, repr(vi.name), where)
    try:
        kind, dtype, dims = kind_from_proto(vi.type)
    except ValueError as exc:
        raise ModelImportError(f"{where}: {vi.name!r}: {exc}; mini-infer supports tensors, "
                               "sequences, optionals and maps") from exc
    shape = None if dims is None else [
        d if isinstance(d, int) or (d is not None and d not in _UNNAMED) else None
        for d in dims]
    return TensorInfo(vi.name, dtype, shape, kind)


#: dim_params exporters write for "unknown" (paddle2onnx, some TF converters): not a name two
#: dimensions could share, so each such dimension is a symbol of its own
_UNNAMED = frozenset({"", "?", "-1", "None", "unk", "unknown"})


def _ordered_unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def free_names(graph: Any) -> list[str]:
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


def graph_nodes(g: Any, opsets: dict[str, int],
                constants: dict[str, np.ndarray[Any, Any]], base: str | None = None,
                label: str = "model", file: Any = None) -> list[Node]:
    """The nodes of a graph (or a body of If, Loop, Scan) as network nodes; its Constant
    nodes' values go to ``constants``. A node with bodies gets the names they read from
    enclosing scopes as extra inputs (``__outer_scope__``) and the opsets
    (``__opset_imports__``)."""
    nodes: list[Node] = []
    for i, n in enumerate(g.node):
        op_type = _text(n.op_type, "an operator type", f"{label}: node {i}")
        name = _text(n.name, "a node name", f"{label}: node {i} ({op_type})") or \
            f"{op_type}_{i}"
        where = f"{label}: node {name!r} ({op_type})"
        domain = _text(n.domain, "the operator domain", where)
        domain = "" if domain == "ai.onnx" else domain
        _names(n.input, "an input name", where)
        _names(n.output, "an output name", where)
        _names((a.name for a in n.attribute), "an attribute name", where)
        if domain == "" and n.op_type == "Constant":
            constants[n.output[0]] = _constant_value(n, base, where, file)
            continue
        if domain not in opsets:
            raise ModelImportError(f"{where}: domain {domain!r} has no opset_import entry")
        fields = PluginFieldCollection(_field(a, base, where, file) for a in n.attribute)
        node_inputs = list(n.input)
        graphs = [a.g for a in n.attribute if a.type == _AT.GRAPH]
        if graphs:
            # names the subgraphs read from enclosing scopes become extra (implicit) inputs
            for body in graphs:
                _body_texts(body, where)
            outer = _ordered_unique(x for g in graphs for x in free_names(g))
            extra = [PluginField.from_value("__opset_imports__", ";".join(
                f"{d}:{v}" for d, v in sorted(opsets.items())))]
            if outer:
                extra.append(PluginField.from_value("__outer_scope__", list(outer)))
                node_inputs += outer
            fields = PluginFieldCollection([*fields.fields, *extra])
        nodes.append(Node(name, op_type, domain, node_inputs, list(n.output), fields,
                          opsets[domain]))
    return nodes


def tensor_value(t: Any, label: str = "model") -> np.ndarray[Any, Any]:
    """An initializer's value (a body's: its data is in the model, never external here)."""
    return _tensor(t, None, label)


def _load_split(source: str | os.PathLike[str] | bytes | onnx.ModelProto
                ) -> tuple[onnx.ModelProto, Path, dict[int, Block]] | None:
    """A model file parsed without its large weights, its path, and where those lie
    (see _wire.py); None where that way does not apply."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    from pathlib import Path

    from ._wire import split_weights

    path = Path(source).resolve()
    split = split_weights(path)
    if split is None:
        return None
    import onnx

    try:
        model = onnx.load_from_string(split[0])
    except Exception:  # not as the walk understood it: the ordinary way says what is wrong
        return None
    return model, path, split[1]


def _read(fh: Any, block: Block, name: str, label: str) -> np.ndarray[Any, Any]:
    from ._wire import read_block

    try:
        return read_block(fh, block)
    except OSError as exc:
        raise ModelImportError(f"{label}: initializer {name!r} cannot be read: {exc}") from exc


def _read_own(source: str | os.PathLike[str] | bytes | onnx.ModelProto
              ) -> tuple[Message, str | None] | None:
    """The model read by the own reader, and its folder; None where onnx must read it."""
    if os.environ.get("MINI_INFER_ONNX_READER") == "onnx":
        return None
    try:
        if isinstance(source, (str, os.PathLike)):
            _check_path(source)
            return read_model(source), os.path.dirname(os.path.realpath(source))
        if isinstance(source, (bytes, bytearray, memoryview)):
            return read_model_bytes(source), None
    except (Unreadable, RecursionError):  # RecursionError: messages nested too deep
        return None
    return None


def parse_onnx(source: str | os.PathLike[str] | bytes | onnx.ModelProto) -> Network:
    """Import an ONNX model (path, bytes or ModelProto) into a Network."""
    own = _read_own(source)
    if own is not None:
        model, base = own
        file = open(source, "rb") if isinstance(source, (str, os.PathLike)) else None  # noqa: SIM115
        try:
            return _network(model, base, source, None, file)
        except Fallback:  # a narrow element type: onnx (and ml_dtypes) read it
            pass
        finally:
            if file is not None:
                file.close()
    split = _load_split(source)
    if split is None:
        model, folder = load_onnx_model(source)
        base = None if folder is None else str(folder)
    else:
        model, base = split[0], str(split[1].parent)
    return _network(model, base, source, split, None)


def _network(model: Any, base: str | None, source: Any,
             split: tuple[Any, Path, dict[int, Block]] | None, file: Any) -> Network:
    """The network of a model read (by onnx or the own reader)."""
    g = model.graph
    label = str(source) if isinstance(source, (str, os.PathLike)) else (g.name or "model")
    if not model.HasField("graph"):  # an empty or truncated file parses as an empty model
        where = f"{label!r}: no graph in the file" if isinstance(source, (str, os.PathLike)) \
            else "no graph in the model given"
        raise ModelImportError(f"{where} (empty or truncated? an ONNX model holds one); check "
                               "that the file is complete, or re-export the model")
    _text(g.name, "the graph name", label)
    _names((o.domain for o in model.opset_import), "an opset domain", label)
    opsets = {("" if o.domain == "ai.onnx" else o.domain): int(o.version)
              for o in model.opset_import}
    for what, items in (("initializer", g.initializer), ("graph input", g.input),
                        ("graph output", g.output)):
        _names((t.name for t in items), f"a {what} name", label)
    if "" not in opsets and model.ir_version < 3:
        opsets[""] = 1
    constants: dict[str, np.ndarray[Any, Any]] = {}
    blocks = {} if split is None else split[2]
    fh = open(split[1], "rb") if split is not None and blocks else None  # noqa: SIM115
    try:
        for i, init in enumerate(g.initializer):
            block = blocks.get(i)
            constants[init.name] = _tensor(init, base, f"{label}: initializer", file) \
                if block is None else _read(fh, block, init.name, label)
    finally:
        if fh is not None:
            fh.close()
    inputs = [_value_info(vi, f"{label}: graph input") for vi in g.input
              if vi.name not in constants]
    outputs = [_value_info(vi, f"{label}: graph output") for vi in g.output]
    nodes = graph_nodes(g, opsets, constants, base, label, file)
    return Network(g.name or "model", inputs, outputs, nodes, constants, opsets, label)
