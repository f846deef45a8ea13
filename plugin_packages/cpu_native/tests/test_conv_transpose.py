"""ConvTranspose: the compiled case (kernel = stride: one GEMM per image, then each tap placed
in its phase of the output) and cpu_basic's for the rest, against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from mini_infer_cpu_native import _native, conv_transpose
from onnx import ModelProto, TensorProto, helper, numpy_helper

import mini_infer_core

RNG = np.random.default_rng(23)
NAMESPACE = "mini_infer.cpu_native"


def _model(xshape: tuple[int, ...], w: np.ndarray, b: np.ndarray | None,
           attrs: dict[str, Any]) -> ModelProto:
    inits = [numpy_helper.from_array(w, "w")]
    ins = ["x", "w"]
    if b is not None:
        inits.append(numpy_helper.from_array(b, "b"))
        ins.append("b")
    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ins, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(xshape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8)


def _run(model: ModelProto, xs: list[np.ndarray], monkeypatch: pytest.MonkeyPatch) -> int:
    """Runs mini-infer on each x in turn (one session) against onnxruntime; returns how many
    tap placements were made."""
    made = 0
    real = conv_transpose.taps2d_call

    def counted(*args: Any) -> Any:
        nonlocal made
        made += 1
        return real(*args)

    monkeypatch.setattr(conv_transpose, "taps2d_call", counted)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    assert [n.plugin_namespace for n in engine.nodes] == [NAMESPACE]
    sess = mini_infer_core.InferenceSession(engine)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for x in xs:
        got = sess.run(None, {"x": x})[0]
        want = ref.run(None, {"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    return made


@pytest.mark.skipif(not _native.gemm_available(),
                    reason="this CPU has neither AVX-512 nor AVX2 + FMA: cpu_basic's path runs")
@pytest.mark.parametrize("xshape, m, k, bias", [
    ((1, 24, 20, 20), 24, 2, True),    # PP-OCR det's upsampling, smaller
    ((2, 5, 7, 9), 3, 3, True),        # batch 2, odd sizes, 3x3 taps
    ((1, 24, 11, 13), 1, 2, True),     # one output channel
    ((1, 16, 6, 5), 8, 2, False),      # no bias
    ((2, 3, 4, 6), 5, 1, True)])       # 1x1: a pointwise transpose
def test_a_kernel_as_large_as_its_stride_runs_compiled(
        xshape: tuple[int, ...], m: int, k: int, bias: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    w = RNG.standard_normal((xshape[1], m, k, k)).astype(np.float32)
    b = RNG.standard_normal(m).astype(np.float32) if bias else None
    model = _model(xshape, w, b, {"kernel_shape": [k, k], "strides": [k, k]})
    xs = [RNG.standard_normal(xshape).astype(np.float32) for _ in range(2)]
    assert _run(model, xs, monkeypatch) >= xshape[0]  # one per image (again if x is new)


@pytest.mark.parametrize("attrs, group", [
    ({"kernel_shape": [3, 3], "strides": [2, 2]}, 1),                     # overlapping taps
    ({"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 0, 0, 1]}, 1),
    ({"kernel_shape": [2, 2], "strides": [2, 2], "output_padding": [1, 1]}, 1),
    ({"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [2, 2]}, 1),
    ({"kernel_shape": [2, 2], "strides": [2, 2]}, 2)])                    # groups
def test_every_other_case_is_cpu_basics(attrs: dict[str, Any], group: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    xshape = (2, 4, 5, 6)
    k = attrs["kernel_shape"]
    w = RNG.standard_normal((4, 3, *k)).astype(np.float32)
    b = RNG.standard_normal(3 * group).astype(np.float32)
    model = _model(xshape, w, b, {**attrs, "group": group})
    assert _run(model, [RNG.standard_normal(xshape).astype(np.float32)], monkeypatch) == 0
