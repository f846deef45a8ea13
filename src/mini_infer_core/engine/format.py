"""The engine file: no pickle, no eval, no imports named by the file.

Layout (all integers little-endian; see docs/engine-format.md)::

    0   8  magic  b"MINIENG\\0"
    8   4  format version (u32)
    12  4  flags (u32, 0)
    16  8  header offset (u64)      header: UTF-8 JSON
    24  8  header length (u64)
    32  8  data offset (u64)        data: 64-byte-aligned blobs (constants, plugin bytes)
    40  8  data length (u64)
    48 32  checksum: SHA-256 of bytes [0, 48) followed by the CRC-32s (4 bytes, little-endian)
           of the consecutive 8 MiB chunks of [header offset, end of file), computed in
           parallel (a CRC per chunk: corruption is what it detects, at twice SHA-256's speed)
    80 48  zero padding (the header starts at 128)

The data section can be memory-mapped: constants become read-only NumPy views of the file.
String constants are UTF-8 text behind a table of offsets (:func:`encode_strings`), never
pickled.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

from .._version import __version__
from ..errors import EngineFormatError, EngineIntegrityError, PluginInterfaceError, node_errors
from ._versions import check_producer, format_advice, producer_of

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["ENGINE_MAGIC", "FORMAT_VERSION", "STRING_ENCODING", "serialize_engine",
           "write_engine", "read_engine_file", "EngineFile", "is_engine_file",
           "encode_strings", "decode_strings", "plugin_bytes"]

ENGINE_MAGIC = b"MINIENG\0"
FORMAT_VERSION = 2  # 2: per-chunk CRC-32 instead of SHA-256; constants keep their axis order
ALIGN = 64
_PREAMBLE = struct.Struct("<8sIIQQQQ")  # 48 bytes, then 32 bytes of SHA-256
_HEADER_AT = 128


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _header_and_blobs(engine: Engine) -> tuple[dict[str, Any], list[bytes | np.ndarray[Any, Any]]]:
    blobs: list[bytes | np.ndarray[Any, Any]] = []
    offset = 0

    def add(blob: bytes | np.ndarray[Any, Any], nbytes: int) -> int:
        nonlocal offset
        start = offset
        blobs.append(blob)
        offset = _align(offset + nbytes)
        return start

    constants = []
    for name, arr in engine.constants.items():
        if np.asarray(arr).dtype.hasobject:  # a string tensor: UTF-8 bytes, never pickled
            raw = encode_strings(name, np.asarray(arr))
            constants.append({"name": name, "dtype": "|O", "encoding": STRING_ENCODING,
                              "shape": list(np.shape(arr)), "offset": add(raw, len(raw)),
                              "nbytes": len(raw)})
            continue
        order, stored = memory_order(np.asarray(arr))
        entry: dict[str, Any] = {"name": name, "dtype": stored.dtype.str,
                                 "shape": list(arr.shape)}
        if order != tuple(range(stored.ndim)):
            entry["order"] = list(order)  # kept in the memory layout a plugin packed it in
        entry.update(offset=add(stored, stored.nbytes), nbytes=stored.nbytes)
        constants.append(entry)
    nodes = []
    for node in engine.nodes:
        data = plugin_bytes(node)
        nodes.append({
            "name": node.name, "op_type": node.op_type, "domain": node.domain,
            "opset": node.opset, "device": node.device,
            "inputs": list(node.inputs), "outputs": list(node.outputs),
            "plugin": {"name": node.plugin_name, "version": node.plugin_version,
                       "namespace": node.plugin_namespace,
                       "distribution": node.distribution,
                       "distribution_version": node.distribution_version,
                       "offset": add(data, len(data)), "nbytes": len(data)},
        })
    tensors: dict[str, dict[str, Any]] = {
        n: {"dtype": t.dtype.name, "shape": [d.to_json() for d in t.dims], "kind": t.kind}
        for n, t in engine.tensors.items()}
    for n, t in engine.tensors.items():
        if not t.value_kind.is_tensor:  # a sequence, optional or map: what wraps the tensor
            tensors[n]["value"] = t.value_kind.to_json()
        if t.format.value != "linear":  # absent: LINEAR (as in files from before formats)
            tensors[n]["format"] = t.format.value
    header = {
        "format": "mini-infer-engine", "producer": f"mini-infer-core {__version__}",
        "name": engine.name, "device": engine.device_name,
        "inputs": list(engine.input_names), "outputs": list(engine.output_names),
        "tensors": tensors, "constants": constants, "nodes": nodes,
        "build_info": dict(engine.build_info), "data_length": offset,
    }
    return header, blobs


def plugin_bytes(node: Any) -> bytes:
    """A node's plugin bytes; a failing or wrong ``serialize()`` names the node, plugin and
    distribution."""
    where = f"cannot write the engine: {node.describe()}"
    with node_errors(where, PluginInterfaceError,
                     "the plugin's serialize() failed (a bug of the plugin's distribution: "
                     "report it there, or pin another provider of the operator)"):
        data = node.plugin.serialize()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise PluginInterfaceError(
            f"{where}: the plugin's serialize() returned {type(data).__name__}, not bytes (a "
            "bug of the plugin's distribution: report it there, or pin another provider)")
    return bytes(data)


def memory_order(arr: np.ndarray[Any, Any]) -> tuple[tuple[int, ...], np.ndarray[Any, Any]]:
    """``(order, stored)``: ``arr`` is ``stored.transpose(argsort(order))`` with ``stored``
    C-contiguous, i.e. the axes of ``arr`` from the slowest to the fastest in memory. A plugin
    may pack a constant in another axis order than C's (``pack_constants``); the file keeps it."""
    order = tuple(sorted(range(arr.ndim), key=lambda i: (-abs(arr.strides[i]), i)))
    stored = arr.transpose(order)
    if not stored.flags.c_contiguous:
        order, stored = tuple(range(arr.ndim)), np.ascontiguousarray(arr)
    return order, stored


#: how a string constant is stored (its header entry's ``encoding``): see :func:`encode_strings`
STRING_ENCODING = "utf-8+offsets"
_OFFSET = np.dtype("<u8")


def encode_strings(name: str, arr: np.ndarray[Any, Any]) -> bytes:
    """A string tensor as bytes, without pickle: ``n + 1`` little-endian u64 offsets (the
    first 0, the last the length of the text), then the elements' UTF-8 bytes one after the
    other in C order; element ``i`` is ``text[offsets[i]:offsets[i + 1]]``. Elements must be
    ``str`` (or ``bytes`` holding UTF-8); anything else is refused, naming the tensor."""
    parts: list[bytes] = []
    for k, item in enumerate(arr.reshape(-1).tolist()):
        try:
            if isinstance(item, str):
                parts.append(item.encode("utf-8"))
            elif isinstance(item, bytes):
                item.decode("utf-8")
                parts.append(item)
            else:
                raise EngineFormatError(
                    f"string constant {name!r}: element {k} is a {type(item).__name__}, not "
                    "a string; only tensors of strings can be object arrays in an engine")
        except (UnicodeEncodeError, UnicodeDecodeError) as exc:
            raise EngineFormatError(f"string constant {name!r}: element {k} is not valid "
                                    f"UTF-8 text ({exc.reason})") from exc
    offsets = np.zeros(len(parts) + 1, _OFFSET)
    np.cumsum([len(p) for p in parts], out=offsets[1:])
    return offsets.tobytes() + b"".join(parts)


def decode_strings(name: str, raw: Any, shape: list[int], label: str
                   ) -> np.ndarray[Any, Any]:
    """What :func:`encode_strings` wrote, as an object array of ``str`` of ``shape``; a
    section that does not hold exactly that raises :class:`EngineFormatError` naming the
    tensor."""
    def bad(why: str) -> EngineFormatError:
        return EngineFormatError(f"{label}: string constant {name!r} is corrupt: {why}; "
                                 "rebuild the engine with `mini-infer build`")

    if any(d < 0 for d in shape):
        raise bad(f"negative dimension in shape {shape}")
    n = int(np.prod(shape, dtype=np.int64))
    table = (n + 1) * _OFFSET.itemsize
    if len(raw) < table:
        raise bad(f"{len(raw)} bytes cannot hold the offsets of {n} elements")
    offsets = np.frombuffer(raw, _OFFSET, n + 1)
    text = bytes(raw[table:])
    if offsets[0] != 0 or offsets[-1] != len(text) or np.any(np.diff(offsets.astype(
            np.int64)) < 0) or np.any(offsets > len(text)):
        raise bad("its offsets do not describe its text")
    ends = offsets.tolist()
    out = np.empty(n, dtype=object)
    try:
        out[:] = [text[ends[i]:ends[i + 1]].decode("utf-8") for i in range(n)]
    except UnicodeDecodeError as exc:
        raise bad(f"an element is not valid UTF-8 ({exc.reason})") from exc
    out = out.reshape(shape)
    out.flags.writeable = False  # as every constant read from an engine
    return out


CHUNK = 8 * 2**20


def _crc(chunk: list[Any]) -> bytes:
    """The CRC-32 of the concatenated slices of one chunk (chained: nothing is copied)."""
    value = 0
    for piece in chunk:
        value = zlib.crc32(piece, value)
    return struct.pack("<I", value)


def _chunk_digests(parts: list[Any]) -> bytes:
    """CRC-32 of each 8 MiB chunk of the concatenated ``parts``, computed on every core
    (zlib releases the GIL on large buffers), concatenated. A chunk is a list of views of
    the parts it spans, never a copy: a loaded engine's body (one memory-mapped part) was
    copied twice below 8 MiB, 2-4 ms of a small CNN's load (issue 30)."""
    flat: list[list[Any]] = []
    current: list[Any] = []
    room = CHUNK
    for part in parts:
        mv = memoryview(part).cast("B")
        at = 0
        while at < len(mv):
            piece = mv[at : at + room]
            current.append(piece)
            at += len(piece)
            room -= len(piece)
            if room == 0:
                flat.append(current)
                current, room = [], CHUNK
    if current:
        flat.append(current)
    workers = min(len(flat), os.cpu_count() or 1)
    if workers <= 1:
        return b"".join(_crc(c) for c in flat)
    # plain threads, each taking every workers-th chunk: concurrent.futures would import
    # logging and more at the first load of a large engine (issue 30)
    import threading

    digests: list[bytes] = [b""] * len(flat)
    errors: list[BaseException] = []

    def work(first: int) -> None:
        try:
            for i in range(first, len(flat), workers):
                digests[i] = _crc(flat[i])
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return b"".join(digests)


def _sha256(data: bytes) -> bytes:
    """SHA-256 of the (small) preamble and chunk digests: Python's own implementation, where
    it has one, spares every engine load hashlib's OpenSSL (a start-up cost, issue 30)."""
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12+
        except ImportError:
            from hashlib import sha256
    return bytes(sha256(data).digest())


def checksum(preamble: bytes, body_parts: list[Any]) -> bytes:
    return _sha256(preamble + _chunk_digests(body_parts))


def _layout(engine: Engine) -> tuple[bytes, list[bytes | np.ndarray[Any, Any]], int, int]:
    header, blobs = _header_and_blobs(engine)
    head = json.dumps(header, separators=(",", ":"), default=str).encode()
    data_off = _align(_HEADER_AT + len(head))
    return head, blobs, data_off, int(header["data_length"])


def _write_to(fh: Any, engine: Engine) -> None:
    head, blobs, data_off, data_len = _layout(engine)
    pre = _PREAMBLE.pack(ENGINE_MAGIC, FORMAT_VERSION, 0, _HEADER_AT, len(head), data_off,
                         data_len)
    body: list[bytes | memoryview] = [head, b"\0" * (data_off - _HEADER_AT - len(head))]
    pos = 0
    for blob in blobs:
        raw = memoryview(blob.reshape(-1).view(np.uint8).data) if isinstance(blob, np.ndarray) \
            else memoryview(blob)
        body.append(raw)
        pos += raw.nbytes
        pad = _align(pos) - pos
        if pad and pos < data_len:
            body.append(b"\0" * pad)
            pos += pad
    if pos < data_len:
        body.append(b"\0" * (data_len - pos))
    fh.write(pre + checksum(pre, body) + b"\0" * (_HEADER_AT - _PREAMBLE.size - 32))
    for part in body:
        fh.write(part)


def serialize_engine(engine: Engine) -> bytes:
    import io

    buf = io.BytesIO()
    _write_to(buf, engine)
    return buf.getvalue()


def write_engine(engine: Engine, path: str | os.PathLike[str]) -> None:
    """Write atomically: a temporary file in the same folder, renamed when complete."""
    from pathlib import Path

    from ._files import temp_beside

    target = Path(path)
    fd, tmp = temp_beside(target)  # the mode open() would give, not mkstemp's 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            _write_to(fh, engine)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class EngineFile:
    """A verified engine file: its header and a view of its data section."""

    def __init__(self, header: dict[str, Any], data: memoryview, label: str,
                 keep: Any = None) -> None:
        self.header = header
        self.data = data
        self.label = label
        self._keep = keep  # the mmap, kept alive while views exist

    def blob(self, offset: int, nbytes: int) -> memoryview:
        if offset < 0 or offset + nbytes > len(self.data):
            raise EngineFormatError(f"{self.label}: a blob lies outside the data section")
        return self.data[offset : offset + nbytes]

    def array(self, entry: dict[str, Any]) -> np.ndarray[Any, Any]:
        raw = self.blob(int(entry["offset"]), int(entry["nbytes"]))
        shape = [int(d) for d in entry["shape"]]
        if "encoding" in entry:
            if entry["encoding"] != STRING_ENCODING:
                raise EngineFormatError(
                    f"{self.label}: constant {entry.get('name')!r} has encoding "
                    f"{entry['encoding']!r}; this mini-infer-core ({__version__}) reads "
                    f"{STRING_ENCODING!r} only. Rebuild the engine with this version")
            return decode_strings(str(entry.get("name")), raw, shape, self.label)
        try:
            dtype = np.dtype(entry["dtype"])
        except Exception as exc:  # noqa: BLE001 - numpy's dtype parser raises many kinds
            raise EngineFormatError(
                f"{self.label}: constant {entry.get('name')!r} has an unreadable element type "
                f"({type(exc).__name__}: {exc}); rebuild the engine") from None
        if dtype.hasobject:
            raise EngineFormatError(f"{self.label}: constant {entry.get('name')!r}: object "
                                    "arrays are not allowed (string constants carry an "
                                    "\"encoding\")")
        if dtype.shape != () or dtype.names is not None:
            raise EngineFormatError(f"{self.label}: constant {entry.get('name')!r}: element "
                                    f"type {dtype.str!r} is not allowed (records, sub-arrays)")
        order = [int(i) for i in entry.get("order", range(len(shape)))]
        if sorted(order) != list(range(len(shape))):
            raise EngineFormatError(f"{self.label}: constant {entry.get('name')!r} has an "
                                    f"invalid axis order {order}")
        stored = np.frombuffer(raw, dtype=dtype).reshape([shape[i] for i in order])
        return stored.transpose(np.argsort(order))


ENGINE_SUFFIXES = (".engine", ".plan", ".trt")


def is_engine_file(path: str | os.PathLike[str]) -> bool:
    """True for a file that starts with the engine magic or is named like an engine."""
    if str(path).lower().endswith(ENGINE_SUFFIXES):
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(len(ENGINE_MAGIC)) == ENGINE_MAGIC
    except OSError:
        return False


def parse_engine_bytes(buf: Any, label: str, keep: Any = None, verify: bool = True
                       ) -> EngineFile:
    mv = memoryview(buf)
    hint = "rebuild it with `mini-infer build` or copy it again"
    if len(mv) < _HEADER_AT:
        raise EngineIntegrityError(f"{label}: too short to be an engine file "
                                   f"({len(mv)} bytes); it is truncated or not an engine; {hint}")
    magic, version, _flags, h_off, h_len, d_off, d_len = _PREAMBLE.unpack(mv[: _PREAMBLE.size])
    if magic != ENGINE_MAGIC:
        raise EngineIntegrityError(
            f"{label}: not a mini-infer engine file, or its first bytes are corrupt "
            f"(magic {bytes(magic)!r}); {hint}")
    if version != FORMAT_VERSION:
        head = mv[h_off : h_off + h_len] if h_off == _HEADER_AT and h_off + h_len <= len(mv) \
            else None
        raise EngineFormatError(format_advice(label, version, FORMAT_VERSION,
                                              producer_of(head)))
    end = d_off + d_len
    if h_off == _HEADER_AT and d_off >= h_off + h_len and len(mv) > end:
        raise EngineIntegrityError(
            f"{label}: {len(mv) - end} trailing bytes after the end of the engine (it ends at "
            f"byte {end}, the file has {len(mv)}): something was appended to it, or it is not "
            f"one engine file; {hint}")
    if h_off != _HEADER_AT or d_off < h_off + h_len or end != len(mv):
        raise EngineIntegrityError(
            f"{label}: section table does not match the file size ({len(mv)} bytes): the file "
            f"is truncated or corrupt; {hint}")
    if verify:
        digest = checksum(bytes(mv[: _PREAMBLE.size]), [mv[_HEADER_AT:]])
        if digest != bytes(mv[_PREAMBLE.size : _PREAMBLE.size + 32]):
            raise EngineIntegrityError(
                f"{label}: checksum mismatch: the engine file is corrupt; {hint}")
    try:
        header = json.loads(bytes(mv[h_off : h_off + h_len]).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EngineIntegrityError(f"{label}: header is not readable: {exc}; {hint}") from exc
    if not isinstance(header, dict) or header.get("format") != "mini-infer-engine":
        raise EngineFormatError(f"{label}: header does not describe a mini-infer engine")
    check_producer(label, header.get("producer"))
    return EngineFile(header, mv[d_off : d_off + d_len], label, keep)


def read_engine_file(path: str | os.PathLike[str], verify: bool = True) -> EngineFile:
    """Memory-map and verify an engine file."""
    label = str(path)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise EngineFormatError(f"cannot open engine file {label!r}: {exc.strerror}") from exc
    with fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            raise EngineIntegrityError(f"{label}: the engine file is empty")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    return parse_engine_bytes(mm, label, keep=mm, verify=verify)
