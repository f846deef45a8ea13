"""The shape-computation operators (Reshape, Slice, Gather, Concat, Cast, Pad, Split...) are
described once, in :mod:`mini_infer_core.ops`; cpu_basic and cuda_basic add only kernels.

Where an output shape reads input values, each device does what it can with values known only
at run time: cpu_basic turns the node data-dependent, cuda_basic (whose kernels never read
values back from the GPU) refuses them when the engine is built.
"""

from __future__ import annotations

from typing import Any

import mini_infer_cpu_plugins.ops as cpu_ops
import mini_infer_cuda_plugins.ops as cuda_ops
import numpy as np
import pytest

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.ops import find_schema
from mini_infer_core.plugin import DimExpr, DimsExprs, ExprBuilder, fields_from_values

FAMILIES = ("shape", "slicing", "split", "padding", "layout", "indexing", "selection",
            "scatter", "cast")
N = DimExpr.sym("N")


def _kernels() -> list[type[Any]]:
    classes = [*cpu_ops.plugin_classes(), *cuda_ops.plugin_classes()]
    return [c for c in classes if c.__module__.rsplit(".", 1)[1] in FAMILIES]


def test_every_kernel_is_its_core_schema_plus_a_kernel() -> None:
    kernels = _kernels()
    assert len(kernels) >= 62  # 46 cpu_basic, 16 cuda_basic
    for cls in kernels:
        schema = find_schema(cls.op_type, cls.min_opset, cls.domain)
        assert schema is not None and issubclass(cls, schema), cls
        assert (cls.min_opset, cls.max_opset, cls.plugin_version) == (
            schema.min_opset, schema.max_opset, schema.plugin_version), cls
        for c in cls.__mro__[:cls.__mro__.index(schema)]:
            declared = {"attributes", "output_types", "output_values"} & set(vars(c))
            assert not declared, f"{cls.__module__}.{cls.__name__}: {c.__name__} {declared}"


def _plugin(package: Any, op: str, opset: int, attrs: dict[str, Any] | None = None) -> Any:
    creator = next(c for c in package.creators()
                   if c.op_type == op and c.supports_opset(opset))
    return creator.create_plugin("node", fields_from_values(attrs or {}))


def _dims(plugin: Any, inputs: list[DimsExprs | None]) -> list[DimExpr]:
    return list(plugin.get_output_dimensions(0, inputs, ExprBuilder()))


RUN_TIME = [  # (op, opset, attrs, input shapes: a value input without values is computed)
    ("Reshape", 14, {}, [DimsExprs([2, 3]), DimsExprs([2])]),
    ("Unsqueeze", 13, {}, [DimsExprs([2, 3]), DimsExprs([1])]),
    ("Squeeze", 13, {}, [DimsExprs([2, 1]), DimsExprs([1])]),
    ("Slice", 13, {}, [DimsExprs([4, 6]), DimsExprs([1]), DimsExprs([1])]),
    ("ConstantOfShape", 9, {"value": np.array([7], np.int64)}, [DimsExprs([2])]),
]


@pytest.mark.parametrize("op, opset, attrs, inputs", RUN_TIME, ids=[r[0] for r in RUN_TIME])
def test_values_known_only_at_run_time(op: str, opset: int, attrs: dict[str, Any],
                                       inputs: list[DimsExprs | None]) -> None:
    cpu = _plugin(cpu_ops, op, opset, attrs)
    dims = _dims(cpu, inputs)
    assert cpu.data_dependent and not all(d.is_constant() for d in dims)
    cuda = _plugin(cuda_ops, op, opset, attrs)
    assert cuda.shape_inputs == cuda.value_inputs != ()
    with pytest.raises(PluginInterfaceError, match="must be known when the engine is built"):
        _dims(cuda, inputs)


def test_values_known_at_build_time_give_exact_shapes_and_values_on_both_devices() -> None:
    x, starts, ends = DimsExprs([N, 6]), DimsExprs([1], [1]), DimsExprs([1], [-1])
    for package in (cpu_ops, cuda_ops):
        sl = _plugin(package, "Slice", 13)
        rows, cols = _dims(sl, [x, starts, ends])
        assert rows.evaluate({"N": 10}) == 8 and cols.get_constant_value() == 6
        assert not sl.data_dependent
        # Shape -> Slice: the values of a slice of a shape
        picked = sl.output_values([DimsExprs([2], [N, 6]), DimsExprs([1], [1]),
                                   DimsExprs([1], [2])])
        assert [str(v) for v in picked[0]] == ["6"]
        fill = _plugin(package, "ConstantOfShape", 9, {"value": np.array([3], np.int64)})
        assert fill.output_values([DimsExprs([2], [2, 2])]) == [[3, 3, 3, 3]]


def test_cuda_refuses_axes_that_are_not_constants_naming_the_device() -> None:
    """Symbolic axes make the cpu node data-dependent; on the cuda device they cannot be."""
    inputs: list[DimsExprs | None] = [DimsExprs([4, 6]), DimsExprs([1], [0]),
                                      DimsExprs([1], [2]), DimsExprs([1], [N])]
    cpu = _plugin(cpu_ops, "Slice", 13)
    _dims(cpu, inputs)
    assert cpu.data_dependent
    with pytest.raises(PluginInterfaceError, match="Slice: .* for the cuda device"):
        _dims(_plugin(cuda_ops, "Slice", 13), inputs)
