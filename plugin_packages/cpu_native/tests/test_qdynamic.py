"""MatMulIntegerToFloat on the compiled integer GEMM (``qlinear.py``) and the builder's rewrite
of onnxruntime's dynamic-int8 chain into it (``builder/qdynamic.py``): against onnxruntime's
unfused graph (ORT_DISABLE_ALL, bit for bit), onnxruntime's own MatMulIntegerToFloat and
onnx's ReferenceEvaluator, at 1 and 2 threads; the chains the rewrite must leave alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qlinear
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core

RNG = np.random.default_rng(2525)



@pytest.fixture
def compiled(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    return count_calls(qlinear, "run_qgemm", "products")


def _chain(k: int, n: int, *, per_column: bool = False, bias: bool = True,
           relu: bool = False, extra_reader: str | None = None, wz: int = 0,
           identity_bias: bool = False, w_zp: bool = True) -> onnx.ModelProto:
    """quantize_dynamic's chain written out: DynamicQuantizeLinear(x) -> MatMulInteger ->
    Cast -> Mul(Mul(x_scale, w_scale)) [-> Add(bias)] [-> Relu]; ``extra_reader`` names an
    intermediate tensor that is also a graph output (the rewrite must not take it)."""
    w = RNG.integers(-128, 128, (k, n)).astype(np.int8)
    w_scale = (RNG.random(n if per_column else 1) * 0.02 + 1e-3).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(
        w_scale if per_column else w_scale.reshape(()), "w_scale"),
        numpy_helper.from_array(np.array(wz, np.int8), "w_zp")]
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("Mul", ["xs", "w_scale"], ["s"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xz", "w_zp"] if w_zp else ["xq", "w"],
                              ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["accf", "s"], ["y0"])]
    last = "y0"
    if bias:
        inits.append(numpy_helper.from_array(RNG.standard_normal(n).astype(np.float32), "b"))
        if identity_bias:  # torch's exporter: the Identity of a shared initializer
            nodes.append(helper.make_node("Identity", ["b"], ["b_id"]))
        nodes.append(helper.make_node("Add", ["b_id" if identity_bias else "b", last], ["y1"]))
        last = "y1"
    if relu:
        nodes.append(helper.make_node("Relu", [last], ["y2"]))
        last = "y2"
    nodes[-1].output[0] = "y"  # the chain's last tensor is the graph's output
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if extra_reader:
        outputs.append(helper.make_tensor_value_info(
            extra_reader, TensorProto.INT32 if extra_reader == "acc" else TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", k])],
        outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray], level: Any) -> list[Any]:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = level
    return ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"]).run(None, feeds)


@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("bias,relu", [(True, False), (False, False), (True, True)])
@pytest.mark.parametrize("rows,k,n", [(1, 63, 33), (14, 256, 40), (0, 17, 7), (64, 31, 1)])
def test_the_chain_is_one_matmul_integer_to_float_bit_for_bit(
        threads: int, compiled: dict[str, int], per_column: bool, bias: bool, relu: bool,
        rows: int, k: int, n: int) -> None:
    """One step (with DynamicQuantizeLinear) where there were five; every run (new activation
    ranges, so new x_scale and zero points, read by the kept product) equal to onnxruntime's
    unfused graph, and within float32 rounding of its MatMulIntegerToFloat. The bias as the
    Identity of an initializer (torch's export) is taken as well."""
    model = _chain(k, n, per_column=per_column, bias=bias, relu=relu, wz=-3,
                   identity_bias=per_column)
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    ops = sorted(nd.op_type for nd in sess.engine.nodes)
    assert ops == ["DynamicQuantizeLinear", "MatMulIntegerToFloat"], ops
    for run, spread in enumerate((1.0, 40.0, 0.003)):
        x = (RNG.standard_normal((1, rows, k)) * spread + run).astype(np.float32)
        got = sess.run(None, {"x": x})[0]
        plain = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
        assert got.dtype == np.float32 and got.shape == plain.shape == (1, rows, n)
        np.testing.assert_array_equal(got, plain)
        fused = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)[0]
        np.testing.assert_allclose(got, fused, rtol=1e-5, atol=1e-5)
    assert compiled["products"] == 3


def test_a_chain_without_zero_points_for_b_and_unnamed_nodes() -> None:
    """No B zero point (MatMulInteger's two inputs) and nodes without names: rewritten, and
    onnxruntime's unfused results."""
    model = _chain(33, 17, w_zp=False)
    for nd in model.graph.node:
        nd.name = ""
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    assert sorted(nd.op_type for nd in sess.engine.nodes) == [
        "DynamicQuantizeLinear", "MatMulIntegerToFloat"]
    x = RNG.standard_normal((3, 4, 33)).astype(np.float32)
    want = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    np.testing.assert_array_equal(sess.run(None, {"x": x})[0], want)


@pytest.mark.parametrize("exposed", ["acc", "accf", "s", "y0"])
def test_a_chain_whose_middle_is_read_elsewhere_is_left_as_it_is(exposed: str) -> None:
    """An intermediate tensor that is also a graph output keeps its node (the Add after a
    read y0 stays outside); the results are onnxruntime's either way."""
    model = _chain(40, 24, extra_reader=exposed)
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    ops = [nd.op_type for nd in sess.engine.nodes]
    if exposed == "y0":
        assert "MatMulIntegerToFloat" in ops and "Add" in ops, ops
    else:
        assert "MatMulIntegerToFloat" not in ops, ops
    x = RNG.standard_normal((2, 5, 40)).astype(np.float32)
    got = sess.run(None, {"x": x})
    want = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def _direct(a_dtype: Any, b: np.ndarray, b_scale: np.ndarray, b_zp: np.ndarray | None,
            bias: np.ndarray | None, relu: bool, b_input: bool = False) -> onnx.ModelProto:
    """A com.microsoft::MatMulIntegerToFloat node as onnxruntime's fusion writes it."""
    names = ["a", "b", "a_scale", "b_scale", "a_zp", "b_zp" if b_zp is not None else ""]
    inits = [numpy_helper.from_array(b_scale, "b_scale")]
    if not b_input:
        inits.append(numpy_helper.from_array(b, "b"))
    if b_zp is not None:
        inits.append(numpy_helper.from_array(b_zp, "b_zp"))
    if bias is not None:
        names.append("bias")
        inits.append(numpy_helper.from_array(bias, "bias"))
    while names[-1] == "":
        names.pop()
    elem = TensorProto.UINT8 if a_dtype == np.uint8 else TensorProto.INT8
    nodes = [helper.make_node("MatMulIntegerToFloat", names, ["h" if relu else "y"],
                              domain="com.microsoft")]
    if relu:
        nodes.append(helper.make_node("Relu", ["h"], ["y"]))
    ins = [helper.make_tensor_value_info("a", elem, ["B", "M", b.shape[0]]),
           helper.make_tensor_value_info("a_scale", TensorProto.FLOAT, []),
           helper.make_tensor_value_info("a_zp", elem, [])]
    if b_input:
        ins.append(helper.make_tensor_value_info("b", TensorProto.INT8, list(b.shape)))
    graph = helper.make_graph(nodes, "g", ins,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=10)


@pytest.mark.parametrize("a_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_column,zp,bias,relu,b_input", [
    (False, False, False, False, False),
    (True, True, True, False, False),
    (True, True, True, True, False),   # the Relu fused: clamps the dequantized value
    (False, True, True, False, True),  # a B computed at run time: packed on each run
])
def test_matmul_integer_to_float_at_the_edges_against_onnxruntime(
        threads: int, compiled: dict[str, int], a_dtype: Any, per_column: bool, zp: bool,
        bias: bool, relu: bool, b_input: bool) -> None:
    """Saturated operands (A at its type's ends, B at -128/127), extreme zero points, odd K and
    N, one row and several: onnxruntime's MatMulIntegerToFloat to float32 rounding, the
    integer sums exact (the ReferenceEvaluator's float64 formula within 1e-6)."""
    k, n = 37, 19
    info = np.iinfo(a_dtype)
    b = RNG.integers(-128, 128, (k, n)).astype(np.int8)
    b[0], b[1] = -128, 127
    b_scale = (RNG.random(n if per_column else 1) * 0.01 + 1e-4).astype(np.float32)
    b_zp = (RNG.integers(-128, 128, n if per_column else 1).astype(np.int8)
            if zp else None)
    if b_zp is not None:
        b_zp[0] = 127
    bias_v = RNG.standard_normal(n).astype(np.float32) if bias else None
    model = _direct(a_dtype, b, b_scale if per_column else b_scale.reshape(()),
                    b_zp if b_zp is None or per_column else b_zp.reshape(()), bias_v, relu,
                    b_input)
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    assert [nd.op_type for nd in sess.engine.nodes] == ["MatMulIntegerToFloat"]
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for rows in ((1, 1), (3, 5)):
        a = RNG.integers(int(info.min), int(info.max) + 1, (*rows, k)).astype(a_dtype)
        a[..., 0] = info.min
        a[..., 1] = info.max
        feeds = {"a": a, "a_scale": np.array(0.037, np.float32),
                 "a_zp": np.array(info.max if a_dtype == np.uint8 else info.min, a_dtype)}
        if b_input:
            feeds["b"] = b
        got = sess.run(None, feeds)[0]
        want = theirs.run(None, feeds)[0]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        acc = (a.astype(np.float64) - float(feeds["a_zp"])) @ (
            b.astype(np.float64) - (0.0 if b_zp is None else b_zp.astype(np.float64)))
        ref = acc * (0.037 * b_scale.astype(np.float64)) + (0 if bias_v is None else bias_v)
        if relu:
            ref = np.maximum(ref, 0)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    assert compiled["products"] == 2  # the compiled GEMM, not NumPy's fallback


def test_the_reference_evaluator_agrees_on_the_rewritten_chain() -> None:
    """The rewritten chain against onnx's ReferenceEvaluator of the original graph (the
    spec's DynamicQuantizeLinear and float32 Cast/Mul/Add): within float32 rounding."""
    model = _chain(48, 20, per_column=True)
    x = RNG.standard_normal((2, 3, 48)).astype(np.float32)
    got = mini_infer_core.InferenceSession(model, device="cpu").run(None, {"x": x})[0]
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_the_rewritten_chain_survives_the_engine_file(tmp_path: Any) -> None:
    """The engine file keeps MatMulIntegerToFloat with its B packed by the build
    (``__qpacked__``) and its fused Relu (``__clip__``): the loaded engine gives onnxruntime's
    unfused results."""
    model = _chain(45, 21, per_column=True, relu=True, wz=5)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    (node,) = [nd for nd in engine.nodes if nd.op_type == "MatMulIntegerToFloat"]
    assert node.plugin.hidden.get("__qpacked__") == 1  # type: ignore[attr-defined]
    assert "__clip__" in node.plugin.hidden  # type: ignore[attr-defined]
    engine.save(str(tmp_path / "q.engine"))
    sess = mini_infer_core.InferenceSession(str(tmp_path / "q.engine"), device="cpu")
    x = RNG.standard_normal((1, 6, 45)).astype(np.float32)
    got = sess.run(None, {"x": x})[0]
    want = _ort(model, {"x": x}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    np.testing.assert_array_equal(got, want)


def _with_residual(model: onnx.ModelProto, shape: list[Any]) -> onnx.ModelProto:
    """``y = chain(x) + r``, r a graph input of ``shape``."""
    g = model.graph
    last = g.node[-1]
    last.output[0] = "pre"
    g.node.append(helper.make_node("Add", ["r", "pre"], ["y"]))
    g.input.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, shape))
    return model


@pytest.mark.parametrize("bias,r_shape,fused", [
    (True, ["B", "T", 24], True),   # a transformer's residual: fused
    (False, ["B", "T", 24], False),  # no bias: the Add would come before it, stays apart
    (True, [24], False),            # broadcast: stays a node of its own
])
def test_the_residual_add_after_the_product(threads: int, compiled: dict[str, int],
                                            bias: bool, r_shape: list[Any],
                                            fused: bool) -> None:
    """``chain(x) + r`` with r of the output's shape joins the product (added after its
    epilogue: the graph's order, bit for bit onnxruntime's unfused graph); a broadcast r, or a
    product without its bias, keeps its Add."""
    model = _with_residual(_chain(40, 24, bias=bias), r_shape)
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    ops = sorted(nd.op_type for nd in sess.engine.nodes)
    assert ("Add" not in ops) == fused, ops
    for run in range(2):  # the kept product's run adds the residual too
        x = RNG.standard_normal((2, 5, 40)).astype(np.float32)
        r = RNG.standard_normal((2, 5, 24) if len(r_shape) == 3 else (24,)).astype(np.float32)
        got = sess.run(None, {"x": x, "r": r})[0]
        want = _ort(model, {"x": x, "r": r}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
        np.testing.assert_array_equal(got, want, err_msg=f"run {run}")
    assert compiled["products"] == 2
