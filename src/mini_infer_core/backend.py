"""onnx's backend API (``onnx.backend.base.Backend`` / ``BackendRep``) on top of the engine, so
that ``onnx.backend.test.BackendTest`` and onnx's node conformance cases run against us::

    from mini_infer_core.backend import MiniInferBackend
    rep = MiniInferBackend.prepare(model, "CPU")
    outputs = rep.run([x])

Sequences are lists of arrays, an empty optional is None, as onnxruntime has them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from .builder import BuilderConfig
from .registry import get_plugin_registry
from .session import InferenceSession

__all__ = ["MiniInferBackend", "MiniInferBackendRep", "prepare", "run_model", "run_node",
           "supports_device"]


def _value_info(name: str, value: Any) -> onnx.ValueInfoProto:
    """An input of ``run_node``: a tensor, or a sequence (a list of arrays: their element
    type, float for an empty one; their rank where they share it)."""
    if not isinstance(value, (list, tuple)):
        return onnx.helper.make_tensor_value_info(
            name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)
    items = [np.asarray(v) for v in value]
    dtype = onnx.helper.np_dtype_to_tensor_dtype(items[0].dtype) if items else \
        onnx.TensorProto.FLOAT
    ranks = {v.ndim for v in items}
    shape = [None] * ranks.pop() if len(ranks) == 1 else None
    return onnx.helper.make_tensor_sequence_value_info(name, dtype, shape)


def _device_name(device: str) -> str:
    return device.split(":")[0].lower()


class MiniInferBackendRep(BackendRep):
    def __init__(self, session: InferenceSession) -> None:
        self.session = session
        self.input_names = [i.name for i in session.get_inputs()]
        self.output_names = [o.name for o in session.get_outputs()]

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray):
                inputs = [inputs]
            feeds = dict(zip(self.input_names, inputs, strict=False))
        outs = self.session.run(None, feeds)
        return namedtupledict("Outputs", self.output_names)(*outs)


class MiniInferBackend(Backend):
    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU",
                **kwargs: Any) -> MiniInferBackendRep:
        config = BuilderConfig(device=_device_name(device))
        return MiniInferBackendRep(InferenceSession(model, config=config))

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: onnx.NodeProto, inputs: Any, device: str = "CPU",
                 outputs_info: Sequence[tuple[Any, ...]] | None = None,
                 **kwargs: Any) -> tuple[Any, ...]:
        opset = int(kwargs.get("opset_version", onnx.defs.onnx_opset_version()))
        arrays = [x if isinstance(x, (list, tuple)) else np.asarray(x) for x in inputs]
        names = [n for n in node.input if n]
        vis = [_value_info(n, a) for n, a in zip(names, arrays, strict=False)]
        outs = [onnx.helper.make_empty_tensor_value_info(o) for o in node.output if o]
        graph = onnx.helper.make_graph([node], "run_node", vis, outs)
        imports = [onnx.helper.make_opsetid("", opset)]
        if node.domain not in ("", "ai.onnx"):
            imports.append(onnx.helper.make_opsetid(node.domain, 1))
        model = onnx.helper.make_model(graph, opset_imports=imports)
        return cls.run_model(model, dict(zip(names, arrays, strict=False)), device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        name = _device_name(device)
        dev = get_plugin_registry().get_device(name)
        return dev is not None and dev.availability()[0]


prepare = MiniInferBackend.prepare
run_model = MiniInferBackend.run_model
run_node = MiniInferBackend.run_node
supports_device = MiniInferBackend.supports_device
