"""The activations and residual the convolution tests put after a Conv, as the fuser meets
them in models (shared by test_native.py and test_dconv.py)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

__all__ = ["epilogue"]


def epilogue(after: str, inits: dict[str, Any]) -> list[onnx.NodeProto]:
    """The nodes from the Conv's output ``c`` to ``y`` for ``after`` ("" none: the Conv writes
    ``y``; "Relu"; "Clip" to [-0.5, 0.7], its bounds added to ``inits``; "Add": a residual of
    the input ``x``, the output shaped like it)."""
    if after == "Relu":
        return [helper.make_node("Relu", ["c"], ["y"])]
    if after == "Clip":
        inits |= {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}
        return [helper.make_node("Clip", ["c", "lo", "hi"], ["y"])]
    if after == "Add":
        return [helper.make_node("Add", ["c", "x"], ["y"])]
    return []
