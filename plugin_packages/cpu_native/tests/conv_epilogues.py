"""What the convolution tests share: the activations and residual they put after a Conv, as
the fuser meets them in models; the model around them; the run checked against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

import mini_infer_core

__all__ = ["ACTIVATIONS", "check_ort", "epilogue", "float_model", "ort_y", "run_twice",
           "same_shape"]

#: the activations the cpu_native Conv absorbs after its clamp (ConvFusion's ``__act__``)
ACTIVATIONS = ("HardSwish", "HardSigmoid", "Sigmoid", "Swish")


def _step(kind: str, src: str, dst: str, inits: dict[str, Any]) -> list[onnx.NodeProto]:
    if kind == "Relu":
        return [helper.make_node("Relu", [src], [dst])]
    if kind == "Clip":
        inits |= {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}
        return [helper.make_node("Clip", [src, "lo", "hi"], [dst])]
    if kind == "Add":
        return [helper.make_node("Add", [src, "x"], [dst])]
    if kind == "HardSwish":
        return [helper.make_node("HardSwish", [src], [dst])]
    if kind == "HardSigmoid":  # not the defaults: the fused (alpha, beta) must be its own
        return [helper.make_node("HardSigmoid", [src], [dst], alpha=0.3, beta=0.45)]
    if kind == "Sigmoid":
        return [helper.make_node("Sigmoid", [src], [dst])]
    if kind == "Swish":  # as exporters write SiLU: the builder's rewrite makes it a Swish
        return [helper.make_node("Sigmoid", [src], [f"{src}_s"]),
                helper.make_node("Mul", [src, f"{src}_s"], [dst])]
    raise ValueError(f"unknown epilogue step {kind!r}")


def epilogue(after: str, inits: dict[str, Any]) -> list[onnx.NodeProto]:
    """The nodes from the Conv's output ``c`` to ``y`` for ``after`` ("" none: the Conv writes
    ``y``; "Relu"; "Clip" to [-0.5, 0.7], its bounds added to ``inits``; "Add": a residual of
    the input ``x``, the output shaped like it; one of :data:`ACTIVATIONS`; or two of these
    joined by "+", in that order: "Add+HardSwish")."""
    if not after:
        return []
    steps = after.split("+")
    names = ["c", *(f"c{i}" for i in range(1, len(steps))), "y"]
    nodes: list[onnx.NodeProto] = []
    for i, kind in enumerate(steps):
        nodes += _step(kind, names[i], names[i + 1], inits)
    return nodes


def float_model(nodes: list[onnx.NodeProto], inits: dict[str, Any],
                xshape: tuple[int, ...]) -> onnx.ModelProto:
    """An opset-17 model of ``nodes`` from one float input ``x`` of ``xshape`` to one float
    output ``y`` (shape left to inference), ``inits`` its initializers."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, list(xshape))],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def same_shape(xshape: tuple[int, ...], m: int, kernel: tuple[int, int],
               attrs: dict[str, Any]) -> bool:
    """Whether the Conv's output (``m`` channels, ``kernel``, ``attrs``) is shaped like its
    input (the residual "Add" needs it)."""
    pads = attrs.get("pads", [0, 0, 0, 0])
    dil = attrs.get("dilations", [1, 1])
    return (m == xshape[1] and "strides" not in attrs and "auto_pad" not in attrs
            and all(pads[i] + pads[i + 2] == dil[i] * (kernel[i] - 1) for i in range(2)))


def ort_y(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    """onnxruntime's ``y`` of ``model`` for the input ``x`` (the oracle)."""
    return np.asarray(ort.InferenceSession(model.SerializeToString(), providers=[
        "CPUExecutionProvider"]).run(None, {"x": x})[0])


def run_twice(model: onnx.ModelProto, x: np.ndarray,
              **config: Any) -> tuple[mini_infer_core.Engine, np.ndarray]:
    """``model`` built for the CPU (``BuilderConfig(device="cpu", **config)``) and run on
    ``x``: the engine and its ``y``, which a second run (through what the first kept) gives
    again exactly."""
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", **config))
    sess = mini_infer_core.InferenceSession(engine)
    got = sess.run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, sess.run(None, {"x": x})[0])  # the kept calls again
    return engine, got


def check_ort(model: onnx.ModelProto, x: np.ndarray, **config: Any) -> mini_infer_core.Engine:
    """:func:`run_twice`, its ``y`` compared with onnxruntime's (1e-4); the engine."""
    engine, got = run_twice(model, x, **config)
    want = ort_y(model, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return engine
