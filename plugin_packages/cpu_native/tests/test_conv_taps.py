"""mini-infer-cpu-native's Conv drops the taps that read only padding for every output
(DeepLabV3's ASPP: 3x3 dilated 36 over a 32x32 map) and computes the convolution of the
others: against onnxruntime, with the engine's packed weights, a residual and a fused
activation; kernels whose every tap reads the input somewhere are left whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from conv_epilogues import check_ort, epilogue, float_model, ort_y
from mini_infer_cpu_native import _conv_gemm
from onnx import helper

RNG = np.random.default_rng(61)


def _model(xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
           after: str) -> onnx.ModelProto:
    inits: dict[str, Any] = {
        "w": (RNG.standard_normal((m, xshape[1], *kernel)) * 0.2).astype(np.float32),
        "b": RNG.standard_normal(m).astype(np.float32)}
    nodes = [helper.make_node("Relu", ["x"], ["xr"]),
             helper.make_node("Conv", ["xr", "w", "b"], ["c" if after else "y"],
                              kernel_shape=list(kernel), **attrs)]
    nodes += epilogue(after, inits)
    return float_model(nodes, inits, xshape)


@pytest.fixture
def kernels(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """The kernel shape of every compiled GEMM convolution that ran."""
    seen: list[tuple[int, ...]] = []
    real: Callable[..., Any] = _conv_gemm.gemm_conv_calls

    def recorded(x: Any, packed: Any, b: Any, r: Any, out: Any, plan: Any, *args: Any
                 ) -> Any:
        seen.append(tuple(int(k) for k in plan.window.kernel))
        return real(x, packed, b, r, out, plan, *args)

    monkeypatch.setattr(_conv_gemm, "gemm_conv_calls", recorded)
    return seen


CASES = [  # x shape, M, kernel, attrs, the kernel that runs
    ((1, 24, 12, 12), 16, (3, 3), {"pads": [14] * 4, "dilations": [14, 14]}, (1, 1)),
    ((1, 16, 10, 9), 8, (3, 3), {"pads": [12, 1, 12, 1], "dilations": [12, 1]}, (1, 3)),
    ((1, 8, 7, 9), 8, (5, 5), {"pads": [6, 6, 6, 6], "dilations": [3, 3]}, (5, 5)),
    ((1, 8, 6, 6), 8, (5, 5), {"pads": [8, 8, 8, 8], "dilations": [4, 4]}, (3, 3)),
    ((1, 8, 9, 9), 8, (3, 3), {"pads": [8, 0, 0, 0], "dilations": [8, 1]}, (2, 3)),
    ((1, 16, 16, 16), 16, (3, 3), {"pads": [4] * 4, "dilations": [4, 4]}, (3, 3)),
]


@pytest.mark.parametrize("xshape, m, kernel, attrs, runs", CASES)
@pytest.mark.parametrize("after", ["", "Relu", "HardSwish", "Add"])
def test_taps_that_read_only_padding_are_dropped(
        xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
        runs: tuple[int, int], after: str, kernels: list[tuple[int, ...]]) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    if after == "Add" and ort_y(_model(xshape, m, kernel, attrs, ""), x).shape != xshape:
        pytest.skip("the residual needs an output shaped like the input")
    model = _model(xshape, m, kernel, attrs, after)
    check_ort(model, x, time_tactics=False)
    if _conv_gemm_runs() and runs != (3, 3):
        assert set(kernels) == {runs}


def _conv_gemm_runs() -> bool:
    from mini_infer_cpu_native._native import gemm_available
    return gemm_available()
