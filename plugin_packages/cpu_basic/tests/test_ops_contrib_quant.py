"""onnxruntime's quantized com.microsoft operators against onnxruntime itself (which defines
them): MatMulNBits (hand-packed weights and weights from onnxruntime's own quantizer),
DynamicQuantizeMatMul, MatMulIntegerToFloat, QGemm, QLinearAdd/Mul/Sigmoid/LeakyRelu/Softmax,
QLinearAveragePool, QLinearGlobalAveragePool and QLinearConcat -- each run through the whole
engine (importer, builder, runtime) on one-node models, at the edges: saturation, extreme
zero points, per-column scales, odd shapes, one-row products, empty batches."""

from __future__ import annotations

import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from cpu_support import has_vnni
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

RNG = np.random.default_rng(25)


@pytest.fixture(autouse=True)
def _seeded(request: pytest.FixtureRequest) -> None:
    """Each test's data from its own name: the same whichever tests ran before it."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))


#: int8 weights' range: onnxruntime's u8 x s8 products on x86 without VNNI add pairs of
#: products in int16 (vpmaddubsw), which saturates for weights beyond [-64, 64) -- there they
#: stay within; on a VNNI CPU (where the saturation edges are tested) the full range
S8_WEIGHTS = (-128, 128) if has_vnni() else (-64, 64)
MS = "com.microsoft"
f32 = np.float32


def node_model(op: str, inputs: list[tuple[str, Any] | None], attrs: dict[str, Any] | None = None,
               *, consts: tuple[str, ...] = (), out_type: int | None = None,
               domain: str = MS) -> tuple[onnx.ModelProto, dict[str, Any]]:
    """One ``op`` node; ``inputs`` (name, array) in order (None: absent); those named in
    ``consts`` are initializers, the others graph inputs. Returns the model and its feeds."""
    names, vinfo, inits, feeds = [], [], [], {}
    for item in inputs:
        if item is None:
            names.append("")
            continue
        name, x = item
        names.append(name)
        if name in consts:
            inits.append(numpy_helper.from_array(np.asarray(x), name))
        else:
            feeds[name] = x
            vinfo.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(x.dtype), list(x.shape)))
    while names and names[-1] == "":
        names.pop()
    node = helper.make_node(op, names, ["y"], domain=domain, **(attrs or {}))
    out = (helper.make_tensor_value_info("y", out_type, None) if out_type is not None
           else onnx.ValueInfoProto(name="y"))
    graph = helper.make_graph([node], "g", vinfo, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid(MS, 1)])
    model.ir_version = 10
    return model, feeds


def ort_run(model: onnx.ModelProto, feeds: dict[str, Any], level: Any = None) -> Any:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.intra_op_num_threads = 1
    if level is not None:
        so.graph_optimization_level = level
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def ours(model: onnx.ModelProto, feeds: dict[str, Any]) -> Any:
    return mi.InferenceSession(model).run(None, feeds)[0]


def both(model: onnx.ModelProto, feeds: dict[str, Any]) -> tuple[Any, Any]:
    got, want = ours(model, feeds), ort_run(model, feeds)
    assert got.shape == want.shape and got.dtype == want.dtype, (
        got.shape, want.shape, got.dtype, want.dtype)
    return got, want


def close(model: onnx.ModelProto, feeds: dict[str, Any], rtol: float = 1e-5,
          atol: float = 1e-5) -> Any:
    got, want = both(model, feeds)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    return got


def equal(model: onnx.ModelProto, feeds: dict[str, Any], off_by_one: float = 0.0) -> Any:
    """Integer outputs equal to onnxruntime's; ``off_by_one``: the fraction of elements
    allowed to differ by one quantum, none by more. onnxruntime's vector kernels compute
    their own way (QLinearAveragePool divides where we multiply by the reciprocal), so a
    value a hair from .5 may round the other way: of the cases below, two
    QLinearAveragePool ones differ so, by one quantum in a few elements. (QLinearAdd and
    QLinearMul follow onnxruntime's x86 arithmetic, so they are held to its bits.)"""
    got, want = both(model, feeds)
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max(initial=0) <= (1 if off_by_one else 0), diff.max()
    assert np.count_nonzero(diff) <= math.ceil(off_by_one * diff.size), np.count_nonzero(diff)
    return got


def u8(*shape: int, lo: int = 0, hi: int = 256) -> Any:
    return RNG.integers(lo, hi, size=shape).astype(np.uint8)


def s8(*shape: int, lo: int = S8_WEIGHTS[0], hi: int = S8_WEIGHTS[1]) -> Any:
    return RNG.integers(lo, hi, size=shape).astype(np.int8)


def floats(*shape: int, lo: float = -2.0, hi: float = 2.0) -> Any:
    return RNG.uniform(lo, hi, size=shape).astype(f32)


def one(v: float, dtype: Any = f32) -> Any:
    return np.array(v, dtype)


# -- MatMulNBits ------------------------------------------------------------------------------
def pack(values: Any, bits: int) -> Any:
    """uint8 values < 2**bits along the last axis, packed low bits first."""
    per = 8 // bits
    v = values.reshape(*values.shape[:-1], -1, per).astype(np.uint8)
    out = np.zeros(v.shape[:-1], np.uint8)
    for i in range(per):
        out |= v[..., i] << np.uint8(i * bits)
    return out


def nbits_inputs(k: int, n: int, block: int, zp: str, bits: int = 4
                 ) -> tuple[list[tuple[str, Any] | None], Weights]:
    """B, scales and zero points for MatMulNBits (hand-packed), and the float weights
    ``[K, N]`` they stand for (float64)."""
    nb = -(-k // block)
    top = 1 << bits
    q = RNG.integers(0, top, size=(n, nb * block)).astype(np.uint8)
    q[:, k:] = 0
    scales = RNG.uniform(0.01, 0.2, size=(n, nb)).astype(f32)
    b = pack(q, bits).reshape(n, nb, block * bits // 8)
    zps: Any = None
    if zp == "packed":
        z = RNG.integers(0, top, size=(n, nb)).astype(np.uint8)
        z[0, 0], z[-1, -1] = 0, top - 1  # extreme zero points
        per_row = -(-nb * bits // 8)
        zfull = np.zeros((n, per_row * 8 // bits), np.uint8)
        zfull[:, :nb] = z
        zps = pack(zfull, bits).reshape(-1)
        zval = z.astype(np.float64)
    elif zp == "float":
        zps = RNG.uniform(0, top - 1, size=(n, nb)).astype(f32)
        zval = zps.astype(np.float64)
    else:
        zval = np.full((n, nb), float(top // 2))
    inputs: list[tuple[str, Any] | None] = [("b", b), ("scales", scales)]
    inputs.append(None if zps is None else ("zp", zps))
    return inputs, Weights(q[:, :k], zval, scales.astype(np.float64), block)


class Weights:
    """The float64 weights ``[K, N]`` that MatMulNBits' inputs stand for."""

    def __init__(self, q: Any, zero: Any, scales: Any, block: int) -> None:
        self.q, self.zero, self.scales, self.block = q, zero, scales, block

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.grouped(np.arange(self.q.shape[1]) // self.block)

    def grouped(self, group: Any) -> Any:
        """Row k of B in block ``group[k]`` (g_idx)."""
        return ((self.q - self.zero[:, group]) * self.scales[:, group]).T


def act_order(w: Weights, g_idx: Any) -> Any:
    grouped = w.grouped(g_idx)
    assert not np.allclose(grouped, np.asarray(w))  # the permutation matters
    return grouped


@pytest.mark.parametrize(("m", "k", "n", "block", "zp"), [
    ((1,), 64, 8, 16, "none"),           # one row
    ((3,), 40, 7, 16, "packed"),         # K not a multiple of the block, N odd
    ((2, 5), 130, 33, 32, "packed"),     # odd K tail, batched A
    ((4,), 256, 16, 64, "float"),        # zero points of A's type
    ((2,), 200, 5, 128, "packed"),       # one block and a tail
    ((1,), 512, 3, 256, "none"),
    ((0,), 64, 8, 32, "packed"),         # empty batch
])
def test_matmul_nbits_hand_packed(m: tuple[int, ...], k: int, n: int, block: int,
                                  zp: str) -> None:
    quant, w = nbits_inputs(k, n, block, zp)
    a = floats(*m, k)
    bias = floats(n)
    attrs = {"K": k, "N": n, "bits": 4, "block_size": block}
    model, feeds = node_model("MatMulNBits", [("a", a), *quant], attrs,
                              consts=("b", "scales", "zp"))
    got = close(model, feeds, rtol=1e-4, atol=1e-4)
    # and the weights they stand for, in float64
    np.testing.assert_allclose(got, a.astype(np.float64) @ np.asarray(w), rtol=1e-4,
                               atol=1e-4)
    model, feeds = node_model("MatMulNBits", [("a", a), *quant, None, ("bias", bias)],
                              attrs, consts=("b", "scales", "zp", "bias"))
    close(model, feeds, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("k", "block", "zp"), [(256, 32, "packed"), (100, 16, "none"),
                                                 (300, 128, "packed")])
def test_matmul_nbits_accuracy_level_4_computes_in_int8(k: int, block: int, zp: str) -> None:
    """accuracy_level 4: A quantized to int8 per block, as onnxruntime does -- its result
    departs from the float product by far more than the tolerance, and ours with it."""
    n = 40
    quant, w = nbits_inputs(k, n, block, zp)
    a = floats(4, k)
    model, feeds = node_model("MatMulNBits", [("a", a), *quant],
                              {"K": k, "N": n, "bits": 4, "block_size": block,
                               "accuracy_level": 4}, consts=("b", "scales", "zp"))
    got = close(model, feeds, rtol=1e-4, atol=1e-4)
    assert np.abs(got - a.astype(np.float64) @ np.asarray(w)).max() > 1e-2


@pytest.mark.parametrize("bits", [2, 8])
@pytest.mark.parametrize("level", [0, 4])
def test_matmul_nbits_other_widths(bits: int, level: int) -> None:
    k, n, block = 96, 6, 32
    quant, w = nbits_inputs(k, n, block, "packed", bits=bits)
    a = floats(3, k)
    model, feeds = node_model("MatMulNBits", [("a", a), *quant],
                              {"K": k, "N": n, "bits": bits, "block_size": block,
                               "accuracy_level": level}, consts=("b", "scales", "zp"))
    got = close(model, feeds, rtol=1e-4, atol=1e-4)
    if level == 0:
        np.testing.assert_allclose(got, a.astype(np.float64) @ np.asarray(w), rtol=1e-4,
                                   atol=1e-4)


@pytest.mark.parametrize("zp", ["none", "float", "packed"])
def test_matmul_nbits_g_idx(zp: str) -> None:
    """Act-order weights: g_idx gives each row of B its block. onnxruntime 1.2x reads packed
    uint8 zero points wrongly when g_idx is given (even g_idx = k // block_size gives another
    result than no g_idx), so that case is checked against the weights in float64 only."""
    k, n, block = 64, 5, 16
    quant, w = nbits_inputs(k, n, block, zp)
    g_idx = RNG.permutation(np.arange(k) // block).astype(np.int32)
    a = floats(2, k)
    model, feeds = node_model("MatMulNBits", [("a", a), *quant, ("g", g_idx)],
                              {"K": k, "N": n, "bits": 4, "block_size": block},
                              consts=("b", "scales", "zp", "g"))
    if zp != "packed":
        close(model, feeds, rtol=1e-4, atol=1e-4)
    # the weights by the documented rule: row k of B takes block g_idx[k]'s scale and zero
    np.testing.assert_allclose(ours(model, feeds), a.astype(np.float64) @ act_order(w, g_idx),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize(("k", "n", "block", "level"), [
    (128, 32, 32, 0), (96, 17, 16, 0), (256, 48, 128, 0), (128, 32, 32, 4), (160, 9, 32, 4)])
def test_matmul_nbits_from_onnxruntime_quantizer(symmetric: bool, k: int, n: int, block: int,
                                                 level: int) -> None:
    """A float MatMul quantized by onnxruntime's MatMulNBitsQuantizer."""
    quantizer = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    w = floats(k, n, lo=-1, hi=1)
    node = helper.make_node("MatMul", ["a", "w"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "a", TensorProto.FLOAT, ["M", k])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, ["M", n])], initializer=[numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    q = quantizer.MatMulNBitsQuantizer(model, block_size=block, is_symmetric=symmetric,
                                       accuracy_level=level)
    q.process()
    qmodel = q.model.model
    assert [nd.op_type for nd in qmodel.graph.node] == ["MatMulNBits"]
    for rows in (1, 5, 0):
        a = floats(rows, k)
        close(qmodel, {"a": a}, rtol=1e-4, atol=2e-4)


def test_matmul_nbits_refuses_bad_attributes() -> None:
    quant, _ = nbits_inputs(64, 4, 16, "none")
    for attrs in ({"bits": 3, "block_size": 16}, {"bits": 4, "block_size": 24}):
        model, _ = node_model("MatMulNBits", [("a", floats(1, 64)), *quant],
                              {"K": 64, "N": 4, **attrs}, consts=("b", "scales"))
        with pytest.raises(mi.MiniInferError, match="MatMulNBits"):
            mi.InferenceSession(model)
    model, _ = node_model("MatMulNBits", [("a", floats(1, 60)), *quant],
                          {"K": 64, "N": 4, "bits": 4, "block_size": 16},
                          consts=("b", "scales"))
    with pytest.raises(mi.MiniInferError, match="K is 64"):
        mi.InferenceSession(model)


# -- DynamicQuantizeMatMul, MatMulIntegerToFloat ------------------------------------------
@pytest.mark.parametrize(("a_range", "rows"), [((-3, 5), (4,)), ((0.5, 2), (1,)),
                                              ((-7, -1), (2, 3)), ((-1, 1), (0,))])
@pytest.mark.parametrize(("b_type", "per_column"), [(np.int8, False), (np.int8, True),
                                                   (np.uint8, True)])
def test_dynamic_quantize_matmul(a_range: tuple[float, float], rows: tuple[int, ...],
                                 b_type: Any, per_column: bool) -> None:
    k, n = 37, 11
    a = floats(*rows, k, lo=a_range[0], hi=a_range[1])
    info = np.iinfo(b_type)
    lo, hi = (info.min, info.max) if b_type == np.uint8 else (S8_WEIGHTS[0], S8_WEIGHTS[1] - 1)
    b = RNG.integers(lo, hi + 1, size=(k, n)).astype(b_type)
    b[0, 0], b[1, 0] = lo, hi  # the extreme weights
    scale = floats(n, lo=0.001, hi=0.02) if per_column else one(0.01)
    zp = (RNG.integers(info.min, info.max + 1, size=n).astype(b_type) if per_column
          else np.array(info.min if b_type == np.uint8 else 0, b_type))
    model, feeds = node_model("DynamicQuantizeMatMul",
                              [("a", a), ("b", b), ("s", scale), ("z", zp), ("bias", floats(n))],
                              consts=("b", "s", "z", "bias"))
    close(model, feeds)
    model, feeds = node_model("DynamicQuantizeMatMul", [("a", a), ("b", b), ("s", scale)],
                              consts=("b", "s"))
    close(model, feeds)


@pytest.mark.parametrize(("a_type", "b_type"), [(np.uint8, np.int8), (np.int8, np.int8),
                                                (np.uint8, np.uint8)])
def test_matmul_integer_to_float(a_type: Any, b_type: Any) -> None:
    k, n = 19, 9
    ai, bi = np.iinfo(a_type), np.iinfo(b_type)
    for rows in ((1,), (3, 2), (0,)):
        a = RNG.integers(ai.min, ai.max + 1, size=(*rows, k)).astype(a_type)
        lo, hi = (bi.min, bi.max + 1) if b_type == np.uint8 else S8_WEIGHTS
        b = RNG.integers(lo, hi, size=(k, n)).astype(b_type)
        inputs = [("a", a), ("b", b), ("sa", one(0.03)), ("sb", floats(n, lo=0.001, hi=0.1)),
                  ("za", np.array(ai.max, a_type)),
                  ("zb", RNG.integers(bi.min, bi.max + 1, size=n).astype(b_type)),
                  ("bias", floats(n))]
        model, feeds = node_model("MatMulIntegerToFloat", inputs,  # type: ignore[arg-type]
                                  consts=("b", "sa", "sb", "za", "zb", "bias"))
        close(model, feeds)
        model, feeds = node_model("MatMulIntegerToFloat", inputs[:4],  # type: ignore[arg-type]
                                  consts=("b", "sb"))
        close(model, feeds)


# -- QGemm ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("trans_a", "trans_b", "alpha"), [(0, 0, 1.0), (1, 0, 0.5),
                                                           (0, 1, 2.0), (1, 1, 1.0)])
@pytest.mark.parametrize("out", ["u8", "s8", "float"])
def test_qgemm(trans_a: int, trans_b: int, alpha: float, out: str) -> None:
    m, k, n = 5, 13, 7
    signed = out == "s8"  # onnxruntime's QGemm gives int8 only from int8 A
    make = s8 if signed else u8
    a = make(k, m) if trans_a else make(m, k)
    b = s8(n, k) if trans_b else s8(k, n)
    c = RNG.integers(-2000, 2000, size=(n,)).astype(np.int32)
    za = np.array(-3, np.int8) if signed else np.array(131, np.uint8)
    inputs: list[tuple[str, Any] | None] = [
        ("a", a), ("sa", one(0.02)), ("za", za), ("b", b),
        ("sb", floats(n, lo=0.005, hi=0.02)), ("zb", np.zeros(n, np.int8)), ("c", c)]
    if out != "float":
        dtype = np.uint8 if out == "u8" else np.int8
        inputs += [("sy", one(0.3)), ("zy", np.array(3 if out == "u8" else -120, dtype))]
    model, feeds = node_model("QGemm", inputs, {"transA": trans_a, "transB": trans_b,
                                                "alpha": alpha},
                              consts=("sb", "zb", "c", "sy", "zy", "b"))
    if out == "float":
        close(model, feeds, rtol=1e-5, atol=1e-4)
    else:
        got = equal(model, feeds)
        info = np.iinfo(got.dtype)
        assert got.min() == info.min or got.max() == info.max  # saturation is exercised


# -- QLinearAdd, QLinearMul -------------------------------------------------------------------
@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize(("dtype", "zps"), [(np.uint8, (0, 255, 128)), (np.uint8, (17, 3, 0)),
                                            (np.int8, (-128, 127, 0)),
                                            (np.int8, (5, -3, -128))])
@pytest.mark.parametrize(("sa", "sb"), [((2, 3, 4), (2, 3, 4)), ((2, 1, 5), (3, 1)),
                                        ((0, 4), (4,)), ((7,), ()), ((), (3, 7)),
                                        ((6, 1), (6, 9)), ((1, 9), (6, 9))])
def test_qlinear_binary(op: str, dtype: Any, zps: tuple[int, int, int],
                        sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max + 1, size=sa).astype(dtype)
    b = RNG.integers(info.min, info.max + 1, size=sb).astype(dtype)
    c_scale = 0.05 if op == "QLinearAdd" else 0.4
    inputs = [("a", a), ("sa", one(0.031)), ("za", np.array(zps[0], dtype)), ("b", b),
              ("sb", one(0.017)), ("zb", np.array(zps[1], dtype)), ("sc", one(c_scale)),
              ("zc", np.array(zps[2], dtype))]
    model, feeds = node_model(op, inputs,  # type: ignore[arg-type]
                              consts=("sa", "za", "sb", "zb", "sc", "zc"))
    equal(model, feeds)


# -- table-driven unary operators ---------------------------------------------------------------
@pytest.mark.parametrize(("op", "attrs"), [("QLinearSigmoid", {}),
                                           ("QLinearLeakyRelu", {"alpha": 0.1}),
                                           ("QLinearLeakyRelu", {})])
@pytest.mark.parametrize(("dtype", "zx", "zy", "sy"), [
    (np.uint8, 128, 0, 1 / 256), (np.uint8, 0, 255, 0.01), (np.int8, -128, -128, 1 / 256),
    (np.int8, 127, 0, 0.05)])
def test_qlinear_unary(op: str, attrs: dict[str, Any], dtype: Any, zx: int, zy: int,
                       sy: float) -> None:
    every = np.arange(256, dtype=np.uint8).view(dtype).reshape(4, 8, 8)  # all 256 values
    inputs = [("x", every), ("sx", one(0.05)), ("zx", np.array(zx, dtype)), ("sy", one(sy)),
              ("zy", np.array(zy, dtype))]
    model, feeds = node_model(op, inputs, attrs,  # type: ignore[arg-type]
                              consts=("sx", "zx", "sy", "zy"))
    equal(model, feeds)


@pytest.mark.parametrize(("dtype", "zy"), [(np.uint8, 0), (np.int8, -128)])
@pytest.mark.parametrize(("shape", "axis", "opset"), [((3, 10), -1, 13), ((2, 3, 7), 1, 13),
                                                      ((2, 3, 5), 1, 11), ((1, 1), -1, 13)])
def test_qlinear_softmax(dtype: Any, zy: int, shape: tuple[int, ...], axis: int,
                         opset: int) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)
    inputs = [("x", x), ("sx", one(0.08)), ("zx", np.array(info.max // 2, dtype)),
              ("sy", one(1 / 256)), ("zy", np.array(zy, dtype))]
    model, feeds = node_model("QLinearSoftmax", inputs,  # type: ignore[arg-type]
                              {"axis": axis, "opset": opset},
                              consts=("sx", "zx", "sy", "zy"))
    equal(model, feeds, off_by_one=0.05)


# -- pooling ------------------------------------------------------------------------------------
@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [3, 3]},
    {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinear_average_pool(channels_last: int, attrs: dict[str, Any], dtype: Any) -> None:
    info = np.iinfo(dtype)
    shape = (2, 7, 9, 3) if channels_last else (2, 3, 7, 9)
    x = RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)
    inputs = [("x", x), ("sx", one(0.1)), ("zx", np.array(info.min + 7, dtype)),
              ("sy", one(0.07)), ("zy", np.array(info.max - 100, dtype))]
    model, feeds = node_model("QLinearAveragePool", inputs,  # type: ignore[arg-type]
                              {**attrs, "channels_last": channels_last},
                              consts=("sx", "zx", "sy", "zy"))
    equal(model, feeds, off_by_one=0.02)


@pytest.mark.parametrize("channels_last", [0, 1])
@pytest.mark.parametrize(("dtype", "zx", "zy"), [(np.uint8, 0, 255), (np.uint8, 130, 7),
                                                 (np.int8, -128, 127), (np.int8, 3, -5)])
def test_qlinear_global_average_pool(channels_last: int, dtype: Any, zx: int, zy: int) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max + 1, size=(2, 5, 6, 4)).astype(dtype)
    inputs = [("x", x), ("sx", one(0.1)), ("zx", np.array(zx, dtype)), ("sy", one(0.03)),
              ("zy", np.array(zy, dtype))]
    model, feeds = node_model("QLinearGlobalAveragePool", inputs,  # type: ignore[arg-type]
                              {"channels_last": channels_last},
                              consts=("sx", "zx", "sy", "zy"))
    equal(model, feeds)


# -- QLinearConcat ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("axis", [1, -1, 0])
def test_qlinear_concat(dtype: Any, axis: int) -> None:
    info = np.iinfo(dtype)
    shapes: list[tuple[int, ...]] = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if d != axis % 3 else s + i for d, s in enumerate(sh))
              for i, sh in enumerate(shapes)]
    xs = [RNG.integers(info.min, info.max + 1, size=s).astype(dtype) for s in shapes]
    params = [(0.1, info.min), (0.25, info.max), (0.1, info.min + 3)]  # first: as Y's
    inputs: list[tuple[str, Any] | None] = [("sy", one(0.1)), ("zy", np.array(info.min, dtype))]
    consts = ["sy", "zy"]
    for i, (x, (s, z)) in enumerate(zip(xs, params, strict=True)):
        inputs += [(f"x{i}", x), (f"s{i}", one(s)), (f"z{i}", np.array(z, dtype))]
        consts += [f"s{i}", f"z{i}"]
    model, feeds = node_model("QLinearConcat", inputs, {"axis": axis}, consts=tuple(consts))
    equal(model, feeds)


# -- float16, engine files -------------------------------------------------------------------
def test_matmul_nbits_float16() -> None:
    k, n, block = 96, 10, 32
    quant, w = nbits_inputs(k, n, block, "packed")
    quant[1] = ("scales", quant[1][1].astype(np.float16))  # type: ignore[index]
    a = floats(3, k).astype(np.float16)
    model, feeds = node_model("MatMulNBits", [("a", a), *quant],
                              {"K": k, "N": n, "bits": 4, "block_size": block},
                              consts=("b", "scales", "zp"))
    got = close(model, feeds, rtol=2e-2, atol=2e-2)
    assert got.dtype == np.float16


def test_engine_file_round_trip() -> None:
    """Built, written, read back and run: the com.microsoft plugins serialize as any other."""
    k, n, block = 64, 6, 16
    quant, _ = nbits_inputs(k, n, block, "packed")
    model, feeds = node_model("MatMulNBits", [("a", floats(2, k)), *quant],
                              {"K": k, "N": n, "bits": 4, "block_size": block,
                               "accuracy_level": 4}, consts=("b", "scales", "zp"))
    engine = mi.Builder().build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu"))
    loaded = mi.Runtime().deserialize_engine(engine.serialize())
    with loaded.create_execution_context() as ctx:
        got = ctx.execute(feeds)
    got = got[0] if isinstance(got, (list, tuple)) else next(iter(got.values()))
    np.testing.assert_allclose(got, ort_run(model, feeds), rtol=1e-4, atol=2e-4)


# -- more shapes -------------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "attrs"), [
    ((2, 3, 11), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((1, 2, 5, 6, 7), {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2]}),
    ((0, 3, 6, 6), {"kernel_shape": [2, 2]}),
])
def test_qlinear_average_pool_1d_3d_and_empty(shape: tuple[int, ...],
                                              attrs: dict[str, Any]) -> None:
    x = u8(*shape)
    inputs = [("x", x), ("sx", one(0.1)), ("zx", np.array(5, np.uint8)), ("sy", one(0.05)),
              ("zy", np.array(100, np.uint8))]
    model, feeds = node_model("QLinearAveragePool", inputs, attrs,  # type: ignore[arg-type]
                              consts=("sx", "zx", "sy", "zy"))
    equal(model, feeds, off_by_one=0.02)
    if len(shape) == 3:
        model, feeds = node_model("QLinearGlobalAveragePool", inputs,  # type: ignore[arg-type]
                                  consts=("sx", "zx", "sy", "zy"))
        equal(model, feeds)


@pytest.mark.parametrize("c_shape", [(5, 7), (1, 7), ()])
def test_qgemm_bias_shapes_and_per_tensor_b(c_shape: tuple[int, ...]) -> None:
    a, b = u8(5, 9), s8(9, 7)
    c = RNG.integers(-3000, 3000, size=c_shape).astype(np.int32)
    inputs: list[tuple[str, Any] | None] = [
        ("a", a), ("sa", one(0.02)), ("za", np.array(255, np.uint8)), ("b", b),
        ("sb", one(0.01)), ("zb", np.array(-128, np.int8)), ("c", c), ("sy", one(0.2)),
        ("zy", np.array(0, np.uint8))]
    model, feeds = node_model("QGemm", inputs, consts=("b", "sb", "zb", "c", "sy", "zy"))
    equal(model, feeds)


def test_qlinear_concat_one_input_and_matmul_nbits_one_row_vector() -> None:
    x = s8(3, 4)
    model, feeds = node_model(
        "QLinearConcat", [("sy", one(0.2)), ("zy", np.array(3, np.int8)), ("x", x),
                          ("sx", one(0.1)), ("zx", np.array(-3, np.int8))], {"axis": 0},
        consts=("sy", "zy", "sx", "zx"))
    equal(model, feeds)
    quant, w = nbits_inputs(48, 5, 16, "packed")
    a = floats(48)  # 1-D A: Y is [N]
    model, feeds = node_model("MatMulNBits", [("a", a), *quant],
                              {"K": 48, "N": 5, "bits": 4, "block_size": 16},
                              consts=("b", "scales", "zp"))
    got = close(model, feeds, rtol=1e-4, atol=1e-4)
    assert got.shape == (5,)


@pytest.mark.parametrize("op", ["AveragePool", "MaxPool", "LpPool"])
def test_float_pooling_of_an_empty_batch(op: str) -> None:
    """cpu_basic's own pooling kernel (which QLinearAveragePool runs; the engine may pick
    cpu_native's) on N = 0."""
    from cpu_support import execute, make_plugin

    x = np.zeros((0, 3, 6, 6), f32)
    model, feeds = node_model(op, [("x", x)], {"kernel_shape": [2, 2]}, domain="")
    got = execute(make_plugin(op, {"kernel_shape": [2, 2]}, 18), [x])[0]
    want = ort_run(model, feeds)
    assert got.shape == want.shape == (0, 3, 5, 5) and got.dtype == want.dtype


def test_a_decoder_quantized_to_4_bits_builds_and_runs() -> None:
    """A small causal decoder (attention from MatMul/Softmax, a SiLU MLP, RMS norm from
    standard operators), its MatMuls quantized to 4 bits by onnxruntime's
    MatMulNBitsQuantizer, as Olive does for CPU: built for any sequence length."""
    quantizer = pytest.importorskip("onnxruntime.quantization.matmul_nbits_quantizer")
    d, hidden, layers, vocab = 64, 128, 2, 50
    rng = np.random.default_rng(7)
    inits: list[Any] = []

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    nodes: list[Any] = []

    def add(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def rms(x: str, tag: str) -> str:
        sq = add("Mul", [x, x], f"{tag}_sq")
        mean = add("ReduceMean", [sq, const(f"{tag}_ax", np.array([-1]))], f"{tag}_m")
        root = add("Sqrt", [add("Add", [mean, const(f"{tag}_eps", f32(1e-5))], f"{tag}_e")],
                   f"{tag}_r")
        return add("Mul", [add("Div", [x, root], f"{tag}_n"),
                           const(f"{tag}_g", rng.uniform(0.8, 1.2, d).astype(f32))], tag)

    def linear(x: str, k: int, n: int, name: str) -> str:
        w = const(f"{name}_w", (rng.standard_normal((k, n)) / np.sqrt(k)).astype(f32))
        return add("MatMul", [x, w], name)

    emb = const("emb", rng.standard_normal((vocab, d)).astype(f32))
    x = add("Gather", [emb, "ids"], "x0")
    mask = const("mask", np.triu(np.full((64, 64), -1e9, f32), 1))
    seq = add("Shape", [x], "shape", start=1, end=2)
    zero = const("zero", np.array([0]))
    causal = add("Slice", [add("Slice", [mask, zero, seq, zero], "mask_r"), zero, seq,
                           const("one", np.array([1]))], "causal")
    for k in range(layers):
        h = rms(x, f"ln{k}")
        q, kk, v = (linear(h, d, d, f"{p}{k}") for p in "qkv")
        scores = add("MatMul", [q, add("Transpose", [kk], f"kt{k}", perm=[0, 2, 1])],
                     f"s{k}")
        scores = add("Add", [add("Mul", [scores, const(f"sc{k}", f32(d ** -0.5))],
                                 f"ss{k}"), causal], f"sm{k}")
        att = add("MatMul", [add("Softmax", [scores], f"p{k}", axis=-1), v], f"att{k}")
        x = add("Add", [x, linear(att, d, d, f"o{k}")], f"res{k}")
        h = rms(x, f"ln2{k}")
        up = linear(h, d, hidden, f"up{k}")
        act = add("Mul", [up, add("Sigmoid", [up], f"sg{k}")], f"silu{k}")
        x = add("Add", [x, linear(act, hidden, d, f"down{k}")], f"res2{k}")
    logits = linear(rms(x, "lnf"), d, vocab, "logits")
    graph = helper.make_graph(
        nodes, "decoder", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, "S"])],
        [helper.make_tensor_value_info(logits, TensorProto.FLOAT, [1, "S", vocab])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    q = quantizer.MatMulNBitsQuantizer(model, block_size=32, is_symmetric=False,
                                       accuracy_level=4)
    q.process()
    qmodel = q.model.model
    ops = [n.op_type for n in qmodel.graph.node]
    assert ops.count("MatMulNBits") == 6 * layers + 1 and "MatMul" in ops  # q @ k^T stays
    session = mi.InferenceSession(qmodel)
    for length in (1, 7, 33):
        ids = rng.integers(0, vocab, size=(1, length))
        got = session.run(None, {"ids": ids})[0]
        want = ort_run(qmodel, {"ids": ids})
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-5)


# -- what is refused at build time --------------------------------------------------------------
@pytest.mark.parametrize(("op", "inputs", "match"), [
    ("QLinearAdd", [("a", u8(2, 3)), ("sa", floats(3, lo=0.1, hi=1)), ("za", u8(1)),
                    ("b", u8(2, 3)), ("sb", one(0.1)), ("zb", u8(1)), ("sc", one(0.1))],
     "A_scale has 3 values"),
    ("QLinearSigmoid", [("x", u8(2, 3)), ("sx", one(0.1)), ("zx", u8(2)), ("sy", one(0.1))],
     "X_zero_point has 2 values"),
    ("QLinearConcat", [("sy", one(0.1)), ("zy", u8(1)), ("x", u8(2, 3)),
                       ("sx", floats(2, lo=0.1, hi=1)), ("zx", u8(1))], "X_scale of input 2"),
    ("MatMulNBits", [("a", floats(2, 64)), ("b", u8(4, 4, 8)), ("s", floats(4, 3))],
     "scales has 12 values"),
])
def test_unsupported_quantization_is_a_build_error(op: str, inputs: list[Any],
                                                   match: str) -> None:
    attrs = ({"axis": 1} if op == "QLinearConcat" else
             {"K": 64, "N": 4, "bits": 4, "block_size": 16} if op == "MatMulNBits" else {})
    model, _ = node_model(op, inputs, attrs,
                          consts=tuple(name for name, _ in inputs[1:] if name != "x"))
    with pytest.raises(mi.BuildError, match=match):
        mi.InferenceSession(model)


def test_weights_fed_at_run_time_are_not_kept() -> None:
    """What the kernels keep of constant weights is never reused for weights fed as inputs,
    read-only or not."""
    k, n = 24, 6
    a = floats(3, k)
    session = None
    for _ in range(3):
        b = s8(k, n)
        for writable in (True, False):
            b.setflags(write=writable)
            model, feeds = node_model("DynamicQuantizeMatMul",
                                      [("a", a), ("b", b), ("s", one(0.01))], consts=("s",))
            session = session or mi.InferenceSession(model)
            np.testing.assert_allclose(session.run(None, feeds)[0], ort_run(model, feeds),
                                       rtol=1e-5, atol=1e-5)


# -- com.microsoft QuantizeLinear / DequantizeLinear ----------------------------------------------
@pytest.mark.parametrize(("dtype", "axis"), [(np.uint16, None), (np.int16, 1), (np.int8, 0),
                                             (np.uint8, -1)])
def test_com_microsoft_quantize_dequantize(dtype: Any, axis: int | None) -> None:
    """What onnxruntime's QDQ tools write with UseQDQContribOps (16-bit activations)."""
    info = np.iinfo(dtype)
    full = 3 * (int(info.max) - int(info.min))  # |x / scale| to 1.5 ranges: saturates
    x = floats(3, 4, 5, lo=-full, hi=full)
    shape = () if axis is None else (x.shape[axis],)
    scale = RNG.uniform(0.5, 2, size=shape).astype(f32)
    zp = RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)
    attrs = {} if axis is None else {"axis": axis}
    model, feeds = node_model("QuantizeLinear", [("x", x), ("s", scale), ("z", zp)], attrs,
                              consts=("s", "z"))
    q = equal(model, feeds)
    assert q.dtype == dtype and (q == info.min).any() and (q == info.max).any()
    model, feeds = node_model("DequantizeLinear", [("q", q), ("s", scale), ("z", zp)], attrs,
                              consts=("s", "z"))
    close(model, feeds)


def test_a_qdq_model_with_16_bit_activations_from_quantize_static() -> None:
    """onnxruntime's quantize_static, QDQ format, uint16 activations and int8 weights: the
    com.microsoft QuantizeLinear/DequantizeLinear it writes around a Conv."""
    quantization = pytest.importorskip("onnxruntime.quantization")
    import tempfile

    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])],
        initializer=[numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(f32)
                                             * f32(0.3), "w"),
                     numpy_helper.from_array(rng.standard_normal(8).astype(f32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    batches = iter([{"x": rng.standard_normal((1, 3, 8, 8)).astype(f32)} for _ in range(8)])

    class Reader(quantization.CalibrationDataReader):  # type: ignore[misc]
        def get_next(self) -> dict[str, Any] | None:
            return next(batches, None)

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "f.onnx", Path(tmp) / "q.onnx"
        onnx.save(model, src)
        quantization.quantize_static(
            src, dst, Reader(), quant_format=quantization.QuantFormat.QDQ,
            activation_type=quantization.QuantType.QUInt16,
            weight_type=quantization.QuantType.QInt8,
            extra_options={"UseQDQContribOps": True})
        qmodel = onnx.load(dst)
    assert {(n.domain, n.op_type) for n in qmodel.graph.node} >= {
        (MS, "QuantizeLinear"), (MS, "DequantizeLinear")}
    x = rng.standard_normal((1, 3, 8, 8)).astype(f32)
    close(qmodel, {"x": x}, rtol=1e-6, atol=1e-6)
