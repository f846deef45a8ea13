"""Pooling and BatchNormalization on CNN-like shapes, against onnxruntime: the chunked
separable pooling (flat calls per tap, border outputs fixed on their own, row ranges) and
the chunked per-channel BatchNormalization, with chunks forced small so that every path
runs on several chunks, including a shorter last one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cpu_support import execute, make_model, make_plugin, run_oracle
from mini_infer_cpu_plugins.ops import normalization, pool

RNG = np.random.default_rng(11)


def rand(*shape: int, lo: float = -1.0, hi: float = 1.0) -> Any:
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def check(op: str, inputs: list[Any], attrs: dict[str, Any], opset: int = 17) -> None:
    got = execute(make_plugin(op, attrs, opset), inputs)[0]
    want = run_oracle("ort", make_model(op, inputs, attrs, opset, 1, ir_version=8), inputs)[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


POOLS = [
    # stride 2: row ranges, then the last axis as strided flat calls (+ a border column)
    ((1, 7, 16, 16), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 5, 16, 14), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 6, 12, 12), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    # odd sizes: the last axis as row ranges too
    ((1, 9, 15, 15), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ((1, 9, 15, 15), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 5, 13, 13), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    # stride 1, "same" pads: both axes as flat calls, border rows and columns fixed
    ((1, 11, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((1, 6, 9, 10), {"kernel_shape": [5, 3], "pads": [2, 1, 2, 1]}),
    ((1, 4, 8, 8), {"kernel_shape": [3, 3], "pads": [2, 0, 0, 2]}),
    # one window over the whole map
    ((2, 6, 5, 5), {"kernel_shape": [5, 5]}),
    # 1-D and 3-D
    ((2, 7, 20), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
    ((2, 7, 20), {"kernel_shape": [3], "pads": [1, 1]}),
    ((1, 5, 6, 8, 8), {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1]}),
]


@pytest.mark.parametrize("chunk_bytes", [1, 700, 1 << 20])
@pytest.mark.parametrize(("xs", "attrs"), POOLS)
def test_pools_chunked(monkeypatch: pytest.MonkeyPatch, chunk_bytes: int,
                       xs: tuple[int, ...], attrs: dict[str, Any]) -> None:
    monkeypatch.setattr(pool, "CHUNK_BYTES", chunk_bytes)
    x = rand(*xs)
    check("MaxPool", [x], attrs)
    for include in (0, 1):
        check("AveragePool", [x], {**attrs, "count_include_pad": include})
    if "ceil_mode" not in attrs:
        check("LpPool", [x], {**attrs, "p": 2}, opset=18)


def test_pool_one_instance_reused() -> None:
    """The compiled steps and their buffers are kept per shape and reused."""
    plugin = make_plugin("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2],
                                     "pads": [1, 1, 1, 1]}, 17)
    for shape in [(1, 8, 16, 16), (1, 3, 9, 9), (1, 8, 16, 16)]:
        x = rand(*shape)
        want = run_oracle("ort", make_model("MaxPool", [x], plugin.attrs | {"storage_order": 0},
                                            17, 1, ir_version=8), [x])[0]
        for _ in range(2):
            np.testing.assert_array_equal(execute(plugin, [x])[0], want)


@pytest.mark.parametrize("relu", [0, 1])
@pytest.mark.parametrize("xs", [(2, 9, 12, 12), (1, 40, 7, 7), (1, 6, 3), (3, 5)])
def test_batchnorm_chunked(monkeypatch: pytest.MonkeyPatch, relu: int,
                           xs: tuple[int, ...]) -> None:
    monkeypatch.setattr(normalization, "BN_CHUNK_BYTES", 1000)
    c = xs[1]
    weights = [rand(c), rand(c), rand(c), rand(c, lo=0.5, hi=2.0)]
    for w in weights:
        w.setflags(write=False)  # as the engine's constants: folded once, then reused
    plugin = make_plugin("BatchNormalization", {"__relu__": relu}, 15)
    model = make_model("BatchNormalization", [rand(*xs), *weights], {}, 15, 1, ir_version=8)

    def run(ws: list[Any]) -> None:
        x = rand(*xs)
        want = run_oracle("ort", model, [x, *ws])[0]
        got = np.empty_like(x)
        plugin.enqueue([x, *ws], [got], None, None)
        np.testing.assert_allclose(got, np.maximum(want, 0) if relu else want, rtol=1e-5,
                                   atol=1e-6)

    run(weights)
    folded = plugin.scratch.get("folded")
    run(weights)
    assert plugin.scratch.get("folded") is folded
    run([w + 1 for w in weights])  # other weights of the same shapes: folded again
    run([w + 1 for w in weights])  # writable: not kept
