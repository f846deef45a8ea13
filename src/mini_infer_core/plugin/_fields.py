"""PluginField / PluginFieldType / PluginFieldCollection and their byte encoding.

A field carries an ONNX attribute (or any creation parameter) as a NumPy array: a 0-d array
for a scalar, 1-d for a list, n-d with ``is_tensor`` for a tensor attribute, and
``PluginFieldType.CHAR`` for strings. :func:`encode_fields` / :func:`decode_fields` give a
small, safe binary form (no pickle) that plugin packages can build their serialization on.
"""

from __future__ import annotations

import enum
import json
import struct
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from .._record import record
from ..errors import PluginFieldsError, PluginInterfaceError

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "as_field_collection",
    "PluginFieldType",
    "PluginField",
    "PluginFieldCollection",
    "encode_fields",
    "decode_fields",
    "fields_from_values",
]


class PluginFieldType(enum.Enum):
    FLOAT16 = "float16"
    FLOAT32 = "float32"
    FLOAT64 = "float64"
    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    UINT8 = "uint8"
    BOOL = "bool"
    CHAR = "char"
    GRAPH = "graph"  # a serialized onnx.GraphProto (uint8 data), for control-flow operators
    UNKNOWN = "unknown"

    @classmethod
    def from_numpy(cls, dtype: np.dtype[Any]) -> PluginFieldType:
        import numpy as np
        if dtype.kind in "SU":
            return cls.CHAR
        try:
            return cls(np.dtype(dtype).name)
        except ValueError:
            return cls.UNKNOWN


@record(frozen=True)
class PluginField:
    """One named creation parameter. ``data`` is a NumPy array (see module doc)."""

    name: str
    data: np.ndarray[Any, Any]
    type: PluginFieldType
    is_tensor: bool = False

    @property
    def length(self) -> int:
        return int(self.data.size)

    @classmethod
    def from_value(cls, name: str, value: Any, *, is_tensor: bool = False) -> PluginField:
        import numpy as np
        if isinstance(value, (bytes, bytearray)):  # raw bytes: serialized subgraphs
            return cls(name, np.frombuffer(bytes(value), dtype=np.uint8).copy(),
                       PluginFieldType.GRAPH)
        if isinstance(value, str):
            return cls(name, np.array(value.encode()), PluginFieldType.CHAR)
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            arr = np.array([v.encode() for v in value])
            return cls(name, arr, PluginFieldType.CHAR)
        arr = np.asarray(value)
        if arr.dtype == np.float64 and not is_tensor:
            arr = arr.astype(np.float32)
        return cls(name, arr, PluginFieldType.from_numpy(arr.dtype), is_tensor)

    def to_value(self) -> Any:
        """The Python value: scalar, tuple, str, tuple of str, or ndarray for tensors."""
        if self.type is PluginFieldType.GRAPH:
            return self.data.tobytes()
        if self.type is PluginFieldType.CHAR:
            if self.data.ndim == 0:
                return _text(self.data.item())
            return tuple(_text(v) for v in self.data.reshape(-1).tolist())
        if self.is_tensor:
            return self.data
        if self.data.ndim == 0:
            return self.data.item()
        return tuple(self.data.tolist())


def _text(item: Any) -> str:
    return item if isinstance(item, str) else bytes(item).decode()


class PluginFieldCollection(Mapping[str, PluginField]):
    """An ordered, name-indexed set of fields."""

    def __init__(self, fields: Iterable[PluginField] = ()) -> None:
        self._fields: dict[str, PluginField] = {}
        for f in fields:
            self._fields[f.name] = f

    def __getitem__(self, name: str) -> PluginField:
        return self._fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    @property
    def fields(self) -> list[PluginField]:
        return list(self._fields.values())

    def values_dict(self) -> dict[str, Any]:
        return {n: f.to_value() for n, f in self._fields.items()}

    def __repr__(self) -> str:
        return f"PluginFieldCollection({list(self._fields)})"


def fields_from_values(values: Mapping[str, Any]) -> PluginFieldCollection:
    import numpy as np
    return PluginFieldCollection(
        PluginField.from_value(k, v, is_tensor=isinstance(v, np.ndarray)) for k, v in values.items()
    )


def as_field_collection(fields: Any, who: str = "create_plugin") -> PluginFieldCollection:
    """What a creator's ``create_plugin(name, fields)`` was given, as a collection: a
    :class:`PluginFieldCollection` as it is, a mapping of field names to values
    (``{"scale": 2.0}``) or to :class:`PluginField` converted, anything else refused with a
    message that says what is expected."""
    if isinstance(fields, PluginFieldCollection):
        return fields
    if isinstance(fields, Mapping) and all(isinstance(k, str) for k in fields):
        if all(isinstance(v, PluginField) for v in fields.values()):
            return PluginFieldCollection(fields.values())
        try:
            return fields_from_values(fields)
        except (TypeError, ValueError) as exc:
            raise PluginInterfaceError(f"{who}: a field value cannot be made a PluginField: "
                                       f"{exc}") from exc
    if fields is None:
        return PluginFieldCollection()
    raise PluginInterfaceError(
        f"{who}: fields must be a PluginFieldCollection or a mapping of field name to value "
        f"such as {{'alpha': 2.0}} (mini_infer_core.plugin.fields_from_values makes one), "
        f"not {type(fields).__name__}")


_MAGIC = b"MIPF"
_VERSION = 1


def encode_fields(fields: PluginFieldCollection | Iterable[PluginField]) -> bytes:
    """Fields → bytes: magic, version, a JSON table, then the raw arrays."""
    import numpy as np
    table: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    offset = 0
    for f in fields.fields if isinstance(fields, PluginFieldCollection) else fields:
        data = np.asarray(f.data, order="C")
        raw = data.tobytes()
        table.append({
            "name": f.name, "type": f.type.value, "dtype": data.dtype.str,
            "shape": list(data.shape), "tensor": f.is_tensor, "offset": offset,
            "nbytes": len(raw),
        })
        blobs.append(raw)
        offset += len(raw)
    head = json.dumps(table, separators=(",", ":")).encode()
    return _MAGIC + struct.pack("<HI", _VERSION, len(head)) + head + b"".join(blobs)


#: element types a field may have: numbers, booleans, byte and unicode strings (no objects,
#: no records, no sub-arrays)
_KINDS = "biufcSU"
_MAX_NDIM = 32


def _bad(msg: str) -> PluginFieldsError:
    return PluginFieldsError(f"corrupt plugin fields: {msg}")


def _checked_types(name: str, type_value: Any, dtype_str: Any
                   ) -> tuple[PluginFieldType, np.dtype[Any]]:
    """A row's field type and element type, checked against each other (cached by their
    spellings: an engine's hundreds of fields have a handful of them)."""
    key = (type_value, dtype_str) if isinstance(type_value, str) and isinstance(
        dtype_str, str) else None
    found = _TYPES.get(key) if key is not None else None
    if found is not None:
        return found
    import numpy as np
    try:
        ftype = PluginFieldType(type_value)
        dtype = np.dtype(dtype_str)
    except Exception as exc:  # noqa: BLE001 - numpy's dtype parser raises many kinds
        raise _bad(f"field {name!r}: {type(exc).__name__}: {exc}") from None
    if dtype.kind not in _KINDS or dtype.shape != () or dtype.names is not None or \
            dtype.itemsize == 0:
        raise _bad(f"field {name!r}: element type {dtype.str!r} is not allowed")
    if ftype is PluginFieldType.GRAPH and dtype != np.uint8:
        raise _bad(f"field {name!r}: a graph is bytes (uint8, one axis)")
    if ftype not in (PluginFieldType.CHAR, PluginFieldType.GRAPH, PluginFieldType.UNKNOWN) \
            and dtype.name != ftype.value:
        raise _bad(f"field {name!r}: type {ftype.value} holds {dtype.str}")
    if key is not None:
        _TYPES[key] = (ftype, dtype)
    return ftype, dtype


#: (type, dtype) spellings of table rows already checked -> their field and element types
_TYPES: dict[tuple[str, str], tuple[PluginFieldType, np.dtype[Any]]] = {}


def _entry(e: Any, body: bytes) -> PluginField:
    """One row of the table, checked against the data it points at."""
    import numpy as np
    if not isinstance(e, dict):
        raise _bad(f"table row {str(e)[:40]!r} is not an object")
    name = e.get("name")
    if not isinstance(name, str):
        raise _bad(f"a field name is {type(name).__name__}, not a string")
    ftype, dtype = _checked_types(name, e.get("type"), e.get("dtype"))
    shape, start, n = e.get("shape"), e.get("offset"), e.get("nbytes")
    if not isinstance(shape, list) or len(shape) > _MAX_NDIM or not all(
            type(d) is int and d >= 0 for d in shape):
        raise _bad(f"field {name!r}: shape {str(shape)[:60]} is not a list of sizes")
    if not (type(start) is int and type(n) is int and 0 <= start and 0 <= n):
        raise _bad(f"field {name!r}: offset/nbytes are not sizes")
    if start + n > len(body):
        raise _bad(f"field {name!r} runs past the end of the data")
    size = 1
    for d in shape:
        size *= d
    if size * dtype.itemsize != n:
        raise _bad(f"field {name!r}: {n} bytes do not hold a {shape} array of {dtype.str}")
    tensor = e.get("tensor")
    if not isinstance(tensor, bool):
        raise _bad(f"field {name!r}: 'tensor' is not true or false")
    if ftype is PluginFieldType.GRAPH and len(shape) != 1:
        raise _bad(f"field {name!r}: a graph is bytes (uint8, one axis)")
    if ftype is PluginFieldType.CHAR and size and dtype.kind not in "SU":
        raise _bad(f"field {name!r}: a string field holds {dtype.str}")
    arr = np.frombuffer(body, dtype=dtype, count=size, offset=start).reshape(shape).copy() \
        if size else np.zeros(shape, dtype)
    if dtype.kind == "S":
        try:
            items: list[Any] = arr.reshape(-1).tolist()
            for item in items:
                bytes(item).decode()
        except UnicodeDecodeError as exc:
            raise _bad(f"field {name!r}: a string is not UTF-8 ({exc})") from None
    return PluginField(name, arr, ftype, tensor)


def decode_fields(data: bytes | bytearray | memoryview) -> PluginFieldCollection:
    """bytes → fields; raises :class:`PluginFieldsError` (a ``ValueError`` and an
    ``EngineFormatError``) on anything malformed, having checked every row of the table
    against the data (types, element types, shapes, sizes, UTF-8 strings)."""
    data = bytes(data)
    if data[:4] != _MAGIC or len(data) < 10:
        raise PluginFieldsError("not an encoded plugin field collection")
    version, hlen = struct.unpack("<HI", data[4:10])
    if version != _VERSION:
        raise PluginFieldsError(f"plugin field encoding version {version} is not supported")
    if 10 + hlen > len(data):
        raise _bad(f"the table ({hlen} bytes) runs past the end of the data")
    try:
        table = json.loads(data[10 : 10 + hlen].decode())
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _bad(f"the table is not readable JSON ({type(exc).__name__})") from None
    if not isinstance(table, list):
        raise _bad("the table is not a list")
    body = data[10 + hlen :]
    return PluginFieldCollection(_entry(e, body) for e in table)
