"""The activations and residual the convolution tests put after a Conv, as the fuser meets
them in models (shared by test_native.py, test_dconv.py and test_conv_act.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

__all__ = ["ACTIVATIONS", "epilogue"]

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
