"""Symbolic shapes, build-time values of shape tensors, and data-dependent output shapes,
with plugins defined here so the core mechanisms are tested on their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.plugin import (
    DataType,
    DimsExprs,
    IntLike,
    OnnxPlugin,
    OnnxPluginCreator,
)
from mini_infer_core.registry import discover


class ShapeOf(OnnxPlugin):
    """Like ONNX Shape, with value inference."""

    domain = "com.test"

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Any:
        return [[len(inputs[0])]]

    def output_types(self, input_types: Sequence[DataType]) -> Any:
        return [DataType.INT64]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Any:
        return [list(inputs[0])]

    def compute(self, x: Any, *, out: Any) -> None:
        out[...] = x.shape


class Positives(OnnxPlugin):
    """The positive elements of x, flattened: an output shape known only at run time."""

    domain = "com.test"
    data_dependent = True

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> list[list[IntLike]]:
        return [[self.dynamic_dim("count")]]

    def compute(self, x: Any) -> Any:
        return x[x > 0].reshape(-1)


def _registry() -> Any:
    reg = discover()
    for cls in (ShapeOf, Positives):
        reg.register_creator(OnnxPluginCreator(cls, namespace="test"))
    return reg


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any],
           inits: list[Any] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.test", 1)])


def test_shape_values_fold_for_static_inputs_and_stay_symbolic_for_dynamic_ones() -> None:
    reg = _registry()
    nodes = [helper.make_node("ShapeOf", ["x"], ["s"], domain="com.test"),
             helper.make_node("Reshape", ["x", "s"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    static = mi.load(_model(nodes, [x], [y]), registry=reg)
    assert [n.op_type for n in static.nodes] == ["Reshape"]  # ShapeOf folded from its values
    xd = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])
    dyn = mi.load(_model(nodes, [xd], [y]), registry=reg)
    assert dyn.tensors["y"].shape == ("N", 3)  # Reshape saw symbolic values
    out = mi.InferenceSession(dyn).run(None, {"x": np.ones((4, 3), np.float32)})[0]
    assert out.shape == (4, 3)


def test_data_dependent_output_feeds_later_nodes() -> None:
    reg = _registry()
    nodes = [helper.make_node("Positives", ["x"], ["p"], domain="com.test"),
             helper.make_node("Relu", ["p"], ["r"]),
             helper.make_node("Add", ["r", "r"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    engine = mi.load(_model(nodes, [x], [y]), registry=reg)
    assert engine.build_info["memory_plan"] is None
    ctx = engine.create_execution_context()
    for xv in ([1, -2, 3, -4, 5], [-1, -1, -1, -1, 2], [-1] * 5):
        arr = np.array(xv, np.float32)
        out = ctx.execute({"x": arr})["y"]
        np.testing.assert_array_equal(out, 2 * arr[arr > 0])


def test_data_dependent_node_with_constant_input_is_folded() -> None:
    reg = _registry()
    c = onnx.numpy_helper.from_array(np.array([1, -1, 2], np.float32), "c")
    nodes = [helper.make_node("Positives", ["c"], ["p"], domain="com.test"),
             helper.make_node("Add", ["p", "x"], ["y"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    engine = mi.load(_model(nodes, [x], [y], [c]), registry=reg)
    assert [n.op_type for n in engine.nodes] == ["Add"]
    out = mi.InferenceSession(engine).run(None, {"x": np.zeros(2, np.float32)})[0]
    np.testing.assert_array_equal(out, [1, 2])


def test_dynamic_batch_and_spatial_dims_at_three_shapes(small_cnn: onnx.ModelProto) -> None:
    small_cnn.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    small_cnn.graph.input[0].type.tensor_type.shape.dim[3].dim_param = "W"
    # global pooling instead of Flatten→Gemm so any H, W works
    g = small_cnn.graph
    del g.node[3:]
    g.node.append(helper.make_node("GlobalAveragePool", ["p"], ["y"]))
    g.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    sess = mi.InferenceSession(small_cnn)
    rng = np.random.default_rng(0)
    for shape in ((1, 3, 8, 8), (2, 3, 12, 6), (3, 3, 17, 9)):
        xv = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(sess.run(None, {"x": xv})[0],
                                   ort_run(small_cnn, {"x": xv})[0], rtol=1e-3, atol=1e-4)


def test_optimization_profile_bounds_runs_and_plans_at_opt(small_cnn: onnx.ModelProto,
                                                          tmp_path: Any) -> None:
    import pytest

    from mini_infer_core.errors import BuildError, InputError

    profile = mi.OptimizationProfile()
    profile.set_shape("x", (1, 3, 8, 8), (4, 3, 8, 8), (8, 3, 8, 8))
    config = mi.BuilderConfig()
    config.add_optimization_profile(profile)
    engine = mi.Builder().build_engine(mi.parse_onnx(small_cnn), config)
    assert engine.build_info["memory_plan"]["bindings"] == {"N": 4}
    engine.save(str(tmp_path / "p.engine"))
    sess = mi.InferenceSession(str(tmp_path / "p.engine"))
    assert sess.run(None, {"x": np.zeros((8, 3, 8, 8), np.float32)})[0].shape == (8, 10)
    with pytest.raises(InputError, match="outside every optimization profile"):
        sess.run(None, {"x": np.zeros((9, 3, 8, 8), np.float32)})
    bad = mi.OptimizationProfile()
    bad.set_shape("x", (1, 4, 8, 8), (1, 4, 8, 8), (1, 4, 8, 8))
    with pytest.raises(BuildError, match="does not fit"):
        mi.Builder().build_engine(mi.parse_onnx(small_cnn), mi.BuilderConfig(profiles=[bad]))


def test_context_keeps_its_plan_while_shapes_repeat(small_cnn: onnx.ModelProto) -> None:
    ctx = mi.load(small_cnn).create_execution_context()
    ctx.execute({"x": np.zeros((2, 3, 8, 8), np.float32)})
    first = ctx.schedule
    ctx.execute({"x": np.ones((2, 3, 8, 8), np.float32)})
    assert ctx.schedule is first
    ctx.execute({"x": np.ones((3, 3, 8, 8), np.float32)})
    assert ctx.schedule is not first and ctx.schedule is not None
    assert ctx.schedule.bindings == {"N": 3}


def test_plans_of_recurring_shapes_are_kept_and_results_stay_right(
        small_cnn: onnx.ModelProto, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shapes that come back reuse their plan (no new schedule, the same arena views) while
    every run still matches onnxruntime; the cache is bounded (least recently used out)."""
    monkeypatch.setenv("MINI_INFER_PLAN_CACHE", "2")
    ctx = mi.load(small_cnn).create_execution_context()
    rng = np.random.default_rng(1)
    seen: dict[int, object] = {}
    for batch in (2, 5, 2, 5, 2, 7, 2, 5):
        x = rng.standard_normal((batch, 3, 8, 8)).astype(np.float32)
        got = ctx.execute({"x": x})
        (want,) = ort_run(small_cnn, {"x": x})
        np.testing.assert_allclose(got[next(iter(got))], want, rtol=1e-4, atol=1e-5)
        sched = ctx.schedule
        if batch in seen and batch != 5:
            assert sched is seen[batch], batch  # 2 is always among the two most recent
        seen[batch] = sched
    assert ctx.plans_cached == 2  # 7 pushed 5 out: the last 5 was planned again
    ctx.close()


@pytest.mark.parametrize("unnamed", ["", "?", None])
def test_each_unnamed_dimension_is_its_own_unknown(unnamed: str | None) -> None:
    """An input declared [?, 3, 48, ?] (no dim_param, an empty one, or the "?" some
    converters write) accepts a 48x192 image: the two unknown axes are not one dimension."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3, 48, None])
    for axis in (0, 3):
        dim = x.type.tensor_type.shape.dim[axis]
        dim.Clear()
        if unnamed is not None:
            dim.dim_param = unnamed
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                                [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    sess = mi.InferenceSession(model)
    feed = np.linspace(-1, 1, 3 * 48 * 192, dtype=np.float32).reshape(1, 3, 48, 192)
    (got,) = sess.run(None, {"x": feed})
    np.testing.assert_array_equal(got, np.maximum(feed, 0))


def _exporter_shape_chains() -> onnx.ModelProto:
    """What torch's TorchScript exporter writes for a sequence model with symbolic dims:
    ``Range(0, Cast<float>(Gather(Shape(x), 1)), 1)`` (position ids) and
    ``Where(Equal(shape, -1), 1, shape)`` feeding Expand, and a Resize to sizes computed from
    another tensor's shape."""
    c = helper.make_node
    t = helper.make_tensor
    nodes = [
        c("Shape", ["x"], ["s"]),
        c("Gather", ["s", "zero_s"], ["b0"], axis=0),
        c("Unsqueeze", ["b0", "zero"], ["b"]),
        c("Gather", ["s", "one"], ["n"], axis=0),
        c("Unsqueeze", ["n", "zero"], ["t"]),
        c("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        c("Range", ["zero_f", "nf", "one_f"], ["pos_f"]),
        c("Cast", ["pos_f"], ["pos"], to=TensorProto.INT64),
        c("Gather", ["table", "pos"], ["pe"], axis=0),                       # [T, 4]
        c("Concat", ["b", "minus1", "t", "four"], ["want"], axis=0),
        c("Equal", ["want", "minus1_4"], ["isneg"]),
        c("Where", ["isneg", "ones4", "want"], ["shape2"]),
        c("Expand", ["pe", "shape2"], ["pe_b"]),                              # [B, 1, T, 4]
        c("Add", ["x4", "pe_b"], ["y"]),
        c("Shape", ["x4"], ["s4"]),
        c("Slice", ["s4", "zero", "two", "zero"], ["nc"]),
        c("Mul", ["s4", "twos"], ["s4x2"]),
        c("Slice", ["s4x2", "two", "four_i", "zero"], ["hw"]),
        c("Concat", ["nc", "hw"], ["sizes"], axis=0),
        c("Resize", ["y", "", "", "sizes"], ["z"], mode="nearest"),
    ]
    rng = np.random.default_rng(0)
    inits = [t("one", TensorProto.INT64, [], [1]), t("zero_s", TensorProto.INT64, [], [0]),
             t("zero", TensorProto.INT64, [1], [0]), t("two", TensorProto.INT64, [1], [2]),
             t("four_i", TensorProto.INT64, [1], [4]),
             t("zero_f", TensorProto.FLOAT, [], [0.0]), t("one_f", TensorProto.FLOAT, [], [1.0]),
             onnx.numpy_helper.from_array(rng.standard_normal((64, 4)).astype(np.float32),
                                          "table"),
             t("minus1", TensorProto.INT64, [1], [-1]), t("four", TensorProto.INT64, [1], [4]),
             t("minus1_4", TensorProto.INT64, [4], [-1] * 4),
             t("ones4", TensorProto.INT64, [4], [1] * 4),
             t("twos", TensorProto.INT64, [4], [1, 1, 2, 2])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T"])
    x4 = helper.make_tensor_value_info("x4", TensorProto.FLOAT, ["B", 1, "T", 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(nodes, "chains", [x, x4], [z], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_shape_chains_exporters_write_are_planned_with_no_data_dependent_node() -> None:
    """Values survive Cast to float and Range, a dimension is never -1 (Equal decides), and
    Resize takes symbolic sizes: the model builds with zero data-dependent nodes and runs
    planned at every shape, matching onnxruntime."""
    from mini_infer_core.plugin import _adapter as adapter

    model = _exporter_shape_chains()
    engine = mi.load(model)
    assert not [nd.name for nd in engine.nodes if adapter.is_data_dependent(nd.plugin)]
    ctx = engine.create_execution_context()
    rng = np.random.default_rng(2)
    for b, t in ((1, 5), (2, 7), (1, 5)):
        feeds = {"x": rng.standard_normal((b, t)).astype(np.float32),
                 "x4": rng.standard_normal((b, 1, t, 4)).astype(np.float32)}
        (want,) = ort_run(model, feeds)
        got = ctx.execute(feeds)["z"]
        assert got.shape == (b, 1, 2 * t, 8) and ctx.steps  # planned, not node by node
        np.testing.assert_allclose(got, want, rtol=1e-6)
    ctx.close()


def test_a_data_dependent_node_splits_the_plan_into_segments() -> None:
    """NonZero in the middle of a model: the nodes before and after it run as planned
    segments (their plans kept while the shapes and the count of non-zeros recur), NonZero on
    its own; every run matches onnxruntime."""
    c = helper.make_node
    nodes = [c("Relu", ["x"], ["r"]), c("Mul", ["r", "r"], ["sq"]),
             c("NonZero", ["sq"], ["nz"]),
             c("Transpose", ["nz"], ["idx"], perm=[1, 0]),
             c("GatherND", ["x", "idx"], ["picked"]),
             c("Neg", ["picked"], ["n"]), c("Add", ["n", "n"], ["y"]),
             c("Sigmoid", ["sq"], ["z"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 6])
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("y", "z")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    ctx = mi.load(model).create_execution_context()
    run = ctx._segmented
    assert run is not None
    assert [p if isinstance(p, int) else len(p.steps) for p in run.parts] == [2, 2, 5]
    rng = np.random.default_rng(3)
    plans = []
    for b in (2, 3, 2):
        xv = rng.standard_normal((b, 6)).astype(np.float32)
        xv[0, :] = -1.0  # a row of zeros after Relu: the count varies with the data
        got = ctx.execute({"x": xv})
        for name, want in zip(("y", "z"), ort_run(model, {"x": xv}), strict=True):
            np.testing.assert_allclose(got[name], want, rtol=1e-6)
        current = run.segments[0].current
        assert current is not None
        plans.append(current.schedule)
    assert plans[0] is plans[2] is not plans[1]  # batch 2's first segment plan came back


def test_a_failing_step_after_a_data_dependent_node_is_named() -> None:
    """An engine with a data-dependent node runs in segments; an error raised by a step of
    a segment (an index out of range: NumPy's IndexError) names that step's node."""
    graph = helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
         helper.make_node("Gather", ["x", "i"], ["g"], name="the_gather")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("nz", TensorProto.INT64, [1, None]),
         helper.make_tensor_value_info("g", TensorProto.FLOAT, [1])])
    sess = mi.InferenceSession(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)]))
    x = np.array([0, 1, 2, 0], np.float32)
    nz, g = sess.run(None, {"x": x, "i": np.array([2])})
    assert nz.tolist() == [[1, 2]] and g.tolist() == [2.0]
    with pytest.raises(mi.ExecutionError, match="'the_gather'.*failed while running.*"
                                                "IndexError"):
        sess.run(None, {"x": x, "i": np.array([9])})
