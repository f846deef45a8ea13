"""Small ONNX models of every pattern a Conv or BatchNormalization plugin may absorb
(:class:`~mini_infer_core.plugin.ConvFusion`, :class:`~mini_infer_core.plugin.BatchNormFusion`),
with inputs and the engine's operators once everything is fused, for checking a device's fused
kernels against an independent runtime:

    for name, model, feeds, fused in fusion_models():
        want = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
        got = mini_infer_core.InferenceSession(model, "cuda").run(None, feeds)

Each model has one input ``x`` (1x4x6x6 float32) and one output ``y``; the weights are
random (seeded) and the BatchNormalization variance positive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

__all__ = ["fusion_models"]

_C = 4
_SHAPE = (1, _C, 6, 6)


def _conv(rng: np.random.Generator, out: str, src: str = "x", bias: bool = True
          ) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    w = numpy_helper.from_array((0.3 * rng.standard_normal((_C, _C, 3, 3))).astype(np.float32),
                                f"{out}_w")
    inits = [w]
    names = [src, w.name]
    if bias:
        b = numpy_helper.from_array(rng.standard_normal(_C).astype(np.float32), f"{out}_b")
        inits.append(b)
        names.append(b.name)
    return helper.make_node("Conv", names, [out], pads=[1, 1, 1, 1]), inits


def _bn(rng: np.random.Generator, src: str, out: str
        ) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
    vals = [rng.standard_normal(_C), rng.standard_normal(_C), rng.standard_normal(_C),
            rng.uniform(0.5, 2.0, _C)]
    names = [f"{out}_{k}" for k in ("scale", "shift", "mean", "var")]
    inits = [numpy_helper.from_array(v.astype(np.float32), n) for v, n in zip(vals, names,
                                                                             strict=True)]
    return helper.make_node("BatchNormalization", [src, *names], [out], epsilon=1e-3), inits


def _const(name: str, value: np.ndarray[Any, Any]) -> onnx.TensorProto:
    return numpy_helper.from_array(value.astype(np.float32), name)


def _model(name: str, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]
           ) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(_SHAPE))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(_SHAPE))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


def _conv_bn_relu(rng: np.random.Generator) -> onnx.ModelProto:
    conv, ci = _conv(rng, "c")
    bn, bi = _bn(rng, "c", "n")
    return _model("conv_bn_relu", [conv, bn, helper.make_node("Relu", ["n"], ["y"])], ci + bi)


def _residual(rng: np.random.Generator, bias: bool, first: bool) -> onnx.ModelProto:
    conv, ci = _conv(rng, "c", bias=bias)
    bn, bi = _bn(rng, "c", "n")
    pair = ["n", "x"] if first else ["x", "n"]
    nodes = [conv, bn, helper.make_node("Add", pair, ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    return _model("residual", nodes, ci + bi)


def _residual_without_bias(rng: np.random.Generator) -> onnx.ModelProto:
    conv, ci = _conv(rng, "c", bias=False)
    return _model("residual_no_bias", [conv, helper.make_node("Add", ["x", "c"], ["y"])], ci)


def _scale_shift_clip(rng: np.random.Generator) -> onnx.ModelProto:
    conv, ci = _conv(rng, "c")
    k = _const("k", rng.standard_normal((_C, 1, 1)))
    d = _const("d", rng.standard_normal((1, _C, 1, 1)))
    lo, hi = _const("lo", np.array(-0.5)), _const("hi", np.array(0.8))
    nodes = [conv, helper.make_node("Mul", ["c", "k"], ["m"]),
             helper.make_node("Add", ["d", "m"], ["a"]),
             helper.make_node("Clip", ["a", "lo", "hi"], ["y"])]
    return _model("scale_shift_clip", nodes, ci + [k, d, lo, hi])


def _chain(rng: np.random.Generator) -> onnx.ModelProto:
    """Two fused blocks in a row, the second's residual being the first's output."""
    c1, i1 = _conv(rng, "c1")
    b1, j1 = _bn(rng, "c1", "n1")
    c2, i2 = _conv(rng, "c2", "r1")
    b2, j2 = _bn(rng, "c2", "n2")
    nodes = [c1, b1, helper.make_node("Relu", ["n1"], ["r1"]), c2, b2,
             helper.make_node("Sum", ["n2", "r1"], ["s"]), helper.make_node("Relu", ["s"], ["y"])]
    return _model("chain", nodes, i1 + j1 + i2 + j2)


def _bn_relu_conv(rng: np.random.Generator) -> onnx.ModelProto:
    """DenseNet's pre-activation: BatchNormalization and Relu before the Conv."""
    bn, bi = _bn(rng, "x", "n")
    conv, ci = _conv(rng, "y", "r")
    return _model("bn_relu_conv", [bn, helper.make_node("Relu", ["n"], ["r"]), conv], bi + ci)


def _bn_scale_shift_relu(rng: np.random.Generator) -> onnx.ModelProto:
    bn, bi = _bn(rng, "x", "n")
    k = _const("k", rng.standard_normal((_C, 1, 1)))
    d = _const("d", np.array([0.1]))  # small: the Relu must clip about half the values
    nodes = [bn, helper.make_node("Mul", ["k", "n"], ["m"]),
             helper.make_node("Add", ["m", "d"], ["a"]), helper.make_node("Relu", ["a"], ["y"])]
    return _model("bn_scale_shift_relu", nodes, bi + [k, d])


#: name: (model maker, the engine's operators once everything is fused)
_MODELS: dict[str, tuple[Callable[[np.random.Generator], onnx.ModelProto], list[str]]] = {
    "conv_bn_relu": (_conv_bn_relu, ["Conv"]),
    "residual_bn_relu": (lambda r: _residual(r, bias=True, first=True), ["Conv"]),
    "residual_first_no_bias": (lambda r: _residual(r, bias=False, first=False), ["Conv"]),
    "residual_without_bias": (_residual_without_bias, ["Conv"]),
    "scale_shift_clip": (_scale_shift_clip, ["Conv"]),
    "chain": (_chain, ["Conv", "Conv"]),
    "bn_relu_conv": (_bn_relu_conv, ["BatchNormalization", "Conv"]),
    "bn_scale_shift_relu": (_bn_scale_shift_relu, ["BatchNormalization"]),
}


def fusion_models(seed: int = 0) -> list[tuple[str, onnx.ModelProto,
                                               dict[str, np.ndarray[Any, Any]], list[str]]]:
    """(name, model, feeds, fused) for each pattern; ``fused`` lists the engine's operators
    on a device whose plugins fuse every pattern (the cpu plugins do)."""
    rng = np.random.default_rng(seed)
    out = []
    for name, (make, fused) in _MODELS.items():
        model = make(rng)
        out.append((name, model, {"x": rng.standard_normal(_SHAPE).astype(np.float32)}, fused))
    return out
