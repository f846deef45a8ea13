"""cpu_basic creators through mini-infer's plugin test kit: metadata, field names, declared
shapes and dtypes vs what enqueue writes, serialize round trip, clone independence, and
agreement with onnx's ReferenceEvaluator (where that evaluator is right for the opset)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from mini_infer_cpu_plugins.catalog import lazy_creators

rng = np.random.default_rng(7)


def f32(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


CASES: list[tuple[str, int, dict[str, Any], list[Any]]] = [
    ("Relu", 14, {}, [f32(2, 3)]),
    ("Sigmoid", 13, {}, [f32(4)]),
    ("Tanh", 13, {}, [f32(2, 2)]),
    ("Add", 14, {}, [f32(2, 3), f32(3)]),
    ("Sub", 14, {}, [f32(2, 1), f32(1, 3)]),
    ("Mul", 14, {}, [f32(2, 3), f32(2, 3)]),
    ("Div", 14, {}, [f32(2, 3), np.full((3,), 2.0, np.float32)]),
    ("Sum", 13, {}, [f32(2, 3), f32(3), f32(1, 3)]),
    ("Conv", 11, {"pads": [1, 1, 1, 1], "strides": [2, 2]}, [f32(1, 3, 7, 7), f32(4, 3, 3, 3),
                                                           f32(4)]),
    ("Conv", 11, {"group": 2, "dilations": [2, 2]}, [f32(2, 4, 9, 9), f32(6, 2, 3, 3)]),
    # depthwise with a channel multiplier, dilation and asymmetric pads (the direct path)
    ("Conv", 11, {"group": 4, "pads": [1, 2, 2, 1], "dilations": [2, 1]},
     [f32(2, 4, 9, 8), f32(8, 1, 3, 3), f32(8)]),
    ("MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
     [f32(1, 2, 8, 8)]),
    ("AveragePool", 19, {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1],
                         "count_include_pad": 1}, [f32(1, 2, 5, 5)]),
    ("GlobalAveragePool", 1, {}, [f32(2, 3, 4, 4)]),
    ("Gemm", 13, {"transB": 1, "alpha": 0.5}, [f32(2, 3), f32(4, 3), f32(4)]),
    ("MatMul", 13, {}, [f32(2, 3, 4), f32(4, 5)]),
    ("Transpose", 13, {"perm": [2, 0, 1]}, [f32(2, 3, 4)]),
    ("Concat", 13, {"axis": -1}, [f32(2, 3), f32(2, 1)]),
    ("Flatten", 13, {"axis": 2}, [f32(2, 3, 4, 5)]),
    ("Softmax", 13, {"axis": 1}, [f32(2, 5, 3)]),
    ("Clip", 13, {}, [f32(3, 3), np.array(-0.5, np.float32), np.array(0.5, np.float32)]),
    ("Reshape", 14, {}, [f32(2, 3, 4), np.array([0, -1], np.int64)]),
    ("Unsqueeze", 13, {}, [f32(2, 3), np.array([0, 3], np.int64)]),
    ("Identity", 16, {}, [f32(3)]),
]


@pytest.mark.parametrize("op, opset, attrs, inputs", CASES,
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(CASES)])
def test_cpu_plugin_passes_the_kit(plugin_kit: ModuleType, op: str, opset: int,
                                   attrs: dict[str, Any], inputs: list[Any]) -> None:
    creator = next(c for c in lazy_creators() if c.op_type == op and c.supports_opset(opset))
    report = plugin_kit.check_plugin(creator, attrs, inputs, opset=opset)
    assert report.checks[-1].startswith("agrees with ReferenceEvaluator")


def test_the_kit_catches_a_plugin_that_leaves_output_unwritten(plugin_kit: ModuleType) -> None:
    from mini_infer_core.plugin import OnnxPluginCreator, UnaryPlugin

    class Lazy(UnaryPlugin):
        op_type = "Relu"

        def compute(self, x: Any, *, out: Any) -> None:
            out[0] = 0.0  # writes only the first element

    with pytest.raises(plugin_kit.PluginCheckError, match="did not"):
        plugin_kit.check_plugin(OnnxPluginCreator(Lazy, namespace="test"), {}, [f32(4)])


def test_the_kit_catches_a_wrong_kernel(plugin_kit: ModuleType) -> None:
    from mini_infer_core.plugin import OnnxPluginCreator, UnaryPlugin

    class Wrong(UnaryPlugin):
        op_type = "Relu"

        def compute(self, x: Any, *, out: Any) -> None:
            np.abs(x, out=out)

    with pytest.raises(plugin_kit.PluginCheckError, match="ReferenceEvaluator"):
        plugin_kit.check_plugin(OnnxPluginCreator(Wrong, namespace="test"), {}, [f32(4)],
                                opset=14)


@pytest.mark.parametrize("attrs, wshape", [
    ({"pads": [1, 1, 1, 1]}, (5, 3, 3, 3)),
    ({"strides": [2, 1], "dilations": [1, 2], "pads": [0, 2, 1, 0]}, (4, 3, 3, 2)),
    ({"group": 3, "pads": [1, 0, 1, 0]}, (6, 1, 2, 3)),
])
def test_conv_in_bands_of_rows_matches_the_reference(
        plugin_kit: ModuleType, monkeypatch: pytest.MonkeyPatch, attrs: dict[str, Any],
        wshape: tuple[int, ...]) -> None:
    """Images whose im2col exceeds ROW_BUDGET are processed a band of output rows at a time."""
    from mini_infer_cpu_plugins.ops import conv

    monkeypatch.setattr(conv, "ROW_BUDGET", 256)  # a few rows per band
    creator = next(c for c in lazy_creators() if c.op_type == "Conv")
    report = plugin_kit.check_plugin(creator, attrs, [f32(2, 3, 11, 9), f32(*wshape)], opset=11)
    assert report.checks[-1].startswith("agrees with ReferenceEvaluator")
