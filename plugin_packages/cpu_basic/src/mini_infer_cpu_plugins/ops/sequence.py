"""Sequences and optionals -- NumPy kernels (schemas in :mod:`mini_infer_core.ops.sequence`).

A sequence is a Python list of arrays, an optional is None or its value (onnxruntime's
convention). The nodes are data-dependent: ``compute`` is called without ``out`` and returns
its outputs, always as a tuple (a list returned alone would read as several outputs). Lists
are never changed in place: each node returns a new one (the arrays in it are shared, and
never written).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import sequence as schema
from mini_infer_core.plugin.arrays import NDArray

from ..serialization import CpuPlugin
from ._dynamic import as_ints
from .control_flow import _ControlFlow

__all__ = ["SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase",
           "SequenceAt", "SequenceLength", "SplitToSequence", "ConcatFromSequence",
           "SequenceMap", "Optional", "OptionalHasElement", "OptionalGetElement"]

Array = NDArray[Any]


def _position(op: CpuPlugin, position: Array | None, n: int, default: int, top: int) -> int:
    """A position input as an index in ``[0, top]`` (negative: from the end)."""
    if position is None:
        return default
    p = int(np.asarray(position).reshape(-1)[0])
    k = p + n if p < 0 else p
    if not 0 <= k <= top:
        raise PluginInterfaceError(f"{op.op_type} {op.name!r}: position {p} is out of range "
                                   f"for a sequence of {n} element(s)")
    return k


def _sequence(op: CpuPlugin, value: Any) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise PluginInterfaceError(f"{op.op_type} {op.name!r}: expected a sequence, got "
                                   f"{type(value).__name__}")
    return list(value)


class SequenceEmpty(CpuPlugin, schema.SequenceEmpty):
    def compute(self, **_: Any) -> tuple[list[Any]]:
        return ([],)


class SequenceConstruct(CpuPlugin, schema.SequenceConstruct):
    def compute(self, *tensors: Array, **_: Any) -> tuple[list[Any]]:
        return ([np.asarray(t) for t in tensors],)


class SequenceInsert(CpuPlugin, schema.SequenceInsert):
    def compute(self, seq: Any, tensor: Array, position: Array | None = None,
                **_: Any) -> tuple[list[Any]]:
        items = _sequence(self, seq)
        k = _position(self, position, len(items), len(items), len(items))
        items.insert(k, np.asarray(tensor))
        return (items,)


class SequenceErase(CpuPlugin, schema.SequenceErase):
    def compute(self, seq: Any, position: Array | None = None, **_: Any) -> tuple[list[Any]]:
        items = _sequence(self, seq)
        if not items:
            raise PluginInterfaceError(f"SequenceErase {self.name!r}: the sequence is empty")
        del items[_position(self, position, len(items), len(items) - 1, len(items) - 1)]
        return (items,)


class SequenceAt(CpuPlugin, schema.SequenceAt):
    def compute(self, seq: Any, position: Array, **_: Any) -> tuple[Array]:
        items = _sequence(self, seq)
        k = _position(self, position, len(items), 0, len(items) - 1)
        return (np.array(items[k]),)


class SequenceLength(CpuPlugin, schema.SequenceLength):
    def compute(self, seq: Any, **_: Any) -> tuple[Array]:
        return (np.array(len(_sequence(self, seq)), np.int64),)


class SplitToSequence(CpuPlugin, schema.SplitToSequence):
    def compute(self, x: Array, split: Array | None = None, **_: Any) -> tuple[list[Any]]:
        a = self.axis(x.ndim)
        n = x.shape[a]
        if split is None:
            parts = np.split(x, n, axis=a) if n else []
            if not int(self.attrs.get("keepdims", 1)):
                parts = [np.squeeze(p, axis=a) for p in parts]
            return ([np.ascontiguousarray(p) for p in parts],)
        sizes = as_ints(split)
        if np.asarray(split).ndim == 0:
            chunk = sizes[0]
            if chunk <= 0:
                raise PluginInterfaceError(f"SplitToSequence {self.name!r}: split {chunk} "
                                           "must be positive")
            sizes = [min(chunk, n - s) for s in range(0, n, chunk)]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise PluginInterfaceError(f"SplitToSequence {self.name!r}: split sizes {sizes} "
                                       f"do not add up to the axis length {n}")
        cuts = np.cumsum(sizes)[:-1]
        return ([np.ascontiguousarray(p) for p in np.split(x, cuts, axis=a)],)


class ConcatFromSequence(CpuPlugin, schema.ConcatFromSequence):
    def compute(self, seq: Any, *, axis: int, new_axis: int = 0, **_: Any) -> tuple[Array]:
        items = [np.asarray(t) for t in _sequence(self, seq)]
        if not items:
            raise PluginInterfaceError(f"ConcatFromSequence {self.name!r}: the sequence is "
                                       "empty")
        if new_axis:
            return (np.stack(items, axis=axis),)
        return (np.concatenate(items, axis=axis),)


class Optional(CpuPlugin, schema.Optional):
    def compute(self, value: Any = None, **_: Any) -> tuple[Any]:
        return (value,)


class OptionalHasElement(CpuPlugin, schema.OptionalHasElement):
    def compute(self, value: Any = None, **_: Any) -> tuple[Array]:
        return (np.array(value is not None),)


class OptionalGetElement(CpuPlugin, schema.OptionalGetElement):
    def compute(self, value: Any = None, **_: Any) -> tuple[Any]:
        if value is None:
            raise PluginInterfaceError(f"OptionalGetElement {self.name!r}: the optional is "
                                       "empty")
        return (value,)


class SequenceMap(_ControlFlow, schema.SequenceMap):
    def compute(self, *inputs: Any, **_: Any) -> tuple[list[Any], ...]:
        formal, outer = self.split(inputs)
        seqs = [k for k, v in enumerate(formal) if isinstance(v, (list, tuple))]
        n = len(formal[0])
        if any(len(formal[k]) != n for k in seqs):
            raise PluginInterfaceError(f"SequenceMap {self.name!r}: its sequences differ in "
                                       f"length ({[len(formal[k]) for k in seqs]})")
        results: list[list[Any]] = [[] for _ in range(self.num_outputs)]
        for i in range(n):
            args = [formal[k][i] if k in seqs else formal[k] for k in range(len(formal))]
            for r, v in zip(results, self.runners["body"].run(args, outer), strict=True):
                r.append(v)
        return tuple(results)
