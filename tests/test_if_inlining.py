"""If on a condition known at build time is replaced by its branch; models whose branches
differ in rank on a dimension-dependent condition build for given input shapes
(``BuilderConfig(input_shapes=...)``, ``mini-infer build --shape``) and run through
``InferenceSession``, which builds once per input-shape set. Results match onnxruntime."""

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
