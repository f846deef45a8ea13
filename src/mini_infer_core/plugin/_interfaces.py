"""TensorRT's plugin contract in Python naming: IPluginV2, IPluginV2Ext, IPluginV2DynamicExt
and IPluginCreator.

Lifecycle, as TensorRT's: a creator constructs a plugin (``create_plugin`` at build time,
``deserialize_plugin`` at load time); the builder asks for output shapes and types and
negotiates formats; ``configure_plugin`` tells the plugin its final tensor descriptions;
``initialize`` runs once before the first enqueue; ``enqueue`` runs every inference and must
not allocate or wait; ``terminate`` undoes ``initialize``; ``destroy`` ends the object.

Buffers handed to ``enqueue`` are arrays of the device's array module (NumPy on ``cpu``),
already shaped; outputs are pre-allocated and must be written in place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from ._dims import DimsExprs, ExprBuilder
from ._fields import PluginFieldCollection
from ._types import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat

__all__ = ["IPluginV2", "IPluginV2Ext", "IPluginV2DynamicExt", "IPluginCreator"]


class IPluginV2(ABC):
    """Static-shape plugin: all dimensions known at build time, one type and format."""

    #: identity; set by subclasses (TensorRT: getPluginType / getPluginVersion)
    plugin_type: str = ""
    plugin_version: str = "1"
    plugin_namespace: str = ""

    # -- shapes ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def num_outputs(self) -> int: ...

    @abstractmethod
    def get_output_shape(self, index: int, input_shapes: Sequence[tuple[int, ...]]
                         ) -> tuple[int, ...]: ...

    # -- formats --------------------------------------------------------------------------
    def supports_format(self, dtype: DataType, format: TensorFormat) -> bool:
        return dtype is DataType.FLOAT and format is TensorFormat.LINEAR

    def configure_with_format(self, input_shapes: Sequence[tuple[int, ...]],
                              output_shapes: Sequence[tuple[int, ...]], dtype: DataType,
                              format: TensorFormat, max_batch_size: int) -> None:
        """Called once with the final shapes, type and format."""

    # -- resources ------------------------------------------------------------------------
    def initialize(self) -> None:
        """Acquire resources; called once before the first enqueue."""

    def terminate(self) -> None:
        """Release what ``initialize`` acquired."""

    def get_workspace_size(self, max_batch_size: int) -> int:
        return 0

    @abstractmethod
    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        """Compute outputs from inputs on ``stream``. Writes into ``outputs`` in place."""

    # -- serialization --------------------------------------------------------------------
    @abstractmethod
    def serialize(self) -> bytes: ...

    def get_serialization_size(self) -> int:
        return len(self.serialize())

    @abstractmethod
    def clone(self) -> IPluginV2: ...

    def destroy(self) -> None:
        """Last call on the object."""


class IPluginV2Ext(IPluginV2):
    """Adds data-type negotiation: per-output types and a richer configure."""

    def get_output_data_type(self, index: int, input_types: Sequence[DataType]) -> DataType:
        return input_types[0]

    def configure_plugin(self, inputs: Sequence[PluginTensorDesc],
                         outputs: Sequence[PluginTensorDesc]) -> None:
        """Called with the final descriptions of every input and output."""


class IPluginV2DynamicExt(IPluginV2Ext):
    """Dynamic shapes through dimension expressions; per-position format combinations."""

    #: input indices whose *values* (not only shapes) the plugin needs at build time,
    #: e.g. Reshape's target shape. They arrive in ``DimsExprs.values``.
    shape_inputs: tuple[int, ...] = ()

    @abstractmethod
    def get_output_dimensions(self, index: int, inputs: Sequence[DimsExprs],
                              expr_builder: ExprBuilder) -> DimsExprs: ...

    def get_output_shape(self, index: int, input_shapes: Sequence[tuple[int, ...]]
                         ) -> tuple[int, ...]:
        dims = self.get_output_dimensions(index, [DimsExprs(s) for s in input_shapes],
                                          ExprBuilder())
        return dims.to_tuple()

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        return in_out[pos].format is TensorFormat.LINEAR

    def configure_plugin(self, inputs: Sequence[DynamicPluginTensorDesc],  # type: ignore[override]
                         outputs: Sequence[DynamicPluginTensorDesc]) -> None:
        """Called at build time with symbolic shapes, and again when concrete shapes change."""

    def get_workspace_size(self, inputs: Sequence[PluginTensorDesc],  # type: ignore[override]
                           outputs: Sequence[PluginTensorDesc]) -> int:
        return 0


class IPluginCreator(ABC):
    """Makes plugins of one type: from fields at build time, from bytes at load time.

    mini-infer extends TensorRT's creator with what the builder needs to pick it for an ONNX
    node: ``domain`` and ``op_type``, the ``devices`` it runs on, its ``priority`` among
    creators for the same operator, and the opset range it implements.
    """

    name: str = ""
    plugin_version: str = "1"
    plugin_namespace: str = ""
    domain: str = ""
    op_type: str = ""
    devices: tuple[str, ...] = ("cpu",)
    priority: int = 0
    min_opset: int = 1
    max_opset: int | None = None

    @property
    @abstractmethod
    def field_names(self) -> tuple[str, ...]:
        """Names of the fields ``create_plugin`` understands."""

    @abstractmethod
    def create_plugin(self, name: str, fields: PluginFieldCollection) -> IPluginV2: ...

    @abstractmethod
    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2: ...

    def supports_opset(self, opset: int) -> bool:
        return opset >= self.min_opset and (self.max_opset is None or opset <= self.max_opset)
