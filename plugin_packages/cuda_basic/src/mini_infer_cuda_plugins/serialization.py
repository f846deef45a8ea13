"""How mini-infer-cuda-plugins plugins are written into an engine and read back, and the base
class every kernel of this package derives from.

A plugin's bytes are a one-byte format tag (``FORMAT_TAG``) followed by its fields in
mini-infer's plugin field encoding (the core's ``OnnxPlugin.serialize`` writes them, its
creator reads them back): the ONNX attributes, plus the hidden fields a plugin declares in
``hidden_fields`` (names ``__like_this__``) and fills with ``record``: build-time knowledge
such as the constant ``axes`` of a Reduce, kept so that ``enqueue`` never has to read a small
integer tensor back from the GPU (a synchronisation). The tag lets a later version change the
layout and still recognise engines written by this one.

This module imports neither CuPy nor any kernel module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mini_infer_core.plugin import (
    DataType,
    OnnxPlugin,
    OnnxPluginCreator,
    PluginTensorDesc,
    TensorFormat,
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
    format_tag: ClassVar[bytes] = FORMAT_TAG
    package: ClassVar[str] = "mini-infer-cuda-plugins"

    @property
    def graph_safe(self) -> bool:
        """Whether ``enqueue`` allocates nothing on the device after its first run with a
        given shape (every temporary is an output or an instance-owned buffer), so that a
        CUDA graph captured after one eager run can be replayed safely. Kernels that allocate
        temporaries in some configurations say so here (Slice with symbolic starts, signed
        integer Div, training-mode BatchNormalization)."""
        return True

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


def _reference_float(in_out: Sequence[PluginTensorDesc], num_inputs: int) -> DataType | None:
    """The float type of a node: input 0's, else its first float output's. (Absent optional
    inputs are described as FLOAT placeholders by the core, so they cannot be the reference.)
    """
    for d in (in_out[0], *in_out[num_inputs:]) if in_out else ():
        if d.dtype in FLOAT_TYPES:
            return d.dtype
    return None


class CudaCreator(OnnxPluginCreator):
    """Creates mini-infer-cuda-plugins plugins (the core's creator, which checks the tag)."""
