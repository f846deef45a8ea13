"""The immutable Engine: planned nodes with their plugins, tensors, constants and build info."""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .._debug import lifecycle_logger
from .._record import record
from ..plugin import TENSOR, DataType, Device, DimsExprs, IPluginV2, TensorFormat, ValueKind
from .format import serialize_engine, write_engine

if TYPE_CHECKING:
    from pathlib import Path  # not imported to load an engine (issue 30)

    from .context import ExecutionContext

__all__ = ["TensorSpec", "EngineNode", "Engine"]

log = lifecycle_logger()  # imports logging only once something else has (issue 30)


@record(frozen=True)
class TensorSpec:
    """A tensor of the engine. kind: input | output | constant | activation | scratch.
    A sequence, optional or map (``value_kind``) has its innermost tensor's type and
    dimensions; it lives outside every arena (the node that makes it returns it). ``dims``
    are the logical dimensions; ``format`` says how the elements lie in memory (the arrays
    that hold it have ``physical_shape(shape, format)``; see builder/formats.py)."""

    name: str
    dtype: DataType
    dims: DimsExprs
    kind: str
    value_kind: ValueKind = TENSOR
    format: TensorFormat = TensorFormat.LINEAR

    @property
    def shape(self) -> tuple[int | str, ...]:
        return self.dims.display()

    @property
    def is_tensor(self) -> bool:
        return self.value_kind.is_tensor

    @property
    def type_string(self) -> str:
        """onnxruntime's text for its type: ``tensor(float)``, ``seq(tensor(float))``..."""
        return self.value_kind.type_string(self.dtype)


@record(frozen=True)
class EngineNode:
    name: str
    op_type: str
    domain: str
    opset: int
    device: str
    plugin: IPluginV2  # the prototype; execution contexts clone it
    plugin_name: str
    plugin_version: str
    plugin_namespace: str
    distribution: str | None
    distribution_version: str | None
    inputs: tuple[str, ...]  # "" marks an absent optional input
    outputs: tuple[str, ...]

    @property
    def qualified_op(self) -> str:
        return f"{self.domain}::{self.op_type}" if self.domain else self.op_type

    def describe(self) -> str:
        dist = f", from {self.distribution} {self.distribution_version}" if self.distribution \
            else ""
        return (f"node {self.name!r} ({self.qualified_op}, plugin {self.plugin_namespace}::"
                f"{self.plugin_name} v{self.plugin_version}{dist})")


class Engine:
    """What the builder produces and the runtime loads. Immutable once made."""

    def __init__(self, *, name: str, device: Device, inputs: list[str], outputs: list[str],
                 tensors: dict[str, TensorSpec], constants: dict[str, np.ndarray[Any, Any]],
                 nodes: list[EngineNode], build_info: dict[str, Any],
                 devices: dict[str, Device] | None = None) -> None:
        self.name = name
        self.device = device
        #: every device a node runs on (the engine's own, and any fallback)
        self.devices: Mapping[str, Device] = MappingProxyType(
            {device.name: device, **(devices or {})})
        self.input_names: tuple[str, ...] = tuple(inputs)
        self.output_names: tuple[str, ...] = tuple(outputs)
        self.tensors: Mapping[str, TensorSpec] = MappingProxyType(dict(tensors))
        for arr in constants.values():
            if arr.flags.writeable:
                arr.flags.writeable = False
        self.constants: Mapping[str, np.ndarray[Any, Any]] = MappingProxyType(dict(constants))
        self.nodes: tuple[EngineNode, ...] = tuple(nodes)
        self.build_info: Mapping[str, Any] = MappingProxyType(build_info)
        self._destroyed = False

    @property
    def device_name(self) -> str:
        return self.device.name

    @property
    def inputs(self) -> list[TensorSpec]:
        return [self.tensors[n] for n in self.input_names]

    @property
    def outputs(self) -> list[TensorSpec]:
        return [self.tensors[n] for n in self.output_names]

    @property
    def num_io_tensors(self) -> int:
        return len(self.input_names) + len(self.output_names)

    def create_execution_context(self) -> ExecutionContext:
        """A context that runs this engine (TensorRT's createExecutionContext). Contexts
        are of this layer (``engine/context.py``); the module is imported here because its
        own modules read this one's classes (an import cycle at load otherwise)."""
        from .context import ExecutionContext

        return ExecutionContext(self)

    def report(self, path: str | os.PathLike[str], **options: Any) -> Path:
        """Write this engine's HTML report to ``path`` (``mini-infer report``): its graph,
        a profiled run's latency per node, the memory plan and the build's facts; options
        as :func:`mini_infer_core.engine.report.report_data` takes them (``profile``,
        ``feeds``, ``runs``, ``compare="onnxruntime"`` with ``model``, ``diff``...)."""
        from .report import write_report

        return write_report(self, path, **options)

    def serialize(self) -> bytes:
        return serialize_engine(self)

    def save(self, path: str) -> None:
        write_engine(self, path)

    def destroy(self) -> None:
        if self._destroyed:
            return
        self._destroyed = True
        for node in self.nodes:
            log.debug("destroy   %s (prototype)", node.describe())
            node.plugin.destroy()

    def __repr__(self) -> str:
        return (f"Engine({self.name!r}, device={self.device_name!r}, nodes={len(self.nodes)}, "
                f"inputs={list(self.input_names)}, outputs={list(self.output_names)})")
