"""mini-infer-cuda-plugins' own serialized form, recorded build-time fields, clones and
format negotiation (float16 everywhere a float tensor goes)."""

from __future__ import annotations

import numpy as np
import pytest
from mini_infer_cuda_plugins.catalog import lazy_creators
from mini_infer_cuda_plugins.serialization import FLOAT_TYPES, FORMAT_TAG, CudaPlugin

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import (
    DataType,
    DimsExprs,
    IPluginCreator,
    PluginTensorDesc,
    TensorFormat,
    fields_from_values,
)


def creator(op: str, opset: int) -> IPluginCreator:
    return next(c for c in lazy_creators() if c.op_type == op and c.supports_opset(opset))


def make(op: str, opset: int, attrs: dict[str, object]) -> CudaPlugin:
    plugin = creator(op, opset).create_plugin(op.lower(), fields_from_values(attrs))
    assert isinstance(plugin, CudaPlugin)
    return plugin


def test_round_trip_keeps_every_attribute() -> None:
    c = creator("Conv", 13)
    attrs = {"pads": [1, 2, 1, 2], "strides": [2, 1], "group": 2, "auto_pad": "NOTSET",
             "dilations": [1, 3]}
    plugin = c.create_plugin("conv", fields_from_values(attrs))
    data = plugin.serialize()
    assert data[:1] == FORMAT_TAG and plugin.get_serialization_size() == len(data)
    twin = c.deserialize_plugin("conv", data)
    assert isinstance(twin, CudaPlugin) and isinstance(plugin, CudaPlugin)
    assert twin.attrs == plugin.attrs
    assert twin.serialize() == data


def test_tensor_attributes_and_strings_round_trip() -> None:
    c = creator("ConstantOfShape", 13)
    plugin = c.create_plugin("k", fields_from_values({"value": np.array([7], np.int32)}))
    twin = c.deserialize_plugin("k", plugin.serialize())
    assert twin.fill.dtype == np.int32 and int(twin.fill) == 7  # type: ignore[attr-defined]
    g = creator("Gelu", 20)
    twin = g.deserialize_plugin("g", g.create_plugin(
        "g", fields_from_values({"approximate": "tanh"})).serialize())
    assert twin.attrs["approximate"] == "tanh"  # type: ignore[attr-defined]


def test_recorded_build_time_fields_survive_serialize_and_clone() -> None:
    c = creator("ReduceSum", 13)
    plugin = c.create_plugin("r", fields_from_values({"keepdims": 0}))
    dims = plugin.get_output_dimensions(  # type: ignore[attr-defined]
        0, [DimsExprs((2, 3, 4)), DimsExprs((1,), values=[2])], None)
    assert dims.to_tuple() == (2, 3)
    for twin in (c.deserialize_plugin("r", plugin.serialize()), plugin.clone()):
        assert twin.hidden == {"__axes__": (2,)}  # type: ignore[attr-defined]
        out = np.empty((2, 3), np.float32)
        x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
        # the axes input is not even looked at: the recorded axes are used
        twin.enqueue([x, None], [out], None, None)
        np.testing.assert_array_equal(out, x.sum(axis=2))


def test_unknown_fields_and_unknown_recorded_fields_are_refused() -> None:
    c = creator("Relu", 14)
    with pytest.raises(PluginInterfaceError, match="not understood"):
        c.create_plugin("r", fields_from_values({"__axes__": [1]}))
    plugin = c.create_plugin("r", fields_from_values({}))
    with pytest.raises(PluginInterfaceError, match="not one of its hidden fields"):
        plugin.record("__axes__", [1])  # type: ignore[attr-defined]


def test_foreign_or_corrupt_data_is_a_clear_error() -> None:
    c = creator("Relu", 14)
    good = c.create_plugin("r", fields_from_values({})).serialize()
    with pytest.raises(PluginInterfaceError, match="format tag .*mini-infer-cuda-plugins"):
        c.deserialize_plugin("r", b"\x01" + good[1:])  # cpu_basic's tag
    with pytest.raises(PluginInterfaceError, match="corrupt .*mini-infer-cuda-plugins"):
        c.deserialize_plugin("r", FORMAT_TAG + b"garbage")


def _descs(*types: DataType) -> list[PluginTensorDesc]:
    return [PluginTensorDesc((), t) for t in types]


def test_formats_accept_float_and_half_linear_with_one_float_type_per_node() -> None:
    for op, opset, n_in in (("Conv", 13, 3), ("Relu", 14, 1), ("Add", 14, 2),
                            ("Softmax", 13, 1), ("BatchNormalization", 15, 5)):
        plugin = make(op, opset, {})
        for t in (DataType.FLOAT, DataType.HALF):
            descs = _descs(*[t] * (n_in + 1))
            assert all(plugin.supports_format_combination(k, descs, n_in)
                       for k in range(n_in + 1)), (op, t)
        mixed = _descs(DataType.HALF, *[DataType.FLOAT] * n_in)
        assert not all(plugin.supports_format_combination(k, mixed, n_in)
                       for k in range(n_in + 1)), op
        chw4 = [PluginTensorDesc((), DataType.FLOAT, TensorFormat.CHW4)] * (n_in + 1)
        assert not plugin.supports_format_combination(0, chw4, n_in)


def test_formats_refuse_types_cupy_does_not_hold_and_allow_casts_between_floats() -> None:
    relu = make("Relu", 14, {})
    assert not relu.supports_format_combination(0, _descs(DataType.BFLOAT16,
                                                          DataType.BFLOAT16), 1)
    assert not relu.supports_format_combination(0, _descs(DataType.STRING,
                                                          DataType.STRING), 1)
    cast = make("Cast", 13, {"to": 10})
    descs = _descs(DataType.FLOAT, DataType.HALF)
    assert cast.supports_format_combination(0, descs, 1)
    assert cast.supports_format_combination(1, descs, 1)
    with pytest.raises(PluginInterfaceError, match="not supported on the cuda device"):
        creator("Cast", 13).create_plugin("c", fields_from_values({"to": 16}))  # bfloat16
    assert DataType.HALF in FLOAT_TYPES and DataType.FLOAT in FLOAT_TYPES


def test_an_absent_optional_input_does_not_decide_the_float_type() -> None:
    """The core describes absent inputs as FLOAT placeholders: a half Clip with only a max
    must still negotiate."""
    from mini_infer_core.plugin import _adapter as adapter

    clip = creator("Clip", 13).create_plugin("c", fields_from_values({}))
    adapter.check_formats(clip, [DataType.HALF, None, DataType.HALF], [DataType.HALF], "t")
