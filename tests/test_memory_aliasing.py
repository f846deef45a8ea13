"""In-place inputs: a Concat's inputs planned inside its output (producers write straight into
the concatenation), checked against onnxruntime on graphs where that is and is not allowed."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi


def _graph(batch: int, concat_is_output: bool = False) -> onnx.ModelProto:
    """x -> a = Relu(x), b = Neg(x), c = Concat(a, b, x, a) -> d = Concat(c, Sigmoid(c));
    ``a`` also feeds a second Concat (e = Concat(b, a)), so it can live in one place only."""
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Neg", ["x"], ["b"]),
             helper.make_node("Concat", ["a", "b", "x", "a"], ["c"], axis=1),
             helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Concat", ["c", "s"], ["d"], axis=1),
             helper.make_node("Concat", ["b", "a"], ["e"], axis=1),
             helper.make_node("Add", ["d", "d"], ["y"]), helper.make_node("Abs", ["e"], ["z"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 4, 5])
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, None)]
    if concat_is_output:
        outs.append(helper.make_tensor_value_info("c", TensorProto.FLOAT, None))
    return make_model(nodes, [x], outs)


def _run(model: onnx.ModelProto, batch: int) -> tuple[dict[str, tuple[str, int]], list[np.ndarray]]:
    x = np.random.default_rng(batch).standard_normal((batch, 3, 4, 5)).astype(np.float32)
    engine = mi.load(model)
    ctx = engine.create_execution_context()
    for _ in range(2):  # the second run reuses the arena as planned
        got = ctx.execute({"x": x})
    assert ctx.schedule is not None
    for name, want in zip([o.name for o in model.graph.output], ort_run(model, {"x": x}),
                          strict=True):
        np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
    return ctx.schedule.aliases, list(got.values())


def test_concat_inputs_live_inside_the_concatenation() -> None:
    aliases, _ = _run(_graph(1), 1)
    one = 3 * 4 * 5 * 4  # bytes of one (1, 3, 4, 5) tensor
    assert aliases["c"] == ("d", 0) and aliases["s"] == ("d", 4 * one)
    # a appears twice in c, so only e can hold it; b sits in whichever Concat came first
    assert aliases["a"] == ("e", one)
    assert aliases["b"] in (("c", one), ("e", 0))
    assert "x" not in aliases and "d" not in aliases and "e" not in aliases  # input; roots


@pytest.mark.parametrize(("batch", "concat_is_output"), [(2, False), (1, True)])
def test_no_aliasing_where_a_slot_is_not_contiguous_or_not_in_the_arena(
        batch: int, concat_is_output: bool) -> None:
    aliases, _ = _run(_graph(batch, concat_is_output), batch)
    if batch > 1:
        assert aliases == {}  # the channel slots of a batch of 2 are strided
    else:  # c is a graph output: nothing lives inside it, and it lives outside the arena
        assert all(parent != "c" for parent, _ in aliases.values()) and "c" not in aliases


def _reshape_chain() -> tuple[list[onnx.TensorProto], list[onnx.NodeProto]]:
    """x -> Relu a -> Reshape r -> Squeeze q -> Identity i -> Flatten f -> Sigmoid y, with
    the Reshape's and the Squeeze's constant inputs."""
    shape = onnx.numpy_helper.from_array(np.array([1, 12, 5], np.int64), "shape")
    axes = onnx.numpy_helper.from_array(np.array([0], np.int64), "axes")
    return [shape, axes], [helper.make_node("Relu", ["x"], ["a"]),
                           helper.make_node("Reshape", ["a", "shape"], ["r"]),
                           helper.make_node("Squeeze", ["r", "axes"], ["q"]),
                           helper.make_node("Identity", ["q"], ["i"]),
                           helper.make_node("Flatten", ["i"], ["f"], axis=0),
                           helper.make_node("Sigmoid", ["f"], ["y"])]


def test_reshape_flatten_squeeze_identity_copy_nothing() -> None:
    """A tensor reshaped is planned inside its reshaped self: the copy disappears."""
    inits, chain = _reshape_chain()
    nodes = [*chain,
             helper.make_node("Tanh", ["a"], ["z"])]  # a is read after its reshapes too
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                    helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                       inits, opset=17)
    aliases, _ = _run(model, 1)
    assert aliases == {"a": ("r", 0), "r": ("q", 0), "q": ("i", 0), "i": ("f", 0)}


def test_inference_dropout_is_in_place_but_training_dropout_is_not() -> None:
    ratio = onnx.numpy_helper.from_array(np.array(0.5, np.float32), "ratio")
    training = onnx.numpy_helper.from_array(np.array(True), "training")
    nodes = [helper.make_node("Relu", ["x"], ["a"]),
             helper.make_node("Dropout", ["a", "ratio"], ["d"]),
             helper.make_node("Relu", ["x"], ["b"]),
             helper.make_node("Dropout", ["b", "ratio", "training"], ["t"], seed=3),
             helper.make_node("Add", ["d", "b"], ["y"]),  # b is read after its Dropout
             helper.make_node("Abs", ["t"], ["z"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                    helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                       [ratio, training], opset=13)
    xv = np.random.default_rng(0).standard_normal((1, 3, 4, 5)).astype(np.float32)
    ctx = mi.load(model).create_execution_context()
    got = ctx.execute({"x": xv})
    assert ctx.schedule is not None
    assert ctx.schedule.aliases.get("a") == ("d", 0) and "b" not in ctx.schedule.aliases
    np.testing.assert_allclose(got["y"], 2 * np.maximum(xv, 0), rtol=1e-6)
    kept = got["z"] != 0  # training: dropped elements are 0, kept ones scaled by 2
    np.testing.assert_allclose(got["z"][kept], 2 * np.maximum(xv, 0)[kept], rtol=1e-6)


def test_steps_whose_output_already_holds_the_input_are_left_out_of_the_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Reshape, Squeeze, Identity and Flatten planned inside their outputs have nothing to do:
    the runs skip their steps (fresh inputs still reach the outputs); so are two Identities
    of one tensor (the first holds it, and lives inside the second); an Identity of the
    graph's input (outside the arena) still runs, and so does every step when each enqueue
    is logged (MINI_INFER_DEBUG=2)."""
    inits, chain = _reshape_chain()
    nodes = [*chain,
             helper.make_node("Neg", ["x"], ["n"]),
             helper.make_node("Identity", ["n"], ["n1"]),
             helper.make_node("Identity", ["n"], ["n2"]),
             helper.make_node("Add", ["n1", "n2"], ["s"]),
             helper.make_node("Identity", ["x"], ["xi"]),
             helper.make_node("Add", ["s", "xi"], ["z"])]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                                    helper.make_tensor_value_info("z", TensorProto.FLOAT, None)],
                       inits, opset=17)
    for debug in ("0", "2"):
        monkeypatch.setenv("MINI_INFER_DEBUG", debug)
        ctx = mi.load(model).create_execution_context()
        for seed in range(3):  # new values each run reach the outputs through the views
            xv = np.random.default_rng(seed).standard_normal((1, 3, 4, 5)).astype(np.float32)
            got = ctx.execute({"x": xv})
            for name, want in zip(["y", "z"], ort_run(model, {"x": xv}), strict=True):
                np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
        left_out = [ctx.engine.nodes[k].outputs[0] for k in ctx.steps_left_out]
        assert left_out == ["r", "q", "i", "f", "n1", "n2"]
        assert len(ctx.steps) == len(nodes)  # profiles still see (and time) every node
        assert len(ctx.time_steps()) == len(nodes)


def test_bound_steps_run_their_ufunc_on_the_arrays_of_each_run() -> None:
    """Add/Sub/Mul steps between planned tensors run as their ufunc bound to the step's
    arrays (``bind_run``); so do the steps reading the graph input and writing the graph
    output, small ones that the plan copies through buffers of its own (larger ones change
    from run to run: ``test_large_inputs_are_not_staged``). Every run against onnxruntime."""
    import functools

    c = onnx.numpy_helper.from_array(np.full((1, 3, 4, 5), 0.5, np.float32), "c")
    nodes = [helper.make_node("Add", ["x", "c"], ["a"]),      # reads the graph input
             helper.make_node("Mul", ["a", "a"], ["m"]),
             helper.make_node("Sub", ["m", "c"], ["s"]),
             helper.make_node("Add", ["s", "a"], ["y"])]      # writes the graph output
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 5])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                  None)], [c], opset=17)
    ctx = mi.load(model).create_execution_context()
    for seed in range(3):
        xv = np.random.default_rng(seed).standard_normal((1, 3, 4, 5)).astype(np.float32)
        got = ctx.execute({"x": xv})["y"]
        np.testing.assert_allclose(got, ort_run(model, {"x": xv})[0], rtol=1e-6, atol=1e-6)
    assert ctx._plan is not None
    calls = dict(ctx._plan.calls)
    bound = [k for k, call in calls.items()
             if isinstance(call, functools.partial) and isinstance(call.func, np.ufunc)]
    assert bound == [0, 1, 2, 3]


def test_casts_to_their_own_type_and_concats_in_place_are_left_out() -> None:
    """silero-vad's tail: a Cast to the input's own type and a Concat whose every input was
    made inside it copy nothing, so their steps are left out; a Cast to another type and a
    Concat with an input it cannot hold (a graph input) still run. Values are onnxruntime's,
    run after run."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Cast", ["r"], ["same"], to=TensorProto.FLOAT),
             helper.make_node("Neg", ["same"], ["n"]),
             helper.make_node("Sigmoid", ["same"], ["s"]),
             helper.make_node("Concat", ["n", "s"], ["cat"], axis=0),
             helper.make_node("Cast", ["cat"], ["wide"], to=TensorProto.DOUBLE),
             helper.make_node("Concat", ["x", "n"], ["mixed"], axis=0)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])
    model = make_model(nodes, [x], [helper.make_tensor_value_info("wide", TensorProto.DOUBLE, None),
                                    helper.make_tensor_value_info("mixed", TensorProto.FLOAT,
                                                                  None)])
    ctx = mi.load(model).create_execution_context()
    for seed in range(3):
        xv = np.random.default_rng(seed).standard_normal((1, 3, 4)).astype(np.float32)
        got = ctx.execute({"x": xv})
        for name, want in zip(["wide", "mixed"], ort_run(model, {"x": xv}), strict=True):
            assert got[name].dtype == want.dtype
            np.testing.assert_allclose(got[name], want, rtol=1e-6, atol=1e-6)
    left_out = sorted(ctx.engine.nodes[k].outputs[0] for k in ctx.steps_left_out)
    assert left_out == ["cat", "same"]
