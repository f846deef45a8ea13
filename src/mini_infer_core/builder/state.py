"""The build state every pass reads and extends, and the per-node work item.

A build is a sequence of passes over one :class:`BuildState` (builder.py lists them):

- graph passes before the nodes: ``select`` (selection.py: a creator and device per node);
- node passes, in graph order, for each node: ``infer`` (infer.py: plugin, shapes, types,
  build-time values), ``fold`` (folding.py: all inputs known -> constants), ``fuse``
  (fusion.py: absorb the consumer), ``precision`` (precision.py: fp16 and its casts), then the
  node is configured and kept;
- graph passes after the nodes: ``prune`` (prune.py), ``place`` (placement.py: copies between
  devices), ``formats`` (formats.py: formats negotiated, reformat steps), ``tensors``
  (plan.py), ``tactics`` (tactics.py), ``pack`` (packing.py) and ``plan`` (plan.py: the
  memory plan).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._record import field, record
from ..network import Network, Node
from ..plugin import (
    TENSOR,
    DataType,
    Device,
    DimExpr,
    DimsExprs,
    IPluginV2,
    SubgraphFactory,
    TensorFormat,
    ValueKind,
)
from ..registry import CreatorRecord, PluginRegistry

if TYPE_CHECKING:
    from ..engine.engine import Engine, EngineNode, TensorSpec
    from .builder import BuilderConfig
    from .formats import FormatPlan
    from .fusion import Fuser
    from .precision import Precision
    from .selection import Selector

__all__ = ["BuildState", "NodeWork"]


# records, not dataclasses: a dataclass compiles each generated method when the module is
# imported (a fresh process's build, issue 30)
@record
class BuildState:
    """Everything the passes of one build read and extend."""

    network: Network
    config: BuilderConfig
    registry: PluginRegistry
    subgraphs: SubgraphFactory
    selector: Selector
    #: the target device, and every device a node runs on
    device: Device
    devices: dict[str, Device]
    #: where nodes without a plugin for the target run (None: nowhere)
    fallback: str | None
    #: (creator, device) per network node
    selected: list[tuple[CreatorRecord, str]]
    fuser: Fuser
    precision: Precision
    #: every tensor's shape (dimension expressions), type, and the constants' values
    dims: dict[str, DimsExprs] = field(default_factory=dict)
    types: dict[str, DataType] = field(default_factory=dict)
    constants: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    #: the values that are no tensors (sequences, optionals, maps); absent: a tensor
    kinds: dict[str, ValueKind] = field(default_factory=dict)
    #: the tensors held in another format than LINEAR, and what the formats pass offered
    #: (formats.py; format_timing.py times it)
    formats: dict[str, TensorFormat] = field(default_factory=dict)
    format_plan: FormatPlan | None = None
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    #: the engine's steps so far
    nodes: list[EngineNode] = field(default_factory=list)
    folded: int = 0
    #: what the engine is made of once the nodes are done
    tensors: dict[str, TensorSpec] = field(default_factory=dict)
    kept_constants: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    engine: Engine | None = None

    def add_input(self, name: str, dtype: DataType, shape: list[int | str | None] | None,
                  kind: ValueKind = TENSOR) -> None:
        """A graph input: fixed dimensions, named symbols, a fresh symbol per unnamed one.
        The elements of a sequence (or an optional's, a map's values) keep their fixed
        dimensions; the others are symbols of their own (elements may differ), and a
        sequence of unknown rank has none (``ValueKind.ranked``)."""
        elements = not kind.is_tensor
        self.dims[name] = DimsExprs([
            DimExpr.const(x) if isinstance(x, int) else
            DimExpr.sym(x if isinstance(x, str) and x and not elements else f"{name}[{k}]")
            for k, x in enumerate(shape or [])])
        self.types[name] = dtype
        if elements:
            self.kinds[name] = kind.with_rank(shape is not None)
        self.input_names.append(name)

    def kind(self, name: str) -> ValueKind:
        return self.kinds.get(name, TENSOR)


@record
class NodeWork:
    """One network node on its way through the node passes."""

    index: int
    node: Node
    record: CreatorRecord
    device: str
    #: how errors name it: node, operator, plugin, distribution, placement
    where: str
    plugin: IPluginV2 | None = None
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    in_dims: list[DimsExprs | None] = field(default_factory=list)
    in_types: list[DataType | None] = field(default_factory=list)
    #: the inputs' and outputs' kinds (None: an absent input)
    in_kinds: list[ValueKind | None] = field(default_factory=list)
    out_kinds: list[ValueKind] = field(default_factory=list)
    out_dims: list[DimsExprs] = field(default_factory=list)
    out_types: list[DataType] = field(default_factory=list)
    #: build-time values per output (small integer tensors), None where unknown
    values: list[tuple[DimExpr, ...] | None] = field(default_factory=list)
