"""Plugin-declared fusion: a plugin absorbs the nodes consuming its output."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.plugin import Fusion, OnnxPlugin, OnnxPluginCreator
from mini_infer_core.registry import discover


class Scale(OnnxPlugin):
    """y = x * s; absorbs a following Mul by a constant, an Add of a runtime tensor, a Relu."""

    domain = "com.test"
    attributes = {"__relu__": 0, "__residual__": 0}
    fusable = frozenset({"Mul", "Add", "Relu"})

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[Any], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        other = consumer_constants[1 - position] if op_type != "Relu" else None
        if self.attrs["__relu__"]:
            return None
        if op_type == "Relu":
            self.attrs["__relu__"] = 1
            return Fusion()
        if op_type == "Mul" and other is not None and own_constants[1] is not None \
                and not self.attrs["__residual__"]:
            return Fusion(constants={1: own_constants[1] * other})
        if op_type == "Add" and other is None and not self.attrs["__residual__"]:
            self.attrs["__residual__"] = 1
            return Fusion(append_inputs=[1 - position])
        return None

    def compute(self, x: Any, s: Any, r: Any = None, *, out: Any, __relu__: int,
                __residual__: int) -> None:
        np.multiply(x, s, out=out)
        if r is not None:
            out += r
        if __relu__:
            np.maximum(out, 0, out=out)


def _model(domain_op: str = "Scale") -> onnx.ModelProto:
    nodes = [helper.make_node(domain_op, ["x", "s"], ["a"], domain="com.test"),
             helper.make_node("Mul", ["a", "k"], ["b"]),
             helper.make_node("Add", ["x", "b"], ["c"]),
             helper.make_node("Relu", ["c"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    inits = [onnx.numpy_helper.from_array(np.array([1.0, -2.0, 3.0], np.float32), "s"),
             onnx.numpy_helper.from_array(np.array(0.5, np.float32), "k")]
    graph = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.test", 1)])


def _reference(x: np.ndarray) -> np.ndarray:
    return np.maximum(x + x * np.array([1.0, -2.0, 3.0], np.float32) * 0.5, 0)


def test_plugin_absorbs_its_consumers_and_the_fusion_survives_the_file(tmp_path: Path) -> None:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Scale, namespace="test"))
    engine = mi.load(_model(), registry=reg)
    assert [n.op_type for n in engine.nodes] == ["Scale"]
    assert len(engine.build_info["fused"]) == 3
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.testing.assert_allclose(mi.InferenceSession(engine).run(None, {"x": x})[0],
                               _reference(x), rtol=1e-6)
    engine.save(str(tmp_path / "f.engine"))
    loaded = mi.Runtime(reg).load_engine(tmp_path / "f.engine")
    np.testing.assert_allclose(mi.InferenceSession(loaded).run(None, {"x": x})[0],
                               _reference(x), rtol=1e-6)


def test_fusion_can_be_turned_off() -> None:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Scale, namespace="test"))
    engine = mi.Builder(reg).build_engine(mi.parse_onnx(_model()), mi.BuilderConfig(fuse=False))
    assert [n.op_type for n in engine.nodes] == ["Scale", "Mul", "Add", "Relu"]


def test_an_output_with_two_consumers_is_not_fused() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    ys = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("y1", "y2")]
    s = onnx.numpy_helper.from_array(np.full(4, 2.0, np.float32), "s")
    nodes = [helper.make_node("Scale", ["x", "s"], ["a"], domain="com.test"),
             helper.make_node("Relu", ["a"], ["y1"]), helper.make_node("Neg", ["a"], ["y2"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], ys, [s]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Scale, namespace="test"))
    engine = mi.load(model, registry=reg)
    assert [n.op_type for n in engine.nodes] == ["Scale", "Relu", "Neg"]
    xv = np.array([-1, 0, 1, 2], np.float32)
    y1, y2 = mi.InferenceSession(engine).run(None, {"x": xv})
    np.testing.assert_array_equal(y1, np.maximum(2 * xv, 0))
    np.testing.assert_array_equal(y2, -2 * xv)
