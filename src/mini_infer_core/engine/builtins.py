"""Steps the builder inserts itself, rebuilt by the runtime without the registry
(namespace ``mini_infer.core``; core machinery, not operator kernels):

- ``Copy``: between devices, where a node runs on another device than the producer of its
  input (CPU fallback of a CUDA engine, for example);
- ``Cast``: between FLOAT and HALF at the boundaries of nodes that run in fp16;
- ``Reformat``: between two tensor formats (LINEAR, CHW16...), where a node takes its input
  in another format than its producer gives it (builder/formats.py).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import Any

from ..errors import EngineFormatError
from ..plugin import (
    DataType,
    Device,
    DimsExprs,
    DynamicPluginTensorDesc,
    ExprBuilder,
    IDataDependentShapes,
    IPluginV2,
    IPluginV2DynamicExt,
    TensorFormat,
    ValueKind,
    decode_fields,
    encode_fields,
    fields_from_values,
)
from ..plugin._kinds import map_tensors
from ..plugin._layouts import reformat

__all__ = ["CORE_NAMESPACE", "CastPlugin", "CopyPlugin", "ReformatPlugin", "ValueCopyPlugin",
           "deserialize_builtin"]

CORE_NAMESPACE = "mini_infer.core"


class _CoreStep(IPluginV2DynamicExt):
    """One input, one output of the same shape; any type and format."""

    plugin_version = "1"
    plugin_namespace = CORE_NAMESPACE

    @property
    def num_outputs(self) -> int:
        return 1

    def get_output_dimensions(self, index: int, inputs: Sequence[DimsExprs],
                              expr_builder: ExprBuilder) -> DimsExprs:
        return DimsExprs(list(inputs[0]))

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        return True


class CopyPlugin(_CoreStep):
    plugin_type = "Copy"

    def __init__(self, src: str, dst: str) -> None:
        self.src_name, self.dst_name = src, dst
        self.src: Device | None = None
        self.dst: Device | None = None

    def bind(self, devices: dict[str, Device]) -> None:
        self.src, self.dst = devices[self.src_name], devices[self.dst_name]

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        assert self.src is not None and self.dst is not None, "devices not bound"
        host = self.src.to_host(inputs[0])
        self.dst.copy(outputs[0], self.dst.to_device(host), stream)

    def serialize(self) -> bytes:
        return encode_fields(fields_from_values({"src": self.src_name, "dst": self.dst_name}))

    def clone(self) -> IPluginV2:
        twin = CopyPlugin(self.src_name, self.dst_name)
        twin.src, twin.dst = self.src, self.dst
        return twin

    def __repr__(self) -> str:
        return f"CopyPlugin({self.src_name} -> {self.dst_name})"


class ValueCopyPlugin(CopyPlugin, IDataDependentShapes):
    """Copy of a sequence, optional or map: every tensor inside it, into a new value (such
    values have no place in an arena, so the step returns it)."""

    data_dependent = True

    def __init__(self, src: str, dst: str, value_kind: ValueKind) -> None:
        super().__init__(src, dst)
        self.value_kind = value_kind

    def enqueue_dynamic(self, inputs: Sequence[Any], workspace: Any, stream: Any
                        ) -> list[Any]:
        src, dst = self.src, self.dst
        assert src is not None and dst is not None, "devices not bound"
        return [map_tensors(lambda a: dst.to_device(src.to_host(a)), inputs[0],
                            self.value_kind)]

    def serialize(self) -> bytes:
        return encode_fields(fields_from_values({
            "src": self.src_name, "dst": self.dst_name,
            "value": json.dumps(self.value_kind.to_json())}))

    def clone(self) -> IPluginV2:
        twin = ValueCopyPlugin(self.src_name, self.dst_name, self.value_kind)
        twin.src, twin.dst = self.src, self.dst
        return twin


class CastPlugin(_CoreStep):
    """Element-type conversion (FLOAT <-> HALF) on whatever device holds the tensor."""

    plugin_type = "Cast"

    def __init__(self, to: DataType) -> None:
        self.to = to

    def get_output_data_type(self, index: int, input_types: Sequence[DataType]) -> DataType:
        return self.to

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        scope = getattr(stream, "stream", None)  # a device stream to queue on (CuPy's)
        with scope if scope is not None else contextlib.nullcontext():
            outputs[0][...] = inputs[0]  # works for NumPy and CuPy arrays alike

    def serialize(self) -> bytes:
        return encode_fields(fields_from_values({"to": self.to.name}))

    def clone(self) -> IPluginV2:
        return CastPlugin(self.to)

    def __repr__(self) -> str:
        return f"CastPlugin(to {self.to.name})"


class ReformatPlugin(_CoreStep):
    """A tensor from one format into another (``src`` -> ``dst``), on whatever device holds
    it; its shape (logical) is told by ``configure_plugin``."""

    plugin_type = "Reformat"

    def __init__(self, src: TensorFormat, dst: TensorFormat) -> None:
        self.src, self.dst = src, dst
        self.shape: tuple[int, ...] = ()

    def supports_format_combination(self, pos: int, in_out: Sequence[Any],
                                    num_inputs: int) -> bool:
        return in_out[pos].format is (self.src if pos < num_inputs else self.dst)

    def configure_plugin(self, inputs: Sequence[DynamicPluginTensorDesc],  # type: ignore[override]
                         outputs: Sequence[DynamicPluginTensorDesc]) -> None:
        self.shape = tuple(inputs[0].desc.shape)

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        scope = getattr(stream, "stream", None)
        with scope if scope is not None else contextlib.nullcontext():
            reformat(inputs[0], self.src, self.dst, self.shape, outputs[0])

    def serialize(self) -> bytes:
        return encode_fields(fields_from_values({"src": self.src.value, "dst": self.dst.value}))

    def clone(self) -> IPluginV2:
        twin = ReformatPlugin(self.src, self.dst)
        twin.shape = self.shape
        return twin

    def __repr__(self) -> str:
        return f"ReformatPlugin({self.src.name} -> {self.dst.name})"


def _format(value: object) -> TensorFormat:
    try:
        return TensorFormat(str(value))
    except ValueError as exc:
        raise EngineFormatError(
            f"core plugin Reformat: unknown tensor format {value!r}; the engine was built by a "
            "newer mini-infer-core: upgrade mini-infer-core or rebuild the engine") from exc


def deserialize_builtin(name: str, version: str, data: bytes) -> IPluginV2:
    values = decode_fields(data).values_dict()
    if name == "Copy" and version == "1":
        if "value" in values:  # a sequence, optional or map
            try:
                kind = ValueKind.from_json(json.loads(str(values["value"])))
            except ValueError as exc:
                raise EngineFormatError(f"core plugin Copy: bad value kind: {exc}") from exc
            return ValueCopyPlugin(str(values["src"]), str(values["dst"]), kind)
        return CopyPlugin(str(values["src"]), str(values["dst"]))
    if name == "Cast" and version == "1":
        return CastPlugin(DataType[str(values["to"])])
    if name == "Reformat" and version == "1":
        return ReformatPlugin(_format(values["src"]), _format(values["dst"]))
    raise EngineFormatError(f"unknown core plugin {name!r} version {version!r}; the engine was "
                            "built by a newer mini-infer-core")
