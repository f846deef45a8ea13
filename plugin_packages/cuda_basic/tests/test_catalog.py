"""The lazy catalog matches the plugin classes, every creator passes the plugin kit's metadata
checks, and the package covers the operators it promises."""

from __future__ import annotations

from types import ModuleType

from mini_infer_cuda_plugins import NAMESPACE
from mini_infer_cuda_plugins.catalog import lazy_creators
from mini_infer_cuda_plugins.ops import plugin_classes

from mini_infer_core.ops import onnx_since

#: the operators of onnx's nine light models, then the others this package must serve
LIGHT_MODEL_OPS = {"Conv", "Relu", "MaxPool", "AveragePool", "GlobalAveragePool",
                   "BatchNormalization", "Gemm", "Reshape", "Softmax", "Concat", "Sum", "Add",
                   "Mul", "Unsqueeze", "LRN", "Dropout", "ConstantOfShape", "Transpose"}
MORE_OPS = {"MatMul", "Sub", "Div", "Flatten", "Identity", "Sigmoid", "Tanh", "Clip",
            "LeakyRelu", "Exp", "Log", "Sqrt", "Neg", "Abs", "Pow", "Erf", "Gelu", "Shape",
            "Gather", "Slice", "Squeeze", "Cast", "ReduceSum", "ReduceMean", "ReduceMax",
            "Where", "Equal", "Less", "Greater"}


def test_the_lazy_creators_are_the_kernel_classes(plugin_kit: ModuleType) -> None:
    creators = lazy_creators()
    assert all(c.devices == ("cuda",) and c.plugin_namespace == NAMESPACE for c in creators)
    plugin_kit.check_kernel_catalog(creators, plugin_classes())


def test_every_promised_operator_is_served_without_overlapping_versions() -> None:
    served = {c.op_type for c in lazy_creators()}
    assert LIGHT_MODEL_OPS | MORE_OPS <= served, sorted((LIGHT_MODEL_OPS | MORE_OPS) - served)
    for op in served:
        versions = sorted((c.min_opset, c.max_opset or 10**6) for c in lazy_creators()
                          if c.op_type == op)
        for (_, hi), (lo, _) in zip(versions, versions[1:], strict=False):
            assert hi < lo, f"{op}: opset ranges overlap: {versions}"
        # served from the operator's first opset (or by 20 for old ones) up to the newest
        first = onnx_since(op) or 1
        assert versions[0][0] <= max(first, 20) and versions[-1][1] == 10**6, (op, versions)
