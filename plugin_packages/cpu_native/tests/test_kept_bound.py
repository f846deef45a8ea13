"""Conv, Gemm, MaxPool and Concat steps bound to the compiled calls they keep
(:class:`mini_infer_cpu_native._kept.KeptCalls`): after the runs that make and find the calls,
``enqueue`` is no longer called, and every run (new input values, a second input shape on
the same context, back again) still matches onnxruntime."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest
from mini_infer_cpu_native import concat, conv, gemm, pool
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle here")

RNG = np.random.default_rng(5)


def _model() -> onnx.ModelProto:
    w1 = RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2
    w2 = RNG.standard_normal((8, 24, 1, 1)).astype(np.float32) * 0.2
    g = RNG.standard_normal((8, 10)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["a"], ["ar"]),
        helper.make_node("Concat", ["ar", "x"], ["c"], axis=1),
        helper.make_node("Conv", ["c", "w2"], ["d"], kernel_shape=[1, 1]),
        helper.make_node("MaxPool", ["d"], ["p"], kernel_shape=[3, 3], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["q"]),
        helper.make_node("Flatten", ["q"], ["f"]),
        helper.make_node("Gemm", ["f", "g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "kept", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 8, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(g, "g")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_kept_calls_bound_and_correct(count_enqueues: Callable[..., dict[str, int]]
                                      ) -> None:
    model = _model()
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ctx = mi.load(model).create_execution_context()
    counts = count_enqueues(conv.Conv, gemm.Gemm, pool.MaxPool, concat.Concat)
    shapes = [(1, 8, 20, 20)] * 4 + [(2, 8, 13, 17)] * 4 + [(1, 8, 20, 20)] * 2
    for i, shape in enumerate(shapes):
        x = RNG.standard_normal(shape).astype(np.float32)
        got = ctx.execute({"x": x})
        want = sess.run(None, {"x": x})
        for name, ref in zip(("y", "p"), want, strict=True):
            np.testing.assert_allclose(got[name], ref, rtol=1e-4, atol=1e-4,
                                       err_msg=f"run {i}, shape {shape}, output {name}")
        if i == 2:  # two runs made and found the calls: the third ran them alone
            seen = dict(counts)
        if i == 3:
            assert counts == seen, "bound steps went through enqueue again"
    assert {"Conv", "Gemm", "MaxPool"} <= set(counts)
