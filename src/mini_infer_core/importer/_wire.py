"""A model file's large weights read straight into their arrays, not through protobuf.

``onnx.load`` holds every initializer's bytes in the parsed message, and turning them into
arrays copies them once more: a model's weights twice in memory until the message is dropped.
:func:`split_weights` walks the file's protobuf wire format instead (memory-mapped; only the
few bytes around each field are touched), writes a copy of the model whose large plain
initializers carry no ``raw_data``, and says where each left-out block lies in the file. The
importer parses that small copy and reads each block with one ``readinto`` into the array it
becomes.

Anything this walk does not expect (a field repeated where protobuf would merge it, typed
data beside raw data, a length past the end of the file) makes it give up: the importer then
reads the file the ordinary way, which also gives the error message for a broken file.
"""

from __future__ import annotations

import mmap
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .._record import record

__all__ = ["Block", "split_weights", "read_block"]

#: ModelProto.graph, GraphProto.initializer, and the TensorProto fields this walk reads
_GRAPH, _INITIALIZER = 7, 5
_DIMS, _DATA_TYPE, _RAW_DATA, _EXTERNAL, _LOCATION = 1, 2, 9, 13, 14
#: typed-data fields (segment, float_data, ... uint64_data): a tensor with any of them is left
_TYPED = frozenset({3, 4, 5, 6, 7, 10, 11})
#: element types whose raw bytes are a little-endian NumPy array as they stand
_PLAIN = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 10: "<f2",
          11: "<f8", 12: "<u4", 13: "<u8"}
#: smaller blocks stay in the message (one read each would cost more than it saves)
MIN_BLOCK = 1 << 16


class _Unexpected(Exception):
    """The file is not laid out as this walk expects: read it the ordinary way."""


@record(frozen=True)
class Block:
    """An initializer's data left out of the model copy: where it lies and what it is."""

    offset: int
    shape: tuple[int, ...]
    dtype: np.dtype[Any]


def _varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 63:
            raise _Unexpected("varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _encode(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(buf: Any, pos: int, end: int) -> list[tuple[int, int, int, int, int]]:
    """(field number, wire type, start of the field, start of its payload, end) for each
    field of the message in ``buf[pos:end]``."""
    out = []
    while pos < end:
        start = pos
        tag, pos = _varint(buf, pos, end)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, stop = _varint(buf, pos, end)
        elif wire == 1:
            stop = pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos, end)
            stop = pos + length
        elif wire == 5:
            stop = pos + 4
        else:  # groups, or not protobuf at all
            raise _Unexpected("wire type")
        if stop > end or number == 0:
            raise _Unexpected("field")
        out.append((number, wire, start, pos, stop))
        pos = stop
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _tensor(buf: Any, pos: int, end: int) -> tuple[bytes, Block] | None:
    """The tensor message without its raw data, and the block; None to keep it whole."""
    fields = _fields(buf, pos, end)
    numbers = [f[0] for f in fields]
    if numbers.count(_RAW_DATA) != 1 or numbers.count(_DATA_TYPE) != 1 or \
            _EXTERNAL in numbers or _TYPED.intersection(numbers):
        return None
    dims: list[int] = []
    dtype_code, location, raw = 0, 0, (0, 0)
    for number, wire, _, start, stop in fields:
        if number == _DIMS and wire == 0:
            dims.append(_signed(_varint(buf, start, stop)[0]))
        elif number == _DIMS and wire == 2:  # packed
            at = start
            while at < stop:
                value, at = _varint(buf, at, stop)
                dims.append(_signed(value))
        elif number == _DIMS:
            raise _Unexpected("dims")
        elif number == _DATA_TYPE and wire == 0:
            dtype_code = _varint(buf, start, stop)[0]
        elif number == _LOCATION and wire == 0:
            location = _varint(buf, start, stop)[0]
        elif number == _RAW_DATA and wire == 2:
            raw = (start, stop)
        elif number in (_DATA_TYPE, _LOCATION, _RAW_DATA):
            raise _Unexpected("field type")
    if location or dtype_code not in _PLAIN or any(d < 0 for d in dims):
        return None
    dtype = np.dtype(_PLAIN[dtype_code])
    size = raw[1] - raw[0]
    if size < MIN_BLOCK or size != int(np.prod(dims, dtype=np.int64)) * dtype.itemsize:
        return None
    kept = b"".join(bytes(buf[s:e]) for n, _, s, _, e in fields if n != _RAW_DATA)
    return kept, Block(raw[0], tuple(dims), dtype)


def _graph(buf: Any, pos: int, end: int) -> tuple[bytes, dict[int, Block]]:
    out = bytearray()
    blocks: dict[int, Block] = {}
    index = 0
    for number, wire, start, payload, stop in _fields(buf, pos, end):
        if number == _INITIALIZER and wire == 2:
            found = _tensor(buf, payload, stop)
            if found is not None:
                kept, blocks[index] = found
                out += _encode(_INITIALIZER << 3 | 2) + _encode(len(kept)) + kept
            else:
                out += buf[start:stop]
            index += 1
        else:
            out += buf[start:stop]
    return bytes(out), blocks


def split_weights(path: Path) -> tuple[bytes, dict[int, Block]] | None:
    """The model without its large initializers' data, and those blocks by initializer
    index; None where nothing would be saved or the file is not as expected."""
    if sys.byteorder != "little":
        return None
    try:
        with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            fields = _fields(mm, 0, len(mm))
            if [f[0] for f in fields].count(_GRAPH) != 1:
                return None
            out = bytearray()
            blocks: dict[int, Block] = {}
            for number, wire, start, payload, stop in fields:
                if number == _GRAPH and wire == 2:
                    graph, blocks = _graph(mm, payload, stop)
                    out += _encode(_GRAPH << 3 | 2) + _encode(len(graph)) + graph
                else:
                    out += mm[start:stop]
    except (OSError, ValueError, _Unexpected):
        return None
    return (bytes(out), blocks) if blocks else None


def read_block(fh: Any, block: Block) -> np.ndarray[Any, Any]:
    """The block's array, read from the open model file into memory of its own."""
    arr = np.empty(block.shape, block.dtype)
    fh.seek(block.offset)
    view = arr.data.cast("B")
    if fh.readinto(view) != arr.nbytes:
        raise OSError("the model file is shorter than when it was read")
    return arr
