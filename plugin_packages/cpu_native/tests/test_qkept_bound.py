"""The 8-bit steps bound to the compiled calls they keep
(:class:`mini_infer_cpu_native._kept.KeptCalls`): QLinearConv (1x1 and 3x3 on the integer GEMM,
depthwise on its own kernel, NHWC from one to the next, a classifier's Gemm on one pixel),
QLinearMul, QLinearAdd, QLinearLookup, QLinearSigmoid and QLinearGlobalAveragePool of a
``quantize_static`` block. After the runs that make and find their calls,
``enqueue`` is no longer called, and every run (new input values, a second batch size on the
same context, back again) still matches onnxruntime."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from mini_infer_cpu_native import qconv, qelementwise, qlayout
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle here")
quantization = pytest.importorskip("onnxruntime.quantization")

RNG = np.random.default_rng(25)


def _w(*shape: int) -> np.ndarray[Any, Any]:
    return (RNG.standard_normal(shape) * 0.4).astype(np.float32)


def _block() -> onnx.ModelProto:
    """conv 3x3 (16 channels) -> HardSwish (x * HardSigmoid(x), as torch exports it) ->
    depthwise 3x3 -> HardSigmoid -> conv 1x1, plus the depthwise output -> squeeze and
    excitation (mean, conv 1x1, Sigmoid, Mul) -> conv 1x1 (24) -> mean -> Gemm (10)."""
    inits = {"v1": _w(16, 3, 3, 3), "b1": _w(16), "v2": _w(16, 1, 3, 3), "b2": _w(16),
             "v3": _w(16, 16, 1, 1), "b3": _w(16), "v5": _w(16, 16, 1, 1), "b5": _w(16),
             "v4": _w(24, 16, 1, 1), "b4": _w(24), "g": _w(10, 24), "gb": _w(10)}
    n = helper.make_node
    nodes = [n("Conv", ["x", "v1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             n("HardSigmoid", ["c1"], ["h1"], alpha=1 / 6, beta=0.5),
             n("Mul", ["c1", "h1"], ["hs"]),
             n("Conv", ["hs", "v2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=16),
             n("HardSigmoid", ["c2"], ["h2"]),
             n("Conv", ["h2", "v3", "b3"], ["c3"]),
             n("Add", ["c3", "c2"], ["s"]),
             n("GlobalAveragePool", ["s"], ["sm"]),
             n("Conv", ["sm", "v5", "b5"], ["se"]),
             n("Sigmoid", ["se"], ["sg"]),
             n("Mul", ["s", "sg"], ["sx"]),
             n("Conv", ["sx", "v4", "b4"], ["c4"]),
             n("GlobalAveragePool", ["c4"], ["p"]),
             n("Flatten", ["p"], ["f"]),
             n("Gemm", ["f", "g", "gb"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 10, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _quantized(folder: Path) -> onnx.ModelProto:
    class Data(quantization.CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self.batches = iter([{"x": RNG.standard_normal((1, 3, 10, 12)).astype(np.float32)}
                                 for _ in range(4)])

        def get_next(self) -> dict[str, Any] | None:
            return next(self.batches, None)

    src, dst = folder / "f.onnx", folder / "q.onnx"
    onnx.save(_block(), src)
    quantization.quantize_static(
        str(src), str(dst), Data(), quant_format=quantization.QuantFormat.QDQ,
        activation_type=quantization.QuantType.QUInt8,
        weight_type=quantization.QuantType.QInt8, per_channel=True)
    return onnx.load(dst)


def test_quantized_steps_bound_and_correct(
        tmp_path: Path, count_enqueues: Callable[..., dict[str, int]]) -> None:
    model = _quantized(tmp_path)
    last_dq = next(nd for nd in model.graph.node if "y" in nd.output)
    quantum = float(next(numpy_helper.to_array(t) for t in model.graph.initializer
                         if t.name == last_dq.input[1]))
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    engine = mi.load(model)
    ops = [nd.op_type for nd in engine.nodes]
    assert {"QLinearConv", "QLinearMul", "QLinearAdd", "QLinearLookup", "QLinearSigmoid",
            "QLinearGlobalAveragePool"} <= set(ops), ops
    ctx = engine.create_execution_context()
    classes = (qconv.QLinearConv, qelementwise.QLinearMul, qelementwise.QLinearAdd,
               qelementwise.QLinearLookup, qelementwise.QLinearSigmoid,
               qlayout.QLinearGlobalAveragePool)
    counts = count_enqueues(*classes)
    batches = [1] * 4 + [2] * 4 + [1] * 2
    for i, batch in enumerate(batches):
        x = RNG.standard_normal((batch, 3, 10, 12)).astype(np.float32)
        got = ctx.execute({"x": x})["y"]
        (want,) = sess.run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=0, atol=2.0001 * quantum,
                                   err_msg=f"run {i}, batch {batch}")
        if i == 2:  # two runs made and found the calls: the third ran them alone
            seen = dict(counts)
        if i == 3:
            assert counts == seen, "bound steps went through enqueue again"
    assert {cls.__name__ for cls in classes} <= set(counts)
