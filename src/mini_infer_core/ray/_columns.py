"""Batch columns ↔ engine inputs and outputs (NumPy only, no Ray).

A row's value in a column is one sample: a tensor column of shape ``(rows, *sample)`` feeds an
engine input of shape ``(N, *sample)``. Flat list columns (Parquet written by pandas or pyarrow)
are reshaped to the input's fixed sample dimensions; object columns of equal-shaped arrays are
stacked. An engine whose batch dimension is fixed (e.g. 1) runs the batch in slices of that size.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..plugin import DataType

__all__ = ["Binding", "IOSpec", "add_outputs", "bind_columns", "feeds_from_batch", "run_rows"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class IOSpec:
    """An engine input or output: name, shape (ints and symbols), NumPy dtype."""

    name: str
    shape: tuple[int | str, ...]
    dtype: np.dtype[Any]

    @classmethod
    def from_node_arg(cls, arg: Any) -> IOSpec:
        """From :class:`~mini_infer_core.runtime.session.NodeArg` (``type`` is
        ``tensor(float)``, ``tensor(int64)``, ...)."""
        elem = str(arg.type).removeprefix("tensor(").removesuffix(")").upper()
        # onnx's TensorProto names, which DataType's are but FLOAT16 (TensorRT's HALF)
        dtype = DataType.HALF.numpy if elem == "FLOAT16" else DataType[elem].numpy
        return cls(str(arg.name), tuple(arg.shape), dtype)

    @property
    def fixed_batch(self) -> int | None:
        """The batch (first) dimension when the engine fixes it."""
        return self.shape[0] if self.shape and isinstance(self.shape[0], int) else None


@dataclass(frozen=True)
class Binding:
    """Which column feeds each input and which column receives each output."""

    inputs: dict[str, str]  # engine input -> column
    outputs: dict[str, str]  # engine output -> column


def bind_columns(inputs: Sequence[IOSpec], outputs: Sequence[IOSpec],
                 input_columns: Mapping[str, str] | str | None,
                 output_columns: Mapping[str, str] | Sequence[str] | None) -> Binding:
    """Check the rename maps against the engine's names (columns are checked per batch)."""
    in_names = [s.name for s in inputs]
    out_names = [s.name for s in outputs]
    if isinstance(input_columns, str):
        if len(in_names) != 1:
            raise InputError(
                f"input_columns={input_columns!r} names one column, but the engine has "
                f"{len(in_names)} inputs {in_names}; give a map {{input: column}}")
        fed = {in_names[0]: input_columns}
    else:
        unknown = sorted(set(input_columns or {}) - set(in_names))
        if unknown:
            raise InputError(f"input_columns names {unknown}, which are not inputs of the "
                             f"engine; its inputs are {in_names}")
        fed = {n: (input_columns or {}).get(n, n) for n in in_names}
    if output_columns is None:
        out = {n: n for n in out_names}
    elif isinstance(output_columns, Mapping):
        out = dict(output_columns)
    else:
        out = {n: n for n in output_columns}
    unknown = sorted(set(out) - set(out_names))
    if unknown:
        raise InputError(f"output_columns names {unknown}, which are not outputs of the "
                         f"engine; its outputs are {out_names}")
    return Binding(fed, out)


def _column(batch: Mapping[str, Any], column: str, spec: IOSpec) -> Array:
    if column not in batch:
        raise InputError(
            f"engine input {spec.name!r} reads column {column!r}, which the batch lacks (its "
            f"columns: {sorted(batch)}); map it with input_columns={{{spec.name!r}: COLUMN}} "
            f"(mini-infer batch: --column {spec.name}=COLUMN)")
    arr = np.asarray(batch[column])
    if arr.dtype == object:  # list or ragged columns come as arrays of arrays
        try:
            arr = np.stack([np.asarray(v) for v in arr])
        except ValueError as exc:
            raise InputError(f"column {column!r}: its rows have different shapes ({exc}); "
                             f"engine input {spec.name!r} takes {spec.shape}") from exc
    sample = spec.shape[1:]
    if arr.ndim != len(spec.shape) and arr.ndim >= 1 and \
            all(isinstance(d, int) for d in sample) and \
            math.prod(arr.shape[1:]) == math.prod(int(d) for d in sample):
        arr = arr.reshape((arr.shape[0], *(int(d) for d in sample)))
    if arr.ndim != len(spec.shape):
        raise InputError(
            f"column {column!r}: rows of shape {tuple(arr.shape[1:])} cannot feed engine input "
            f"{spec.name!r} of shape {spec.shape} (a row is one sample: {sample})")
    if arr.dtype != spec.dtype:
        if not np.can_cast(arr.dtype, spec.dtype, "safe"):
            raise InputError(
                f"column {column!r} holds {arr.dtype}, engine input {spec.name!r} takes "
                f"{spec.dtype}; cast the column first (a lossy cast is not made silently)")
        arr = arr.astype(spec.dtype)
    return arr


def feeds_from_batch(batch: Mapping[str, Any], inputs: Sequence[IOSpec], binding: Binding
                     ) -> tuple[dict[str, Array], int]:
    """The engine's feeds from a NumPy batch, and the number of rows."""
    feeds = {s.name: _column(batch, binding.inputs[s.name], s) for s in inputs}
    rows = {len(a) for a in feeds.values()}
    if len(rows) != 1:
        raise InputError(f"the input columns have different row counts: "
                         f"{ {n: len(a) for n, a in feeds.items()} }")
    return feeds, rows.pop()


def run_rows(run: Any, feeds: dict[str, Array], rows: int, inputs: Sequence[IOSpec],
             names: Sequence[str]) -> list[Array]:
    """``run(names, feeds)`` on the whole batch, or in slices where the engine fixes its batch
    dimension (a batch-1 engine runs row by row); outputs concatenated along rows."""
    fixed = {s.fixed_batch for s in inputs} - {None}
    step = fixed.pop() if len(fixed) == 1 else None
    if step is None or step == rows:
        return list(run(list(names), feeds))
    if rows % step:
        raise InputError(f"the engine's batch dimension is fixed at {step}; a batch of {rows} "
                         f"rows is not a multiple of it: choose batch_size as a multiple of "
                         f"{step}")
    parts = [run(list(names), {n: a[i:i + step] for n, a in feeds.items()})
             for i in range(0, rows, step)]
    return [np.concatenate([p[k] for p in parts]) for k in range(len(names))]


def add_outputs(batch: Mapping[str, Any], binding: Binding, results: Sequence[Array],
                rows: int, drop_inputs: bool) -> dict[str, Any]:
    """The batch with one column per output (a tensor column where a row is not a scalar)."""
    out = dict(batch)
    if drop_inputs:
        for column in binding.inputs.values():
            out.pop(column, None)
    for (name, column), arr in zip(binding.outputs.items(), results, strict=True):
        if arr.ndim == 0 or arr.shape[0] != rows:
            raise InputError(
                f"engine output {name!r} has shape {tuple(arr.shape)}, not one row per input "
                f"row ({rows}); only outputs whose first dimension is the batch can be columns")
        if column in out:
            raise InputError(
                f"engine output {name!r} would replace column {column!r} of the dataset; name "
                f"it with output_columns={{{name!r}: NEW_NAME}}")
        out[column] = arr
    return out
