"""Elementwise math, logic, bitwise, casts, quantization and Einsum kernels against oracles.

Each case builds a one-node ONNX model and compares the plugin's output with
``onnx.reference.ReferenceEvaluator`` and/or ``onnxruntime`` (dtype, shape and values);
a few cases use the ONNX formula in NumPy where neither oracle runs the opset.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cpu_support import compare_with_oracles, execute, make_model, make_plugin, run_oracle
from onnx import TensorProto, helper

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimExpr, DimsExprs, ExprBuilder

RNG = np.random.default_rng(7)


def rand(*shape: int, dtype: Any = np.float32, lo: float = -2.0, hi: float = 2.0) -> Any:
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def ints(*shape: int, dtype: Any = np.int32, lo: int = -50, hi: int = 50) -> Any:
    return RNG.integers(lo, hi, size=shape).astype(dtype)


# -- harness ---------------------------------------------------------------------------------










def oracle(kind: str, op: str, inputs: Sequence[Any], attrs: dict[str, Any], opset: int,
           n_out: int) -> list[Any]:
    return run_oracle(kind, make_model(op, inputs, attrs, opset, n_out), inputs)


def assert_same(got: Any, want: Any, rtol: float, atol: float, msg: str = "") -> None:
    want = np.asarray(want)
    assert got.shape == want.shape, (msg, got.shape, want.shape)
    assert got.dtype == want.dtype or (got.dtype == object and want.dtype.kind in "OU"), (
        msg, got.dtype, want.dtype)
    if got.dtype == object:
        assert got.tolist() == want.astype(object).tolist(), msg
    elif got.dtype.kind in "fc" or got.dtype.kind == "V":
        try:
            getattr(ml_dtypes, "finfo")(got.dtype)  # noqa: B009 (untyped in ml_dtypes)
            is_float = True
        except ValueError:
            is_float = False
        if is_float:
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                       rtol=rtol, atol=atol, err_msg=msg)
        else:
            np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64), msg)
    else:
        np.testing.assert_array_equal(got, want, msg)


def check(op: str, inputs: Sequence[Any], attrs: dict[str, Any] | None = None,
          opset: int = 21, n_out: int = 1, oracles: Sequence[str] = ("ref", "ort"),
          rtol: float = 1e-5, atol: float = 1e-6) -> list[Any]:
    def compare(g: Any, w: Any, kind: str) -> None:
        assert_same(g, w, rtol, atol, f"{op} vs {kind}")

    return compare_with_oracles(op, inputs, attrs or {}, opset, n_out, oracles, oracle, compare)


# -- unary math ------------------------------------------------------------------------------
@pytest.mark.parametrize(("op", "lo", "hi"), [
    ("Sin", -4, 4), ("Cos", -4, 4), ("Tan", -1.5, 1.5), ("Asin", -1, 1), ("Acos", -1, 1),
    ("Atan", -9, 9), ("Sinh", -3, 3), ("Cosh", -3, 3), ("Asinh", -9, 9), ("Acosh", 1, 9),
    ("Atanh", -0.99, 0.99), ("Reciprocal", 0.5, 4), ("Floor", -9, 9), ("Ceil", -9, 9),
    ("Round", -9, 9), ("Sign", -2, 2), ("Erf", -4, 4), ("IsNaN", -1, 1),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unary(op: str, lo: float, hi: float, dtype: Any) -> None:
    x = rand(3, 4, 5, dtype=dtype, lo=lo, hi=hi)
    if op in ("Round", "Floor", "Ceil", "Sign", "IsNaN"):
        x.reshape(-1)[:5] = [0.5, -2.5, 0.0, 1.5, np.nan]  # Round: half to even
    # (onnxruntime lacks several float64 kernels)
    check(op, [x], opset=13 if op in ("Reciprocal", "Floor", "Ceil", "Sign", "Erf") else 22,
          oracles=("ref", "ort") if dtype == np.float32 else ("ref",))


def test_erf_precision() -> None:
    x = np.concatenate([np.linspace(-7, 7, 2001), np.logspace(-300, 0.8, 200),
                        [np.inf, -np.inf, 0.0]])
    got = execute(make_plugin("Erf", {}, 13), [x])[0]
    want = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(got, want, rtol=2e-14, atol=1e-15)
    assert np.isnan(execute(make_plugin("Erf", {}, 13), [np.array([np.nan])])[0][0])


def test_erf_of_integers_matches_the_reference() -> None:
    """erf(4) rounds to 1 in float32: onnx's reference gives 1, not a truncated 0.99..."""
    check("Erf", [np.arange(-6, 7, dtype=np.int32)], opset=13, oracles=("ref",))


@pytest.mark.parametrize("attrs", [{}, {"detect_negative": 0}, {"detect_positive": 0}])
def test_isinf(attrs: dict[str, Any]) -> None:
    x = np.array([1.0, np.inf, -np.inf, np.nan, -2.0], np.float32)
    check("IsInf", [x], attrs, opset=20)


def test_float16_and_bfloat16_unary() -> None:
    check("Cos", [rand(4, 5, dtype=np.float16)], opset=22, rtol=1e-3, atol=1e-3)
    x = rand(4, 5).astype(ml_dtypes.bfloat16)
    got = execute(make_plugin("Exp", {}, 13), [x])[0]
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got.astype(np.float32), np.exp(x.astype(np.float32)),
                               rtol=1e-2)


# -- activations -----------------------------------------------------------------------------
@pytest.mark.parametrize(("op", "attrs", "opset"), [
    ("Elu", {}, 22), ("Elu", {"alpha": 0.5}, 6), ("Selu", {}, 22),
    ("Selu", {"alpha": 2.0, "gamma": 3.0}, 22), ("Celu", {"alpha": 2.0}, 12),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 22), ("HardSwish", {}, 22),
    ("Softplus", {}, 22), ("Softsign", {}, 22), ("Mish", {}, 22),
    ("ThresholdedRelu", {"alpha": 0.5}, 22), ("Gelu", {}, 20),
    ("Gelu", {"approximate": "tanh"}, 20), ("Shrink", {"lambd": 0.7, "bias": 0.2}, 9),
    ("LeakyRelu", {"alpha": 0.2}, 16), ("Relu", {}, 14), ("Sigmoid", {}, 13),
])
def test_activation(op: str, attrs: dict[str, Any], opset: int) -> None:
    x = rand(2, 3, 7, lo=-6, hi=6)
    x.reshape(-1)[:3] = [60.0, -60.0, 0.0]  # no overflow trouble
    check(op, [x], attrs, opset=opset, rtol=1e-5, atol=1e-6)


def test_selu_opset1_defaults() -> None:
    x = rand(3, 5, lo=-3, hi=3)
    got = execute(make_plugin("Selu", {"consumed_inputs": [0]}, 1), [x])[0]
    want = np.where(x > 0, x, 1.6732 * np.expm1(x)) * 1.0507
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_swish() -> None:
    x = rand(3, 8, lo=-6, hi=6)
    got = execute(make_plugin("Swish", {"alpha": 1.5}, 24), [x])[0]
    np.testing.assert_allclose(got, x / (1 + np.exp(-1.5 * x)), rtol=1e-6)
    check("Swish", [x], {"alpha": 1.5}, opset=24, oracles=("ref",))


@pytest.mark.parametrize(("xs", "ss"), [((2, 3, 4, 5), (3, 1, 1)), ((2, 3), (3,)),
                                        ((4, 5), (1,))])
def test_prelu(xs: tuple[int, ...], ss: tuple[int, ...]) -> None:
    check("PRelu", [rand(*xs), rand(*ss)], opset=16)


def test_shrink_int_and_relu_int8() -> None:
    check("Shrink", [ints(3, 6, dtype=np.int8)], {"lambd": 2.0, "bias": 1.0}, opset=9,
          oracles=("ort",))
    check("Relu", [ints(3, 6, dtype=np.int8)], opset=14)


# -- logic and comparisons -------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
def test_compare(op: str, dtype: Any) -> None:
    a, b = ints(2, 3, 4, lo=0, hi=4).astype(dtype), ints(3, 1, lo=0, hi=4).astype(dtype)
    check(op, [a, b], opset=16)


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op: str) -> None:
    check(op, [rand(3, 4, 5) > 0, rand(4, 1) > 0], opset=7)


def test_not_where_equal_strings() -> None:
    check("Not", [rand(3, 4) > 0], opset=1)
    c = rand(2, 3, 4) > 0
    check("Where", [c, rand(3, 4), rand(2, 1, 4)], opset=16)
    check("Where", [c, ints(4, dtype=np.int64), ints(3, 1, dtype=np.int64)], opset=16)
    a = np.array(["a", "bc", "d"], dtype=object)
    b = np.array([["a", "x", "d"]], dtype=object)
    got = execute(make_plugin("Equal", {}, 19), [a, b])[0]
    np.testing.assert_array_equal(got, [[True, False, True]])


def test_legacy_broadcast_axis() -> None:
    a, b = ints(2, 3, 4), ints(3)
    got = execute(make_plugin("Greater", {"broadcast": 1, "axis": 1}, 1), [a, b])[0]
    np.testing.assert_array_equal(got, a > b.reshape(3, 1))


# -- bitwise ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.uint64])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bitshift(dtype: Any, direction: str) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=(3, 5), dtype=dtype)
    bits = info.bits
    y = RNG.integers(-2 if info.min < 0 else 0, bits + 3, size=(5,)).astype(dtype)
    check("BitShift", [x, y], {"direction": direction}, opset=28, oracles=("ref",))
    ok = np.array([0, 1, 2, bits - 1, 3], dtype=dtype)
    check("BitShift", [np.abs(x // 2), ok], {"direction": direction}, opset=11,
          oracles=("ort",) if dtype in (np.uint16, np.uint64) else ())


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise(op: str) -> None:
    check(op, [ints(2, 3, 4, dtype=np.int16), ints(4, dtype=np.int16)], opset=18)
    check("BitwiseNot", [ints(3, 4, dtype=np.uint8, lo=0, hi=255)], opset=18)


# -- variadic and Mod ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["Max", "Min", "Mean", "Sum"])
def test_variadic(op: str) -> None:
    check(op, [rand(2, 3, 4), rand(3, 1), rand(4)], opset=13)
    check(op, [rand(3, 4)], opset=13)
    if op in ("Max", "Min"):
        check(op, [ints(3, 4, dtype=np.uint16, lo=0, hi=99), ints(4, dtype=np.uint16, lo=0,
                                                                  hi=99)], opset=13,
              oracles=("ref",))
        check(op, [ints(3, 4, dtype=np.int64), ints(4, dtype=np.int64)], opset=13)


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32])
def test_mod(fmod: int, dtype: Any) -> None:
    a = ints(3, 5, lo=-30, hi=30).astype(dtype)
    b = ints(5, lo=1, hi=7).astype(dtype) * np.array([1, -1, 1, -1, 1], dtype)
    check("Mod", [a, b], {"fmod": fmod}, opset=13 if dtype != np.float32 or fmod else 28,
          oracles=("ref", "ort") if fmod or dtype != np.float32 else ("ref",))


# -- casts -----------------------------------------------------------------------------------
CAST_TARGETS = [TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT32, TensorProto.INT8,
                TensorProto.UINT8, TensorProto.BOOL, TensorProto.BFLOAT16,
                TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E5M2, TensorProto.FLOAT8E4M3FNUZ,
                TensorProto.FLOAT8E5M2FNUZ, TensorProto.INT4, TensorProto.UINT4,
                TensorProto.FLOAT4E2M1, TensorProto.FLOAT8E8M0, TensorProto.STRING]


@pytest.mark.parametrize("to", CAST_TARGETS)
@pytest.mark.parametrize("saturate", [0, 1])
def test_cast_from_float(to: int, saturate: int) -> None:
    x = rand(4, 6, lo=-5, hi=5)
    x.reshape(-1)[:5] = [1e6, -1e6, 0.0, 2.5, 1e-3]
    if to in (TensorProto.INT4, TensorProto.UINT4, TensorProto.INT8, TensorProto.UINT8,
              TensorProto.INT32):
        x.reshape(-1)[:2] = [7.0, -3.0]  # out-of-range float->int is undefined in ONNX
    if to == TensorProto.FLOAT8E8M0:
        x = np.abs(x) + 1e-3
    attrs = {"to": to, "saturate": saturate}
    like = {"saturate": saturate}
    oracles: tuple[str, ...] = ("ref",)
    if to == TensorProto.STRING:  # numbers as text: onnxruntime's %.8g (the reference: repr)
        oracles, attrs, like = ("ort",), {"to": to}, {}  # (saturate: float8 only in ort)
    check("Cast", [x], attrs, opset=25, oracles=oracles)
    check("CastLike", [x, np.zeros(1, helper.tensor_dtype_to_np_dtype(to))
                       if to != TensorProto.STRING else np.array(["a"], dtype=object)],
          like, opset=25, oracles=oracles)


@pytest.mark.parametrize("src", [np.float16, np.int64, np.uint8, np.bool_, ml_dtypes.bfloat16,
                                 ml_dtypes.float8_e4m3fn, ml_dtypes.int4])
def test_cast_to_float(src: Any) -> None:
    x = rand(3, 5, lo=-7, hi=7).astype(src)
    check("Cast", [x], {"to": TensorProto.FLOAT}, opset=25, oracles=("ref",))
    check("Cast", [x], {"to": TensorProto.INT64}, opset=25, oracles=("ref",))


def test_cast_strings_and_opset1_names() -> None:
    s = np.array(["1.5", "-2", "INF", "-inf", "NaN", " 3e2"], dtype=object)
    got = execute(make_plugin("Cast", {"to": TensorProto.FLOAT}, 13), [s])[0]
    np.testing.assert_array_equal(got, np.array([1.5, -2, np.inf, -np.inf, np.nan, 300],
                                                np.float32))
    n = np.array([7, -3], np.int64)
    got = execute(make_plugin("Cast", {"to": TensorProto.STRING}, 13), [n])[0]
    assert got.tolist() == ["7", "-3"]
    check("Cast", [rand(2, 3)], {"to": TensorProto.STRING}, opset=13, oracles=("ort",))
    got = execute(make_plugin("Cast", {"to": "INT32"}, 1), [rand(2, 3, lo=0, hi=9)])[0]
    assert got.dtype == np.int32
    with pytest.raises(PluginInterfaceError):
        make_plugin("Cast", {"to": "NOPE"}, 1)


# -- quantization ----------------------------------------------------------------------------
@pytest.mark.parametrize(("zp", "attrs"), [
    (np.array(128, np.uint8), {}),
    (np.array(-3, np.int8), {}),
    (None, {}),
    (np.array([1, 2, 3], np.uint8), {"axis": 1}),
    (np.array(0, ml_dtypes.float8_e4m3fn), {}),
    (np.array(0, ml_dtypes.float8_e5m2), {"saturate": 0}),
    (np.array([1, -2, 0], ml_dtypes.int4), {"axis": 1}),
    (np.array(3, np.uint16), {}),
])
def test_quantize_dequantize(zp: Any, attrs: dict[str, Any]) -> None:
    x = rand(2, 3, 4, lo=-300, hi=300)
    scale = (np.array([2.0, 0.5, 1.5], np.float32) if attrs.get("axis") == 1
             else np.array(1.7, np.float32))
    q = check("QuantizeLinear", [x, scale, zp], attrs, opset=21, oracles=("ref",))[0]
    dq_attrs = {k: v for k, v in attrs.items() if k == "axis"}
    check("DequantizeLinear", [q, scale, zp], dq_attrs, opset=21, oracles=("ref",))
    if zp is not None and zp.dtype in (np.uint8, np.int8) and attrs.get("saturate", 1):
        check("QuantizeLinear", [x, scale, zp], attrs, opset=21, oracles=("ort",))
        check("DequantizeLinear", [q, scale, zp], dq_attrs, opset=21, oracles=("ort",))


def test_quantize_blocked_and_output_dtype() -> None:
    x = rand(3, 7, lo=-50, hi=50)
    scale = rand(3, 4, lo=0.5, hi=2)
    zp = ints(3, 4, dtype=np.int8, lo=-5, hi=5)
    attrs = {"axis": 1, "block_size": 2}
    q = check("QuantizeLinear", [x, scale, zp], attrs, opset=21, oracles=("ref",))[0]
    check("DequantizeLinear", [q, scale, zp], attrs, opset=21, oracles=("ref",))
    got = check("QuantizeLinear", [x, scale], {**attrs, "output_dtype": TensorProto.INT16},
                opset=21, oracles=("ref",))[0]
    assert got.dtype == np.int16
    half = check("DequantizeLinear", [q, scale, zp], {**attrs,
                 "output_dtype": TensorProto.FLOAT16}, opset=23, oracles=("ref",))[0]
    assert half.dtype == np.float16
    with pytest.raises(PluginInterfaceError):
        execute(make_plugin("QuantizeLinear", attrs, 21), [x, rand(3, 3), zp])


def test_dynamic_quantize_linear() -> None:
    for x in [rand(3, 4, lo=-3, hi=5), rand(6, lo=1, hi=2), rand(2, 5, lo=-9, hi=-1)]:
        check("DynamicQuantizeLinear", [x], opset=11, n_out=3)
    # all equal: scale 1 (onnxruntime; the spec's formula divides by zero there)
    check("DynamicQuantizeLinear", [np.zeros((2, 2), np.float32)], opset=11, n_out=3,
          oracles=("ort",))


def test_matmul_integer() -> None:
    a, b = ints(2, 3, 4, dtype=np.uint8, lo=0, hi=255), ints(4, 5, dtype=np.uint8, lo=0,
                                                              hi=255)
    check("MatMulInteger", [a, b, np.array(12, np.uint8), np.array(200, np.uint8)], opset=10)
    a8, b8 = ints(3, 4, dtype=np.int8, lo=-128, hi=127), ints(4, 2, dtype=np.int8)
    got = execute(make_plugin("MatMulInteger", {}, 10),
                  [a8, b8, np.array([1, 2, 3], np.int8), np.array([4, -5], np.int8)])[0]
    want = (a8.astype(np.int32) - [[1], [2], [3]]) @ (b8.astype(np.int32) - [4, -5])
    np.testing.assert_array_equal(got, want)
    check("MatMulInteger", [a8, b8], opset=10)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_matmul(dtype: Any) -> None:
    info = np.iinfo(dtype)
    a = ints(2, 3, 4, dtype=dtype, lo=info.min, hi=info.max)
    b = ints(4, 5, dtype=dtype, lo=info.min, hi=info.max)
    f = np.float32
    inputs = [a, np.array(0.02, f), np.array(3, dtype), b, np.array(0.03, f),
              np.array(-2 if dtype == np.int8 else 130, dtype), np.array(0.5, f),
              np.array(5, dtype)]
    check("QLinearMatMul", inputs, opset=21)


def test_conv_integer_and_qlinear_conv() -> None:
    x = ints(2, 4, 6, 6, dtype=np.uint8, lo=0, hi=255)
    w = ints(6, 2, 3, 3, dtype=np.uint8, lo=0, hi=255)
    attrs = {"pads": [1, 1, 1, 1], "strides": [2, 1], "group": 2}
    check("ConvInteger", [x, w, np.array(100, np.uint8), np.array(90, np.uint8)], attrs,
          opset=10)
    check("ConvInteger", [x, w[:, :1].repeat(4, axis=1)], {}, opset=10)
    # int8 weights within [-64, 64): onnxruntime's u8s8 kernels without AVX-512 VNNI add
    # products in int16 pairs (vpmaddubsw), which saturate beyond that and differ by tens
    wi = ints(6, 2, 3, 3, dtype=np.int8, lo=-64, hi=64)
    f = np.float32
    inputs = [x, np.array(0.05, f), np.array(120, np.uint8), wi, rand(6, lo=0.01, hi=0.05),
              np.zeros(6, np.int8), np.array(0.4, f), np.array(128, np.uint8),
              ints(6, dtype=np.int32, lo=-500, hi=500)]
    check("QLinearConv", inputs, attrs, opset=10)


# -- Einsum ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("eq", "shapes"), [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ii->i", [(4, 4)]), ("ij->ji", [(3, 5)]), ("ij,ij->", [(3, 4), (3, 4)]),
    ("i,j", [(3,), (4,)]), ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]), ("ba", [(2, 3)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("...i->...", [(2, 3, 4)]),
])
def test_einsum(eq: str, shapes: list[tuple[int, ...]]) -> None:
    check("Einsum", [rand(*s) for s in shapes], {"equation": eq}, opset=12)


def test_einsum_symbolic_shape_and_ints() -> None:
    plugin = make_plugin("Einsum", {"equation": "bij,bjk->bik"}, 12)
    n = DimExpr.sym("N")
    got = plugin.get_output_dimensions(0, [DimsExprs([n, 3, 4]), DimsExprs([n, 4, 5])],
                                       ExprBuilder())
    assert str(got[0]) == "N" and got[1].get_constant_value() == 3
    check("Einsum", [ints(3, 4, dtype=np.int64), ints(4, dtype=np.int64)],
          {"equation": "ij,j->i"}, opset=12)


# -- build-time values -----------------------------------------------------------------------
def _values(op: str, attrs: dict[str, Any], opset: int, inputs: list[list[Any]]) -> Any:
    plugin = make_plugin(op, attrs, opset)
    dims = [DimsExprs([len(v)], values=v) for v in inputs]
    got = plugin.output_values(dims)
    return None if got is None or got[0] is None else [str(v) for v in got[0]]


def test_output_values() -> None:
    n = DimExpr.sym("N")
    assert _values("Mul", {}, 14, [[n, 3], [2]]) == [str(n * 2), "6"]
    assert _values("Add", {}, 14, [[n, 3], [1, -1]]) == [str(n + 1), "2"]
    assert _values("Div", {}, 14, [[-7, 7], [2]]) == ["-3", "3"]
    assert _values("Mod", {}, 13, [[-7, 7], [3]]) == ["2", "1"]
    assert _values("Max", {}, 13, [[1, 5], [3]]) == ["3", "5"]
    assert _values("Equal", {}, 13, [[n, 0], [n, 1]]) == ["1", "0"]
    assert _values("Equal", {}, 13, [[n, 0], [1, n]]) is None  # N == 1: unknown
    assert _values("Less", {}, 13, [[n, 0], [1]]) is None  # symbolic comparison: unknown
    assert _values("Where", {}, 16, [[1, 0], [n, n], [-1, -1]]) == ["N", "-1"]
    assert _values("Cast", {"to": TensorProto.INT32}, 13, [[n, 4]]) == ["N", "4"]
    assert _values("Cast", {"to": TensorProto.FLOAT}, 13, [[n, 4]]) == ["N", "4"]  # whole numbers
