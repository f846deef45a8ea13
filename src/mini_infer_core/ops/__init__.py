"""Operator schemas: every ONNX operator described once, for every device.

A schema (:class:`Op`) holds what does not depend on the device: the attributes and their
defaults (from ``onnx.defs``), the opsets it covers, and shape, type and value inference. A
device package's plugin for an operator is the schema plus its kernel::

    from mini_infer_core.ops import activation

    class Relu(MyDevicePlugin, activation.Relu):
        def compute(self, x, *, out, **_):
            ...

so a new device backend gets shape inference for every operator for free (see
docs/plugin-authoring.md, "Writing a device backend"). The modules mirror operator families
(``activation``, ``elementwise``, ``conv``, ...); :func:`find_schema` looks one up by
operator and opset, :func:`schema_classes` lists them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._catalog import (
    declared_kernels,
    kernel_catalog,
    kernel_creators,
    lazy_kernels,
    package_classes,
    schema_kernels,
    schema_named,
)
from ._determinism import INondeterministic, may_fold

if TYPE_CHECKING:
    from ._schema import BroadcastOp, Op, UnaryOp, ValueOp, onnx_attributes, onnx_since

__all__ = ["BroadcastOp", "INondeterministic", "MODULES", "Op", "UnaryOp", "ValueOp",
           "declared_kernels", "find_schema", "kernel_catalog", "kernel_creators", "lazy_kernels",
           "may_fold", "onnx_attributes", "onnx_since", "package_classes", "schema_classes",
           "schema_kernels", "schema_named"]

#: the schema modules, one per operator family
MODULES = (
    "activation", "activation_extra", "attention", "bitwise", "cast", "control_flow", "conv",
    "conv_transpose", "cumulative", "dropout", "einsum", "elementwise", "erf", "gelu", "gemm",
    "generator", "grid", "hardswish", "indexing", "layer_norm", "layout", "logic", "loss",
    "lp_pool", "math_unary", "ml", "normalization", "norms", "padding", "pool", "qlinear",
    "quantize", "reduce", "resize", "rnn", "roi", "scatter", "selection", "sequence", "shape",
    "slicing", "softmax", "spectral", "split", "strings",
    # issue 15: the operators no schema described yet
    "deform_conv", "detection", "image", "linalg", "llm", "preview", "random_ops",
    "training", "windows",
    # issue 25: onnxruntime's quantized com.microsoft operators
    "contrib_quant",
)


def __getattr__(name: str) -> Any:
    """The schema base classes are imported on first use (PEP 562): a distribution's hooks
    import :func:`kernel_creators` from here, and listing plugins imports no schema."""
    if name not in ("BroadcastOp", "Op", "UnaryOp", "ValueOp", "onnx_attributes", "onnx_since"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}._schema"), name)
    globals()[name] = value
    return value


def _modules() -> list[Any]:
    return [importlib.import_module(f"{__name__}.{name}") for name in MODULES]


def schema_classes() -> list[type[Op]]:
    """Every operator schema, module by module (the classes each module lists in
    ``__all__``)."""
    return [getattr(mod, name) for mod in _modules() for name in mod.__all__]


def find_schema(op_type: str, opset: int, domain: str = "") -> type[Op] | None:
    """The schema of ``op_type`` that covers ``opset`` (None: no schema here)."""
    for cls in schema_classes():
        if cls.op_type == op_type and cls.domain == domain and cls.min_opset <= opset and (
                cls.max_opset is None or opset <= cls.max_opset):
            return cls
    return None
