"""Builder, engine and execution context on small models, checked against onnxruntime."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.errors import (
    BuildError,
    DeviceError,
    InputError,
    PluginInterfaceError,
    UnsupportedOperatorError,
)
from mini_infer_core.plugin import (
    DataType,
    IPluginCreator,
    IPluginV2,
    PluginFieldCollection,
)
from mini_infer_core.registry import discover


def test_small_cnn_matches_onnxruntime_at_several_batch_sizes(small_cnn: onnx.ModelProto) -> None:
    sess = mi.InferenceSession(small_cnn)
    assert sess.get_inputs()[0].shape == ["N", 3, 8, 8]
    rng = np.random.default_rng(0)
    for n in (1, 3, 2, 3):
        x = rng.standard_normal((n, 3, 8, 8)).astype(np.float32)
        (ours,) = sess.run(None, {"x": x})
        (ref,) = ort_run(small_cnn, {"x": x})
        np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-4)


def test_outputs_are_fresh_arrays_not_views_of_the_arena(small_cnn: onnx.ModelProto) -> None:
    sess = mi.InferenceSession(small_cnn)
    x1 = np.ones((1, 3, 8, 8), np.float32)
    (a,) = sess.run(None, {"x": x1})
    keep = a.copy()
    sess.run(None, {"x": -x1})
    np.testing.assert_array_equal(a, keep)


def test_constant_subgraph_is_folded_and_unused_nodes_pruned() -> None:
    c = onnx.numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "c")
    nodes = [
        helper.make_node("Mul", ["c", "c"], ["c2"]),     # constant → folded
        helper.make_node("Add", ["x", "c2"], ["y"]),
        helper.make_node("Relu", ["x"], ["unused"]),     # not needed → pruned
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = make_model(nodes, [x], [y], [c])
    engine = mi.load(model)
    assert [n.op_type for n in engine.nodes] == ["Add"]
    assert engine.build_info["nodes_folded"] == 1
    assert engine.build_info["nodes_pruned"] == 1
    out = mi.InferenceSession(engine).run(None, {"x": np.zeros(2, np.float32)})[0]
    np.testing.assert_allclose(out, ort_run(model, {"x": np.zeros(2, np.float32)})[0])


def test_memory_plan_reports_peak_below_naive_sum() -> None:
    nodes = [helper.make_node("Relu" if i % 2 else "Sigmoid", [f"t{i}"], [f"t{i + 1}"])
             for i in range(10)]
    x = helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 1024])
    y = helper.make_tensor_value_info("t10", TensorProto.FLOAT, [1, 1024])
    engine = mi.load(make_model(nodes, [x], [y]))
    plan = engine.build_info["memory_plan"]
    assert plan["naive_bytes"] == 9 * 4096
    assert plan["planned_peak_bytes"] == 2 * 4096  # a chain needs two live buffers


class _StaticTwice(IPluginV2):
    plugin_type = "Twice"

    @property
    def num_outputs(self) -> int:
        return 1

    def get_output_shape(self, index: int, input_shapes: Sequence[tuple[int, ...]]
                         ) -> tuple[int, ...]:
        return input_shapes[0]

    def enqueue(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any,
                stream: Any) -> None:
        np.multiply(inputs[0], 2, out=outputs[0])

    def serialize(self) -> bytes:
        return b""

    def clone(self) -> IPluginV2:
        return _StaticTwice()


class _StaticCreator(IPluginCreator):
    name = "Twice"
    op_type = "Twice"
    domain = "com.test"
    plugin_namespace = "test"

    @property
    def field_names(self) -> tuple[str, ...]:
        return ()

    def create_plugin(self, name: str, fields: PluginFieldCollection) -> IPluginV2:
        return _StaticTwice()

    def deserialize_plugin(self, name: str, data: bytes) -> IPluginV2:
        return _StaticTwice()


def _twice_model(dims: list[Any]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, dims)
    graph = helper.make_graph([helper.make_node("Twice", ["x"], ["y"], domain="com.test")],
                              "g", [x], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.test", 1)])


def test_static_iplugin_v2_works_with_static_shapes_and_is_rejected_with_dynamic_ones() -> None:
    reg = discover()
    reg.register_creator(_StaticCreator())
    sess = mi.InferenceSession(_twice_model([2, 3]), registry=reg)
    out = sess.run(None, {"x": np.ones((2, 3), np.float32)})[0]
    np.testing.assert_array_equal(out, np.full((2, 3), 2, np.float32))
    with pytest.raises(PluginInterfaceError) as err:
        mi.InferenceSession(_twice_model(["N", 3]), registry=reg)
    msg = str(err.value)
    assert "IPluginV2DynamicExt" in msg and "'N'" in msg and "com.test::Twice" in msg


def test_unsupported_operators_are_listed_all_at_once() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    nodes = [helper.make_node("FancyOp", ["x"], ["a"], domain="com.nowhere"),
             helper.make_node("OtherOp", ["a"], ["y"], domain="com.nowhere")]
    graph = helper.make_graph(nodes, "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.nowhere", 1)])
    with pytest.raises(UnsupportedOperatorError) as err:
        mi.load(model)
    assert "com.nowhere::FancyOp" in str(err.value) and "com.nowhere::OtherOp" in str(err.value)


def test_unknown_device_names_the_known_ones(small_cnn: onnx.ModelProto) -> None:
    with pytest.raises(DeviceError, match="cpu"):
        mi.InferenceSession(small_cnn, device="tpu")


def test_unknown_attribute_is_a_build_error_naming_node_and_plugin() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    model = make_model([helper.make_node("Relu", ["x"], ["y"], name="r1", bogus=3)], [x], [y])
    with pytest.raises(BuildError) as err:
        mi.load(model)
    assert "'r1'" in str(err.value) and "bogus" in str(err.value)
    assert "mini-infer-cpu-native" in str(err.value)  # cpu_native's Relu (blocked.py)


@pytest.mark.parametrize("feeds, match", [
    ({}, "missing"),
    ({"x": np.zeros((1, 3, 8, 8), np.float32), "z": np.zeros(1)}, "unknown"),
    ({"x": np.zeros((1, 3, 8, 8), np.float64)}, "float64"),
    ({"x": np.zeros((1, 3, 8), np.float32)}, "rank"),
    ({"x": np.zeros((1, 4, 8, 8), np.float32)}, "axis 1"),
])
def test_bad_inputs_get_clear_errors(small_cnn: onnx.ModelProto, feeds: dict[str, Any],
                                     match: str) -> None:
    sess = mi.InferenceSession(small_cnn)
    with pytest.raises(InputError, match=match):
        sess.run(None, feeds)


def test_inputs_are_checked_after_good_runs_too(small_cnn: onnx.ModelProto) -> None:
    """A context skips the checks for inputs of the dtypes and shapes it checked last: every
    bad input still fails after good runs, and good runs after a refused one still run."""
    ctx = mi.load(small_cnn).create_execution_context()
    good = {"x": np.zeros((1, 3, 8, 8), np.float32)}
    bad = [({}, "missing"), ({**good, "z": np.zeros(1)}, "unknown"),
           ({"x": good["x"].astype(np.float64)}, "float64"),
           ({"x": np.zeros((1, 3, 8), np.float32)}, "rank"),
           ({"x": np.zeros((1, 4, 8, 8), np.float32)}, "axis 1"), ({"x": [0.0]}, "array")]
    want = ctx.execute(good)
    for feeds, match in bad:
        ctx.execute(good)
        with pytest.raises(InputError, match=match):
            ctx.execute(feeds)
        got = ctx.execute(good)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])


def test_dimensions_shared_by_inputs_are_checked_on_every_new_signature() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    ctx = mi.load(make_model([helper.make_node("Add", ["x", "y"], ["z"])], [x, y], [z])
                  ).create_execution_context()
    two = np.ones((2, 2), np.float32)
    np.testing.assert_array_equal(ctx.execute({"x": two, "y": two})["z"], 2 * two)
    with pytest.raises(InputError, match="'N'"):
        ctx.execute({"x": two, "y": np.ones((3, 2), np.float32)})
    three = np.ones((3, 2), np.float32)
    np.testing.assert_array_equal(ctx.execute({"x": three, "y": three})["z"], 2 * three)
    assert ctx.schedule is not None and ctx.schedule.bindings == {"N": 3}


def test_unknown_output_name_is_an_input_error(small_cnn: onnx.ModelProto) -> None:
    with pytest.raises(InputError, match="nope"):
        mi.InferenceSession(small_cnn).run(["nope"], {"x": np.zeros((1, 3, 8, 8), np.float32)})


def test_contexts_of_one_engine_run_concurrently_from_threads(small_cnn: onnx.ModelProto) -> None:
    engine = mi.load(small_cnn)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((b, 3, 8, 8)).astype(np.float32) for b in (1, 2, 3, 4)]
    expected = [ort_run(small_cnn, {"x": x})[0] for x in xs]
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def worker(k: int) -> None:
        try:
            ctx = engine.create_execution_context()
            barrier.wait()
            for _ in range(20):
                out = ctx.execute({"x": xs[k]})["y"]
                np.testing.assert_allclose(out, expected[k], rtol=1e-3, atol=1e-4)
            ctx.close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_session_outputs_have_onnxruntime_style_metadata(small_cnn: onnx.ModelProto) -> None:
    sess = mi.InferenceSession(small_cnn)
    (inp,), (out,) = sess.get_inputs(), sess.get_outputs()
    assert (inp.name, inp.type) == ("x", "tensor(float)")
    assert out.name == "y" and out.shape == ["N", 10]
    assert sess.engine.tensors["y"].dtype is DataType.FLOAT
