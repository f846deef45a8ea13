"""Bodies of If/Loop/Scan that declare no output type or rank are inferred from the body itself
(built for the node's input types and ranks), nested to any depth; outer-scope constants are
built into the bodies (runtime-valued ``axes`` read from the enclosing graph). Results match
onnxruntime, for several input shapes from one engine, and after the engine file is read back
in another process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from helpers import make_model, ort_run
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

C = helper.make_node
F = TensorProto.FLOAT


def _undeclared(name: str, nodes: list[onnx.NodeProto], outs: list[str],
                inputs: list[onnx.ValueInfoProto] | None = None) -> onnx.GraphProto:
    """A body whose outputs declare nothing: no element type, no shape."""
    return helper.make_graph(nodes, name, inputs or [],
                             [onnx.ValueInfoProto(name=o) for o in outs])


def nested_if_model() -> onnx.ModelProto:
    """y = (x * 2 if sum(x) > 0 else (Relu(x) if mean > -1 else x - 1)) + 1, every branch
    output undeclared, the inner If inside the else branch."""
    inner = C("If", ["c2"], ["r"],
              then_branch=_undeclared("t2", [C("Relu", ["x"], ["relu"])], ["relu"]),
              else_branch=_undeclared("e2", [C("Sub", ["x", "one"], ["sub"])], ["sub"]))
    other = _undeclared("else", [C("ReduceMean", ["x"], ["m"], keepdims=0),
                                 C("Greater", ["m", "minus1"], ["c2"]), inner], ["r"])
    then = _undeclared("then", [C("Mul", ["x", "two"], ["dbl"])], ["dbl"])
    nodes = [C("ReduceSum", ["x"], ["s"], keepdims=0), C("Greater", ["s", "zero"], ["c"]),
             C("If", ["c"], ["b"], then_branch=then, else_branch=other),
             C("Add", ["b", "one"], ["y"])]
    inits = [numpy_helper.from_array(np.array(v, np.float32), n)
             for n, v in (("zero", 0.0), ("one", 1.0), ("two", 2.0), ("minus1", -1.0))]
    return make_model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3])],
                      [helper.make_tensor_value_info("y", F, None)], inits)


def loop_model() -> onnx.ModelProto:
    """A Loop whose body's carried and scan outputs declare nothing; the scan output
    Unsqueezes with ``axes`` read from the outer scope (a constant there)."""
    body = _undeclared("body", [
        C("Identity", ["cond_in"], ["cond_out"]),
        C("Add", ["acc_in", "x"], ["acc_out"]),
        C("Unsqueeze", ["acc_out", "axes"], ["scan_out"]),
    ], ["cond_out", "acc_out", "scan_out"], inputs=[
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
        helper.make_tensor_value_info("acc_in", F, None)])
    nodes = [C("Loop", ["trips", "", "acc0"], ["acc", "scans"], body=body)]
    inits = [numpy_helper.from_array(np.array(3, np.int64), "trips"),
             numpy_helper.from_array(np.array([0], np.int64), "axes")]
    return make_model(nodes, [helper.make_tensor_value_info("x", F, ["N", 2]),
                              helper.make_tensor_value_info("acc0", F, ["N", 2])],
                      [helper.make_tensor_value_info("acc", F, None),
                       helper.make_tensor_value_info("scans", F, None)], inits)


def scan_model() -> onnx.ModelProto:
    """A running sum over axis 0 whose body declares nothing and Squeezes with outer-scope
    axes."""
    body = _undeclared("body", [
        C("Add", ["s_in", "row"], ["s_out"]),
        C("Unsqueeze", ["s_out", "axes"], ["u"]),
        C("Squeeze", ["u", "axes"], ["out_t"]),
    ], ["s_out", "out_t"], inputs=[helper.make_tensor_value_info("s_in", F, None),
                                   helper.make_tensor_value_info("row", F, None)])
    nodes = [C("Scan", ["s0", "xs"], ["s", "ys"], body=body, num_scan_inputs=1)]
    inits = [numpy_helper.from_array(np.array([0], np.int64), "axes")]
    return make_model(nodes, [helper.make_tensor_value_info("s0", F, [4]),
                              helper.make_tensor_value_info("xs", F, ["T", 4])],
                      [helper.make_tensor_value_info("s", F, None),
                       helper.make_tensor_value_info("ys", F, None)], inits)


RNG = np.random.default_rng(3)


def _check(model: onnx.ModelProto, feeds_list: list[dict[str, np.ndarray]]) -> mi.Engine:
    engine = mi.load(model)
    with engine.create_execution_context() as ctx:
        for feeds in feeds_list:
            got = ctx.execute(feeds)
            want = ort_run(model, feeds)
            for out, w in zip(model.graph.output, want, strict=True):
                assert got[out.name].shape == w.shape
                np.testing.assert_allclose(got[out.name], w, rtol=1e-6, atol=1e-6)
    return engine


def test_nested_if_with_undeclared_branches_builds_for_any_shape() -> None:
    feeds = [{"x": RNG.standard_normal((n, 3)).astype(np.float32) + shift}
             for n, shift in ((2, 3.0), (5, -3.0), (1, -0.2), (4, 0.1))]
    engine = _check(nested_if_model(), feeds)
    assert any(node.op_type == "If" for node in engine.nodes)


def test_loop_with_undeclared_outputs_and_outer_axes() -> None:
    feeds = [{"x": RNG.standard_normal((n, 2)).astype(np.float32),
              "acc0": RNG.standard_normal((n, 2)).astype(np.float32)} for n in (1, 3)]
    _check(loop_model(), feeds)


def test_scan_with_undeclared_outputs_and_outer_axes() -> None:
    feeds = [{"s0": RNG.standard_normal(4).astype(np.float32),
              "xs": RNG.standard_normal((t, 4)).astype(np.float32)} for t in (1, 6)]
    _check(scan_model(), feeds)


def test_inferred_bodies_survive_the_engine_file(tmp_path: Path) -> None:
    model = nested_if_model()
    path = tmp_path / "nested.engine"
    mi.load(model).save(str(path))
    x = RNG.standard_normal((3, 3)).astype(np.float32) - 2.0
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np, sys, mini_infer_core as mi\n"
            "e = mi.load(sys.argv[1])\n"
            "with e.create_execution_context() as c:\n"
            "    np.save(sys.argv[3], c.execute({'x': np.load(sys.argv[2])})['y'])\n")
    subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / "x.npy"),
                    str(tmp_path / "y.npy")], check=True, timeout=300)
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), ort_run(model, {"x": x})[0],
                               rtol=1e-6)
