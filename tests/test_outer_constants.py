"""An If whose branches read large weights from the enclosing graph (silero-vad's If-less
export: the LSTM's and convolutions' weights are initializers of the main graph): the build
notes every constant outer-scope value in ``__outer_constants__`` (shape inference carries the
contents of small ones only), so the branch is built with them as its own constants instead of
taking them as inputs on every run; results against onnxruntime, and from an engine file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core

RNG = np.random.default_rng(5)


def _model() -> onnx.ModelProto:
    w = numpy_helper.from_array(RNG.standard_normal((96, 80)).astype(np.float32), "w")
    b = numpy_helper.from_array(RNG.standard_normal(80).astype(np.float32), "b")
    sixteen = numpy_helper.from_array(np.array(16000, np.int64), "k")
    then = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["p"]),
                              helper.make_node("Add", ["p", "b"], ["y_then"])], "then", [],
                             [helper.make_tensor_value_info("y_then", TensorProto.FLOAT,
                                                            None)])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["y_else"])], "else", [],
                              [helper.make_tensor_value_info("y_else", TensorProto.FLOAT,
                                                             None)])
    graph = helper.make_graph(
        [helper.make_node("Equal", ["sr", "k"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 96]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b, sixteen])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_large_outer_weights_are_built_into_the_branch(tmp_path: Path) -> None:
    model = _model()
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    node = [n for n in engine.nodes if n.op_type == "If"][0]
    assert {"w", "b"} <= set(node.plugin.hidden["__outer_constants__"])
    path = tmp_path / "m.engine"
    path.write_bytes(engine.serialize())
    back = mini_infer_core.Runtime().deserialize_engine(path.read_bytes())
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for eng in (engine, back):
        ctx = eng.create_execution_context()
        for sr in (16000, 8000, 16000):
            feeds = {"x": RNG.standard_normal((2, 96)).astype(np.float32),
                     "sr": np.array(sr, np.int64)}
            np.testing.assert_allclose(ctx.execute(feeds)["y"], theirs.run(None, feeds)[0],
                                       rtol=1e-5, atol=1e-5)
    runner = [p for p in back.create_execution_context().plugins
              if type(p).__name__ == "If"][0].make_body("then_branch")
    assert {"w", "b"} <= runner.constants
