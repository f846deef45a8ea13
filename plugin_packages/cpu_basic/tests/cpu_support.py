"""The harness the cpu_basic kernel tests share: run one plugin as the engine does (shapes and
types through its interface, outputs pre-allocated, inputs read-only) and build the single-node
model an independent oracle (onnx's ReferenceEvaluator or onnxruntime) runs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from mini_infer_cpu_plugins.ops import creators
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from mini_infer_core.plugin import DataType, DimsExprs, ExprBuilder, fields_from_values

__all__ = ["creator_for", "make_plugin", "reads", "in_dims", "execute", "run", "make_model",
           "run_oracle", "compare_with_oracles", "has_vnni"]


def has_vnni() -> bool:
    """Whether this CPU has VNNI (AVX512-VNNI or AVX-VNNI): onnxruntime's integer products
    differ without it (pairs summed in int16, weights' range reduced)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_vnni" in flags or "avx_vnni" in flags


def creator_for(op: str, opset: int) -> Any:
    return next(c for c in creators() if c.op_type == op and c.supports_opset(opset))


def make_plugin(op: str, attrs: dict[str, Any], opset: int, **hidden: Any) -> Any:
    return creator_for(op, opset).create_plugin("node", fields_from_values({**attrs, **hidden}))


def reads(plugin: Any) -> set[int]:
    """Inputs whose values the plugin reads at build time."""
    return set(plugin.shape_inputs) | set(getattr(plugin, "value_inputs", ()))


def in_dims(inputs: Sequence[Any], plugin: Any = None) -> list[DimsExprs | None]:
    """Input shapes as the builder passes constants: small 1-D integer tensors, and every input
    the plugin reads at build time, carry their values; None for an absent optional input."""
    wanted = reads(plugin) if plugin is not None else set()
    out: list[DimsExprs | None] = []
    for i, x in enumerate(inputs):
        dims = None if x is None else DimsExprs.of_constant(x)
        if dims is not None and dims.values is None and i in wanted:
            dims.values = DimsExprs(x.shape, values=np.asarray(x).reshape(-1).tolist()).values
        out.append(dims)
    return out


def execute(plugin: Any, inputs: Sequence[Any]) -> list[Any]:
    return run(plugin, inputs, in_dims(inputs, plugin))[0]


def run(plugin: Any, inputs: Sequence[Any], dims: Sequence[DimsExprs | None]
        ) -> tuple[list[Any], list[Any], list[DataType]]:
    """Shapes and types through the plugin's interface (from ``dims``), then enqueue (or the
    data-dependent call) on read-only copies of the inputs: (outputs, output shapes as the
    plugin declared them, input types)."""
    types = [DataType.FLOAT if x is None else DataType.from_numpy(x.dtype) for x in inputs]
    shapes = [plugin.get_output_dimensions(i, dims, ExprBuilder())
              for i in range(plugin.num_outputs)]
    frozen = []
    for x in inputs:
        if x is not None:
            x = x.copy()
            x.setflags(write=False)  # kernels must never write into their inputs
        frozen.append(x)
    if plugin.data_dependent:
        return list(plugin.enqueue_dynamic(frozen, None, None)), shapes, types
    outs = [np.empty(s.to_tuple(), plugin.get_output_data_type(i, types).numpy)
            for i, s in enumerate(shapes)]
    plugin.enqueue(frozen, outs, None, None)
    return outs, shapes, types


def _attr(v: Any) -> Any:
    return numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v


def make_model(op: str, inputs: Sequence[Any], attrs: dict[str, Any], opset: int,
               n_out: int | Sequence[str], ir_version: int = 10) -> onnx.ModelProto:
    names, vinfo = [], []
    for i, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        names.append(f"x{i}")
        elem = (TensorProto.STRING if x.dtype == object
                else helper.np_dtype_to_tensor_dtype(x.dtype))
        vinfo.append(helper.make_tensor_value_info(f"x{i}", elem, x.shape))
    while names and names[-1] == "":
        names.pop()
    outs = [f"y{i}" for i in range(n_out)] if isinstance(n_out, int) else list(n_out)
    node = helper.make_node(op, names, outs, **{k: _attr(v) for k, v in attrs.items()})
    graph = helper.make_graph([node], "g", vinfo,
                              [onnx.ValueInfoProto(name=o) for o in outs if o])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    return model


def run_oracle(kind: str, model: onnx.ModelProto, inputs: Sequence[Any]) -> list[Any]:
    """``kind`` "ref": onnx's ReferenceEvaluator; "ort": onnxruntime's CPU provider."""
    feeds = {f"x{i}": x for i, x in enumerate(inputs) if x is not None}
    if kind == "ref":
        return list(ReferenceEvaluator(model).run(None, feeds))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds))


def compare_with_oracles(op: str, inputs: Sequence[Any], attrs: dict[str, Any], opset: int,
                         n_out: int, oracles: Sequence[str],
                         oracle: Callable[[str, str, Sequence[Any], dict[str, Any], int, int],
                                          list[Any]],
                         compare: Callable[[Any, Any, str], None]) -> list[Any]:
    """Run the plugin ``op`` on ``inputs``, then for each oracle kind in ``oracles`` call
    ``compare(got, want, kind)`` on each of the first ``n_out`` outputs, ``want`` from
    ``oracle(kind, op, inputs, attrs, opset, n_out)``; the plugin's outputs, all of them."""
    got = execute(make_plugin(op, attrs, opset), inputs)
    for kind in oracles:
        want = oracle(kind, op, inputs, attrs, opset, n_out)
        for g, w in zip(got[:n_out], want, strict=True):
            compare(g, w, kind)
    return got
