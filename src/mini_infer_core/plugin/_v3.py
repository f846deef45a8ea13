"""IPluginV3: a plugin as capability interfaces (TensorRT 10's design), next to the IPluginV2
family.

An :class:`IPluginV3` answers :meth:`~IPluginV3.get_capability_interface` with one object per
phase: :class:`IPluginV3OneCore` (identity), :class:`IPluginV3OneBuild` (shapes, types,
formats, workspace) and :class:`IPluginV3OneRuntime` (shape changes, enqueue, the fields to
serialize). Optional abilities are the interfaces of ``_capabilities.py`` (the rows of its
``CAPABILITIES`` table), implemented by the build or runtime object that has them.

A V3 plugin is serialized as its fields (:meth:`IPluginV3OneRuntime.get_fields_to_serialize`)
and rebuilt by its creator's ``create_plugin(name, fields, PluginPhase.RUNTIME)``. Inside the
core every V3 plugin is wrapped once, where a creator makes it (``as_v2``), in
:class:`V3Plugin`, which speaks the IPluginV2DynamicExt contract the engine runs.
"""

from __future__ import annotations

import enum
import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import PluginInterfaceError
from . import _capabilities as cap
from ._dims import DimsExprs, ExprBuilder
from ._fields import PluginFieldCollection, as_field_collection, decode_fields, encode_fields
from ._interfaces import IPluginCreator, IPluginV2, IPluginV2DynamicExt
from ._types import DataType, DynamicPluginTensorDesc, PluginTensorDesc, TensorFormat

__all__ = [
    "IPluginCapability",
    "IPluginCreatorV3One",
    "IPluginV3",
    "IPluginV3OneBuild",
    "IPluginV3OneCore",
    "IPluginV3OneRuntime",
    "PluginCapabilityType",
    "PluginPhase",
    "V3Plugin",
    "as_v2",
]


class PluginCapabilityType(enum.Enum):
    CORE = "core"
    BUILD = "build"
    RUNTIME = "runtime"


class PluginPhase(enum.Enum):
    """Why a V3 creator makes a plugin (TensorRT's TensorRTPhase)."""

    BUILD = "build"
    RUNTIME = "runtime"


class IPluginCapability:
    """Base of every capability interface a V3 plugin hands out."""


class IPluginV3OneCore(IPluginCapability):
    plugin_name: str = ""
    plugin_version: str = "1"
    plugin_namespace: str = ""


class IPluginV3OneBuild(IPluginCapability, ABC):
    """What the builder asks: outputs, types, shapes (dimension expressions), formats."""

    #: inputs whose build-time values the shapes need (they arrive in ``DimsExprs.values``)
    shape_inputs: tuple[int, ...] = ()

    @property
    @abstractmethod
    def num_outputs(self) -> int: ...

    @abstractmethod
    def get_output_data_types(self, input_types: Sequence[DataType]) -> Sequence[DataType]: ...

    @abstractmethod
    def get_output_shapes(self, inputs: Sequence[DimsExprs | None],
                          expr_builder: ExprBuilder) -> Sequence[DimsExprs]: ...

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        return in_out[pos].format is TensorFormat.LINEAR

    def configure_plugin(self, inputs: Sequence[DynamicPluginTensorDesc | None],
                         outputs: Sequence[DynamicPluginTensorDesc]) -> None:
        """Build-time descriptions (symbolic dimensions are -1 in ``desc.shape``)."""

    def get_workspace_size(self, inputs: Sequence[PluginTensorDesc | None],
                           outputs: Sequence[PluginTensorDesc]) -> int:
        return 0


class IPluginV3OneRuntime(IPluginCapability, ABC):
    """What an execution context asks: shape changes, enqueue, serialization."""

    def on_shape_change(self, inputs: Sequence[PluginTensorDesc | None],
                        outputs: Sequence[PluginTensorDesc]) -> None:
        """Concrete shapes for the coming runs (before the first, and whenever they change)."""

    @abstractmethod
    def enqueue(self, input_descs: Sequence[PluginTensorDesc | None],
                output_descs: Sequence[PluginTensorDesc], inputs: Sequence[Any],
                outputs: Sequence[Any], workspace: Any, stream: Any) -> None: ...

    @abstractmethod
    def get_fields_to_serialize(self) -> PluginFieldCollection: ...


class IPluginV3(ABC):
    @abstractmethod
    def get_capability_interface(self, kind: PluginCapabilityType
                                 ) -> IPluginCapability | None: ...

    @abstractmethod
    def clone(self) -> IPluginV3:
        """A copy with its own state, for another execution context (attachToContext)."""


class IPluginCreatorV3One(IPluginCreator):
    """Creates V3 plugins from fields, at build time and (from serialized fields) at load
    time. ``create_plugin_v3`` is TensorRT's ``createPlugin(name, fc, phase)``; the core
    calls the IPluginCreator methods, which wrap the result."""

    @abstractmethod
    def create_plugin_v3(self, name: str, fields: PluginFieldCollection,
                         phase: PluginPhase) -> IPluginV3: ...

    def create_plugin(self, name: str,
                      fields: PluginFieldCollection | Mapping[str, Any]) -> IPluginV2:
        fields = as_field_collection(fields, f"{self.plugin_namespace}::{self.name} "
                                             "create_plugin")
        return V3Plugin(self.create_plugin_v3(name, fields, PluginPhase.BUILD))

    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2:
        try:
            fields = decode_fields(data)
        except ValueError as exc:
            raise PluginInterfaceError(
                f"{self.plugin_namespace}::{self.name} cannot read its serialized fields: {exc}"
            ) from exc
        return V3Plugin(self.create_plugin_v3(name, fields, PluginPhase.RUNTIME))


def _capability(plugin: IPluginV3, kind: PluginCapabilityType, cls: type[Any]) -> Any:
    cap = plugin.get_capability_interface(kind)
    if not isinstance(cap, cls):
        raise PluginInterfaceError(
            f"{type(plugin).__name__}.get_capability_interface({kind.name}) returned "
            f"{type(cap).__name__}, not an {cls.__name__}")
    return cap


class V3Plugin(IPluginV2DynamicExt):
    """A V3 plugin as the engine runs it: the IPluginV2DynamicExt contract, answered by its
    build and runtime capability objects. Its class is made per plugin (:func:`_wrapper`):
    it derives from every optional interface of ``CAPABILITIES`` that the build or runtime
    object implements, and forwards each member of it, so the core finds exactly the
    abilities the plugin has, as it finds those of an IPluginV2 plugin."""

    def __init__(self, v3: IPluginV3) -> None:
        if not isinstance(v3, IPluginV3):
            raise PluginInterfaceError(f"{v3!r} is not an IPluginV3")
        self.v3 = v3
        core = _capability(v3, PluginCapabilityType.CORE, IPluginV3OneCore)
        self.build: IPluginV3OneBuild = _capability(v3, PluginCapabilityType.BUILD,
                                                    IPluginV3OneBuild)
        self.runtime: IPluginV3OneRuntime = _capability(v3, PluginCapabilityType.RUNTIME,
                                                        IPluginV3OneRuntime)
        self.plugin_type = core.plugin_name
        self.plugin_version = core.plugin_version
        self.plugin_namespace = core.plugin_namespace
        self.shape_inputs = tuple(self.build.shape_inputs)
        self._in: list[PluginTensorDesc | None] = []
        self._out: list[PluginTensorDesc] = []
        self.__class__ = _wrapper(tuple(
            c.interface for c in cap.CAPABILITIES
            if isinstance(self.build, c.interface) or isinstance(self.runtime, c.interface)))

    def abilities(self, interface: type[Any]) -> list[Any]:
        """The build and runtime objects that implement ``interface``, in that order."""
        return [a for a in (self.build, self.runtime) if isinstance(a, interface)]

    # -- IPluginV2DynamicExt --------------------------------------------------------------
    @property
    def num_outputs(self) -> int:
        return self.build.num_outputs

    def get_output_dimensions(self, index: int, inputs: Sequence[DimsExprs],
                              expr_builder: ExprBuilder) -> DimsExprs:
        return DimsExprs(list(self.build.get_output_shapes(inputs, expr_builder)[index]))

    def get_output_data_type(self, index: int, input_types: Sequence[DataType]) -> DataType:
        return self.build.get_output_data_types(input_types)[index]

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        return self.build.supports_format_combination(pos, in_out, num_inputs)

    def configure_plugin(self, inputs: Sequence[DynamicPluginTensorDesc | None],  # type: ignore[override]
                         outputs: Sequence[DynamicPluginTensorDesc]) -> None:
        self.build.configure_plugin(inputs, outputs)

    def on_shape_change(self, inputs: Sequence[PluginTensorDesc | None],
                        outputs: Sequence[PluginTensorDesc]) -> None:
        self._in, self._out = list(inputs), list(outputs)
        self.runtime.on_shape_change(inputs, outputs)

    def get_workspace_size(self, inputs: Sequence[PluginTensorDesc],  # type: ignore[override]
                           outputs: Sequence[PluginTensorDesc]) -> int:
        return self.build.get_workspace_size(inputs, outputs)

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        self.runtime.enqueue(self._in, self._out, inputs, outputs, workspace, stream)

    def serialize(self) -> bytes:
        return encode_fields(self.runtime.get_fields_to_serialize())

    def clone(self) -> IPluginV2:
        return V3Plugin(self.v3.clone())

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the V3 plugin it wraps (the class made for it is not importable by
        name), with its state."""
        return V3Plugin, (self.v3,), dict(vars(self))

    def __repr__(self) -> str:
        return f"V3Plugin({self.v3!r})"


def _forward(entry: cap.Capability, name: str) -> Any:
    """The wrapper's member ``name`` of ``entry``'s interface: asked of the first ability
    that implements it (build, then runtime), or -- a member in ``entry.tell`` -- told to
    each of them."""
    interface = entry.interface
    if name in entry.tell:
        def tell(self: V3Plugin, *args: Any, **kwargs: Any) -> None:
            for ability in self.abilities(interface):
                getattr(ability, name)(*args, **kwargs)
        return tell
    if callable(vars(interface)[name]):  # a method
        def ask(self: V3Plugin, *args: Any, **kwargs: Any) -> Any:
            return getattr(self.abilities(interface)[0], name)(*args, **kwargs)
        return ask
    return property(lambda self: getattr(self.abilities(interface)[0], name))


@functools.cache
def _wrapper(interfaces: tuple[type[Any], ...]) -> type[V3Plugin]:
    """The class of a V3 plugin whose capability objects implement ``interfaces``."""
    members: dict[str, Any] = {}
    for entry in cap.CAPABILITIES:
        if entry.interface in interfaces:
            members.update({name: _forward(entry, name) for name in entry.members})
    return type("V3Plugin", (V3Plugin, *interfaces), members)


def as_v2(plugin: IPluginV2 | IPluginV3) -> IPluginV2:
    """What the engine runs: an IPluginV2-family plugin as it is, a V3 one wrapped."""
    return V3Plugin(plugin) if isinstance(plugin, IPluginV3) else plugin
