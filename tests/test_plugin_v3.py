"""IPluginV3: a plugin written as capability interfaces (core, build, runtime, plus the
optional abilities) is built, tactic-timed, saved, loaded and run like any other, and its
serialized form is its fields."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mini_infer_core as mi
import mini_infer_core.plugin as mp
from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimsExprs, ExprBuilder, PluginTensorDesc
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.registry import discover

#: passes over the tensor each tactic makes: the same values, very different times
PASSES = {"slow": 300, "fast": 1}
#: phases in which ScaleV3 objects were created (the creator records them)
CREATED: list[mp.PluginPhase] = []


class _Build(mp.IPluginV3OneBuild, mp.ITactics, mp.IValueInference):
    def __init__(self, owner: ScaleV3) -> None:
        self.owner = owner

    @property
    def num_outputs(self) -> int:
        return 1

    def get_output_data_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]]

    def get_output_shapes(self, inputs: Sequence[DimsExprs | None],
                          expr_builder: ExprBuilder) -> list[DimsExprs]:
        assert inputs[0] is not None
        return [DimsExprs(list(inputs[0]))]

    def get_tactics(self, input_shapes: Sequence[tuple[int, ...] | None]) -> list[str]:
        return ["slow", "fast"]

    def set_tactic(self, tactic: str) -> None:
        self.owner.tactic = tactic

    def output_values(self, inputs: Sequence[DimsExprs]) -> Any:
        values = inputs[0].values
        if values is None:
            return None
        return [[v * int(self.owner.scale) for v in values]]


class _Runtime(mp.IPluginV3OneRuntime, mp.IInPlaceInputs):
    def __init__(self, owner: ScaleV3) -> None:
        self.owner = owner
        self.shapes: list[tuple[int, ...]] = []

    def on_shape_change(self, inputs: Sequence[PluginTensorDesc | None],
                        outputs: Sequence[PluginTensorDesc]) -> None:
        self.shapes.append(outputs[0].shape)

    def enqueue(self, input_descs: Sequence[PluginTensorDesc | None],
                output_descs: Sequence[PluginTensorDesc], inputs: Sequence[Any],
                outputs: Sequence[Any], workspace: Any, stream: Any) -> None:
        assert output_descs[0].shape == outputs[0].shape
        np.multiply(inputs[0], self.owner.scale, out=outputs[0])
        for _ in range(PASSES[self.owner.tactic] - 1):  # the input may live in the output
            np.add(outputs[0], 0.0, out=outputs[0])

    def get_fields_to_serialize(self) -> mp.PluginFieldCollection:
        return mp.fields_from_values({"scale": self.owner.scale, "tactic": self.owner.tactic})

    def in_place_inputs(self, inputs: Any, outputs: Any) -> dict[int, tuple[int, int]]:
        return {0: (0, 0)}  # computes elementwise: its input may live in its output


class ScaleV3(mp.IPluginV3):
    """y = x * scale, as a V3 plugin in the ``com.test`` domain."""

    def __init__(self, scale: float, tactic: str = "slow") -> None:
        self.scale, self.tactic = scale, tactic
        self.core = mp.IPluginV3OneCore()
        self.core.plugin_name, self.core.plugin_namespace = "ScaleV3", "test.v3"
        self.build, self.runtime = _Build(self), _Runtime(self)

    def get_capability_interface(self, kind: mp.PluginCapabilityType
                                 ) -> mp.IPluginCapability | None:
        return {mp.PluginCapabilityType.CORE: self.core, mp.PluginCapabilityType.BUILD: self.build,
                mp.PluginCapabilityType.RUNTIME: self.runtime}[kind]

    def clone(self) -> ScaleV3:
        return ScaleV3(self.scale, self.tactic)


class ScaleV3Creator(mp.IPluginCreatorV3One):
    name, plugin_namespace, domain, op_type = "ScaleV3", "test.v3", "com.test", "ScaleV3"

    @property
    def field_names(self) -> tuple[str, ...]:
        return ("scale", "tactic")

    def create_plugin_v3(self, name: str, fields: mp.PluginFieldCollection,
                         phase: mp.PluginPhase) -> mp.IPluginV3:
        CREATED.append(phase)
        values = fields.values_dict()
        return ScaleV3(float(values["scale"]), str(values.get("tactic", "slow")))


def _model(shape: list[int | str]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    nodes = [helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("ScaleV3", ["n"], ["s"], domain="com.test", scale=2.5),
             helper.make_node("Neg", ["s"], ["y"])]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])


@pytest.fixture
def registry() -> Any:
    reg = discover()
    reg.register_creator(ScaleV3Creator())
    CREATED.clear()
    return reg


def test_a_v3_plugin_builds_times_saves_loads_and_runs(registry: Any, tmp_path: Path) -> None:
    model = _model([2, 64, 64])
    engine = mi.Builder(registry).build_engine(mi.parse_onnx(model), mi.BuilderConfig())
    assert CREATED == [mp.PluginPhase.BUILD]
    (timed,) = engine.build_info["tactics"].values()
    assert timed["chosen"] == "fast" and timed["ms"]["fast"] < timed["ms"]["slow"]
    node = next(nd for nd in engine.nodes if nd.op_type == "ScaleV3")
    assert adapter.interface_level(node.plugin) == "IPluginV3"
    path = tmp_path / "v3.engine"
    engine.save(str(path))
    loaded = mi.Runtime(registry).load_engine(path)
    assert CREATED == [mp.PluginPhase.BUILD, mp.PluginPhase.RUNTIME]
    x = np.random.default_rng(0).standard_normal((2, 64, 64)).astype(np.float32)
    with loaded.create_execution_context() as ctx:
        y = ctx.execute({"x": x})["y"]
        plugin = next(p for p, nd in zip(ctx.plugins, loaded.nodes, strict=True)
                      if nd.op_type == "ScaleV3")
        # the runtime capability saw the concrete shapes; the tactic came from the file
        assert isinstance(plugin, mi.plugin._v3.V3Plugin)
        v3 = plugin.v3
        assert isinstance(v3, ScaleV3)
        assert v3.runtime.shapes == [(2, 64, 64)] and v3.tactic == "fast"
        # the in-place ability reached the memory planner
        assert ctx.schedule is not None and "n" in ctx.schedule.aliases
    np.testing.assert_allclose(y, x * 2.5, rtol=1e-6)


def test_v3_value_inference_folds_shape_arithmetic(registry: Any) -> None:
    """A V3 build capability that also implements mp.IValueInference gives build-time values:
    Shape -> ScaleV3 -> Reshape is computed while building."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1),
             helper.make_node("ScaleV3", ["s"], ["s2"], domain="com.test", scale=2.0),
             helper.make_node("Concat", ["minus1", "s2"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["y"])]
    init = [helper.make_tensor("minus1", TensorProto.INT64, [1], [-1])]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], init), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])
    engine = mi.Builder(registry).build_engine(mi.parse_onnx(model), mi.BuilderConfig())
    assert [nd.op_type for nd in engine.nodes] == ["Reshape"]
    assert engine.tensors["y"].dims.display()[1] == 8


def test_a_v3_plugin_without_its_capabilities_is_refused() -> None:
    class Broken(ScaleV3):
        def get_capability_interface(self, kind: mp.PluginCapabilityType) -> Any:
            return None if kind is mp.PluginCapabilityType.RUNTIME else \
                super().get_capability_interface(kind)

    with pytest.raises(PluginInterfaceError, match="RUNTIME.*IPluginV3OneRuntime"):
        mi.plugin._v3.V3Plugin(Broken(1.0))
