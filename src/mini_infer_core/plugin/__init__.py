"""The plugin API: interfaces, descriptors, fields and base classes for plugin authors.

:mod:`mini_infer_core.plugin.shapes` holds the shape, type and value inference helpers that
plugin packages share (axes, build-time values, window geometry, output shapes of common
operators): ``from mini_infer_core.plugin import shapes``.
"""

from . import shapes
from ._base import (
    REQUIRED,
    BroadcastPlugin,
    OnnxPlugin,
    OnnxPluginCreator,
    UnaryPlugin,
    broadcast_dims,
)
from ._buffers import BufferCache
from ._capabilities import (
    IConstantPacking,
    IDataDependentShapes,
    IFusion,
    IGraphSafety,
    IInPlaceInputs,
    IInputCount,
    ITactics,
    IValueInference,
    TensorDesc,
)
from ._device import Device, Stream
from ._dims import DimensionOperation, DimExpr, DimsExprs, ExprBuilder, IntLike
from ._fields import (
    PluginField,
    PluginFieldCollection,
    PluginFieldType,
    as_field_collection,
    decode_fields,
    encode_fields,
    fields_from_values,
)
from ._fusion import BatchNormFusion, ConvFusion, Fusion, per_channel
from ._interfaces import IPluginCreator, IPluginV2, IPluginV2DynamicExt, IPluginV2Ext
from ._lazy import LazyPluginCreator
from ._packed import Repacked
from ._subgraph import IUsesSubgraphs, Subgraph, SubgraphFactory
from ._types import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat
from ._v3 import (
    IPluginCapability,
    IPluginCreatorV3One,
    IPluginV3,
    IPluginV3OneBuild,
    IPluginV3OneCore,
    IPluginV3OneRuntime,
    PluginCapabilityType,
    PluginPhase,
)

__all__ = [
    "REQUIRED",
    "BatchNormFusion",
    "BroadcastPlugin",
    "BufferCache",
    "ConvFusion",
    "DataType",
    "Device",
    "DimExpr",
    "DimensionOperation",
    "DimsExprs",
    "DynamicPluginTensorDesc",
    "ExprBuilder",
    "Fusion",
    "IConstantPacking",
    "IDataDependentShapes",
    "IFusion",
    "IGraphSafety",
    "IInPlaceInputs",
    "IInputCount",
    "IPluginCapability",
    "IPluginCreator",
    "IPluginCreatorV3One",
    "IPluginV2",
    "IPluginV2DynamicExt",
    "IPluginV2Ext",
    "IPluginV3",
    "IPluginV3OneBuild",
    "IPluginV3OneCore",
    "IPluginV3OneRuntime",
    "ITactics",
    "IUsesSubgraphs",
    "IValueInference",
    "IntLike",
    "LazyPluginCreator",
    "OnnxPlugin",
    "OnnxPluginCreator",
    "PluginField",
    "PluginFieldCollection",
    "PluginCapabilityType",
    "PluginFieldType",
    "PluginPhase",
    "PluginTensorDesc",
    "Repacked",
    "Stream",
    "Subgraph",
    "SubgraphFactory",
    "TensorDesc",
    "TensorFormat",
    "UnaryPlugin",
    "as_field_collection",
    "broadcast_dims",
    "decode_fields",
    "encode_fields",
    "fields_from_values",
    "per_channel",
    "shapes",
]
