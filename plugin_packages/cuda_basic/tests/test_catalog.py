"""The lazy catalog matches the plugin classes, every creator passes the plugin kit's metadata
checks, and the package covers the operators it promises."""

from __future__ import annotations

from types import ModuleType

from mini_infer_cuda_plugins import NAMESPACE
from mini_infer_cuda_plugins.catalog import CATALOG, lazy_creators
from mini_infer_cuda_plugins.ops import catalog_entries

from mini_infer_core.plugin.catalog import render_catalog as render

#: the operators of onnx's nine light models, then the others this package must serve
LIGHT_MODEL_OPS = {"Conv", "Relu", "MaxPool", "AveragePool", "GlobalAveragePool",
                   "BatchNormalization", "Gemm", "Reshape", "Softmax", "Concat", "Sum", "Add",
                   "Mul", "Unsqueeze", "LRN", "Dropout", "ConstantOfShape", "Transpose"}
MORE_OPS = {"MatMul", "Sub", "Div", "Flatten", "Identity", "Sigmoid", "Tanh", "Clip",
            "LeakyRelu", "Exp", "Log", "Sqrt", "Neg", "Abs", "Pow", "Erf", "Gelu", "Shape",
            "Gather", "Slice", "Squeeze", "Cast", "ReduceSum", "ReduceMean", "ReduceMax",
            "Where", "Equal", "Less", "Greater"}


def test_catalog_is_up_to_date() -> None:
    assert CATALOG == catalog_entries(), (
        "catalog.py is stale: run `python -m mini_infer_cuda_plugins.catalog --write`")
    assert render(CATALOG) == render(catalog_entries())


def test_every_lazy_creator_has_complete_metadata_and_resolves_to_its_class(
        plugin_kit: ModuleType) -> None:
    creators = lazy_creators()
    assert creators
    for creator in creators:
        plugin_kit.check_creator_metadata(creator)
        assert creator.devices == ("cuda",) and creator.plugin_namespace == NAMESPACE
        real = creator.resolve()  # type: ignore[attr-defined]
        assert (real.name, real.plugin_version, real.field_names) == \
            (creator.name, creator.plugin_version, creator.field_names)


def test_every_promised_operator_is_served_without_overlapping_versions() -> None:
    served = {c.op_type for c in lazy_creators()}
    assert LIGHT_MODEL_OPS | MORE_OPS <= served, sorted((LIGHT_MODEL_OPS | MORE_OPS) - served)
    for op in served:
        versions = sorted((c.min_opset, c.max_opset or 10**6) for c in lazy_creators()
                          if c.op_type == op)
        for (_, hi), (lo, _) in zip(versions, versions[1:], strict=False):
            assert hi < lo, f"{op}: opset ranges overlap: {versions}"
        assert versions[0][0] <= 20 and versions[-1][1] == 10**6, (op, versions)


def test_attributes_are_those_of_the_cpu_plugins_where_both_serve_an_operator() -> None:
    """Same ONNX attribute sets and defaults as the reference (cpu) plugins, version by
    version (skipped without mini-infer-cpu-plugins). Fields of fusions (``__relu__``...)
    may differ: each device fuses what its kernels can apply."""
    import pytest

    cpu = pytest.importorskip("mini_infer_cpu_plugins.catalog")
    theirs = {(e["op_type"], e["min_opset"], e["max_opset"]):
              {f for f in e["fields"] if not f.startswith("__")} for e in cpu.CATALOG}
    for e in CATALOG:
        key = (e["op_type"], e["min_opset"], e["max_opset"])
        if key in theirs:
            assert {f for f in e["fields"] if not f.startswith("__")} == theirs[key], key
