"""The shortcuts k-NN models take: skl2onnx's pairwise squared-distance Scan computed for all
scanned rows at once (``ops/_scan_cdist.py``), and TopK of a few among many by a partition
(``selection._few_of_many``), each against onnxruntime on whole models run by mini-infer:
both orders of the subtraction, 0, 1 and many rows, float64, bodies that only look alike
(which run as bodies), ties at the k-th value, NaNs, largest and smallest, either axis."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_plugins.ops import _scan_cdist
from onnx import TensorProto, helper

import mini_infer_core as mi

RNG = np.random.default_rng(3)


def _body(sub: tuple[str, str] = ("s", "x"), reduce: str = "ReduceSumSquare",
          axes: int = 1, identity: bool = True, elem: int = TensorProto.FLOAT
          ) -> onnx.GraphProto:
    nodes = [helper.make_node("Identity", ["s"], ["s_out"]),
             helper.make_node("Sub", list(sub), ["d"]),
             helper.make_node(reduce, ["d"], ["r" if identity else "y"], axes=[axes],
                              keepdims=0)]
    if identity:
        nodes.append(helper.make_node("Identity", ["r"], ["y"]))
    return helper.make_graph(
        nodes, "cdist", [helper.make_tensor_value_info("s", elem, None),
                         helper.make_tensor_value_info("x", elem, None)],
        [helper.make_tensor_value_info("s_out", elem, None),
         helper.make_tensor_value_info("y", elem, None)])


def _scan_model(body: onnx.GraphProto, elem: int = TensorProto.FLOAT) -> onnx.ModelProto:
    """Scan(state S [N, F], scanned X [M, F]) -> (S, distances [M, N])."""
    node = helper.make_node("Scan", ["S", "X"], ["S_out", "D"], body=body, num_scan_inputs=1)
    graph = helper.make_graph(
        [node], "scan", [helper.make_tensor_value_info("S", elem, ["N", 4]),
                         helper.make_tensor_value_info("X", elem, ["M", 4])],
        [helper.make_tensor_value_info("S_out", elem, None),
         helper.make_tensor_value_info("D", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _both(model: onnx.ModelProto, feeds: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    ours = mi.InferenceSession(model).run(None, feeds)
    theirs = ort.InferenceSession(model.SerializeToString(),
                                  providers=["CPUExecutionProvider"]).run(None, feeds)
    return ours, theirs


@pytest.mark.parametrize("sub", [("s", "x"), ("x", "s")])
@pytest.mark.parametrize("n, m", [(1, 300), (200, 300), (0, 5), (3, 1), (7, 0)])
def test_distance_scan_matches_onnxruntime(sub: tuple[str, str], n: int, m: int) -> None:
    body = _body(sub)
    assert _scan_cdist.distance_body(body) is (sub == ("s", "x"))
    feeds = {"S": RNG.standard_normal((n, 4)).astype(np.float32),
             "X": RNG.standard_normal((m, 4)).astype(np.float32)}
    if m == 0:  # onnxruntime refuses to scan no rows: what scanning no rows means
        ours = mi.InferenceSession(_scan_model(body)).run(None, feeds)
        assert ours[1].shape == (0, n) and ours[1].dtype == np.float32
        return
    ours, theirs = _both(_scan_model(body), feeds)
    assert ours[1].shape == theirs[1].shape == (m, n)
    np.testing.assert_array_equal(ours[0], feeds["S"])
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-6)


def test_distance_scan_in_float64_and_without_the_last_identity() -> None:
    body = _body(identity=False, elem=TensorProto.DOUBLE)
    assert _scan_cdist.distance_body(body) is True
    feeds = {"S": RNG.standard_normal((5, 4)), "X": RNG.standard_normal((40, 4))}
    ours, theirs = _both(_scan_model(body, TensorProto.DOUBLE), feeds)
    assert ours[1].dtype == np.float64
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)


@pytest.mark.parametrize("kind", ["ReduceMax", "axis0"])
def test_a_body_that_only_looks_alike_runs_as_a_body(kind: str) -> None:
    body = _body(reduce="ReduceMax") if kind == "ReduceMax" else _body(axes=0)
    assert _scan_cdist.distance_body(body) is None
    feeds = {"S": RNG.standard_normal((4, 4)).astype(np.float32),
             "X": RNG.standard_normal((6, 4)).astype(np.float32)}
    ours, theirs = _both(_scan_model(body), feeds)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6, atol=1e-6)


def _topk_model(largest: int, axis: int, elem: int = TensorProto.FLOAT) -> onnx.ModelProto:
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    graph = helper.make_graph(
        [node], "topk", [helper.make_tensor_value_info("x", elem, ["A", "B"]),
                         helper.make_tensor_value_info("k", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("v", elem, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("largest", [0, 1])
@pytest.mark.parametrize("axis", [1, 0, -1])
@pytest.mark.parametrize("data", ["distinct", "ties", "nan", "float64"])
def test_topk_of_few_among_many_matches_onnxruntime(largest: int, axis: int, data: str
                                                    ) -> None:
    x = RNG.standard_normal((40, 60)).astype(np.float64 if data == "float64" else np.float32)
    if data == "ties":  # equal values everywhere, the k-th among them
        x = np.round(x * 2) / 2
    if data == "nan":
        x[::3, ::7] = np.nan
    elem = TensorProto.DOUBLE if data == "float64" else TensorProto.FLOAT
    for k in (1, 5, 10):
        ours, theirs = _both(_topk_model(largest, axis, elem),
                             {"x": x, "k": np.array([k], np.int64)})
        np.testing.assert_array_equal(ours[1], theirs[1], err_msg=f"k={k}")
        np.testing.assert_array_equal(ours[0], theirs[0], err_msg=f"k={k}")
