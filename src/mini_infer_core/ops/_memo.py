"""What the operator schemas read from ``onnx.defs`` when they are defined, recorded in a
generated table (``_table.py``) so that importing them -- to list plugins or load an engine
file -- does not import onnx (about half a second).

The table holds the first opset of every operator onnx defines (:func:`~._schema.onnx_since`;
an operator it lacks is not onnx's, e.g. a plugin's private base class), each answer of
:func:`~._schema.onnx_attributes` that a core schema asks for, under its arguments, and each
core schema's input counts (:func:`~._schema.onnx_input_count`, which a build checks every
node against: without them an .onnx file's build imported onnx). It is used
only with the onnx release it was made from; a question it lacks (a schema added since,
another onnx) is answered by onnx as before, only slower. It also holds every schema's creator
metadata (``SCHEMAS``: plugin name, operator, domain, version, opsets, fields), so that
listing plugins imports no schema module; that part serves only while the sources it was made
from (``SOURCES``, a digest of this package and the plugin base class) are unchanged, else
the schemas are imported as before. ``tests/test_onnx_free.py``
regenerates it and fails where it differs. To regenerate::

    python -m mini_infer_core.ops          # rewrites _table.py
    python -m mini_infer_core.ops --check  # exit 1 where it is stale
"""

from __future__ import annotations

import functools
import math
import os
import sys
import zlib
from collections.abc import Callable
from typing import Any

__all__ = ["attributes", "input_counts", "main", "render", "schema_metadata", "schemas",
           "since", "sources_digest"]

_TABLE = os.path.join(os.path.dirname(__file__), "_table.py")
#: what the schemas' metadata is made of: this package and the plugin base class
_SOURCES = (os.path.dirname(__file__),
            os.path.join(os.path.dirname(os.path.dirname(__file__)), "plugin", "_base.py"))
#: set in the process that makes the table: every question goes to onnx and is recorded
_RECORDED: dict[tuple[Any, ...], Any] | None = (
    {} if os.environ.get("MINI_INFER_SCHEMA_TABLE") == "record" else None)


@functools.cache
def _table() -> Any:
    """The table where it was made from the installed onnx (and not while making it), else
    None."""
    from .._distributions import distribution_version

    if _RECORDED is not None:
        return None
    from . import _table as table

    installed = distribution_version("onnx")
    if installed is None:  # pragma: no cover - onnx is a dependency
        return None
    made_from = getattr(table, "ONNX_VERSION", None)  # None: not a table of this layout
    return table if made_from == installed and hasattr(table, "ATTRIBUTES") else None


def since(op_type: str, domain: str, ask_onnx: Callable[[], int | None]) -> int | None:
    """The operator's first opset from the table, else ``ask_onnx()`` (imports onnx)."""
    table = _table()
    return ask_onnx() if table is None else table.SINCE.get((op_type, domain))


def attributes(key: tuple[Any, ...], ask_onnx: Callable[[], Any]) -> Any:
    """The recorded answer to ``key``, else ``ask_onnx()`` (imports onnx)."""
    if _RECORDED is not None:
        _RECORDED[key] = answer = ask_onnx()
        return answer
    table = _table()
    return table.ATTRIBUTES[key] if table is not None and key in table.ATTRIBUTES \
        else ask_onnx()


def input_counts(key: tuple[Any, ...], ask_onnx: Callable[[], Any]) -> Any:
    """The recorded input counts of ``key`` (an operator over an opset range: what a build
    checks each node's inputs against), else ``ask_onnx()`` (imports onnx)."""
    table = _table()
    counts = getattr(table, "INPUT_COUNTS", None) if table is not None else None
    return counts[key] if counts is not None and key in counts else ask_onnx()


def sources_digest() -> str:
    """A digest of the sources the schemas' metadata comes from (the table excepted): a
    CRC-32 of each file's name and bytes, chained. It notices an edit (it guards against
    staleness, not tampering) without importing hashlib, whose OpenSSL load costs listing
    more time than the hash."""
    crc = 0
    folder, base = _SOURCES
    for path in [*sorted(os.path.join(folder, n) for n in os.listdir(folder)
                         if n.endswith(".py")), base]:
        if path != _TABLE:
            with open(path, "rb") as fh:
                data = fh.read()
            name = os.path.basename(path)
            crc = zlib.crc32(data, zlib.crc32(f"{name}\0".encode(), crc))
    return f"crc32:{crc:08x}"


def schema_metadata(cls: Any) -> dict[str, Any]:
    """What a creator of a kernel of schema ``cls`` declares (see
    :func:`mini_infer_core.plugin.catalog.lazy_creators`), but its target."""
    return {"name": cls.plugin_type, "op_type": cls.op_type, "domain": cls.domain,
            "version": cls.plugin_version, "min_opset": cls.min_opset,
            "max_opset": cls.max_opset, "fields": (*cls.attributes, *cls.hidden_fields)}


@functools.cache
def schemas() -> dict[str, dict[str, Any]] | None:
    """Every core schema's :func:`schema_metadata`, by class name, from the table where it
    was made from these sources and the installed onnx (no schema imported); else None."""
    table = _table()
    if table is None or getattr(table, "SOURCES", None) != sources_digest():
        return None
    found: dict[str, dict[str, Any]] = table.SCHEMAS
    return found


def _literal(value: Any) -> str:
    from ..plugin import REQUIRED

    if value is REQUIRED:
        return "REQUIRED"
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    if isinstance(value, tuple):
        return "(" + "".join(f"{_literal(v)}, " for v in value) + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_literal(v)}" for k, v in value.items()) + "}"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    raise TypeError(f"cannot write {type(value).__name__} {value!r} into the schema table")


def _dump() -> None:
    """(In a process with MINI_INFER_SCHEMA_TABLE=record.) Define every schema, print the
    table of what they asked onnx."""
    from importlib import metadata

    import onnx.defs

    from ._catalog import schemas_by_name

    by_name = schemas_by_name()
    assert _RECORDED is not None
    first: dict[tuple[str, str], int] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        key = (s.name, "" if s.domain == "ai.onnx" else s.domain)
        first[key] = min(first.get(key, s.since_version), s.since_version)
    lines = ['"""Generated by ``python -m mini_infer_core.ops`` from onnx.defs (see _memo.py).',
             'Do not edit."""', "", "from mini_infer_core.plugin import REQUIRED", "",
             f"ONNX_VERSION = {metadata.version('onnx')!r}", "", "SINCE = {"]
    lines += [f"    {key!r}: {first[key]}," for key in sorted(first)]
    lines += ["}", "", "ATTRIBUTES = {"]
    lines += [f"    {key!r}: {_literal(_RECORDED[key])},"
              for key in sorted(_RECORDED, key=repr)]
    from ._schema import _onnx_input_count

    counts = {}  # what a build checks each node against (Op.input_count)
    for cls in by_name.values():
        if cls.min_inputs is None:
            op = (cls.op_type, "" if cls.domain == "ai.onnx" else cls.domain,
                  cls.min_opset, cls.max_opset)
            counts[op] = _onnx_input_count(*op)
    lines += ["}", "", "INPUT_COUNTS = {"]
    lines += [f"    {op!r}: {_literal(counts[op])}," for op in sorted(counts, key=repr)]
    lines += ["}", "", f"SOURCES = {sources_digest()!r}", "", "SCHEMAS = {"]
    lines += [f"    {name!r}: {_literal(schema_metadata(cls))},"
              for name, cls in sorted(by_name.items())]
    print("\n".join([*lines, "}"]))


def render() -> str:
    """The table as onnx answers now (made in a fresh process that asks onnx)."""
    import subprocess

    env = {**os.environ, "MINI_INFER_SCHEMA_TABLE": "record"}
    proc = subprocess.run([sys.executable, "-c", "from mini_infer_core.ops import _memo; "
                           "_memo._dump()"], env=env, capture_output=True, text=True,
                          check=True, timeout=600)
    return proc.stdout


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def main(argv: list[str] | None = None) -> int:
    """``python -m mini_infer_core.ops [--check]``."""
    text = render()
    if "--check" in (sys.argv[1:] if argv is None else argv):
        if not os.path.exists(_TABLE) or _read(_TABLE) != text:
            print(f"{_TABLE} is stale: run python -m mini_infer_core.ops", file=sys.stderr)
            return 1
        return 0
    with open(_TABLE, "w", encoding="utf-8") as fh:
        fh.write(text)
    print(f"wrote {_TABLE}")
    return 0
