"""The plugin API: interfaces, descriptors, fields and base classes for plugin authors.

:mod:`mini_infer_core.plugin.shapes` holds the shape, type and value inference helpers that
plugin packages share (axes, build-time values, window geometry, output shapes of common
operators): ``from mini_infer_core.plugin import shapes``.

What discovering plugins needs (creators, devices, the plugin base classes) is imported with
the package; the rest -- shape helpers, fusions, IPluginV3, subgraphs -- on first use (PEP
562), so that listing plugins stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._record import record
from . import _capabilities
from ._base import (
    REQUIRED,
    BroadcastPlugin,
    OnnxPlugin,
    OnnxPluginCreator,
    UnaryPlugin,
    broadcast_dims,
)
from ._capabilities import *  # noqa: F403 - the capability interfaces are public here
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
from ._interfaces import IPluginCreator, IPluginV2, IPluginV2DynamicExt, IPluginV2Ext
from ._kinds import TENSOR, ValueKind, ValueSpec
from ._layouts import from_format, physical_shape, reformat, to_format
from ._lazy import LazyPluginCreator
from ._types import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat

if TYPE_CHECKING:
    from . import shapes
    from ._buffers import BufferCache
    from ._fusion import BatchNormFusion, ConvFusion, Fusion, per_channel
    from ._packed import Repacked
    from ._subgraph import IUsesSubgraphs, Subgraph, SubgraphFactory
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

#: the submodules imported on first use of one of the names in ``__all__`` (or of themselves)
_LAZY = ("shapes", "_buffers", "_fusion", "_packed", "_subgraph", "_v3")
#: where each of those names is, so that asking for one imports its module alone
_LAZY_NAMES = {
    "shapes": "shapes", "BufferCache": "_buffers", "BatchNormFusion": "_fusion",
    "ConvFusion": "_fusion", "Fusion": "_fusion", "per_channel": "_fusion",
    "Repacked": "_packed", "IUsesSubgraphs": "_subgraph", "Subgraph": "_subgraph",
    "SubgraphFactory": "_subgraph", "IPluginCapability": "_v3", "IPluginCreatorV3One": "_v3",
    "IPluginV3": "_v3", "IPluginV3OneBuild": "_v3", "IPluginV3OneCore": "_v3",
    "IPluginV3OneRuntime": "_v3", "PluginCapabilityType": "_v3", "PluginPhase": "_v3"}


def __getattr__(name: str) -> Any:
    if name in __all__:
        listed = _LAZY_NAMES.get(name)
        for module in (listed,) if listed is not None else _LAZY:
            found = importlib.import_module(f"{__name__}.{module}")
            value = found if module == name else getattr(found, name, None)
            if value is not None:
                globals()[name] = value  # later look-ups skip this function
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "REQUIRED",
    "TENSOR",
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
    "IUsesSubgraphs",
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
    "TensorFormat",
    "UnaryPlugin",
    "ValueKind",
    "ValueSpec",
    "as_field_collection",
    "broadcast_dims",
    "decode_fields",
    "encode_fields",
    "fields_from_values",
    "from_format",
    "per_channel",
    "physical_shape",
    "reformat",
    "shapes",
    "to_format",
    "record",
]
__all__ += _capabilities.__all__
