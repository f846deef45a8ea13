"""Conv's fast paths against onnxruntime / onnx.reference, and the direct BLAS calls under them.

The conformance cases are tiny (one or two channels) and so take the im2col path; these cases
have the channel counts of real networks, which route 2-D stride-1 convolutions through one
accumulating GEMM per kernel tap (``_conv_taps``) and strided ones through their stride phases.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from cpu_support import execute, make_model, make_plugin, run_oracle
from mini_infer_cpu_plugins.ops import _blas, _conv_taps
from threadpoolctl import threadpool_info

RNG = np.random.default_rng(11)


def rand(*shape: int, dtype: Any = np.float32) -> Any:
    return RNG.standard_normal(shape).astype(dtype)


# -- the BLAS under the kernels --------------------------------------------------------------
def test_numpy_blas_is_called_directly() -> None:
    if not any(i.get("internal_api") == "openblas" and i.get("user_api") == "blas"
               for i in threadpool_info()):
        pytest.skip("NumPy is not built on OpenBLAS here; gemm falls back to np.matmul")
    assert _blas.available(np.float32) and _blas.available(np.float64)
    assert _blas.library() is not None
    assert not _blas.available(np.float16)
    # the memory-map scan finds the library threadpoolctl reports (NumPy's OpenBLAS)
    reported = {i["filepath"] for i in threadpool_info() if i.get("user_api") == "blas"}
    assert _blas.library() in reported


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["plain", "a_transposed", "b_transposed", "row_bands",
                                    "not_blas"])
def test_gemm_matches_numpy(dtype: Any, layout: str) -> None:
    m, k, n = 7, 5, 9
    big_a, big_b = rand(m, k + 4, dtype=dtype), rand(k + 3, n + 6, dtype=dtype)
    a, b = big_a[:, 2: 2 + k], big_b[1: 1 + k, 3: 3 + n]  # rows spaced wider than they are
    if layout == "plain":
        a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    elif layout == "a_transposed":
        a = np.ascontiguousarray(a.T).T
    elif layout == "b_transposed":
        b = np.ascontiguousarray(b.T).T
    elif layout == "not_blas":
        a = rand(m, 2 * k, dtype=dtype)[:, ::2]  # no unit stride: computed by NumPy
    c0 = rand(m, n + 2, dtype=dtype)[:, 1: 1 + n]  # the output is a view too
    for alpha, beta in ((1.0, 0.0), (1.0, 1.0), (0.5, -2.0)):
        c = c0.copy()
        want = alpha * (a.astype(np.float64) @ b) + beta * c.astype(np.float64)
        _blas.gemm(a, b, c, alpha=alpha, beta=beta)
        np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def test_gemm_beta_zero_ignores_nan_and_numpy_fallback_agrees() -> None:
    a, b = rand(4, 3), rand(3, 6)
    c = np.full((4, 6), np.nan, np.float32)
    _blas.gemm(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-6)
    d = np.ones((4, 6), np.float32)
    _blas._numpy_gemm(a, b, d, 2.0, 3.0)
    np.testing.assert_allclose(d, 2 * (a @ b) + 3, rtol=1e-6)
    with pytest.raises(ValueError, match="do not match"):
        _blas.gemm(a, b, np.empty((4, 5), np.float32))


# -- Conv by kernel taps ---------------------------------------------------------------------
TAP_CASES = [
    ((1, 16, 19, 21), (8, 16, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 32, 22, 17), (12, 32, 3, 5), {"pads": [0, 2, 1, 0], "dilations": [2, 1]}),
    ((1, 64, 18, 18), (32, 32, 3, 3), {"pads": [1, 1, 1, 1], "group": 2}),
    ((3, 16, 25, 25), (4, 16, 5, 5), {}),
    ((1, 24, 16, 20), (5, 24, 1, 7), {"pads": [0, 3, 0, 3]}),
    ((1, 20, 40, 8), (6, 20, 7, 1), {"pads": [3, 0, 3, 0]}),
    ((1, 16, 17, 19), (6, 16, 3, 3), {"auto_pad": "SAME_UPPER"}),
]


@pytest.mark.parametrize(("xs", "ws", "attrs"), TAP_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_by_taps_matches_onnxruntime(xs: tuple[int, ...], ws: tuple[int, ...],
                                          attrs: dict[str, Any], bias: bool) -> None:
    group = attrs.get("group", 1)
    columns = xs[2] * (xs[3] + ws[3] - 1)  # same-sized output here
    assert _conv_taps.usable(len(xs), (1, 1), ws[1], ws[0] // group, ws[2:], columns,
                             np.float32)
    inputs = [rand(*xs), rand(*ws)] + ([rand(ws[0])] if bias else [])
    got = execute(make_plugin("Conv", attrs, 22), inputs)[0]
    want = run_oracle("ort", make_model("Conv", inputs, attrs, 22, 1), inputs)[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize(("kernel", "stride"), [(1, 1), (3, 1), (3, 2)])
def test_conv_float64_with_fused_epilogue_matches_reference(kernel: int, stride: int,
                                                           residual: bool) -> None:
    """Bias, residual and Relu: added by the epilogue (taps) or before the GEMM, which then
    accumulates onto them (1x1, im2col)."""
    x, w, b = rand(2, 16, 16, 16, dtype=np.float64), \
        rand(8, 16, kernel, kernel, dtype=np.float64), rand(8, dtype=np.float64)
    attrs = {"pads": [kernel // 2] * 4, "strides": [stride, stride]}
    r = rand(2, 8, 16 // stride, 16 // stride, dtype=np.float64)
    plugin = make_plugin("Conv", attrs, 22, __residual__=int(residual), __relu__=1)
    for scale in (1.0, 2.0):  # a second run reuses the buffers (borders must still be zero)
        xs = x * scale
        conv = run_oracle("ref", make_model("Conv", [xs, w, b], attrs, 22, 1), [xs, w, b])[0]
        got = execute(plugin, [xs, w, b, r] if residual else [xs, w, b])[0]
        want = np.maximum(conv + r if residual else conv, 0)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_thin_or_strided_convs_keep_im2col() -> None:
    usable = _conv_taps.usable
    assert usable(4, (1, 1), 32, 32, (3, 3), 1000, np.float32)
    assert not usable(4, (1, 1), 8, 8, (3, 3), 1000, np.float32)  # too few channels
    assert not usable(4, (1, 1), 32, 128, (3, 3), 1000, np.float32)  # output much wider
    assert not usable(4, (1, 1), 32, 32, (3, 3), 100, np.float32)  # too small an image
    assert not usable(4, (1, 1), 32, 32, (1, 1), 1000, np.float32)  # a plain GEMM
    assert not usable(4, (2, 2), 32, 32, (3, 3), 1000, np.float32)  # strided
    assert not usable(5, (1, 1, 1), 32, 32, (3, 3, 3), 1000, np.float32)  # 3-D
    assert not usable(4, (1, 1), 32, 32, (3, 3), 1000, np.float16)  # no BLAS for half


# -- depthwise: all channel planes shifted at once -------------------------------------------
@pytest.mark.parametrize(("xs", "ws", "attrs"), [
    ((1, 24, 14, 14), (24, 1, 3, 3), {"pads": [1, 1, 1, 1], "group": 24}),
    ((2, 8, 9, 7), (16, 1, 3, 3), {"pads": [0, 2, 1, 1], "dilations": [2, 1], "group": 8}),
    ((1, 6, 5, 8), (6, 1, 5, 3), {"pads": [2, 1, 2, 1], "group": 6}),
    ((3, 5, 4, 4), (5, 1, 2, 2), {"group": 5}),
])
@pytest.mark.parametrize("bias", [False, True])
def test_depthwise_matches_onnxruntime(xs: tuple[int, ...], ws: tuple[int, ...],
                                       attrs: dict[str, Any], bias: bool) -> None:
    inputs = [rand(*xs), rand(*ws)] + ([rand(ws[0])] if bias else [])
    plugin = make_plugin("Conv", attrs, 22)
    want = run_oracle("ort", make_model("Conv", inputs, attrs, 22, 1), inputs)[0]
    for _ in range(2):  # the padded buffer is reused: its border must stay zero
        got = execute(plugin, inputs)[0]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("xs", "ws", "attrs"), [
    ((1, 16, 14, 14), (16, 1, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2], "group": 16}),
    ((2, 6, 11, 9), (12, 1, 3, 3), {"pads": [1, 0, 0, 2], "strides": [2, 3], "group": 6}),
    ((1, 4, 13, 12), (4, 1, 5, 3), {"pads": [2, 1, 2, 1], "strides": [3, 2],
                                    "dilations": [2, 1], "group": 4}),
    ((1, 8, 7, 7), (8, 1, 3, 3), {"strides": [2, 2], "group": 8, "auto_pad": "SAME_UPPER"}),
])
def test_strided_depthwise_by_phases_matches_onnxruntime(
        xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any]) -> None:
    inputs = [rand(*xs), rand(*ws), rand(ws[0])]
    plugin = make_plugin("Conv", attrs, 22)
    want = run_oracle("ort", make_model("Conv", inputs, attrs, 22, 1), inputs)[0]
    for _ in range(2):
        np.testing.assert_allclose(execute(plugin, inputs)[0], want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("residual", [False, True])
def test_grouped_pointwise_accumulates_onto_bias_and_residual(residual: bool) -> None:
    x, w, b = rand(2, 16, 5, 6), rand(12, 4, 1, 1), rand(12)
    r = rand(2, 12, 5, 6)
    attrs = {"group": 4}
    conv = run_oracle("ort", make_model("Conv", [x, w, b], attrs, 22, 1), [x, w, b])[0]
    plugin = make_plugin("Conv", attrs, 22, __residual__=int(residual), __relu__=1)
    got = execute(plugin, [x, w, b, r] if residual else [x, w, b])[0]
    np.testing.assert_allclose(got, np.maximum(conv + r if residual else conv, 0),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8])
@pytest.mark.parametrize("size", [1, 1000, 3 * 131072 + 17])
def test_relu_against_shared_zeros_matches_maximum(dtype: Any, size: int) -> None:
    from mini_infer_cpu_plugins.ops._util import relu

    x = (RNG.standard_normal(size) * 50).astype(dtype)
    if x.dtype.kind == "f":
        x[::7] = np.nan  # NaN propagates as np.maximum's does
    out = np.empty_like(x)
    relu(x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0))
    strided = np.empty(2 * size, dtype)[::2]  # not contiguous: plain np.maximum
    relu(x, strided)
    np.testing.assert_array_equal(strided, np.maximum(x, 0))
