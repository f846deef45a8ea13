"""The 8-bit elementwise kernels of ``_qelt.c`` on tensors large enough for the thread pool (64
KiB and more), at 1 and 2 threads, with odd sizes (a last partial 64-byte piece): the table
lookups (QLinearLookup and QLinearSigmoid: the AVX-512 VBMI loop where the integer GEMM's
level is AVX-512 VNNI, the plain loop below it), the per-channel tables
(QLinearChannelLookup, NHWC and NCHW) and QLinearAdd/QLinearMul (rows of the outer index, or
pieces of one row; AVX-512 where the integer GEMM's level is AVX-512 VNNI, the compiler's
vectorized loops below it). Oracles: the tables' definition (NumPy indexing), onnxruntime
(within one quantum) and cpu_basic's NumPy kernels (bit for bit)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import qelementwise
from mini_infer_cpu_plugins.ops import contrib_qlinear as basic
from onnx import helper, numpy_helper
from quant_support import ELEM, S8, U8

import mini_infer_core as mi
from mini_infer_core.plugin import PluginFieldCollection, TensorFormat
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.testing import plugin_kit

RNG = np.random.default_rng(2531)
F = TensorFormat


def _ints(dtype: Any, *shape: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def _plugin(op: str) -> Any:
    rec = mi.get_plugin_registry().get_creator(op, "1", "mini_infer.cpu_native")
    assert rec is not None, op
    return adapter.create(rec.creator, "n", PluginFieldCollection([]))


def _contrib(op: str, names: list[str], values: list[np.ndarray], feeds: int) -> onnx.ModelProto:
    node = helper.make_node(op, names, ["y"], domain="com.microsoft")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, ELEM[v.dtype], list(v.shape))
                      for n, v in zip(names[:feeds], values[:feeds], strict=True)],
        [helper.make_tensor_value_info("y", ELEM[values[0].dtype], None)],
        [numpy_helper.from_array(v, n) for n, v in zip(names[feeds:], values[feeds:],
                                                          strict=True)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)],
                             ir_version=8)


@pytest.mark.parametrize("dtype", [U8, S8])
@pytest.mark.parametrize("shape", [(1, 7, 101, 97), (1, 3, 5, 7), (2, 64, 32, 33)])
def test_lookup_indexes_the_table(isa: str, threads: int, dtype: Any,
                                  shape: tuple[int, ...]) -> None:
    x = _ints(dtype, *shape)
    n = min(256, x.size)
    x.reshape(-1)[:n] = np.arange(n).astype(np.uint8).view(dtype)  # every entry
    table = _ints(dtype, 256)
    for fmt in (F.HWC, F.LINEAR):
        (got,) = plugin_kit.run_plugin(_plugin("QLinearLookup"), [x, table],
                                       formats=[fmt, F.LINEAR, fmt])
        np.testing.assert_array_equal(got, table[x.view(np.uint8).astype(np.intp)])


@pytest.mark.parametrize("dtype", [U8, S8])
def test_sigmoid_matches_onnxruntime(isa: str, threads: int, dtype: Any) -> None:
    x = _ints(dtype, 1, 9, 91, 83)
    p = [np.array(0.05, np.float32), np.array(3, dtype), np.array(1 / 255, np.float32),
         np.array(np.iinfo(dtype).min, dtype)]
    model = _contrib("QLinearSigmoid", ["x", "xs", "xz", "ys", "yz"], [x, *p], 1)
    (got,) = mi.InferenceSession(model, device="cpu").run(None, {"x": x})
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    assert len(np.unique(want)) > 60  # much of the table looked up


@pytest.mark.parametrize("shape,fmt", [((1, 37, 45, 41), F.HWC), ((2, 37, 41, 45), F.LINEAR),
                                       ((1, 200, 20, 17), F.HWC)])
def test_channel_lookup_indexes_each_channels_table(threads: int, shape: tuple[int, ...],
                                                    fmt: F) -> None:
    x = _ints(U8, *shape)
    table = _ints(U8, shape[1], 256)
    (got,) = plugin_kit.run_plugin(_plugin("QLinearChannelLookup"), [x, table],
                                   formats=[fmt, F.LINEAR, fmt])
    want = table[np.arange(shape[1]).reshape(1, -1, 1, 1), x.astype(np.intp)]
    np.testing.assert_array_equal(got, want)


#: (A, B): the same shape (one row: pieces of it; many rows), one value per channel (NCHW
#: rows), one value, and one small pass (no pool, a 16-value tail)
BINARY = [((1, 9, 91, 83), (1, 9, 91, 83)), ((70, 1031), (70, 1031)),
          ((1, 64, 40, 41), (1, 64, 1, 1)), ((3, 70001), (1, 1)), ((5, 37), (5, 37))]


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("shapes", BINARY, ids=[f"{a}x{b}" for a, b in BINARY])
@pytest.mark.parametrize("dtype", [U8, S8])
def test_binary_on_the_pool(isa: str, threads: int,
                            count_calls: Callable[[Any, str, str], dict[str, int]], op: str,
                            shapes: tuple[tuple[int, ...], ...], dtype: Any) -> None:
    a, b = _ints(dtype, *shapes[0]), _ints(dtype, *shapes[1])
    params = {"as": np.array(0.05, np.float32), "az": np.array(7, dtype),
              "bs": np.array(0.031, np.float32), "bz": np.array(-3 if dtype == S8 else 200, dtype),
              "cs": np.array(0.07 if op == "QLinearAdd" else 0.03, np.float32),
              "cz": np.array(5, dtype)}
    model = _contrib(op, ["a", "b", "as", "az", "bs", "bz", "cs", "cz"],
                     [a, b, *params.values()], 2)
    node = model.graph.node[0]
    del node.input[:]
    node.input.extend(["a", "as", "az", "b", "bs", "bz", "cs", "cz"])
    calls = count_calls(qelementwise, "_check", "compiled")
    (got,) = mi.InferenceSession(model, device="cpu").run(None, {"a": a, "b": b})
    assert calls["compiled"] == 1
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"a": a, "b": b})
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1
    ref = np.empty_like(got)
    kind = basic.QLinearAdd if op == "QLinearAdd" else basic.QLinearMul
    kind("ref").compute(a, params["as"], params["az"], b, params["bs"], params["bz"],
                        params["cs"], params["cz"], out=ref)
    np.testing.assert_array_equal(got, ref)
