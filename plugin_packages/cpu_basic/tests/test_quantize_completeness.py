"""QuantizeLinear and DequantizeLinear over what ONNX allows, against onnx's ReferenceEvaluator
(and onnxruntime where it runs the case): per tensor, per axis (every axis, negative ones),
blocked (tails, both axes), int4/uint4/int2/uint2, int16/uint16, float8 with and without
saturation, ``output_dtype``, and the extreme zero points."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from cpu_support import execute, make_model, make_plugin, run_oracle
from onnx import TensorProto

RNG = np.random.default_rng(2501)
f32 = np.float32

INTS: dict[str, tuple[Any, int, int]] = {
    "uint8": (np.uint8, 0, 255), "int8": (np.int8, -128, 127),
    "uint16": (np.uint16, 0, 65535), "int16": (np.int16, -32768, 32767),
    "uint4": (ml_dtypes.uint4, 0, 15), "int4": (ml_dtypes.int4, -8, 7),
    "uint2": (ml_dtypes.uint2, 0, 3), "int2": (ml_dtypes.int2, -2, 1),
}


def ints_of(t: str, shape: tuple[int, ...], extreme: bool = True) -> Any:
    dtype, lo, hi = INTS[t]
    v = RNG.integers(lo, hi + 1, size=shape)
    if extreme and v.size >= 2:
        v.flat[0], v.flat[-1] = lo, hi  # the extreme zero points
    return v.astype(dtype)


def same(got: Any, want: Any, what: str) -> None:
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape,
                                                                 got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                      err_msg=what)


def check(op: str, inputs: list[Any], attrs: dict[str, Any], opset: int,
          oracles: tuple[str, ...] = ("ref",)) -> Any:
    got = execute(make_plugin(op, attrs, opset), inputs)[0]
    for kind in oracles:
        want = run_oracle(kind, make_model(op, inputs, attrs, opset, 1), inputs)[0]
        same(got, want, f"{op} {attrs} vs {kind}")
    return got


def param_shape(shape: tuple[int, ...], axis: int | None, block: int) -> tuple[int, ...]:
    if axis is None:
        return ()
    a = axis % len(shape)
    if not block:
        return (shape[a],)
    return tuple(-(-d // block) if k == a else d for k, d in enumerate(shape))


CASES = [  # (shape, axis, block_size); axis None: per tensor
    ((3, 4, 5), None, 0), ((3, 4, 5), 0, 0), ((3, 4, 5), 1, 0), ((3, 4, 5), -1, 0),
    ((6, 7), 1, 2), ((6, 7), 1, 4), ((6, 7), 0, 4), ((2, 9, 3), -2, 4), ((8, 3), 0, 8),
]


@pytest.mark.parametrize("qtype", list(INTS))
@pytest.mark.parametrize(("shape", "axis", "block"), CASES)
def test_integer_quantize_dequantize(qtype: str, shape: tuple[int, ...], axis: int | None,
                                     block: int) -> None:
    dtype, lo, hi = INTS[qtype]
    pshape = param_shape(shape, axis, block)
    scale = RNG.uniform(0.05, 0.5, size=pshape).astype(f32)
    zp = ints_of(qtype, pshape)
    span = (hi - lo) * 1.5  # |x / scale| reaches 1.5 ranges: saturates at both ends
    x = RNG.uniform(-span, span, size=shape).astype(f32) * scale.max()
    attrs: dict[str, Any] = {} if axis is None else {"axis": axis}
    if block:
        attrs["block_size"] = block
    opset = 25 if "2" in qtype and "16" not in qtype else 21
    q = check("QuantizeLinear", [x, scale, zp], attrs, opset)
    assert (q.astype(np.int64) == lo).any() and (q.astype(np.int64) == hi).any()
    check("DequantizeLinear", [q, scale, zp], attrs, opset)
    check("DequantizeLinear", [q, scale], attrs, opset)  # no zero point: 0
    if qtype in ("uint8", "int8") and not block:
        check("QuantizeLinear", [x, scale, zp], attrs, opset, ("ort",))
        check("DequantizeLinear", [q, scale, zp], attrs, opset, ("ort",))


@pytest.mark.parametrize("out", [TensorProto.INT4, TensorProto.UINT4, TensorProto.INT16,
                                 TensorProto.UINT16, TensorProto.INT8])
def test_quantize_output_dtype_without_zero_point(out: int) -> None:
    x = RNG.uniform(-40, 40, size=(4, 6)).astype(f32)
    got = check("QuantizeLinear", [x, np.array([0.5, 2.0, 1.0, 4.0], f32)],
                {"axis": 0, "output_dtype": out}, 21)
    assert got.dtype == {TensorProto.INT4: ml_dtypes.int4, TensorProto.UINT4: ml_dtypes.uint4,
                         TensorProto.INT16: np.int16, TensorProto.UINT16: np.uint16,
                         TensorProto.INT8: np.int8}[out]


@pytest.mark.parametrize("fp8", [ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fnuz,
                                 ml_dtypes.float8_e5m2, ml_dtypes.float8_e5m2fnuz])
@pytest.mark.parametrize("saturate", [1, 0])
def test_float8_saturate(fp8: Any, saturate: int) -> None:
    x = np.array([[0.0, 1.5, -3.25, 1e6], [-1e6, 448.0, 57344.0, 7e4]], f32)
    scale = np.array(1.0, f32)
    zp = np.zeros((), fp8)
    q = check("QuantizeLinear", [x, scale, zp], {"saturate": saturate}, 21)
    check("DequantizeLinear", [q, scale, zp], {}, 21)


def test_dequantize_output_dtype_and_blocked_float16() -> None:
    q = ints_of("int4", (4, 6))
    scale = RNG.uniform(0.1, 1, size=(4, 2)).astype(np.float16)
    got = check("DequantizeLinear", [q, scale], {"axis": 1, "block_size": 3}, 21)
    assert got.dtype == np.float16
    scale32 = scale.astype(f32)
    got = check("DequantizeLinear", [q, scale32], {"axis": 1, "block_size": 3,
                                                   "output_dtype": TensorProto.FLOAT16}, 23)
    assert got.dtype == np.float16
