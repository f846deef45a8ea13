"""com.microsoft QLinearAdd and QLinearMul in one compiled pass (``qelementwise.py``,
``_qelt.c``): single-node models against onnxruntime's contrib kernels and cpu_basic's NumPy
kernels, at the edges (saturation at 0/255 and -128/127, extreme zero points, broadcasting of
either operand per channel or as one value, odd sizes), at every level of this CPU: bit for bit,
since both follow onnxruntime's x86 arithmetic (see ``_qelt.c``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qelementwise
from mini_infer_cpu_plugins.ops import contrib_qlinear as basic
from onnx import TensorProto, helper, numpy_helper
from quant_support import S8, U8

import mini_infer_core

RNG = np.random.default_rng(2528)
ELEM = {np.dtype(U8): TensorProto.UINT8, np.dtype(S8): TensorProto.INT8}


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _model(op: str, a: np.ndarray, b: np.ndarray, params: dict[str, np.ndarray]) -> Any:
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "cs", "cz"], ["y"],
                            domain="com.microsoft")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, ELEM[v.dtype], list(v.shape))
                      for k, v in (("a", a), ("b", b))],
        [helper.make_tensor_value_info("y", ELEM[a.dtype], None)],
        [numpy_helper.from_array(v, k) for k, v in params.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


SHAPES = [((2, 5, 7, 3), (2, 5, 7, 3)), ((1, 16, 9, 9), (1, 16, 1, 1)),
          ((1, 16, 1, 1), (1, 16, 9, 9)), ((3, 33), (1, 1)), ((1, 7, 5, 5), (7, 1, 1)),
          ((1, 1), (1, 1)), ((5, 37), (37,))]


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shapes", SHAPES, ids=[f"{a}x{b}" for a, b in SHAPES])
@pytest.mark.parametrize("dtype,zeros", [
    (U8, (128, 3, 100)), (U8, (0, 255, 0)), (U8, (255, 0, 255)),
    (S8, (0, -5, 3)), (S8, (-128, 127, -128)), (S8, (127, -128, 127))])
def test_compiled_against_onnxruntime(count_calls: Callable[[Any, str, str], dict[str, int]],
                                      isa: str, op: str, shapes: tuple[tuple[int, ...], ...],
                                      dtype: Any, zeros: tuple[int, int, int]) -> None:
    a, b = _ints(dtype, *shapes[0]), _ints(dtype, *shapes[1])
    # scales that saturate often (a small C scale) and rarely
    params = {"as": np.array(0.05, np.float32), "az": np.array(zeros[0], dtype),
              "bs": np.array(0.031, np.float32), "bz": np.array(zeros[1], dtype),
              "cs": np.array(0.07 if op == "QLinearAdd" else 0.03, np.float32),
              "cz": np.array(zeros[2], dtype)}
    model = _model(op, a, b, params)
    calls = count_calls(qelementwise, "_check", "compiled")
    (got,) = mini_infer_core.InferenceSession(model, device="cpu").run(None, {"a": a, "b": b})
    assert calls["compiled"] == 1
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    info = np.iinfo(dtype)
    if a.size > 50 and b.size > 50:  # the edges were reached
        assert {info.min, info.max} & set(np.unique(got).tolist())
    # bit for bit with cpu_basic's NumPy kernel (the same float32 arithmetic)
    ref = np.empty_like(got)
    kind = basic.QLinearAdd if op == "QLinearAdd" else basic.QLinearMul
    kind("ref").compute(a, params["as"], params["az"], b, params["bs"], params["bz"],
                        params["cs"], params["cz"], out=ref)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize(("sa", "sb"), [((2, 3, 4), (2, 1, 4)), ((37,), (5, 37))])
def test_other_layouts_take_the_numpy_kernel(
        count_calls: Callable[[Any, str, str], dict[str, int]], sa: tuple[int, ...],
        sb: tuple[int, ...]) -> None:
    """cpu_basic's kernel, with onnxruntime's bits: B broadcast over a middle axis only
    (neither per leading index nor one row for each); A one row repeated for each of B's (B
    full), where onnxruntime keeps A first, which the compiled pass (B the broadcast one)
    cannot."""
    a, b = _ints(U8, *sa), _ints(U8, *sb)
    params = {"as": np.array(0.05, np.float32), "az": np.array(7, U8),
              "bs": np.array(0.02, np.float32), "bz": np.array(9, U8),
              "cs": np.array(0.06, np.float32), "cz": np.array(11, U8)}
    model = _model("QLinearAdd", a, b, params)
    calls = count_calls(qelementwise, "_check", "compiled")
    (got,) = mini_infer_core.InferenceSession(model, device="cpu").run(None, {"a": a, "b": b})
    assert calls["compiled"] == 0
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [U8, S8])
def test_add_at_ties_is_onnxruntimes(count_calls: Callable[[Any, str, str], dict[str, int]],
                                     isa: str, dtype: Any) -> None:
    """Scales and zero points drawn until the operator's float formula and onnxruntime's
    (the zero point inside the rounding, fused multiply-adds) round some element apart:
    every 8-bit value of A against a B of one value (the hoisted path), B of A's shape, and A
    of one value (exchanged: B first in the fixed part); ours gives onnxruntime's bits."""
    info = np.iinfo(dtype)
    a = np.arange(info.min, int(info.max) + 1).astype(dtype).reshape(16, 16)
    rng, f32 = np.random.default_rng(25), np.float32
    checked = 0
    for _ in range(4000):
        sa, sb, sc = (f32(v) for v in rng.uniform(0.001, 0.1, 3))
        za, zb, zc = (int(v) for v in rng.integers(info.min, int(info.max) + 1, 3))
        b0 = int(rng.integers(info.min, int(info.max) + 1))
        naive = np.rint((a.astype(f32) - za) * f32(sa / sc) + f32(b0 - zb) * f32(sb / sc)) + zc
        fixed = basic.qadd_fixed(f32(sa / sc), za, f32(sb / sc), zb, zc)
        fused = np.rint((a.astype(np.float64) * f32(sa / sc) + np.float64(
            f32(np.float64(b0) * f32(sb / sc) + np.float64(fixed)))).astype(f32))
        if (np.clip(naive, info.min, info.max) == np.clip(fused, info.min, info.max)).all():
            continue
        params = {"as": np.array(sa), "az": np.array(za, dtype), "bs": np.array(sb),
                  "bz": np.array(zb, dtype), "cs": np.array(sc), "cz": np.array(zc, dtype)}
        for x, y in ((a, np.array([b0], dtype)), (a, np.full_like(a, b0)),
                     (np.array([b0], dtype), a)):
            model = _model("QLinearAdd", x, y, params)
            calls = count_calls(qelementwise, "_check", "compiled")
            (got,) = mini_infer_core.InferenceSession(model, device="cpu").run(
                None, {"a": x, "b": y})
            assert calls["compiled"] == 1
            (want,) = ort.InferenceSession(model.SerializeToString(), providers=[
                "CPUExecutionProvider"]).run(None, {"a": x, "b": y})
            np.testing.assert_array_equal(got, want)
        checked += 1
        if checked == 3:
            break
    assert checked == 3, "no parameters found where the two formulas round apart"
