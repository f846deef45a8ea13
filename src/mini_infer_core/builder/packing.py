"""Constants laid out in memory the way the kernel that reads them wants (build-time work).

A plugin may implement ``pack_constants(inputs, constants) -> {input index: array}``: given its
inputs' (dims, type) and the values of its constant inputs (None where an input is not a
constant), it returns the same values in another memory layout -- for instance a Conv weight
stored tap-major so that every kernel tap is one contiguous matrix. The engine keeps each
constant's axis order (the file records it), so loading and running repack nothing.

The builder checks what comes back: same shape, same type and the same values (a layout, not
a new constant); anything else is a BuildError that names the node and plugin.

A plugin whose kernel reads an order no axis order can express (GEMM panels) returns
:class:`~mini_infer_core.plugin.Repacked`: same shape and type, elements in its own order.
That is taken only for a constant this node alone reads (and no graph output is), since
every other reader would see the reordered values; elsewhere the constant is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np

from .._debug import LazyLogger
from ..engine.engine import EngineNode
from ..errors import BuildError, node_errors
from ..plugin import DataType, DimsExprs, Repacked
from ..plugin import _adapter as adapter

__all__ = ["pack_constants"]

log = LazyLogger("mini_infer.builder")  # logging imported only once something else has


def pack_constants(nodes: Sequence[EngineNode],
                   constants: MutableMapping[str, np.ndarray[Any, Any]],
                   dims: Mapping[str, DimsExprs], types: Mapping[str, DataType],
                   outputs: Sequence[str] = (),
                   also: Sequence[MutableMapping[str, np.ndarray[Any, Any]]] = (),
                   which: Callable[[EngineNode], bool] | None = None,
                   packed: set[str] | None = None) -> int:
    """Ask every plugin (of the nodes ``which`` picks) for its preferred constant layouts;
    returns how many were repacked. A constant is packed once, for the first node that asks
    (others read it as it is); ``packed`` carries the names packed by an earlier call.
    ``also``: other tables holding the same constants, updated as each is packed, so that an
    imported layout is freed as soon as its packed one exists (never both for every weight)."""
    packed = set() if packed is None else packed
    before = len(packed)
    readers: dict[str, int] = {name: 1 for name in outputs}
    for nd in nodes:
        for name in set(nd.inputs):
            readers[name] = readers.get(name, 0) + 1
    for nd in nodes:
        if which is not None and not which(nd):
            continue
        ability = adapter.packing_of(nd.plugin)
        if ability is None or not any(n in constants for n in nd.inputs):
            continue
        descs = [(dims[n], types[n]) if n else None for n in nd.inputs]
        values = [constants.get(n) if n else None for n in nd.inputs]
        with node_errors(nd.describe(), BuildError, "pack_constants failed"):
            wanted = ability.pack_constants(descs, values) or {}
        for index, arr in wanted.items():
            name = nd.inputs[index] if 0 <= index < len(nd.inputs) else ""
            if name not in constants:
                raise BuildError(f"{nd.describe()}: pack_constants returned input {index}, "
                                 "which is not a constant")
            if name in packed:
                continue
            old = constants[name]
            if isinstance(arr, Repacked):
                reordered = np.asarray(arr.array)
                if reordered.shape != old.shape or reordered.dtype != old.dtype:
                    raise BuildError(
                        f"{nd.describe()}: pack_constants reordered constant {name!r} into "
                        f"{reordered.shape} {reordered.dtype}; it must keep {old.shape} "
                        f"{old.dtype}")
                if readers.get(name, 0) != 1:
                    log.debug("%s: %s is read elsewhere too, not reordered", nd.describe(), name)
                    continue
                constants[name] = np.ascontiguousarray(reordered)
                _replace(also, name, constants[name])
                packed.add(name)
                if arr.on_accept is not None:
                    arr.on_accept()
                log.debug("reordered %s for %s", name, nd.describe())
                continue
            arr = np.asarray(arr)
            if arr.shape != old.shape or arr.dtype != old.dtype or not np.array_equal(
                    arr, old, equal_nan=arr.dtype.kind in "fc"):
                raise BuildError(
                    f"{nd.describe()}: pack_constants changed the values, shape or type of "
                    f"constant {name!r}; it may only change the memory layout")
            constants[name] = arr
            _replace(also, name, arr)
            packed.add(name)
            log.debug("packed %s for %s (strides %s)", name, nd.describe(), arr.strides)
    return len(packed) - before


def _replace(tables: Sequence[MutableMapping[str, np.ndarray[Any, Any]]], name: str,
             arr: np.ndarray[Any, Any]) -> None:
    for table in tables:
        if name in table:
            table[name] = arr
