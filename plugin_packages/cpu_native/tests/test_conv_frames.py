"""float32 3-D convolutions run as 2-D ones over gathered frames (``_conv_frames.py``):
single-node (and Conv + Add + Relu) models against onnxruntime at odd channel counts, strides,
dilations, asymmetric and automatic padding, temporal kernels of 1 and spatial ones of 1
(R(2+1)D's factored convolutions), a residual and activations fused, batches of 2; each run
twice (the kept calls of the inner convolution replayed) and through the engine's arena; the
node's two tactics, and the path an untimed build takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from mini_infer_cpu_native._conv_frames import ConvFrames
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core

RNG = np.random.default_rng(326)

CASES = {
    "3x3x3": dict(kernel_shape=[3, 3, 3], pads=[1, 1, 1, 1, 1, 1]),
    "stride2-dilated": dict(kernel_shape=[3, 3, 3], strides=[2, 2, 2], dilations=[2, 1, 1],
                            pads=[0, 1, 1, 1, 0, 2]),
    "stem-3x7x7": dict(kernel_shape=[3, 7, 7], strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3]),
    "spatial-1x3x3": dict(kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1]),
    "temporal-3x1x1": dict(kernel_shape=[3, 1, 1], pads=[1, 0, 0, 1, 0, 0]),
    "downsample-1x1x1": dict(kernel_shape=[1, 1, 1], strides=[2, 2, 2]),
    "same-upper": dict(kernel_shape=[2, 3, 3], strides=[2, 1, 2], auto_pad="SAME_UPPER"),
}


def _model(attrs: dict[str, Any], x: tuple[int, ...], m: int, tail: str,
           y: tuple[int, ...] = ()) -> Any:
    c = x[1]
    w = (RNG.standard_normal((m, c, *attrs["kernel_shape"])) * 0.2).astype(np.float32)
    b = RNG.standard_normal(m).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], **attrs)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x))]
    if tail == "residual":  # Conv + Add + Relu: the residual and Relu fused into the Conv
        nodes += [helper.make_node("Add", ["c", "r"], ["s"]),
                  helper.make_node("Relu", ["s"], ["y"])]
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, list(y)))
    elif tail == "hardswish":
        nodes.append(helper.make_node("HardSwish", ["c"], ["y"]))
    else:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("tail", ["relu", "residual", "hardswish"])
def test_frames_against_onnxruntime(count_calls: Callable[[Any, str, str], dict[str, int]],
                                    case: str, tail: str) -> None:
    x = RNG.standard_normal((2, 5, 7, 9, 11)).astype(np.float32)
    feeds = {"x": x}
    # the output's shape (onnxruntime's Conv alone says which): the residual's
    alone = _model(CASES[case], x.shape, 13, "relu").SerializeToString()
    y = ort.InferenceSession(alone, providers=["CPUExecutionProvider"]).run(None, feeds)[0].shape
    model = _model(CASES[case], x.shape, 13, tail, y)
    if tail == "residual":
        feeds["r"] = RNG.standard_normal(y).astype(np.float32)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    for node in engine.nodes:
        if node.op_type == "Conv":
            node.plugin.set_tactic("frames")  # type: ignore[attr-defined]
    calls = count_calls(ConvFrames, "_frames_weights", "frames")
    session = mini_infer_core.InferenceSession(engine)
    for _ in range(2):
        (got,) = session.run(None, feeds)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert calls["frames"] == 2  # the frames path ran both times


def test_grouped_3d_keeps_cpu_basics_path(
        count_calls: Callable[[Any, str, str], dict[str, int]]) -> None:
    x = RNG.standard_normal((1, 6, 5, 8, 8)).astype(np.float32)
    w = (RNG.standard_normal((4, 3, 3, 3, 3)) * 0.2).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=2, pads=[1] * 6)
    graph = helper.make_graph([node], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    calls = count_calls(ConvFrames, "_frames_weights", "frames")
    (got,) = mini_infer_core.InferenceSession(model, device="cpu").run(None, {"x": x})
    assert calls["frames"] == 0
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("tactic", ["frames", "im2col"])
def test_each_tactic_against_onnxruntime(count_calls: Callable[[Any, str, str], dict[str, int]],
                                         tactic: str) -> None:
    """The node's two tactics (what the builder times) both give onnxruntime's results, each
    through its own path; an engine built with tactic timing records one of them."""
    x = RNG.standard_normal((1, 6, 5, 10, 10)).astype(np.float32)
    y = (1, 8, 5, 10, 10)
    model = _model(CASES["3x3x3"], x.shape, 8, "residual", y)
    feeds = {"x": x, "r": RNG.standard_normal(y).astype(np.float32)}
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    conv = next(n.plugin for n in engine.nodes if n.op_type == "Conv")
    assert conv.get_tactics([x.shape, (8, 6, 3, 3, 3)]) == [  # type: ignore[attr-defined]
        "frames", "im2col"]
    conv.set_tactic(tactic)  # type: ignore[attr-defined]
    calls = count_calls(ConvFrames, "_frames_weights", "frames")
    (got,) = mini_infer_core.InferenceSession(engine).run(None, feeds)
    assert calls["frames"] == (tactic == "frames")
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    timed = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(device="cpu"))
    chosen = timed.build_info["tactics"]
    assert [v["chosen"] for v in chosen.values()][0] in ("frames", "im2col")


@pytest.mark.parametrize(("kernel", "hw", "frames"), [
    ([3, 3, 3], 14, True), ([1, 3, 3], 16, True), ([3, 3, 3], 7, False),
    ([1, 1, 1], 16, False), ([3, 1, 1], 16, False)])
def test_an_untimed_build_picks_by_window_and_map(
        count_calls: Callable[[Any, str, str], dict[str, int]], kernel: list[int], hw: int,
        frames: bool) -> None:
    """A session's one-off build (no tactic timing): frames for a spatial window over maps of
    14x14 or more, cpu_basic's im2col otherwise; onnxruntime's results either way."""
    x = RNG.standard_normal((1, 8, 4, hw, hw)).astype(np.float32)
    attrs = {"kernel_shape": kernel, "pads": [k // 2 for k in kernel] * 2}
    model = _model(attrs, x.shape, 16, "relu")
    calls = count_calls(ConvFrames, "_frames_weights", "frames")
    (got,) = mini_infer_core.InferenceSession(model, device="cpu").run(None, {"x": x})
    assert calls["frames"] == int(frames)
    (want,) = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
