"""IPluginV3: a plugin written as capability interfaces (core, build, runtime, plus the
optional abilities) is built, tactic-timed, saved, loaded and run like any other, and its
serialized form is its fields."""

from __future__ import annotations

import inspect
import pickle
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mini_infer_core as mi
import mini_infer_core.plugin as mp
from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DataType, DimsExprs, ExprBuilder, PluginTensorDesc
from mini_infer_core.plugin import _adapter as adapter
from mini_infer_core.registry import PluginRegistry, discover

#: passes over the tensor each tactic makes: the same values, very different times
PASSES = {"slow": 300, "fast": 1}
#: phases in which ScaleV3 objects were created (the creator records them)
CREATED: list[mp.PluginPhase] = []


class _PlainBuild(mp.IPluginV3OneBuild):
    """Shapes and types only: no optional ability."""

    def __init__(self, owner: Any = None) -> None:
        self.owner = owner

    @property
    def num_outputs(self) -> int:
        return 1

    def get_output_data_types(self, input_types: Sequence[DataType]) -> list[DataType]:
        return [input_types[0]]

    def get_output_shapes(self, inputs: Sequence[DimsExprs | None],
                          expr_builder: ExprBuilder) -> list[DimsExprs]:
        assert inputs[0] is not None
        return [inputs[0]]


class _Build(_PlainBuild, mp.ITactics, mp.IValueInference):
    """Shapes and types as _PlainBuild, with two tactics and value inference."""

    owner: ScaleV3

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

    def clone(self) -> Self:
        return type(self)(self.scale, self.tactic)


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


def _registry_making(make: Callable[[float], mp.IPluginV3]) -> PluginRegistry:
    """The plugins found, with a ScaleV3 creator that makes ``make(scale)``."""
    class Creator(ScaleV3Creator):
        def create_plugin_v3(self, name: str, fields: mp.PluginFieldCollection,
                             phase: mp.PluginPhase) -> mp.IPluginV3:
            return make(float(fields.values_dict()["scale"]))

    registry = discover()
    registry.register_creator(Creator())
    return registry


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


# -- every capability reaches the core through every interface level ------------------------
class _Answer:
    """What a spy's member gives: the core must hand back this very object."""

    def __init__(self, member: str) -> None:
        self.member = member

    def __repr__(self) -> str:
        return f"<answer of {self.member}>"


def _spy(bases: tuple[type[Any], ...], entry: mp.Capability,
         heard: list[tuple[Any, str]]) -> type[Any]:
    """A class of ``bases`` implementing ``entry``'s interface, each member overridden: a
    value member is an :class:`_Answer`, a method records its call and returns one."""
    members: dict[str, Any] = {}
    for name in entry.members:
        if callable(vars(entry.interface)[name]):
            def method(self: Any, *args: Any, _name: str = name, **kwargs: Any) -> Any:
                heard.append((self, _name))
                return ANSWERS[_name]
            members[name] = method
        else:
            members[name] = ANSWERS[name]
    return type(f"Spy{entry.name}", (*bases, entry.interface), members)


#: every member's answer, by name (members of two interfaces never share a name)
ANSWERS = {m: _Answer(m) for e in mp.CAPABILITIES for m in e.members}


class _V2(mp.IPluginV2):
    num_outputs = 1  # type: ignore[assignment]

    def get_output_shape(self, index: int, input_shapes: Sequence[tuple[int, ...]]
                         ) -> tuple[int, ...]:
        return input_shapes[0]

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        pass

    def serialize(self) -> bytes:
        return b""

    def clone(self) -> mp.IPluginV2:
        return type(self)()


class _V2Ext(_V2, mp.IPluginV2Ext):
    pass


class _V2Dynamic(_V2, mp.IPluginV2DynamicExt):
    def get_output_dimensions(self, index: int, inputs: Sequence[DimsExprs],
                              expr_builder: ExprBuilder) -> DimsExprs:
        return inputs[0]


class _PlainRuntime(mp.IPluginV3OneRuntime):
    """Enqueue and fields only: no optional ability."""

    def __init__(self, owner: Any = None) -> None:
        self.owner = owner

    def enqueue(self, *args: Any) -> None:
        pass

    def get_fields_to_serialize(self) -> mp.PluginFieldCollection:
        return mp.fields_from_values({})


class _SpyV3(ScaleV3):
    def __init__(self, build: Any, runtime: Any) -> None:
        super().__init__(1.0)
        self.build, self.runtime = build, runtime

    def clone(self) -> _SpyV3:
        return _SpyV3(type(self.build)(self), type(self.runtime)(self))


class _Creator(mp.IPluginCreator):
    name, plugin_namespace = "Spy", "test.spy"

    def __init__(self, make: Any) -> None:
        self.make = make

    @property
    def field_names(self) -> tuple[str, ...]:
        return ()

    def create_plugin(self, name: str, fields: Any) -> Any:
        return self.make()

    def deserialize_plugin(self, name: str, data: bytes) -> Any:
        return self.make()


LEVELS = ("IPluginV2", "IPluginV2Ext", "IPluginV2DynamicExt", "IPluginV3 build",
          "IPluginV3 runtime")


def _plugin(level: str, entry: mp.Capability, heard: list[tuple[Any, str]]) -> Any:
    """A plugin of ``level`` with ``entry``'s ability, as its author writes it."""
    v2 = {"IPluginV2": _V2, "IPluginV2Ext": _V2Ext, "IPluginV2DynamicExt": _V2Dynamic}
    if level in v2:
        return _spy((v2[level],), entry, heard)()
    if level == "IPluginV3 build":
        return _SpyV3(_spy((_PlainBuild,), entry, heard)(), _PlainRuntime())
    return _SpyV3(_PlainBuild(), _spy((_PlainRuntime,), entry, heard)())


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("entry", mp.CAPABILITIES, ids=lambda e: e.name)
def test_every_capability_reaches_the_core_through_every_interface_level(
        entry: mp.Capability, level: str) -> None:
    """Made by a creator as the core makes plugins (a V3 one wrapped), and again cloned for
    an execution context, the plugin has the ability where the core asks for it
    (``adapter.ability_of``), and each member of the interface answers what the author's
    object answers, a method called on that object."""
    heard: list[tuple[Any, str]] = []
    made = adapter.create(_Creator(lambda: _plugin(level, entry, heard)), "n",
                          mp.PluginFieldCollection([]))
    assert adapter.interface_level(made) == level.split()[0]
    for plugin in (made, adapter.clone(made)):
        ability = adapter.ability_of(plugin, entry.interface)
        assert ability is not None, f"{entry.name} is lost at {level}"
        author = plugin if not isinstance(plugin, mi.plugin._v3.V3Plugin) else (
            plugin.build if level.endswith("build") else plugin.runtime)
        for name in entry.members:
            if callable(vars(entry.interface)[name]):
                heard.clear()
                n_args = len(inspect.signature(vars(entry.interface)[name]).parameters) - 1
                answer = getattr(ability, name)(*[object()] * n_args)
                assert heard == [(author, name)], (name, heard)
                if name not in entry.tell:
                    assert answer is ANSWERS[name], name
            else:
                assert getattr(ability, name) is ANSWERS[name], name
    # and a plugin of that level without the ability has none
    plain = adapter.create(_Creator(lambda: _plugin(level, mp.CAPABILITIES[-1], heard)
                                    if entry is not mp.CAPABILITIES[-1]
                                    else _plugin(level, mp.CAPABILITIES[0], heard)), "n",
                           mp.PluginFieldCollection([]))
    assert adapter.ability_of(plain, entry.interface) is None


def test_a_told_member_reaches_both_v3_objects() -> None:
    """set_tactic (a ``tell`` member) reaches the build and the runtime object alike."""
    (entry,) = [e for e in mp.CAPABILITIES if e.interface is mp.ITactics]
    heard: list[tuple[Any, str]] = []
    build = _spy((_PlainBuild,), entry, heard)()
    runtime = _spy((_PlainRuntime,), entry, heard)()
    plugin = mi.plugin._v3.V3Plugin(_SpyV3(build, runtime))
    tactics = adapter.tactics_of(plugin)
    assert tactics is not None
    tactics.set_tactic("fast")
    assert heard == [(build, "set_tactic"), (runtime, "set_tactic")]


def test_the_table_names_every_capability_interface_of_the_plugin_api() -> None:
    """An optional interface added to the plugin API without a row would be lost by the V3
    wrapper: every ``I...`` class the API exports is an interface level or a row."""
    levels = {"IPluginV2", "IPluginV2Ext", "IPluginV2DynamicExt", "IPluginV3",
              "IPluginV3OneBuild", "IPluginV3OneCore", "IPluginV3OneRuntime",
              "IPluginCapability", "IPluginCreator", "IPluginCreatorV3One"}
    exported = {n for n in mp.__all__ if re.fullmatch(r"I[A-Z]\w+", n)} - levels
    assert exported == {e.name for e in mp.CAPABILITIES}
    # the V3 wrapper forwards each member by name: two rows must not share one
    members = [m for e in mp.CAPABILITIES for m in e.members]
    assert len(members) == len(set(members))
    assert mi.ops.INondeterministic is mp.INondeterministic


class _BoundRuntime(_Runtime, mp.IBoundRun):
    """Runs through a call bound once for its arrays; ``enqueue`` is not to be used."""

    def __init__(self, owner: ScaleV3) -> None:
        super().__init__(owner)
        self.bound_runs = self.enqueues = 0

    def enqueue(self, *args: Any) -> None:
        self.enqueues += 1
        super().enqueue(*args)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any) -> Any:
        x, out, scale = inputs[0], outputs[0], self.owner.scale

        def run() -> None:
            self.bound_runs += 1
            np.multiply(x, scale, out=out)
        return run


class _RandomBuild(_Build, mp.INondeterministic):
    pass


def test_a_v3_runtime_objects_bound_run_runs_the_step() -> None:
    """``bind_run`` of a V3 runtime object (IBoundRun) is what the engine runs."""
    class Bound(ScaleV3):
        def __init__(self, scale: float, tactic: str = "fast") -> None:
            super().__init__(scale, tactic)
            self.runtime = _BoundRuntime(self)

    registry = _registry_making(Bound)
    engine = mi.Builder(registry).build_engine(mi.parse_onnx(_model([2, 8])),
                                               mi.BuilderConfig(time_tactics=False))
    x = np.random.default_rng(1).standard_normal((2, 8)).astype(np.float32)
    with engine.create_execution_context() as ctx:
        for _ in range(3):
            np.testing.assert_allclose(ctx.execute({"x": x})["y"], x * 2.5, rtol=1e-6)
        (plugin,) = [p for p in ctx.plugins if isinstance(p, mi.plugin._v3.V3Plugin)]
        runtime = plugin.runtime
        assert isinstance(runtime, _BoundRuntime)
        assert (runtime.bound_runs, runtime.enqueues) == (3, 0)


@pytest.mark.parametrize("random", [False, True])
def test_a_v3_build_object_that_is_nondeterministic_is_never_folded(random: bool) -> None:
    """A node of constant inputs is folded, unless its build object is INondeterministic."""
    class Plugin(ScaleV3):
        def __init__(self, scale: float, tactic: str = "fast") -> None:
            super().__init__(scale, tactic)
            if random:
                self.build = _RandomBuild(self)

    registry = _registry_making(Plugin)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
    graph = helper.make_graph(
        [helper.make_node("ScaleV3", ["c"], ["y"], domain="com.test", scale=2.0)], "g", [],
        [y], [helper.make_tensor("c", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                     helper.make_opsetid("com.test", 1)])
    engine = mi.Builder(registry).build_engine(mi.parse_onnx(model),
                                               mi.BuilderConfig(time_tactics=False))
    assert [nd.op_type for nd in engine.nodes] == (["ScaleV3"] if random else [])


def test_a_wrapped_v3_plugin_pickles_as_the_plugin_it_wraps() -> None:
    """The wrapper's class is made per plugin; a pickle of it rebuilds one with the same
    abilities and state."""
    plugin = mi.plugin._v3.V3Plugin(ScaleV3(3.0, "fast"))
    again = pickle.loads(pickle.dumps(plugin))
    assert type(again) is type(plugin) and isinstance(again.v3, ScaleV3)
    assert again.v3.scale == 3.0 and adapter.tactics_of(again) is not None
    assert adapter.in_place_of(again) is not None and adapter.fusion_of(again) is None
