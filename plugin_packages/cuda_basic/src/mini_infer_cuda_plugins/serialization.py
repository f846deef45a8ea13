"""How mini-infer-cuda-plugins plugins are written into an engine and read back, and the base
class every kernel of this package derives from.

A plugin's bytes are a one-byte format tag (``FORMAT_TAG``) followed by its fields in
mini-infer's plugin field encoding: the ONNX attributes, plus the *recorded* fields a plugin
declares in ``recorded_fields`` (names ``__like_this__``): build-time knowledge such as the
constant ``axes`` of a Reduce, kept so that ``enqueue`` never has to read a small integer
tensor back from the GPU (a synchronisation). The tag lets a later version change the layout
and still recognise engines written by this one.

This module imports neither CuPy nor any kernel module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import (
    DataType,
    IPluginV2,
    OnnxPlugin,
    OnnxPluginCreator,
    PluginFieldCollection,
    PluginTensorDesc,
    TensorFormat,
    decode_fields,
    encode_fields,
    fields_from_values,
)

from ._stream import on_stream

__all__ = ["FORMAT_TAG", "FLOAT_TYPES", "DEVICE_TYPES", "CudaPlugin", "CudaCreator"]

#: first byte of every serialized mini-infer-cuda-plugins plugin ("C", layout 1)
FORMAT_TAG = b"\xc1"

#: floating-point tensor types the kernels compute in
FLOAT_TYPES: frozenset[DataType] = frozenset({DataType.FLOAT, DataType.HALF, DataType.DOUBLE})

#: every element type a CuPy array holds (no strings, no ml_dtypes narrow floats)
DEVICE_TYPES: frozenset[DataType] = FLOAT_TYPES | {
    DataType.BOOL, DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64,
    DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64}


class CudaPlugin(OnnxPlugin):
    """Base of every mini-infer-cuda-plugins plugin.

    * ``enqueue`` runs ``compute`` inside ``with stream.stream:`` (CuPy's current stream),
      never synchronises, and writes only into the outputs and buffers the instance owns.
    * Formats: linear only; every tensor type must be one CuPy holds; the floating-point
      tensors of a node must all have one type (FLOAT, HALF or DOUBLE) unless
      ``mixed_floats`` (Cast, Pow...). ``dtypes``, when set, restricts the inputs further.
    """

    #: floating-point inputs/outputs may have different types (Cast, CastLike, Pow)
    mixed_floats: ClassVar[bool] = False
    #: recorded build-time fields (``__name__``), serialized and cloned with the attributes
    recorded_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, name: str = "", **attrs: Any) -> None:
        #: recorded fields (see the module doc); absent ones are simply unknown
        self.recorded: dict[str, Any] = {k: attrs.pop(k) for k in self.recorded_fields
                                         if k in attrs}
        super().__init__(name, **attrs)

    @property
    def graph_safe(self) -> bool:
        """Whether ``enqueue`` allocates nothing on the device after its first run with a
        given shape (every temporary is an output or an instance-owned buffer), so that a
        CUDA graph captured after one eager run can be replayed safely. Kernels that allocate
        temporaries in some configurations say so here (Slice with symbolic starts, signed
        integer Div, training-mode BatchNormalization)."""
        return True

    def record(self, key: str, value: Any | None) -> None:
        """Remember (or, with None, forget) a build-time fact; ``key`` must be declared."""
        if key not in self.recorded_fields:
            raise PluginInterfaceError(f"{self.plugin_type}: {key!r} is not a recorded field")
        if value is None:
            self.recorded.pop(key, None)
        else:  # as decoding gives it back: sequences as tuples
            self.recorded[key] = tuple(value) if isinstance(value, list) else value

    def _fields(self) -> dict[str, Any]:
        fields = {k: v for k, v in self.attrs.items() if v is not None}
        fields.update(self.recorded)
        return fields

    # -- formats --------------------------------------------------------------------------
    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        desc = in_out[pos]
        if desc.format is not TensorFormat.LINEAR or desc.dtype not in DEVICE_TYPES:
            return False
        if pos < num_inputs and self.dtypes is not None and desc.dtype not in self.dtypes:
            return False
        if desc.dtype in FLOAT_TYPES and not self.mixed_floats:
            ref = _reference_float(in_out, num_inputs)
            return ref is None or desc.dtype is ref
        return True

    # -- execution ------------------------------------------------------------------------
    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        with on_stream(stream):
            super().enqueue(inputs, outputs, workspace, stream)

    # -- serialization --------------------------------------------------------------------
    def serialize(self) -> bytes:
        return FORMAT_TAG + encode_fields(fields_from_values(self._fields()))

    def clone(self) -> IPluginV2:
        twin = type(self)(self.name, **self._fields())
        twin.plugin_namespace = self.plugin_namespace
        return twin


def _reference_float(in_out: Sequence[PluginTensorDesc], num_inputs: int) -> DataType | None:
    """The float type of a node: input 0's, else its first float output's. (Absent optional
    inputs are described as FLOAT placeholders by the core, so they cannot be the reference.)
    """
    for d in (in_out[0], *in_out[num_inputs:]) if in_out else ():
        if d.dtype in FLOAT_TYPES:
            return d.dtype
    return None


class CudaCreator(OnnxPluginCreator):
    """Creates mini-infer-cuda-plugins plugins; reads only this package's serialized form."""

    def deserialize_plugin(self, name: str, data: bytes) -> Any:
        if data[:1] != FORMAT_TAG:
            raise PluginInterfaceError(
                f"{self.plugin_namespace}::{self.name}: serialized data has format tag "
                f"{data[:1]!r}, this mini-infer-cuda-plugins reads {FORMAT_TAG!r}; the engine "
                "was written by another plugin package or version: rebuild it")
        try:
            fields: PluginFieldCollection = decode_fields(data[1:])
        except ValueError as exc:
            raise PluginInterfaceError(
                f"{self.plugin_namespace}::{self.name}: corrupt serialized data "
                f"(mini-infer-cuda-plugins): {exc}") from exc
        return self.create_plugin(name, fields)
