"""mini-infer-cpu-native's compiled Resize of the last two axes (``_resize.c``) against
onnxruntime, through real ONNX models built into engines whose Resize node this
distribution's plugin takes: bilinear and nearest, up and down, every coordinate
transformation but tf_crop_and_resize, scales and sizes, one axis or both, sizes of one, at
1 and 2 threads; the cases handed back to cpu_basic; the wrapper's refusals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import NAMESPACE, _resize, resize
from onnx import helper, numpy_helper

import mini_infer_core

RNG = np.random.default_rng(11)


def _model(x: np.ndarray, attrs: dict[str, Any], scales: list[float] | None,
           sizes: list[int] | None, opset: int = 19) -> onnx.ModelProto:
    inits = {"roi": np.zeros(0, np.float32)}
    inputs = ["x", "roi"]
    if scales is not None:
        inits["scales"] = np.array(scales, np.float32)
        inputs.append("scales")
    else:
        inputs.append("")
    if sizes is not None:
        inits["sizes"] = np.array(sizes, np.int64)
        inputs.append("sizes")
    node = helper.make_node("Resize", inputs, ["y"], **attrs)
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=9)


def _run(model: onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, set[str]]:
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    sess = mini_infer_core.InferenceSession(engine)
    native = {n.op_type for n in sess.engine.nodes if n.plugin_namespace == NAMESPACE
              and n.op_type != "Reformat"}  # the builder's steps around a blocked Resize
    got = sess.run(None, {"x": x})[0]
    got_again = sess.run(None, {"x": x})[0]  # the kept call, run again
    np.testing.assert_array_equal(got, got_again)
    return got, native


def _oracle(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """onnxruntime; onnx's ReferenceEvaluator where onnxruntime refuses the node (linear
    with exclude_outside, or along the channel axis)."""
    node = model.graph.node[0]
    scales = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name == "scales"]
    if any(a.name == "exclude_outside" and a.i for a in node.attribute) or (
            scales and scales[0][1] != 1):
        from onnx.reference import ReferenceEvaluator
        ref: np.ndarray = ReferenceEvaluator(model).run(None, {"x": x})[0]
        return ref
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = sess.run(None, {"x": x})[0]
    return out


@pytest.fixture
def compiled(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How many compiled calls the plugin made (a test fails if cpu_basic took over)."""
    return count_calls(resize, "resize2d_call", "resize")


CASES = [  # shape, attrs, scales, sizes
    ((1, 21, 16, 16), {"mode": "linear"}, [1, 1, 8, 8], None),  # LRASPP's last upsampling
    ((1, 5, 7, 9), {"mode": "linear"}, None, [1, 5, 20, 13]),
    ((2, 3, 7, 9), {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     None, [2, 3, 15, 4]),
    ((1, 3, 8, 8), {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
     [1, 1, 2.5, 0.5], None),
    ((1, 3, 8, 8), {"mode": "linear",
                    "coordinate_transformation_mode": "pytorch_half_pixel"},
     None, [1, 3, 1, 17]),
    ((1, 3, 9, 8), {"mode": "linear", "coordinate_transformation_mode":
                    "half_pixel_symmetric"}, [1, 1, 1.7, 0.6], None),
    ((1, 4, 1, 1), {"mode": "linear"}, None, [1, 4, 5, 6]),  # DeepLab's pooled branch
    ((1, 4, 6, 6), {"mode": "linear", "exclude_outside": 1}, [1, 1, 3, 3], None),
    ((1, 4, 6, 10), {"mode": "linear"}, None, [1, 4, 6, 25]),  # one axis
    ((3, 6, 10), {"mode": "linear"}, None, [3, 12, 5]),  # 3-D: planes of the first axis
    ((1, 16, 20, 20), {"mode": "nearest"}, [1, 1, 2, 2], None),  # YOLOv8's neck
    ((1, 2, 7, 5), {"mode": "nearest", "nearest_mode": "round_prefer_ceil",
                    "coordinate_transformation_mode": "asymmetric"}, None, [1, 2, 3, 11]),
    ((1, 2, 7, 5), {"mode": "nearest", "nearest_mode": "ceil"}, [1, 1, 0.6, 2.2], None),
    ((1, 2, 7, 5), {"mode": "nearest", "nearest_mode": "round_prefer_floor",
                    "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 13, 3]),
    ((1, 40, 64, 64), {"mode": "linear"}, [1, 1, 2, 2], None),  # large: on the pool
]


@pytest.mark.parametrize("shape, attrs, scales, sizes", CASES)
def test_resize_matches_onnxruntime(shape: tuple[int, ...], attrs: dict[str, Any],
                                    scales: list[float] | None, sizes: list[int] | None,
                                    threads: int, compiled: dict[str, int]) -> None:
    x = RNG.standard_normal(shape).astype(np.float32)
    model = _model(x, attrs, scales, sizes)
    got, native = _run(model, x)
    assert native == {"Resize"} and compiled["resize"] >= 1
    want = _oracle(model, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("attrs, scales, sizes, dtype", [
    ({"mode": "cubic"}, [1, 1, 2, 2], None, np.float32),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.5, 0.5], None, np.float32),
    ({"mode": "linear"}, [1, 2, 2, 2], None, np.float32),  # the channel axis too
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"},
     None, [1, 3, 12, 12], np.float32),
    ({"mode": "linear"}, [1, 1, 2, 2], None, np.float64),
])
def test_cases_without_the_kernel_are_cpu_basic_s(attrs: dict[str, Any],
                                                  scales: list[float] | None,
                                                  sizes: list[int] | None, dtype: Any,
                                                  compiled: dict[str, int]) -> None:
    x = RNG.standard_normal((1, 3, 6, 6)).astype(dtype)
    model = _model(x, attrs, scales, sizes)
    if "tf_crop_and_resize" in str(attrs):
        model.graph.initializer[0].CopyFrom(numpy_helper.from_array(
            np.array([0, 0, 0.1, 0.2, 1, 1, 0.9, 1.2], np.float32), "roi"))
    got, _ = _run(model, x)
    assert compiled["resize"] == 0
    if dtype == np.float64:
        from onnx.reference import ReferenceEvaluator
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    else:
        want = _oracle(model, x).astype(dtype)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_the_call_refuses_indices_outside_the_input() -> None:
    x = np.zeros((1, 1, 4, 4), np.float32)
    y = np.zeros((1, 1, 2, 2), np.float32)
    good = np.zeros((2, 2), _resize.INDEX)
    w = np.zeros(2, np.float32)
    work = np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="outside"):
        _resize.resize2d_call(x, y, (np.full((2, 2), 4, _resize.INDEX), w, good, w), work)
    with pytest.raises(ValueError, match="C-contiguous"):
        _resize.resize2d_call(x, y, (good.astype(np.int32), w, good, w), work)
    with pytest.raises(ValueError, match="last two axes"):
        _resize.resize2d_call(x, np.zeros((1, 2, 2, 2), np.float32), (good, w, good, w), work)
    with pytest.raises(ValueError):  # work too small
        _resize.resize2d_call(x, y, (good, w, good, w), np.zeros(3, np.float32))
