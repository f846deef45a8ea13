"""The network definition: what the importer produces and the builder consumes.

Format-neutral (TensorRT's INetworkDefinition in spirit): tensors by name, constants as NumPy
arrays, nodes with their operator, opset and generic creation fields.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._record import field, record
from .plugin import TENSOR, DataType, PluginFieldCollection, ValueKind

__all__ = ["TensorInfo", "Node", "Network"]


@record
class TensorInfo:
    """A graph input or output. ``shape`` entries are ints, symbol names, or None (unknown).
    A sequence, optional or map (``value_kind``) has the element type and shape of its
    innermost tensor (``shape`` None where its rank is unknown)."""

    name: str
    dtype: DataType | None
    shape: list[int | str | None] | None
    value_kind: ValueKind = TENSOR


@record
class Node:
    name: str
    op_type: str
    domain: str  # "" for the default ONNX domain
    inputs: list[str]  # "" marks an absent optional input
    outputs: list[str]
    fields: PluginFieldCollection
    opset: int

    @property
    def qualified_op(self) -> str:
        return f"{self.domain}::{self.op_type}" if self.domain else self.op_type


@record
class Network:
    name: str
    inputs: list[TensorInfo]
    outputs: list[TensorInfo]
    nodes: list[Node]
    constants: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    opsets: dict[str, int] = field(default_factory=dict)
    source: str = ""
