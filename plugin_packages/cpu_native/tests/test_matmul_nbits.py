"""MatMulNBits' compiled 4-bit GEMM (``_qnbits.c`` through :mod:`mini_infer_cpu_native._qnbits`,
the plugin in ``nbits.py``): one-node models against onnxruntime (which defines the operator)
at block sizes 16 to 256, with and without zero points and bias, K off the blocks, N off the
panels, one row, no rows, accuracy_level 0 (float compute) and 4 (int8 compute); the packing
against its NumPy inverse; the kernels of every ISA this CPU runs against each other bit for
bit; the engine saved with its packed weights and run in another process."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import _qnbits, nbits
from onnx import TensorProto, helper, numpy_helper
from quant_support import each_isa, run_saved_engine

import mini_infer_core as mi
from mini_infer_core.threads import set_num_threads

RNG = np.random.default_rng(25)
f32 = np.float32


@pytest.fixture(autouse=True)
def _seeded(request: pytest.FixtureRequest) -> None:
    """Each test's data from its own name: the same whichever tests ran before it."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.name.encode()))


@pytest.fixture
def compiled(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    """How often the plugin ran the compiled kernel (a test fails if NumPy took over)."""
    return count_calls(nbits, "run_nbits", "products")


@pytest.fixture(params=list(_qnbits.ISAS))
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every kernel of the 4-bit GEMM this CPU can run."""
    yield from each_isa(request.param, _qnbits.nbits_supported, _qnbits.use_nbits_isa,
                        "4-bit GEMM")


def _pack_nibbles(values: np.ndarray) -> np.ndarray:
    """uint8 values < 16 along the last axis, two per byte, low first."""
    v = values.reshape(*values.shape[:-1], -1, 2).astype(np.uint8)
    return (v[..., 0] | (v[..., 1] << 4)).astype(np.uint8)


def _quantized(k: int, n: int, block: int, zp: str) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """B, scales and zero points (``zp``: none, packed uint8, float) as MatMulNBits takes
    them, and the float64 weights ``[K, N]`` they stand for."""
    nb = -(-k // block)
    q = RNG.integers(0, 16, size=(n, nb * block)).astype(np.uint8)
    scales = RNG.uniform(0.01, 0.2, size=(n, nb)).astype(f32)
    inputs = {"b": _pack_nibbles(q).reshape(n, nb, block // 2), "scales": scales}
    if zp == "packed":
        z = RNG.integers(0, 16, size=(n, nb)).astype(np.uint8)
        z[0, 0], z[-1, -1] = 0, 15  # extreme zero points
        zfull = np.zeros((n, 2 * -(-nb // 2)), np.uint8)
        zfull[:, :nb] = z
        inputs["zp"] = _pack_nibbles(zfull).reshape(-1)
        zval = z.astype(np.float64)
    elif zp == "float":
        inputs["zp"] = RNG.uniform(0, 15, size=(n, nb)).astype(f32)
        zval = inputs["zp"].astype(np.float64)
    else:
        zval = np.full((n, nb), 8.0)
    group = np.arange(k) // block
    w = ((q[:, :k] - zval[:, group]) * scales.astype(np.float64)[:, group]).T
    return inputs, w


def _model(k: int, n: int, block: int, consts: dict[str, np.ndarray], *, level: int = 0,
           bias: np.ndarray | None = None, g_idx: np.ndarray | None = None,
           bits: int = 4) -> onnx.ModelProto:
    """One MatMulNBits node over A ``["M", K]``, every other input a constant."""
    inits = dict(consts)
    names = ["a", "b", "scales", "zp" if "zp" in consts else ""]
    if g_idx is not None:
        names.append("g")
        inits["g"] = g_idx
    if bias is not None:
        names += [""] * (5 - len(names)) + ["bias"]
        inits["bias"] = bias
    node = helper.make_node("MatMulNBits", names, ["y"], domain="com.microsoft", K=k, N=n,
                            bits=bits, block_size=block, accuracy_level=level)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["M", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", n])],
        [numpy_helper.from_array(v, name) for name, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    return model


def _ort(model: onnx.ModelProto, a: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    out: np.ndarray = sess.run(None, {"a": a})[0]
    return out


def _floats(*shape: int) -> np.ndarray:
    return RNG.uniform(-1, 1, size=shape).astype(f32)


@pytest.mark.parametrize("level", [0, 4])
@pytest.mark.parametrize("zp", ["none", "packed"])
@pytest.mark.parametrize("block", [16, 32, 64, 128, 256])
def test_against_onnxruntime(block: int, zp: str, level: int,
                             compiled: dict[str, int]) -> None:
    """K with a partial last block (and, for blocks of 16, one of 8 values), N off the
    16-column panels, with and without bias; M of one row (a decoder's step), a few rows
    (the 8-row and 4-row tiles and their tails), and none."""
    k = 2 * block + 24 if block > 16 else 3 * block + 8
    n = 37
    consts, w = _quantized(k, n, block, zp)
    bias = _floats(n)
    for with_bias in (False, True):
        model = _model(k, n, block, consts, level=level, bias=bias if with_bias else None)
        sess = mi.InferenceSession(model, device="cpu")
        for m in (1, 13, 0):
            a = _floats(m, k)
            got = sess.run(None, {"a": a})[0]
            want = _ort(model, a)
            assert got.shape == want.shape == (m, n)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            if level == 0:  # and the weights they stand for, in float64
                ref = a.astype(np.float64) @ w + (bias if with_bias else 0)
                np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    assert compiled["products"] >= 4  # m = 0 returns before the kernel's work


@pytest.mark.parametrize("level", [0, 4])
@pytest.mark.parametrize(("k", "n", "block"), [(5, 3, 16), (16, 16, 16), (33, 1, 32)])
def test_tiny_shapes(k: int, n: int, block: int, level: int, compiled: dict[str, int]) -> None:
    """K below one group of 8, one whole block, N of one partial panel, one whole, one
    column."""
    consts, _ = _quantized(k, n, block, "packed")
    model = _model(k, n, block, consts, level=level, bias=_floats(n))
    sess = mi.InferenceSession(model, device="cpu")
    for m in (1, 6):
        a = _floats(m, k)
        np.testing.assert_allclose(sess.run(None, {"a": a})[0], _ort(model, a), rtol=1e-4,
                                   atol=1e-4)
    assert compiled["products"] == 2


def test_int8_compute_departs_from_float_as_onnxruntime_does(compiled: dict[str, int]) -> None:
    """accuracy_level 4 rounds A to int8 per block: the result is onnxruntime's int8 one,
    which differs from the float product by far more than the tolerance."""
    k, n, block = 256, 48, 32
    consts, w = _quantized(k, n, block, "packed")
    a = _floats(6, k)
    model = _model(k, n, block, consts, level=4)
    got = mi.InferenceSession(model, device="cpu").run(None, {"a": a})[0]
    np.testing.assert_allclose(got, _ort(model, a), rtol=1e-4, atol=1e-4)
    assert np.abs(got - a.astype(np.float64) @ w).max() > 1e-2
    assert compiled["products"] == 1


@pytest.mark.parametrize("level", [0, 4])
def test_zero_points_of_a_type(level: int, compiled: dict[str, int]) -> None:
    """float zero points (onnxruntime's float path, at either level)."""
    k, n, block = 96, 21, 32
    consts, w = _quantized(k, n, block, "float")
    a = _floats(5, k)
    model = _model(k, n, block, consts, level=level)
    got = mi.InferenceSession(model, device="cpu").run(None, {"a": a})[0]
    np.testing.assert_allclose(got, _ort(model, a), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    assert compiled["products"] == 1


def test_batched_a_and_threads(compiled: dict[str, int]) -> None:
    """A of rank 3 (its leading axes are rows), the same at 1 and 2 threads bit for bit."""
    k, n, block = 160, 70, 32
    consts, _ = _quantized(k, n, block, "packed")
    node_model = _model(k, n, block, consts)
    node_model.graph.input[0].CopyFrom(helper.make_tensor_value_info(
        "a", TensorProto.FLOAT, ["B", "M", k]))
    node_model.graph.output[0].CopyFrom(helper.make_tensor_value_info(
        "y", TensorProto.FLOAT, ["B", "M", n]))
    a = _floats(3, 11, k)
    want = _ort(node_model, a)
    outs = []
    for threads in (1, 2):
        set_num_threads(threads)
        try:
            outs.append(mi.InferenceSession(node_model, device="cpu").run(None, {"a": a})[0])
        finally:
            set_num_threads(None)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_allclose(outs[0], want, rtol=1e-4, atol=1e-4)
    assert compiled["products"] == 2


def test_pack_and_unpack() -> None:
    """The panels hold every value once, where the NumPy inverse finds it; the padded last
    panel is the partial one's bytes with zero columns."""
    for n, k, block in ((37, 100, 16), (16, 64, 64), (5, 256, 256), (33, 40, 32)):
        kb = -(-k // block)
        b = RNG.integers(0, 256, size=(n, kb, block // 2)).astype(np.uint8)
        packed = _qnbits.pack_q4(b, n, kb, block)
        assert packed.shape == b.shape and packed.dtype == np.uint8
        np.testing.assert_array_equal(_qnbits.unpack_q4(packed, n, kb, block), b)
        # column j, value k: group k // 8 of its panel, byte j * 4 + k % 4, nibble k % 8 // 4
        flat, j, kk = packed.reshape(-1), n - 1, k - 1
        j0, w = j - j % 16, min(16, n - (j - j % 16))
        byte = flat[j0 * kb * block // 2 + (kk // 8) * w * 4 + (j - j0) * 4 + kk % 4]
        want = (b[j, kk // block, (kk % block) // 2] >> (4 * (kk % 2))) & 15
        assert (byte >> (4 * (kk % 8 // 4))) & 15 == want
        last = _qnbits.last_panel(packed, n, kb, block)
        assert (last is None) == (n % 16 == 0)
        if last is not None:
            assert not last[:, n % 16:].any()


@pytest.mark.parametrize("int8", [False, True])
def test_kernels_agree_bit_for_bit(isa: str, int8: bool) -> None:
    """Each ISA's kernels give the plain C kernels' floats exactly (the same fma chains and
    exact integer sums), rows off every tile, N off the panels, bias and zero points."""
    for m, k, n, block, zp in ((1, 72, 37, 32, "packed"), (19, 130, 50, 16, "none"),
                               (9, 256, 16, 128, "float"), (3, 40, 5, 16, "packed"),
                               (2, 5, 3, 16, "none"), (6, 16, 17, 16, "packed"),
                               (40, 300, 100, 256, "packed")):
        consts, _ = _quantized(k, n, block, zp)
        kb = -(-k // block)
        packed = _qnbits.pack_q4(consts["b"], n, kb, block)
        blast = _qnbits.last_panel(packed, n, kb, block)
        sp = _qnbits.panel_params(consts["scales"], n, kb)
        zp_p = None
        if zp != "none":
            zval = consts["zp"] if zp == "float" else np.stack(
                [consts["zp"] & 15, consts["zp"] >> 4], axis=1).reshape(n, -1)[:, :kb]
            zp_p = _qnbits.panel_params(zval.astype(f32), n, kb)
        a, bias = _floats(m, k) * 3, _floats(n)
        outs = []
        for use in (isa, "plain"):
            _qnbits.use_nbits_isa(use)
            c = np.full((m, n), np.nan, f32)
            _qnbits.run_nbits(_qnbits.nbits_args(a, packed, blast, sp, zp_p, bias, c, kb=kb,
                                                 block=block, int8=int8))
            outs.append(c)
        _qnbits.use_nbits_isa(isa)
        assert not np.isnan(outs[0]).any()
        np.testing.assert_array_equal(outs[0], outs[1])


def test_engine_keeps_the_packed_weights(tmp_path: Path) -> None:
    """The build repacks B (same shape and dtype) and the engine file stores it so: another
    process runs it to the same floats."""
    k, n, block = 96, 24, 32
    consts, _ = _quantized(k, n, block, "packed")
    model = _model(k, n, block, consts, bias=_floats(n))
    a = _floats(4, k)
    here = mi.InferenceSession(model, device="cpu").run(None, {"a": a})[0]
    np.testing.assert_array_equal(run_saved_engine(model, "a", a, tmp_path), here)
    np.testing.assert_allclose(here, _ort(model, a), rtol=1e-4, atol=1e-4)


def test_g_idx(compiled: dict[str, int]) -> None:
    """g_idx that reorders nothing: the compiled kernel; one that does: cpu_basic's
    dequantized product, by the documented rule (row k of B takes block g_idx[k]'s scale)."""
    k, n, block = 64, 20, 16
    consts, w = _quantized(k, n, block, "none")
    a = _floats(3, k)
    plain = np.arange(k, dtype=np.int32) // block
    got = mi.InferenceSession(_model(k, n, block, consts, g_idx=plain), device="cpu").run(
        None, {"a": a})[0]
    np.testing.assert_allclose(got, a.astype(np.float64) @ w, rtol=1e-4, atol=1e-4)
    assert compiled["products"] == 1
    g_idx = RNG.permutation(plain).astype(np.int32)
    model = _model(k, n, block, consts, g_idx=g_idx)
    engine = mi.load(model, config=mi.BuilderConfig(device="cpu"))
    assert not engine.nodes[0].plugin.hidden.get("__qpacked__")  # type: ignore[attr-defined]
    got = mi.InferenceSession(model, device="cpu").run(None, {"a": a})[0]
    np.testing.assert_allclose(got, _ort(model, a), rtol=1e-4, atol=1e-4)
    assert compiled["products"] == 1


def test_other_widths_are_cpu_basics(compiled: dict[str, int]) -> None:
    """8-bit weights: cpu_basic's dequantized product (the compiled kernel is 4-bit only)."""
    k, n, block = 64, 9, 32
    q = RNG.integers(0, 256, size=(n, 2, block)).astype(np.uint8)
    scales = RNG.uniform(0.01, 0.1, size=(n, 2)).astype(f32)
    model = _model(k, n, block, {"b": q, "scales": scales}, bits=8)
    a = _floats(2, k)
    got = mi.InferenceSession(model, device="cpu").run(None, {"a": a})[0]
    np.testing.assert_allclose(got, _ort(model, a), rtol=1e-4, atol=1e-4)
    assert compiled["products"] == 0


def test_refuses_unsupported_attributes() -> None:
    """An unsupported width, block size or accuracy level, or an attribute the operator does
    not have, is a build error naming the node."""
    consts, _ = _quantized(64, 4, 16, "none")
    for attrs, says in (({"bits": 3}, "bits=3"), ({"block_size": 24}, "block_size=24"),
                        ({"accuracy_level": 7}, "accuracy_level"), ({"foo": 1}, "'foo'")):
        model = _model(64, 4, 16, consts)
        node = model.graph.node[0]
        node.name = "proj"
        for name, value in attrs.items():
            found = [x for x in node.attribute if x.name == name]
            if found:
                found[0].i = value
            else:
                node.attribute.append(helper.make_attribute(name, value))
        with pytest.raises(mi.MiniInferError, match="proj") as info:
            mi.InferenceSession(model, device="cpu")
        assert says in str(info.value)


def test_float16(compiled: dict[str, int]) -> None:
    """float16 A, scales and output: computed in float32 on the kernel, rounded once."""
    k, n, block = 96, 20, 32
    consts, _ = _quantized(k, n, block, "none")
    consts["scales"] = consts["scales"].astype(np.float16)
    model = _model(k, n, block, consts)
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    a = _floats(3, k).astype(np.float16)
    got = mi.InferenceSession(model, device="cpu").run(None, {"a": a})[0]
    want = _ort(model, a)
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_allclose(got.astype(f32), want.astype(f32), rtol=2e-3, atol=2e-3)
    assert compiled["products"] == 1
