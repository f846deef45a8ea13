"""mini-infer-cpu-native's Conv computes a convolution whose taps mostly read padding
(DeepLabV3's ASPP: 3x3 dilated 12 and 24 over 32x32) one GEMM per tap over only the outputs
where the tap reads the input: against onnxruntime, for dilations 2..40 on maps smaller and
larger than the dilation, asymmetric pads, strides, no tap covering every output, a batch of
two, bias, residual and fused activations; ordinary convolutions keep the im2col GEMM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from conv_epilogues import check_ort, epilogue, float_model, ort_y
from mini_infer_cpu_native import _conv_gemm, _pw, _tap_gemm
from mini_infer_cpu_native._native import gemm_available
from onnx import helper

import mini_infer_core

RNG = np.random.default_rng(83)


def _model(xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
           after: str, bias: bool = True) -> onnx.ModelProto:
    inits: dict[str, Any] = {
        "w": (RNG.standard_normal((m, xshape[1], *kernel)) * 0.1).astype(np.float32),
        "b": RNG.standard_normal(m).astype(np.float32)}
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [helper.make_node("Conv", inputs, ["c" if after else "y"],
                              kernel_shape=list(kernel), **attrs)]
    nodes += epilogue(after, inits)
    if not bias:
        del inits["b"]
    return float_model(nodes, inits, xshape)


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The input shape of every convolution the tap-by-tap path computed."""
    seen: list[tuple[int, ...]] = []
    real: Callable[..., Any] = _tap_gemm.tap_calls

    def recorded(x: Any, *args: Any, **kw: Any) -> Any:
        seen.append(tuple(x.shape))
        return real(x, *args, **kw)

    monkeypatch.setattr(_tap_gemm, "tap_calls", recorded)
    return seen


CASES = [  # x shape, M, kernel, attrs
    ((1, 96, 32, 32), 64, (3, 3), {"pads": [12] * 4, "dilations": [12, 12]}),  # ASPP
    ((1, 96, 32, 32), 64, (3, 3), {"pads": [24] * 4, "dilations": [24, 24]}),  # ASPP
    ((1, 64, 20, 14), 72, (3, 3), {"pads": [16] * 4, "dilations": [16, 16]}),  # map < d
    ((1, 64, 48, 48), 64, (3, 3), {"pads": [40] * 4, "dilations": [40, 40]}),
    ((1, 64, 6, 6), 64, (3, 3), {"pads": [2] * 4, "dilations": [2, 2]}),
    ((1, 64, 24, 20), 80, (3, 3), {"pads": [5, 12, 9, 3], "dilations": [6, 10]}),
    ((1, 64, 33, 31), 64, (3, 3), {"pads": [12] * 4, "dilations": [12, 12],
                                   "strides": [2, 2]}),
    ((1, 64, 29, 26), 64, (3, 3), {"pads": [9, 7, 9, 7], "dilations": [9, 7],
                                   "strides": [3, 2]}),
    ((1, 64, 24, 24), 64, (5, 5), {"pads": [14] * 4, "dilations": [7, 7]}),
    ((1, 64, 16, 16), 64, (2, 2), {"pads": [8] * 4, "dilations": [16, 16]}),  # no tap covers all
    ((2, 64, 18, 18), 64, (3, 3), {"pads": [10] * 4, "dilations": [10, 10]}),
]


@pytest.mark.parametrize("xshape, m, kernel, attrs", CASES)
@pytest.mark.parametrize("after", ["", "Relu", "Clip", "HardSwish", "Add+Relu", "Sigmoid"])
def test_taps_over_only_the_outputs_they_reach(
        xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
        after: str, ran: list[tuple[int, ...]]) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    plain = _model(xshape, m, kernel, attrs, "")
    if after.startswith("Add") and ort_y(plain, x).shape != xshape:
        pytest.skip("the residual needs an output shaped like the input")
    model = _model(xshape, m, kernel, attrs, after, bias=after != "Sigmoid")
    check_ort(model, x, time_tactics=False)
    if gemm_available():
        assert ran and ran[0] == xshape


@pytest.mark.parametrize("xshape, m, kernel, attrs", [
    ((1, 64, 32, 32), 64, (3, 3), {"pads": [1] * 4}),  # every tap reads nearly everywhere
    ((1, 32, 32, 32), 64, (3, 3), {"pads": [12] * 4, "dilations": [12, 12]}),  # short K
])
def test_other_convolutions_keep_the_im2col_gemm(
        xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
        ran: list[tuple[int, ...]]) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    model = _model(xshape, m, kernel, attrs, "Relu")
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    got = mini_infer_core.InferenceSession(engine).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, ort_y(model, x), rtol=1e-4, atol=1e-4)
    assert not ran


def test_tap_rectangles() -> None:
    """ASPP dilation 24 over 32x32: the centre tap everywhere, the edge taps over 8 rows or
    columns, the corners over 8x8; 25% of the pairs."""
    rects = _tap_gemm.tap_rects((32, 32), (32, 32), (3, 3), (1, 1), (24, 24), (24, 24))
    assert rects[0] == (1, 1, (0, 32), (0, 32))
    assert dict(((ky, kx), (ys, xs)) for ky, kx, ys, xs in rects)[(0, 2)] == ((24, 32), (0, 8))
    assert sum((ys[1] - ys[0]) * (xs[1] - xs[0]) for _, _, ys, xs in rects) == 9 * 1024 // 4


@pytest.mark.parametrize("xshape, m, after", [
    ((1, 256, 32, 32), 64, "Relu"),  # planes of 4 KiB: copied apart first
    ((1, 320, 16, 32), 96, "HardSwish"),
    ((2, 256, 16, 32), 256, "Add+Relu"),
    ((1, 64, 32, 32), 64, ""),  # few channels: read in place
])
def test_pointwise_over_planes_a_multiple_of_2_kib(
        xshape: tuple[int, ...], m: int, after: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1x1 convolution whose input planes are 512 floats apart or a multiple of that gets
    its B copied with padded rows (:data:`._conv_gemm.PAD_PLANES`): the same sums."""
    copies: list[tuple[int, ...]] = []
    real = _conv_gemm._copy

    def recorded(dst: Any, src: Any) -> None:
        copies.append(src.shape)
        real(dst, src)

    monkeypatch.setattr(_conv_gemm, "_copy", recorded)
    # few channels over these maps would take _pw.c where AVX2 runs (tested in test_pw.py)
    monkeypatch.setattr(_pw, "applies", lambda *args: False)
    x = RNG.standard_normal(xshape).astype(np.float32)
    model = _model(xshape, m, (1, 1), {}, after)
    check_ort(model, x, time_tactics=False)
    if gemm_available():
        padded = xshape[1] >= _conv_gemm.PAD_FROM_K
        assert bool(copies) == padded and all(
            shape == (xshape[1], xshape[2] * xshape[3]) for shape in copies)
