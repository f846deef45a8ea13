"""A one-off build imports only what the model needs (issue 30, the .onnx path): opening a
float Conv model through ``InferenceSession`` builds without tactic timing, without Q/DQ
nodes and without control flow, so neither the int8 builder, nor the QDQ rewrite's rules, nor
the timing modules (tactic and format timing, the timing cache), nor the body runner (nor
onnx), nor logging or dataclasses are imported; a model with Q/DQ nodes, and a
build that times tactics, still import theirs. Each case runs in a fresh interpreter and
checks its result against onnxruntime."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

#: the builder modules a float model's one-off build must not import
_TIMING = ("mini_infer_core.builder.format_timing", "mini_infer_core.builder.timing_cache")
_QDQ = ("mini_infer_core.builder.qdq", "mini_infer_core.builder.qdq_ops",
        "mini_infer_core.builder.qdq_lookup")
_INT8 = ("mini_infer_core.builder.int8",)
#: the runner of If, Loop and Scan bodies (with it, onnx where a body is built)
_BODIES = ("mini_infer_core.builder.subgraph", "onnx")
#: what the build itself no longer needs: logging (its loggers are lazy), dataclasses (its
#: classes are records) and the weight splitter of the onnx fallback (the own reader reads
#: the file)
_LEAN = ("logging", "dataclasses", "mini_infer_core.importer._wire")
_WATCHED = (*_TIMING, *_QDQ, *_INT8, *_BODIES, *_LEAN)

#: builds argv[1] (a session's one-off build, or with argv[3] == "timed" BuilderConfig()'s
#: tactic timing), runs it on argv[2]; prints the output and the watched modules it imported
_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import mini_infer_core as mi

    x = np.load(sys.argv[2])
    config = mi.BuilderConfig() if sys.argv[3] == "timed" else None
    sess = mi.InferenceSession(sys.argv[1], config=config)
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
    watched = json.loads(sys.argv[4])
    print(json.dumps({"y": np.asarray(y, np.float64).tolist(),
                      "seen": sorted(m for m in watched if m in sys.modules)}))
""")


def _conv_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["y"])], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _qdq_model() -> onnx.ModelProto:
    """x -> QuantizeLinear -> DequantizeLinear -> Conv (int8 weights through their own
    DequantizeLinear) -> QuantizeLinear -> DequantizeLinear: a QDQ chain the rewrite makes a
    QLinearConv of."""
    rng = np.random.default_rng(1)
    wq = rng.integers(-20, 20, (8, 3, 3, 3)).astype(np.int8)
    inits = [numpy_helper.from_array(wq, "wq"),
             numpy_helper.from_array(np.array(0.02, np.float32), "ws"),
             numpy_helper.from_array(np.array(0, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "xs"),
             numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(np.array(0.1, np.float32), "ys"),
             numpy_helper.from_array(np.array(128, np.uint8), "yz")]
    g = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
         helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
         helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
         helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["cq"]),
         helper.make_node("DequantizeLinear", ["cq", "ys", "yz"], ["y"])], "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _build_in_child(model: onnx.ModelProto, tmp_path: Path, mode: str
                    ) -> tuple[np.ndarray, list[str], np.ndarray]:
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "x.npy"),
                           mode, json.dumps(_WATCHED)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    (want,) = sess.run(None, {"x": x})
    return np.asarray(got["y"], np.float32), got["seen"], want


def test_float_conv_one_off_build_imports_no_int8_qdq_or_timing(tmp_path: Path) -> None:
    y, seen, want = _build_in_child(_conv_model(), tmp_path, "one-off")
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert seen == [], f"a float Conv model's one-off build imported {seen}"


def test_qdq_model_still_imports_the_qdq_rules(tmp_path: Path) -> None:
    y, seen, want = _build_in_child(_qdq_model(), tmp_path, "one-off")
    # one step of the output's quantization (0.1) apart at most: rounding of an integer
    # kernel against onnxruntime's
    np.testing.assert_allclose(y, want, atol=0.1 + 1e-6)
    assert {"mini_infer_core.builder.qdq", "mini_infer_core.builder.qdq_ops"} <= set(seen)
    assert not set(seen) & {*_TIMING, *_INT8, *_BODIES}


def test_timed_build_imports_the_timing_modules(tmp_path: Path) -> None:
    y, seen, want = _build_in_child(_conv_model(), tmp_path, "timed")
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert set(_TIMING) <= set(seen)
    assert not set(seen) & {*_QDQ, *_INT8, *_BODIES}
