"""ONNX's ``ModelProto`` read from its protobuf wire format without ``import onnx``.

``import onnx`` costs about half a second (it imports ml_dtypes and the protobuf runtime),
more than a small model's whole start. :func:`read_model` decodes a model file into plain
objects that answer the questions the importer asks of onnx's messages: the same field
names, ``HasField`` and ``WhichOneof``, the same defaults (proto2: 0, "", an empty list),
every message of ``onnx.proto`` (graphs inside attributes, sparse tensors, types of
sequences, optionals and maps, model-local functions, training information). The schema
below is checked against onnx's own descriptors by the tests, and every model of onnx's
backend test data is read both ways and compared.

A large ``TensorProto.raw_data`` is not copied out of the file: it is a :class:`Span` (where
it lies), read by the importer straight into the array it becomes (see _wire.py). A graph
held by an attribute (If, Loop, Scan bodies) keeps its serialized bytes in ``raw``, which is
what the importer passes on to control-flow plugins.

Anything this reader does not expect -- a wire type other than the schema's, a singular
message repeated (protobuf would merge them), text that is not UTF-8, a length past the
end -- raises :class:`Unreadable`: the importer then reads the file with onnx, which also
gives the error message for a broken file.
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["MESSAGES", "Message", "Span", "Unreadable", "read_graph_bytes", "read_model",
           "read_model_bytes"]

#: raw_data blocks at least this large are left in the file (a Span), not copied
SPAN_MIN = 1 << 16


class Unreadable(Exception):
    """The bytes are not as this reader expects: read them with onnx instead."""


class Span:
    """Where a large ``raw_data`` lies in the model file: ``buf[start:stop]``."""

    __slots__ = ("start", "stop")

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop

    def __len__(self) -> int:
        return self.stop - self.start


class Message:
    """A decoded message: fields set by the file are instance attributes, the others fall
    back to the class's defaults (proto2's)."""

    FIELDS: dict[int, tuple[str, str, bool, str]] = {}
    ONEOFS: dict[str, str] = {}
    raw: bytes = b""

    def HasField(self, name: str) -> bool:  # noqa: N802 - protobuf's name
        return name in self.__dict__

    def WhichOneof(self, group: str) -> str | None:  # noqa: N802 - protobuf's name
        for name, g in self.ONEOFS.items():
            if g == group and name in self.__dict__:
                return name
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__dict__!r})"


#: (field number -> (name, kind, repeated, message name)) per message of onnx.proto; kinds:
#: i64 (int64), i32 (int32 and enums), u64, f32, f64, str, bytes, msg
_S: dict[str, dict[int, tuple[str, str, bool, str]]] = {
    "StringStringEntryProto": {1: ("key", "str", False, ""), 2: ("value", "str", False, "")},
    "OperatorSetIdProto": {1: ("domain", "str", False, ""), 2: ("version", "i64", False, "")},
    "ModelProto": {
        1: ("ir_version", "i64", False, ""),
        8: ("opset_import", "msg", True, "OperatorSetIdProto"),
        2: ("producer_name", "str", False, ""), 3: ("producer_version", "str", False, ""),
        4: ("domain", "str", False, ""), 5: ("model_version", "i64", False, ""),
        6: ("doc_string", "str", False, ""), 7: ("graph", "msg", False, "GraphProto"),
        14: ("metadata_props", "msg", True, "StringStringEntryProto"),
        20: ("training_info", "msg", True, "TrainingInfoProto"),
        25: ("functions", "msg", True, "FunctionProto"),
        26: ("configuration", "msg", True, "DeviceConfigurationProto")},
    "DeviceConfigurationProto": {
        1: ("name", "str", False, ""), 2: ("num_devices", "i32", False, ""),
        3: ("device", "str", True, "")},
    "TrainingInfoProto": {
        1: ("initialization", "msg", False, "GraphProto"),
        2: ("algorithm", "msg", False, "GraphProto"),
        3: ("initialization_binding", "msg", True, "StringStringEntryProto"),
        4: ("update_binding", "msg", True, "StringStringEntryProto")},
    "GraphProto": {
        1: ("node", "msg", True, "NodeProto"), 2: ("name", "str", False, ""),
        5: ("initializer", "msg", True, "TensorProto"),
        15: ("sparse_initializer", "msg", True, "SparseTensorProto"),
        10: ("doc_string", "str", False, ""),
        11: ("input", "msg", True, "ValueInfoProto"),
        12: ("output", "msg", True, "ValueInfoProto"),
        13: ("value_info", "msg", True, "ValueInfoProto"),
        14: ("quantization_annotation", "msg", True, "TensorAnnotation"),
        16: ("metadata_props", "msg", True, "StringStringEntryProto")},
    "TensorAnnotation": {
        1: ("tensor_name", "str", False, ""),
        2: ("quant_parameter_tensor_names", "msg", True, "StringStringEntryProto")},
    "NodeProto": {
        1: ("input", "str", True, ""), 2: ("output", "str", True, ""),
        3: ("name", "str", False, ""), 4: ("op_type", "str", False, ""),
        7: ("domain", "str", False, ""), 8: ("overload", "str", False, ""),
        5: ("attribute", "msg", True, "AttributeProto"),
        6: ("doc_string", "str", False, ""),
        9: ("metadata_props", "msg", True, "StringStringEntryProto"),
        10: ("device_configurations", "msg", True, "NodeDeviceConfigurationProto")},
    "NodeDeviceConfigurationProto": {
        1: ("configuration_id", "str", False, ""),
        2: ("sharding_spec", "msg", True, "ShardingSpecProto"),
        3: ("pipeline_stage", "i32", False, "")},
    "ShardingSpecProto": {
        1: ("tensor_name", "str", False, ""), 2: ("device", "i64", True, ""),
        3: ("index_to_device_group_map", "msg", True, "IntIntListEntryProto"),
        4: ("sharded_dim", "msg", True, "ShardedDimProto")},
    "IntIntListEntryProto": {1: ("key", "i64", False, ""), 2: ("value", "i64", True, "")},
    "ShardedDimProto": {
        1: ("axis", "i64", False, ""),
        2: ("simple_sharding", "msg", True, "SimpleShardedDimProto")},
    "SimpleShardedDimProto": {
        1: ("dim_value", "i64", False, ""), 2: ("dim_param", "str", False, ""),
        3: ("num_shards", "i64", False, "")},
    "AttributeProto": {
        1: ("name", "str", False, ""), 21: ("ref_attr_name", "str", False, ""),
        13: ("doc_string", "str", False, ""), 20: ("type", "i32", False, ""),
        2: ("f", "f32", False, ""), 3: ("i", "i64", False, ""), 4: ("s", "bytes", False, ""),
        5: ("t", "msg", False, "TensorProto"), 6: ("g", "msg", False, "GraphProto"),
        22: ("sparse_tensor", "msg", False, "SparseTensorProto"),
        14: ("tp", "msg", False, "TypeProto"),
        7: ("floats", "f32", True, ""), 8: ("ints", "i64", True, ""),
        9: ("strings", "bytes", True, ""), 10: ("tensors", "msg", True, "TensorProto"),
        11: ("graphs", "msg", True, "GraphProto"),
        23: ("sparse_tensors", "msg", True, "SparseTensorProto"),
        15: ("type_protos", "msg", True, "TypeProto")},
    "ValueInfoProto": {
        1: ("name", "str", False, ""), 2: ("type", "msg", False, "TypeProto"),
        3: ("doc_string", "str", False, ""),
        4: ("metadata_props", "msg", True, "StringStringEntryProto")},
    "TensorProto": {
        1: ("dims", "i64", True, ""), 2: ("data_type", "i32", False, ""),
        3: ("segment", "msg", False, "TensorProto.Segment"),
        4: ("float_data", "f32", True, ""), 5: ("int32_data", "i32", True, ""),
        6: ("string_data", "bytes", True, ""), 7: ("int64_data", "i64", True, ""),
        8: ("name", "str", False, ""), 12: ("doc_string", "str", False, ""),
        9: ("raw_data", "bytes", False, ""),
        13: ("external_data", "msg", True, "StringStringEntryProto"),
        14: ("data_location", "i32", False, ""), 10: ("double_data", "f64", True, ""),
        11: ("uint64_data", "u64", True, ""),
        16: ("metadata_props", "msg", True, "StringStringEntryProto")},
    "TensorProto.Segment": {1: ("begin", "i64", False, ""), 2: ("end", "i64", False, "")},
    "SparseTensorProto": {
        1: ("values", "msg", False, "TensorProto"), 2: ("indices", "msg", False, "TensorProto"),
        3: ("dims", "i64", True, "")},
    "TensorShapeProto": {1: ("dim", "msg", True, "TensorShapeProto.Dimension")},
    "TensorShapeProto.Dimension": {
        1: ("dim_value", "i64", False, ""), 2: ("dim_param", "str", False, ""),
        3: ("denotation", "str", False, "")},
    "TypeProto": {
        1: ("tensor_type", "msg", False, "TypeProto.Tensor"),
        4: ("sequence_type", "msg", False, "TypeProto.Sequence"),
        5: ("map_type", "msg", False, "TypeProto.Map"),
        9: ("optional_type", "msg", False, "TypeProto.Optional"),
        8: ("sparse_tensor_type", "msg", False, "TypeProto.SparseTensor"),
        7: ("opaque_type", "msg", False, "TypeProto.Opaque"),
        6: ("denotation", "str", False, "")},
    "TypeProto.Tensor": {1: ("elem_type", "i32", False, ""),
                         2: ("shape", "msg", False, "TensorShapeProto")},
    "TypeProto.Sequence": {1: ("elem_type", "msg", False, "TypeProto")},
    "TypeProto.Map": {1: ("key_type", "i32", False, ""),
                      2: ("value_type", "msg", False, "TypeProto")},
    "TypeProto.Optional": {1: ("elem_type", "msg", False, "TypeProto")},
    "TypeProto.SparseTensor": {1: ("elem_type", "i32", False, ""),
                               2: ("shape", "msg", False, "TensorShapeProto")},
    "TypeProto.Opaque": {1: ("domain", "str", False, ""), 2: ("name", "str", False, "")},
    "FunctionProto": {
        1: ("name", "str", False, ""), 4: ("input", "str", True, ""),
        5: ("output", "str", True, ""), 6: ("attribute", "str", True, ""),
        11: ("attribute_proto", "msg", True, "AttributeProto"),
        7: ("node", "msg", True, "NodeProto"), 8: ("doc_string", "str", False, ""),
        9: ("opset_import", "msg", True, "OperatorSetIdProto"),
        10: ("domain", "str", False, ""), 13: ("overload", "str", False, ""),
        12: ("value_info", "msg", True, "ValueInfoProto"),
        14: ("metadata_props", "msg", True, "StringStringEntryProto")},
}
#: oneof groups: field name -> group, per message
_ONEOFS = {
    "TypeProto": {n: "value" for n in ("tensor_type", "sequence_type", "map_type",
                                       "optional_type", "sparse_tensor_type", "opaque_type")},
    "TensorShapeProto.Dimension": {"dim_value": "value", "dim_param": "value"},
    "SimpleShardedDimProto": {"dim_value": "dim", "dim_param": "dim"},
}
_DEFAULTS = {"i64": 0, "i32": 0, "u64": 0, "f32": 0.0, "f64": 0.0, "str": "", "bytes": b""}


def _make(name: str) -> type[Message]:
    fields = _S[name]
    attrs: dict[str, Any] = {"FIELDS": fields, "ONEOFS": _ONEOFS.get(name, {})}
    for fname, kind, repeated, _ in fields.values():
        attrs[fname] = () if repeated else (None if kind == "msg" else _DEFAULTS[kind])
    return type(name.replace(".", "_"), (Message,), attrs)


#: a class per message (its name as onnx.proto spells it)
MESSAGES: dict[str, type[Message]] = {name: _make(name) for name in _S}
for _name, _cls in MESSAGES.items():  # an unset message field reads as an empty message
    for _fname, _kind, _repeated, _sub in _S[_name].values():
        if _kind == "msg" and not _repeated:
            setattr(_cls, _fname, MESSAGES[_sub]())
_WIRE = {"i64": 0, "i32": 0, "u64": 0, "f32": 5, "f64": 1, "str": 2, "bytes": 2, "msg": 2}
_PACKED = {"f32": ("<%df", 4), "f64": ("<%dd", 8)}


class _Reader:
    def __init__(self, buf: Any, spans: bool) -> None:
        self.buf, self.spans = buf, spans

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        buf = self.buf
        value = shift = 0
        while True:
            if pos >= end or shift > 63:
                raise Unreadable("a varint runs past its message")
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if b < 0x80:
                return value, pos
            shift += 7

    def scalar(self, kind: str, value: int) -> int:
        if kind == "i64":
            return value - (1 << 64) if value >= 1 << 63 else value
        if kind == "i32":  # a negative int32 is sign-extended to 64 bits on the wire
            value &= 0xFFFFFFFF
            return value - (1 << 32) if value >= 1 << 31 else value
        return value

    def message(self, name: str, pos: int, end: int, keep_raw: bool = False) -> Message:
        cls = MESSAGES[name]
        obj = cls.__new__(cls)
        d = obj.__dict__
        fields, oneofs = cls.FIELDS, cls.ONEOFS
        buf = self.buf
        start = pos
        while pos < end:
            tag, pos = self.varint(pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise Unreadable("field number 0")
            spec = fields.get(number)
            if spec is None:  # a field this schema does not know: skipped, as onnx keeps it
                pos = self.skip(wire, pos, end)
                continue
            fname, kind, repeated, sub = spec
            expected = _WIRE[kind]
            if wire == 2 and expected != 2 and repeated:  # packed numbers
                length, pos = self.varint(pos, end)
                stop = pos + length
                if stop > end:
                    raise Unreadable("a packed field runs past its message")
                values = d.setdefault(fname, [])
                if kind in _PACKED:
                    fmt, size = _PACKED[kind]
                    if length % size:
                        raise Unreadable("a packed field's length")
                    values.extend(struct.unpack_from(fmt % (length // size), buf, pos))
                else:
                    while pos < stop:
                        v, pos = self.varint(pos, stop)
                        values.append(self.scalar(kind, v))
                pos = stop
                continue
            if wire != expected:
                raise Unreadable(f"{name}.{fname}: wire type {wire}, expected {expected}")
            value: Any
            if wire == 0:
                v, pos = self.varint(pos, end)
                value = self.scalar(kind, v)
            elif wire == 5:
                if pos + 4 > end:
                    raise Unreadable("a float runs past its message")
                value = struct.unpack_from("<f", buf, pos)[0]
                pos += 4
            elif wire == 1:
                if pos + 8 > end:
                    raise Unreadable("a double runs past its message")
                value = struct.unpack_from("<d", buf, pos)[0]
                pos += 8
            else:
                length, pos = self.varint(pos, end)
                stop = pos + length
                if stop > end:
                    raise Unreadable("a length runs past its message")
                if kind == "msg":
                    value = self.message(sub, pos, stop, keep_raw=(name == "AttributeProto"
                                                                   and sub == "GraphProto"))
                elif kind == "str":
                    try:
                        value = bytes(buf[pos:stop]).decode("utf-8")
                    except UnicodeDecodeError:
                        raise Unreadable("text that is not UTF-8") from None
                elif self.spans and number == 9 and length >= SPAN_MIN and \
                        name == "TensorProto":
                    value = Span(pos, stop)
                else:
                    value = bytes(buf[pos:stop])
                pos = stop
            if repeated:
                d.setdefault(fname, []).append(value)
            else:
                if kind == "msg" and fname in d:
                    raise Unreadable(f"{name}.{fname} given twice (protobuf would merge)")
                group = oneofs.get(fname)
                if group is not None:
                    for other, g in oneofs.items():
                        if g == group and other != fname:
                            d.pop(other, None)
                d[fname] = value
        if keep_raw:
            obj.raw = bytes(buf[start:end])
        return obj

    def skip(self, wire: int, pos: int, end: int) -> int:
        if wire == 0:
            return self.varint(pos, end)[1]
        if wire == 1:
            stop = pos + 8
        elif wire == 5:
            stop = pos + 4
        elif wire == 2:
            length, pos = self.varint(pos, end)
            stop = pos + length
        else:
            raise Unreadable(f"wire type {wire}")
        if stop > end:
            raise Unreadable("a field runs past its message")
        return stop


def read_model_bytes(data: bytes | bytearray | memoryview) -> Message:
    """A ModelProto from its serialized bytes (every raw_data copied, no Span)."""
    if sys.byteorder != "little":
        raise Unreadable("a big-endian machine")
    view = memoryview(data).cast("B")
    return _Reader(view, spans=False).message("ModelProto", 0, len(view))


def read_graph_bytes(data: bytes | bytearray | memoryview) -> Message:
    """A GraphProto from its serialized bytes (a control-flow body)."""
    if sys.byteorder != "little":
        raise Unreadable("a big-endian machine")
    view = memoryview(data).cast("B")
    return _Reader(view, spans=False).message("GraphProto", 0, len(view))


def read_model(path: str | os.PathLike[str]) -> Message:
    """A ModelProto from its file, each large raw_data left there as a :class:`Span`."""
    if sys.byteorder != "little":
        raise Unreadable("a big-endian machine")
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            if size == 0:
                return MESSAGES["ModelProto"]()
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _Reader(mm, spans=True).message("ModelProto", 0, size)
    except (OSError, ValueError) as exc:
        raise Unreadable(str(exc)) from exc


def walk(obj: Any, read: Callable[[Span], bytes] | None = None) -> Any:
    """A message as nested dicts and lists of every field it sets (the tests compare onnx's
    messages and this reader's through it): works on both."""
    if obj is None:
        return None
    name = _name_of(obj)
    out: dict[str, Any] = {}
    for fname, kind, repeated, _ in _S[name].values():
        if repeated:
            values = list(getattr(obj, fname))
            if values:
                out[fname] = [walk(v, read) if kind == "msg" else _plain(v, read)
                              for v in values]
        elif obj.HasField(fname) if (kind == "msg" or fname in _ONEOFS.get(name, {})) \
                else getattr(obj, fname) not in ("", b"", 0, 0.0):
            v = getattr(obj, fname)
            out[fname] = walk(v, read) if kind == "msg" else _plain(v, read)
    return out


def _name_of(obj: Any) -> str:
    if isinstance(obj, Message):
        return next(n for n, c in MESSAGES.items() if isinstance(obj, c))
    full: str = obj.DESCRIPTOR.full_name
    return full.removeprefix("onnx.")


def _plain(value: Any, read: Callable[[Span], bytes] | None) -> Any:
    if isinstance(value, Span):
        if read is None:
            raise ValueError("a Span needs the file to be read")
        return read(value)
    if isinstance(value, float) and value != value:
        return "nan"
    return value
