"""The integer GEMM (``_qgemm.c`` through :mod:`mini_infer_cpu_native._qgemm`) and the plugins on
it (``qlinear.py``: MatMulInteger, QLinearMatMul, DynamicQuantizeLinear): whole models against
onnxruntime and onnx's ReferenceEvaluator at the edges (saturated outputs, extreme zero points,
per-column B parameters, K and N off the tiles, one row, no rows, constant and computed B), on
every kernel this CPU runs, and the kernels against each other bit for bit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import _qgemm, qlinear
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from quant_support import ELEM, S8, U8, run_saved_engine

import mini_infer_core
from mini_infer_core.threads import set_num_threads

RNG = np.random.default_rng(25)


@pytest.fixture
def compiled(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How often the plugins called the compiled GEMM (a test fails if NumPy took over)."""
    return count_calls(qlinear, "run_qgemm", "products")


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _model(node: onnx.NodeProto, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray],
           out_types: list[Any], opset: int = 21) -> onnx.ModelProto:
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape)) for k, v in feeds.items()],
        [helper.make_tensor_value_info(name, ELEM[np.dtype(t)], None)
         for name, t in zip(node.output, out_types, strict=True)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=10)


def _three(model: onnx.ModelProto, feeds: dict[str, np.ndarray]
           ) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """(ours, onnxruntime's, the ReferenceEvaluator's) outputs; ours run twice, the same."""
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    got = sess.run(None, feeds)
    again = sess.run(None, feeds)
    for x, y in zip(got, again, strict=True):
        np.testing.assert_array_equal(x, y)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)
    ref = ReferenceEvaluator(model).run(None, feeds)
    return got, want, ref


# ---- MatMulInteger ------------------------------------------------------------------------

def _zero(dtype: Any, which: str, n: int) -> np.ndarray:
    """A zero point: the type's lowest or highest value, or per column (n values, both
    extremes among them)."""
    info = np.iinfo(dtype)
    if which == "min":
        return np.array(info.min, dtype)
    if which == "max":
        return np.array(info.max, dtype)
    z = _ints(dtype, n)
    z[:: 2] = info.min
    if n > 1:
        z[1] = info.max
    return z


@pytest.mark.parametrize("a_type,b_type", [(U8, S8), (U8, U8), (S8, S8), (S8, U8)])
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (1, 63, 33), (5, 3, 7), (0, 17, 7), (9, 17, 33),
                                   (4, 64, 16), (33, 130, 50)])
@pytest.mark.parametrize("zeros", [("min", "max"), ("max", "column"), ("min", "min")])
def test_matmul_integer_matches_the_reference_exactly(
        isa: str, compiled: dict[str, int], a_type: Any, b_type: Any, m: int, k: int, n: int,
        zeros: tuple[str, str]) -> None:
    """Operands at their extremes (every product and pair of products at the int16 limits a
    vpmaddubsw would saturate), zero points at the type's ends or per column."""
    a = _ints(a_type, 2, m, k)
    a[0, :, : k // 2] = np.iinfo(a_type).max
    b = _ints(b_type, k, n)
    b[: k // 2] = np.iinfo(b_type).min
    za, zb = _zero(a_type, zeros[0], n), _zero(b_type, zeros[1], n)
    node = helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])
    model = _model(node, {"a": a}, {"b": b, "za": za, "zb": zb}, [np.int32])
    (got,), (want,), (ref,) = _three(model, {"a": a})
    assert got.dtype == np.int32 and got.shape == (2, m, n)
    np.testing.assert_array_equal(got, ref)
    # onnxruntime's u8 x s8 kernels without VNNI may saturate (its reduce_range advice):
    # compared where it agrees with the reference (everywhere on this project's CPUs)
    agree = want == ref
    np.testing.assert_array_equal(got[agree], want[agree])
    assert compiled["products"] == (2 if m else 2)  # two runs


@pytest.mark.parametrize("k,n", [(17, 33), (768, 7)])
def test_matmul_integer_with_a_computed_b(isa: str, compiled: dict[str, int], k: int,
                                          n: int) -> None:
    """A B that is an input (packed on each run), without zero points."""
    a, b = _ints(U8, 3, k), _ints(S8, k, n)
    node = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    model = _model(node, {"a": a, "b": b}, {}, [np.int32])
    (got,), (want,), (ref,) = _three(model, {"a": a, "b": b})
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, want)
    assert compiled["products"] == 2


def test_matmul_integer_per_row_a_zero_point_takes_cpu_basic(compiled: dict[str, int]) -> None:
    """A per-row A zero point (the spec allows it; the compiled GEMM takes one per tensor):
    cpu_basic's path, with the packed B unpacked."""
    a, b = _ints(U8, 4, 9), _ints(S8, 9, 5)
    za = _ints(U8, 4)
    node = helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"])
    model = _model(node, {"a": a}, {"b": b, "za": za}, [np.int32])
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    got = sess.run(None, {"a": a})[0]
    want = (a.astype(np.int64) - za[:, None].astype(np.int64)) @ b.astype(np.int64)
    np.testing.assert_array_equal(got, want)
    assert compiled["products"] == 0


# ---- QLinearMatMul ------------------------------------------------------------------------

@pytest.mark.parametrize("a_type,b_type,y_type", [(U8, S8, U8), (U8, U8, U8), (S8, S8, S8)])
@pytest.mark.parametrize("m,k,n", [(1, 3, 1), (1, 63, 33), (7, 17, 7), (0, 17, 7),
                                   (32, 768, 40)])
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinear_matmul_matches_onnxruntime_exactly(
        isa: str, compiled: dict[str, int], a_type: Any, b_type: Any, y_type: Any, m: int,
        k: int, n: int, per_column: bool) -> None:
    """Outputs saturated at both ends of uint8/int8 (a scale that makes most values fall
    outside), extreme zero points; onnxruntime's float32 requantization bit for bit, the
    reference (which rounds in another order) within one quantum."""
    a, b = _ints(a_type, m, k), _ints(b_type, k, n)
    ai, bi, yi = np.iinfo(a_type), np.iinfo(b_type), np.iinfo(y_type)
    b_scale = (np.abs(RNG.standard_normal(n if per_column else ())) * 0.02 + 1e-3).astype(
        np.float32)
    # A's zero point at its type's top; B's per column at both ends, or per tensor in the
    # middle (products of both signs either way)
    b_zero = _zero(b_type, "column", n) if per_column else np.array((bi.min + bi.max) // 2,
                                                                    b_type)
    inits = {"a_scale": np.array(0.05, np.float32), "a_zero": np.array(ai.max, a_type),
             "b": b, "b_scale": b_scale, "b_zero": b_zero,
             "y_scale": np.array(0.006 * np.sqrt(k), np.float32),
             "y_zero": np.array(yi.min + 3, y_type)}
    node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero", "b", "b_scale",
                                              "b_zero", "y_scale", "y_zero"], ["y"])
    model = _model(node, {"a": a}, inits, [y_type])
    (got,), (want,), (ref,) = _three(model, {"a": a})
    assert got.dtype == np.dtype(y_type) and got.shape == (m, n)
    np.testing.assert_array_equal(got, want)
    assert np.abs(got.astype(np.int32) - ref.astype(np.int32)).max(initial=0) <= 1
    if m * n >= 49:  # both ends reached
        assert got.min() == yi.min and got.max() == yi.max
    assert compiled["products"] == 2


@pytest.mark.parametrize("m,k,n", [(16, 64, 32), (48, 200, 70), (130, 1030, 64), (40, 32, 64),
                                   (72, 384, 96)])
@pytest.mark.parametrize("b_zero", ["zero", "column"])
@pytest.mark.parametrize("out", ["int32", "u8"])
def test_whole_row_groups_match_onnxruntime_exactly(isa: str, compiled: dict[str, int], m: int,
                                                    k: int, n: int, b_zero: str,
                                                    out: str) -> None:
    """Shapes the AMX level runs by tiles (groups of 16 and 32 whole rows, full column pairs,
    K of whole 64-byte chunks with and without last quads and a k % 4 tail) and around them
    (rows and columns left to the AVX-512 VNNI tiles): uint8 A read in place where B's zero
    point is 0, copied with its row sums where it is per column; K under 64 left to the VNNI
    tiles; MatMulInteger and
    QLinearMatMul's requantized bytes as onnxruntime's, bit for bit."""
    a, b = _ints(U8, m, k), _ints(S8, k, n)
    zb = np.zeros((), np.int8) if b_zero == "zero" else _zero(S8, "column", n)
    if out == "int32":
        node = helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])
        model = _model(node, {"a": a}, {"b": b, "za": np.array(3, U8), "zb": zb}, [np.int32])
    else:
        inits = {"a_scale": np.array(0.05, np.float32), "a_zero": np.array(3, U8), "b": b,
                 "b_scale": np.array(0.01, np.float32), "b_zero": zb,
                 "y_scale": np.array(0.004 * np.sqrt(k) * 40, np.float32),
                 "y_zero": np.array(120, U8)}
        node = helper.make_node("QLinearMatMul", ["a", "a_scale", "a_zero", "b", "b_scale",
                                                  "b_zero", "y_scale", "y_zero"], ["y"])
        model = _model(node, {"a": a}, inits, [U8])
    (got,), (want,), _ = _three(model, {"a": a})
    np.testing.assert_array_equal(got, want)
    assert compiled["products"] == 2


# ---- DynamicQuantizeLinear ----------------------------------------------------------------

def _ties(n: int) -> np.ndarray:
    """Values whose x / scale land on .5 (round half to even decides), with min -1 and max
    254 / 255 * ..."""
    scale = np.float32(2.0) / np.float32(255)
    x = (np.arange(n, dtype=np.float32) - n // 2 + np.float32(0.5)) * scale
    x[0], x[-1] = -1.0, 1.0
    return x.astype(np.float32)


@pytest.mark.parametrize("x", [
    RNG.standard_normal((3, 1000)).astype(np.float32),
    np.abs(RNG.standard_normal(257)).astype(np.float32),     # min 0: zero point 0
    -np.abs(RNG.standard_normal(64)).astype(np.float32),     # max 0: zero point 255
    np.zeros(5, np.float32),                                 # an empty range: scale 1
    np.array([3.0], np.float32),
    _ties(255),
    (RNG.standard_normal(777) * 1e4 + 3e3).astype(np.float32),
    # the range's ends in the scalar tail after the vector blocks of 32, then inside them
    np.concatenate([RNG.standard_normal(64), [-40.0, 3.0, 55.0]]).astype(np.float32),
    np.concatenate([[0.5] * 40, [-9.0], [0.25] * 20, [7.0], [0.0] * 3]).astype(np.float32),
], ids=["normal", "positive", "negative", "zeros", "one", "ties", "wide", "ends-in-tail",
        "ends-in-blocks"])
def test_dynamic_quantize_linear_matches_onnxruntime_exactly(x: np.ndarray) -> None:
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero"])
    model = _model(node, {"x": x}, {}, [U8, np.float32, U8])
    got, want, ref = _three(model, {"x": x})
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    if x.any():  # all zeros: onnxruntime's scale is 1, the reference's 1 / 255 (y is 0 alike)
        np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(got[2], ref[2])
    assert np.abs(got[0].astype(np.int32) - ref[0].astype(np.int32)).max() <= 1


# ---- the kernels against each other ---------------------------------------------------------

def _run_all(isa: str | None, cases: list[dict[str, Any]]) -> list[np.ndarray]:
    if isa is not None:
        assert _qgemm.use_qgemm_isa(isa) == isa
    try:
        outs = []
        for case in cases:
            c = np.empty(case["c"].shape, case["c"].dtype)
            _qgemm.qgemm(case["a"], case["packed"], case["colsum"], c, case["k"],
                         a_zero=case["za"], b_zero=case["zb"], mult=case.get("mult"),
                         bias=case.get("bias"), lo=case.get("lo", -np.inf),
                         hi=case.get("hi", np.inf), y_zero=case.get("zy", 0))
            outs.append(c)
        return outs
    finally:
        _qgemm.use_qgemm_isa(None)


def _cases() -> list[dict[str, Any]]:
    cases = []
    # the last three: several blocks of row panels and chunks of columns per thread; a uint8
    # A of whole quads with B's zero point 0 is read in place by AVX-512 VNNI (a partial
    # last panel copied)
    for m, k, n in [(1, 1, 1), (3, 3, 7), (8, 63, 33), (13, 768, 48), (128, 96, 3072 // 8),
                    (1001, 577, 70), (37, 2307, 130), (203, 256, 100), (211, 1300, 64)]:
        for a_type, out in [(U8, np.int32), (S8, np.float32), (U8, U8), (S8, S8)]:
            b = _ints(S8, k, n)
            packed = _qgemm.qpack_b(b)
            case = {"a": _ints(a_type, m, k), "packed": packed, "k": k,
                    "colsum": _qgemm.qcolsum(packed, k, n), "za": int(_ints(a_type)),
                    "zb": _ints(S8, n).astype(np.int32), "c": np.empty((m, n), out)}
            if m > 200:  # B's zero point 0 (symmetric weights): no row sums needed
                case["zb"] = np.zeros(1, np.int32)
            if out != np.int32:
                case["mult"] = (RNG.random(n) * 1e-3).astype(np.float32)
            if out == np.float32:
                case.update(bias=RNG.standard_normal(n).astype(np.float32), lo=0.0)
            if out in (U8, S8):
                case["zy"] = int(_ints(out))
            cases.append(case)
    return cases


def test_every_kernel_gives_the_plain_loops_results_bit_for_bit() -> None:
    """AVX2 (and VNNI where the CPU has it) against the plain C loops, for every epilogue,
    with 1 and 2 threads."""
    cases = _cases()
    plain = _run_all("plain", cases)
    for isa in [i for i in _qgemm.ISAS[1:] if _qgemm.qsupported(i)]:
        for threads in (1, 2):
            set_num_threads(threads)
            try:
                got = _run_all(isa, cases)
            finally:
                set_num_threads(None)
            for p, g in zip(plain, got, strict=True):
                np.testing.assert_array_equal(g, p, err_msg=f"{isa}, {threads} threads")


def test_the_environment_caps_the_kernels_chosen_at_load() -> None:
    """MINI_INFER_QGEMM_ISA=plain makes a fresh process run the plain loops, with the same
    results as the best kernels here."""
    code = ("import numpy as np; from mini_infer_cpu_native import _qgemm as q; "
            "print(q.qgemm_isa())")
    env = {**os.environ, "MINI_INFER_QGEMM_ISA": "plain"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "plain"


def test_packing_round_trips_and_the_column_sums_are_the_stored_values() -> None:
    for k, n in [(1, 1), (3, 17), (17, 33), (64, 16)]:
        for dtype in (U8, S8):
            b = _ints(dtype, k, n)
            packed = _qgemm.qpack_b(b)
            assert packed.shape == b.shape and packed.dtype == b.dtype
            np.testing.assert_array_equal(_qgemm.unpack_qb(packed, k, n), b)
            stored = b.astype(np.int32) - (128 if dtype == U8 else 0)
            np.testing.assert_array_equal(_qgemm.qcolsum(packed, k, n), stored.sum(0))


def test_the_wrappers_refuse_what_the_kernel_cannot_take() -> None:
    b = _ints(S8, 4, 3)
    packed = _qgemm.qpack_b(b)
    colsum = _qgemm.qcolsum(packed, 4, 3)
    zb = np.zeros(1, np.int32)
    with pytest.raises(TypeError, match="a must be uint8 or int8"):
        _qgemm.qgemm(np.zeros((2, 4), np.float32), packed, colsum, np.empty((2, 3), np.int32), 4,
                     b_zero=zb)
    with pytest.raises(ValueError, match="needs its scales"):
        _qgemm.qgemm(_ints(U8, 2, 4), packed, colsum, np.empty((2, 3), np.float32), 4,
                     b_zero=zb)
    with pytest.raises(ValueError, match="holds 11 elements"):
        _qgemm.qgemm(_ints(U8, 2, 4), packed[:, :3].reshape(-1)[:11], colsum,
                     np.empty((2, 3), np.int32), 4, b_zero=zb)
    with pytest.raises(ValueError, match="read-only"):
        out = np.empty((2, 3), np.int32)
        out.flags.writeable = False
        _qgemm.qgemm(_ints(U8, 2, 4), packed, colsum, out, 4, b_zero=zb)


def test_a_packed_b_survives_the_engine_file(tmp_path: Any) -> None:
    """B packed by the build (``__qpacked__``) is stored so in the engine file and read back
    in another process; a uint8 B and per-column zero points."""
    a, b = _ints(U8, 5, 70), _ints(U8, 70, 37)
    node = helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])
    model = _model(node, {"a": a}, {"b": b, "za": np.array(7, U8), "zb": _ints(U8, 37)},
                   [np.int32])
    got = run_saved_engine(model, "a", a, tmp_path)
    ref = ReferenceEvaluator(model).run(None, {"a": a})[0]
    np.testing.assert_array_equal(got, ref)


def test_a_kept_product_reads_new_inputs_and_zero_points_on_each_run(
        compiled: dict[str, int]) -> None:
    """The product made on the first run is run again while the arrays are the same objects:
    A's values and a computed A zero point (DynamicQuantizeLinear's) change from run to run."""
    b = _ints(S8, 40, 19)
    node = helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])
    model = _model(node, {"a": _ints(U8, 6, 40), "za": np.array(0, U8)},
                   {"b": b, "zb": np.array(-3, S8)}, [np.int32])
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    ref = ReferenceEvaluator(model)
    for za in (0, 255, 77):
        feeds = {"a": _ints(U8, 6, 40), "za": np.array(za, U8)}
        np.testing.assert_array_equal(sess.run(None, feeds)[0], ref.run(None, feeds)[0])
    assert compiled["products"] == 3


# ---- the dynamic-int8 pattern fused into MatMulInteger ------------------------------------

def _dynamic_int8(tmp_path: Any, per_channel: bool, relu: bool, k: int, n: int
                  ) -> onnx.ModelProto:
    """x (B, T, K) @ W + bias (then Relu), quantized by onnxruntime's quantize_dynamic:
    DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul(x_scale * w_scale) -> Add."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    w = RNG.standard_normal((k, n)).astype(np.float32)
    bias = RNG.standard_normal(n).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Add", ["h", "bias"], ["y" if not relu else "z"])]
    if relu:
        nodes.append(helper.make_node("Relu", ["z"], ["y"]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(bias, "bias")])
    src, dst = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), str(src))
    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=per_channel)
    return onnx.load(str(dst))


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("shape,k,n", [((1, 1), 63, 33), ((2, 7), 768, 40), ((1, 0), 17, 7)])
def test_the_dynamic_int8_pattern_is_one_product_as_exact_as_the_unfused_graph(
        tmp_path: Any, isa: str, compiled: dict[str, int], per_channel: bool, relu: bool,
        shape: tuple[int, int], k: int, n: int) -> None:
    """Cast, the scale's Mul, the bias Add (and a Relu) in one product's epilogue:
    bit for bit onnxruntime's unfused graph (ORT_DISABLE_ALL), and within float32 rounding of
    its own fused MatMulIntegerToFloat (ORT_ENABLE_ALL)."""
    model = _dynamic_int8(tmp_path, per_channel, relu, k, n)
    x = RNG.standard_normal((*shape, k)).astype(np.float32)
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    ops = [nd.op_type for nd in sess.engine.nodes]
    # the scales' Mul with the rest: onnxruntime's MatMulIntegerToFloat (builder/qdynamic.py)
    assert sorted(ops) == ["DynamicQuantizeLinear", "MatMulIntegerToFloat"], ops
    got = sess.run(None, {"x": x})[0]
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(model.SerializeToString(), opts,
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.dtype == np.float32 and got.shape == plain.shape
    np.testing.assert_array_equal(got, plain)
    fused = ort.InferenceSession(model.SerializeToString(),
                                 providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, fused, rtol=1e-5, atol=1e-5)
    assert compiled["products"] == 1


@pytest.mark.parametrize("a_shape,b_shape,compiled_runs", [
    ((17,), (17, 5), 2),          # a 1-D A: one row
    ((2, 3, 4, 9), (9, 33), 2),   # a 4-D A: all its rows in one product
    ((2, 4, 9), (2, 9, 6), 0),    # a B with a batch dimension: cpu_basic's
])
def test_operand_ranks(compiled: dict[str, int], a_shape: tuple[int, ...],
                       b_shape: tuple[int, ...], compiled_runs: int) -> None:
    a, b = _ints(U8, *a_shape), _ints(S8, *b_shape)
    node = helper.make_node("MatMulInteger", ["a", "b", "za"], ["y"])
    model = _model(node, {"a": a}, {"b": b, "za": np.array(200, U8)}, [np.int32])
    (got,), (want,), (ref,) = _three(model, {"a": a})
    np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(got, want)
    assert compiled["products"] == compiled_runs


def test_dynamic_quantize_linear_kept_call_reads_new_inputs() -> None:
    x0 = RNG.standard_normal(300).astype(np.float32)
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "y_scale", "y_zero"])
    model = _model(node, {"x": x0}, {}, [U8, np.float32, U8])
    sess = mini_infer_core.InferenceSession(model, device="cpu")
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for scale in (1.0, 30.0, 0.01):
        x = (RNG.standard_normal(300) * scale).astype(np.float32)
        for g, w in zip(sess.run(None, {"x": x}), theirs.run(None, {"x": x}), strict=True):
            np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("out_type", [U8, S8])
def test_the_requantizing_epilogue_with_a_fused_relu(isa: str, out_type: Any) -> None:
    """clamp(rint(float32(acc) * mult[j]) + zy, max(zy, type min), type max), rint halving to
    even, against NumPy's float32 arithmetic of the same formula (the Relu of the real value
    is the zero point as lower bound)."""
    m, k, n = 9, 45, 37
    a, b = _ints(U8, m, k), _ints(S8, k, n)
    packed = _qgemm.qpack_b(b)
    zb = _ints(S8, n).astype(np.int32)
    mult = (RNG.random(n) * 2e-3).astype(np.float32)
    mult[::3] = 0.5  # halves land on .5: ties
    zy = int(np.iinfo(out_type).min) + 40
    c = np.empty((m, n), out_type)
    _qgemm.qgemm(a, packed, _qgemm.qcolsum(packed, k, n), c, k, a_zero=17, b_zero=zb,
                 mult=mult, lo=float(zy), y_zero=zy)
    acc = (a.astype(np.int64) - 17) @ (b.astype(np.int64) - zb)
    want = np.rint(acc.astype(np.float32) * mult) + zy
    want = np.clip(want, zy, np.iinfo(out_type).max).astype(out_type)
    np.testing.assert_array_equal(c, want)
    assert (c == zy).any() and (c == np.iinfo(out_type).max).any()
