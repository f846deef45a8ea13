"""If on a condition known at build time is replaced by its branch; models whose branches
differ in rank on a dimension-dependent condition build for given input shapes
(``BuilderConfig(input_shapes=...)``, ``mini-infer build --shape``) and run through
``InferenceSession``, which builds once per input-shape set. An If on a small input's value
(a mode, a sample rate) is planned per input shapes and value. Results match onnxruntime."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run, run_cli
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.builder import Builder, BuilderConfig
from mini_infer_core.errors import BuildError, InputShapesRequired
from mini_infer_core.importer import parse_onnx

C = helper.make_node


def _branch(name: str, nodes: list[onnx.NodeProto], out: str, rank: int | None
            ) -> onnx.GraphProto:
    shape = None if rank is None else [None] * rank
    return helper.make_graph(nodes, name, [], [
        helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)])


def squeeze_if_one(declare_rank: bool) -> onnx.ModelProto:
    """``y = Squeeze(x, 0) if x.shape[0] == 1 else x + 1``: the exporters' batch-squeeze
    idiom; the branches' outputs differ in rank."""
    then = _branch("then", [C("Squeeze", ["x", "axes0"], ["sq"])], "sq",
                   1 if declare_rank else None)
    other = _branch("else", [C("Add", ["x", "one"], ["plus"])], "plus",
                    2 if declare_rank else None)
    nodes = [C("Shape", ["x"], ["shape"]),
             C("Gather", ["shape", "zero"], ["n"], axis=0),
             C("Equal", ["n", "one_i"], ["cond"]),
             C("If", ["cond"], ["y"], then_branch=then, else_branch=other)]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(1, np.int64), "one_i"),
             numpy_helper.from_array(np.array([0], np.int64), "axes0"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


@pytest.mark.parametrize("n", [1, 3])
def test_if_on_a_fixed_dimension_is_inlined(n: int) -> None:
    model = squeeze_if_one(declare_rank=False)
    engine = Builder(mi.get_plugin_registry()).build_engine(
        parse_onnx(model), BuilderConfig(input_shapes={"x": (n, 5)}))
    assert engine.build_info["inlined"] == ["If_3"]
    assert all(node.op_type != "If" for node in engine.nodes)
    x = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
    with engine.create_execution_context() as ctx:
        got = ctx.execute({"x": x})["y"]
    want = ort_run(model, {"x": x})[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_rank_changing_if_needs_input_shapes() -> None:
    with pytest.raises(InputShapesRequired, match="rank.*input_shapes"):
        Builder(mi.get_plugin_registry()).build_engine(
            parse_onnx(squeeze_if_one(declare_rank=False)), BuilderConfig())


def test_dynamic_if_still_builds_when_branches_declare_ranks() -> None:
    """A dimension-dependent If whose branches declare their ranks stays a subgraph node and
    runs for any batch size (both branches declare rank 2)."""
    then = _branch("then", [C("Mul", ["x", "two"], ["m"])], "m", 2)
    other = _branch("else", [C("Add", ["x", "one"], ["plus"])], "plus", 2)
    model = squeeze_if_one(declare_rank=True)
    model.graph.node[3].CopyFrom(C("If", ["cond"], ["y"], then_branch=then,
                                   else_branch=other))
    model.graph.initializer.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
    engine = Builder(mi.get_plugin_registry()).build_engine(parse_onnx(model), BuilderConfig())
    assert "inlined" not in engine.build_info
    assert any(node.op_type == "If" for node in engine.nodes)
    with engine.create_execution_context() as ctx:
        for n in (1, 4):
            x = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
            np.testing.assert_allclose(ctx.execute({"x": x})["y"], ort_run(model, {"x": x})[0],
                                       rtol=1e-6)
            assert ctx.steps  # the condition follows from the shapes: planned per shape


def test_inference_session_builds_per_input_shape() -> None:
    model = squeeze_if_one(declare_rank=False)
    sess = mi.InferenceSession(model)
    assert sess.engine is None
    assert [i.name for i in sess.get_inputs()] == ["x"]
    for n in (1, 3, 1, 2):
        x = np.random.default_rng(n).standard_normal((n, 5)).astype(np.float32)
        (got,) = sess.run(None, {"x": x})
        want = ort_run(model, {"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(InputShapesRequired, match="--shape"):
        sess.save_engine("never-written.engine")
    assert not Path("never-written.engine").exists()


@pytest.mark.parametrize(("shapes", "message"), [
    ({"nope": (1, 5)}, "unknown input"),
    ({"x": (1, 5, 1)}, "declares"),
    ({"x": (2, 6)}, "declares"),
])
def test_input_shapes_are_checked(shapes: dict[str, tuple[int, ...]], message: str) -> None:
    with pytest.raises(BuildError, match=message):
        Builder(mi.get_plugin_registry()).build_engine(
            parse_onnx(squeeze_if_one(declare_rank=False)), BuilderConfig(input_shapes=shapes))


def test_cli_build_shape_writes_an_engine_another_process_runs(tmp_path: Path) -> None:
    model = squeeze_if_one(declare_rank=False)
    onnx_path, engine_path = tmp_path / "m.onnx", tmp_path / "m.engine"
    onnx.save(model, str(onnx_path))
    failed = run_cli("build", str(onnx_path), "-o", str(engine_path), check=False)
    assert failed.returncode != 0 and "--shape" in failed.stderr
    assert not engine_path.exists()
    run_cli("build", str(onnx_path), "-o", str(engine_path), "--shape", "x=1,5")
    x = np.random.default_rng(7).standard_normal((1, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    run_cli("run", str(engine_path), "--input", f"x={tmp_path / 'x.npy'}",
            "--output-dir", str(tmp_path / "out"))
    got = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-6)
    # `run` on the ONNX file builds for the shapes of the arrays it is given
    run_cli("run", str(onnx_path), "--input", f"x={tmp_path / 'x.npy'}",
            "--output-dir", str(tmp_path / "out2"))
    np.testing.assert_allclose(np.load(tmp_path / "out2" / "y.npy"), got, rtol=0)


# -- Ifs on an input's value: planned per (input shapes, small inputs' values) ---------------


def mode_if(then_nodes: list[onnx.NodeProto] | None = None) -> onnx.ModelProto:
    """``y = concat(x, 2x) if mode == 1 else sum(x, axis 1)``, then ``z = relu(y) + 1``: the
    condition is an input's value (silero-vad's ``sr == 16000``), the branches' outputs differ
    in shape; ``x`` has a symbolic batch."""
    then = helper.make_graph(then_nodes or [
        C("Mul", ["x", "two"], ["x2"]), C("Concat", ["x", "x2"], ["cat"], axis=1)],
        "then", [], [helper.make_tensor_value_info("cat", TensorProto.FLOAT, [None, None])])
    other = helper.make_graph(
        [C("ReduceSum", ["x", "axis1"], ["sum"], keepdims=1)], "else", [],
        [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [None, None])])
    nodes = [C("Equal", ["mode", "one_i"], ["cond"]),
             C("If", ["cond"], ["y"], then_branch=then, else_branch=other),
             C("Relu", ["y"], ["r"]), C("Add", ["r", "one"], ["z"])]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one_i"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1"),
             numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    return make_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
                              helper.make_tensor_value_info("mode", TensorProto.INT64, [])],
                      [helper.make_tensor_value_info("z", TensorProto.FLOAT, None),
                       helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)


def _check(ctx: object, model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> None:
    got = ctx.execute(feeds)  # type: ignore[attr-defined]
    for name, want in zip(("z", "y"), ort_run(model, feeds), strict=True):
        assert got[name].shape == want.shape, name
        np.testing.assert_allclose(got[name], want, rtol=1e-6, err_msg=name)


def test_if_on_an_input_value_runs_planned_per_shapes_and_value() -> None:
    """Both branches taken across runs at two batch sizes, each result onnxruntime's; every
    run is planned: the If is one step of a plan kept per (shapes, mode), and a key seen
    before runs nothing in segments."""
    model = mode_if()
    engine = mi.load(model)
    assert any(node.op_type == "If" for node in engine.nodes)
    runs = [(2, 1), (2, 1), (2, 0), (2, 0), (3, 1), (3, 0), (2, 1), (3, 0), (2, 0), (3, 1)]
    with engine.create_execution_context() as ctx:
        segmented = ctx._segmented
        in_segments = 0

        def count(*args: object) -> object:
            nonlocal in_segments
            in_segments += 1
            return run(*args)

        run, segmented.run = segmented.run, count
        seen: set[tuple[int, int]] = set()
        for k, (n, mode) in enumerate(runs):
            x = np.random.default_rng(k).standard_normal((n, 4)).astype(np.float32)
            before = in_segments
            _check(ctx, model, {"x": x, "mode": np.array(mode, np.int64)})
            assert in_segments - before == (0 if (n, mode) in seen else 1), (k, n, mode)
            seen.add((n, mode))
            assert [engine.nodes[i].op_type for i, _ in ctx._plan.calls] == \
                ["Equal", "If", "Relu", "Add"]
            assert ctx.schedule.shapes["y"] == ((n, 8) if mode == 1 else (n, 1))
        assert ctx.plans_cached == 4
        assert len(ctx.time_steps()) == 4  # a per-node profile of the planned run
        # each step through its plugin's enqueue (``mini-infer compare`` per node): the If
        # writes its branch's result into the planned array
        x = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)
        feeds = {"x": x, "mode": np.array(1, np.int64)}
        ctx.execute(feeds)
        for step in ctx.steps:
            step.outputs[0].fill(np.nan)
            step.plugin.enqueue(step.inputs, step.outputs, step.workspace, step.stream)
        np.testing.assert_allclose(ctx.steps[1].outputs[0], ort_run(model, feeds)[1],
                                   rtol=1e-6)


def test_keyed_plan_switches_back_to_segments_when_a_branch_shape_follows_values() -> None:
    """A branch whose output shape follows from values (NonZero) gives another shape for the
    same key: the run is still right (onnxruntime's), and the context goes in segments."""
    then_nodes = [C("NonZero", ["x"], ["nz"]), C("Cast", ["nz"], ["cat"], to=TensorProto.FLOAT)]
    model = mode_if(then_nodes)
    one = np.array(1, np.int64)
    with mi.load(model).create_execution_context() as ctx:
        for k, zeros in enumerate([1, 1, 5, 2, 0]):
            x = np.ones((2, 4), np.float32)
            x.reshape(-1)[:zeros] = 0
            _check(ctx, model, {"x": x, "mode": one})
            if k == 1:  # the same nonzeros as the first: planned
                assert ctx.steps
        assert not ctx.steps


def test_if_on_a_large_input_value_runs_in_segments() -> None:
    """A condition on a large input's values keys no plans: runs in segments, results
    onnxruntime's."""
    model = mode_if()
    model.graph.node[0].CopyFrom(C("ReduceSum", ["x"], ["total"], keepdims=0))
    model.graph.node.insert(1, C("Greater", ["total", "zero_f"], ["cond"]))
    model.graph.initializer.append(numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"))
    del model.graph.input[1]
    with mi.load(model).create_execution_context() as ctx:
        for n, sign in [(40, 1), (40, 1), (40, -1), (40, -1)]:
            x = np.abs(np.random.default_rng(n).standard_normal((n, 4))).astype(np.float32)
            feeds = {"x": x * sign}
            got = ctx.execute(feeds)
            want = ort_run(model, feeds)
            np.testing.assert_allclose(got["z"], want[0], rtol=1e-5)
            assert not ctx.steps
