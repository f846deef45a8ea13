"""Tiny steps bound to their arrays (IBoundRun: LSTM, Pad, Slice, Gather of one index, Relu,
copies) and small engine inputs/outputs staged in plan buffers: every run through the engine
(several runs, new input values each time, several shapes) matches onnxruntime, the steps are
bound (not ``enqueue``), and the outputs a run returns are the caller's own."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle here")

RNG = np.random.default_rng(11)


def _ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds))


def _bound_ops(ctx: Any) -> set[str]:
    """The op types of the steps a run calls through something other than ``enqueue``."""
    plan = ctx._plan
    return {ctx.engine.nodes[k].op_type for k, call in plan.calls
            if getattr(getattr(call, "func", None), "__name__", "") != "enqueue"}


def _lstm_model(t: int, b: int, i: int, h: int, direction: str) -> onnx.ModelProto:
    nd = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array(RNG.uniform(-0.5, 0.5, s).astype(np.float32), n)
             for n, s in (("W", (nd, 4 * h, i)), ("R", (nd, 4 * h, h)), ("B", (nd, 8 * h)))]
    nodes = [helper.make_node("Relu", ["x"], ["xr"]),
             helper.make_node("LSTM", ["xr", "W", "R", "B", "", "h0", "c0"],
                              ["y", "yh", "yc"], hidden_size=h, direction=direction)]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, b, i]),
           helper.make_tensor_value_info("h0", TensorProto.FLOAT, [nd, b, h]),
           helper.make_tensor_value_info("c0", TensorProto.FLOAT, [nd, b, h])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("y", "yh", "yc")]
    model = helper.make_model(helper.make_graph(nodes, "lstm", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize(("t", "b", "i", "h"), [(1, 1, 16, 16), (4, 3, 5, 6)])
def test_bound_lstm_matches_onnxruntime(direction: str, t: int, b: int, i: int, h: int
                                        ) -> None:
    model = _lstm_model(t, b, i, h, direction)
    nd = 2 if direction == "bidirectional" else 1
    ctx = mi.load(model).create_execution_context()
    seen = []
    for _ in range(3):  # new values each run: the bound buffers hold nothing over
        feeds = {"x": RNG.standard_normal((t, b, i)).astype(np.float32),
                 "h0": RNG.standard_normal((nd, b, h)).astype(np.float32),
                 "c0": RNG.standard_normal((nd, b, h)).astype(np.float32)}
        got = ctx.execute(feeds)
        for name, want in zip(("y", "yh", "yc"), _ort(model, feeds), strict=True):
            np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5)
        seen.append(got)
        assert "LSTM" in _bound_ops(ctx)
    # each run's outputs are its own (staged outputs are copied out of the plan's buffers)
    assert not np.array_equal(seen[0]["yh"], seen[1]["yh"])


def _stft_like_model() -> onnx.ModelProto:
    """silero-vad's front: a reflect Pad with constant pads, Slices with constant bounds,
    Gathers of one constant index from an input, the results summed."""
    c = helper.make_node
    inits = [numpy_helper.from_array(np.array(v, np.int64), n) for n, v in (
        ("pads", [0, 3, 0, 5]), ("s0", [1]), ("e0", [7]), ("ax", [1]), ("st", [2]),
        ("i0", 0), ("i1", -1))]
    nodes = [c("Pad", ["x", "pads"], ["p"], mode="reflect"),
             c("Slice", ["p", "s0", "e0", "ax", "st"], ["sl"]),
             c("Gather", ["state", "i0"], ["g0"], axis=0),
             c("Gather", ["state", "i1"], ["g1"], axis=0),
             c("Add", ["g0", "g1"], ["g"]),
             c("Relu", ["sl"], ["r"]),
             c("Unsqueeze", ["r", "ax"], ["u"]),
             c("Identity", ["g"], ["gid"]),
             c("Gather", ["v", "i1"], ["gv"], axis=0),  # a 0-d result: bound to a view
             c("Neg", ["gv"], ["nv"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 12]),
           helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "B", 4]),
           helper.make_tensor_value_info("v", TensorProto.FLOAT, [5])]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None)
            for n in ("u", "gid", "nv")]
    model = helper.make_model(helper.make_graph(nodes, "front", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_bound_pad_slice_gather_relu_match_onnxruntime_across_shapes() -> None:
    model = _stft_like_model()
    ctx = mi.load(model).create_execution_context()
    for batch in (1, 3, 1, 2):  # new shapes (plans made again, arena grown), old ones again
        feeds = {"x": RNG.standard_normal((batch, 12)).astype(np.float32),
                 "state": RNG.standard_normal((2, batch, 4)).astype(np.float32),
                 "v": RNG.standard_normal(5).astype(np.float32)}
        got = ctx.execute(feeds)
        for name, want in zip(("u", "gid", "nv"), _ort(model, feeds), strict=True):
            np.testing.assert_allclose(got[name], want, rtol=1e-6)
        assert {"Pad", "Slice", "Gather", "Relu"} <= _bound_ops(ctx)
        assert not ctx._plan.patches  # small inputs and outputs staged: nothing patched


def test_large_inputs_are_not_staged() -> None:
    """Inputs above the staging size reach the steps as the caller's arrays (no copy)."""
    from mini_infer_core.engine.plans import STAGE_INPUT_BYTES

    model = _stft_like_model()
    ctx = mi.load(model).create_execution_context()
    batch = STAGE_INPUT_BYTES // (12 * 4) + 1
    feeds = {"x": RNG.standard_normal((batch, 12)).astype(np.float32),
             "state": RNG.standard_normal((2, batch, 4)).astype(np.float32),
             "v": RNG.standard_normal(5).astype(np.float32)}
    got = ctx.execute(feeds)
    np.testing.assert_allclose(got["u"], _ort(model, feeds)[0], rtol=1e-6)
    assert "x" in {name for name, _, _ in ctx._plan.patches}


def test_inputs_up_to_the_input_staging_size_reach_steps_as_one_array() -> None:
    """A Conv on a 1x3x48x64 input (36 KB): each run's new input array is copied into the
    plan's buffer, so the Conv sees the same array every run (its compiled calls stay) and
    the results follow the new values (against onnxruntime)."""
    w = numpy_helper.from_array(RNG.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    model = helper.make_model(helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w]),
        opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    ctx = mi.load(model).create_execution_context()
    seen = set()
    for _ in range(3):
        x = RNG.standard_normal((1, 3, 48, 64)).astype(np.float32)
        got = ctx.execute({"x": x})["y"]
        np.testing.assert_allclose(got, _ort(model, {"x": x})[0], rtol=1e-4, atol=1e-4)
        seen.add(id(ctx.steps[0].inputs[0]))
    assert len(seen) == 1 and "x" not in {name for name, _, _ in ctx._plan.patches}


def _scoring_tail_model() -> onnx.ModelProto:
    """The NumPy-kernel steps of converted scikit-learn models (naive Bayes, k-means,
    classifiers' label chains): unary and binary ufuncs, a comparison, casts, ArgMax/ArgMin
    and reductions, each reading values that overflow, meet zero or are NaN."""
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    n = helper.make_node
    nodes = [n("Abs", ["x"], ["a"]), n("Sqrt", ["a"], ["s"]), n("Log", ["a"], ["l"]),
             n("Exp", ["x"], ["e"]), n("Pow", ["x", "two"], ["p"]), n("Div", ["x", "a"], ["d"]),
             n("Greater", ["x", "zero"], ["g"]), n("Cast", ["g"], ["gi"], to=TensorProto.INT64),
             n("Cast", ["x"], ["xd"], to=TensorProto.DOUBLE),
             n("ArgMax", ["x"], ["amax"], axis=1, keepdims=1),
             n("ArgMin", ["s"], ["amin"], axis=1, keepdims=0),
             n("ReduceLogSumExp", ["x", "axes"], ["lse"], keepdims=1),
             n("ReduceSumSquare", ["x", "axes"], ["ssq"], keepdims=0),
             n("ReduceSum", ["e", "axes"], ["esum"], keepdims=1),
             n("ReduceMax", ["l", "axes"], ["lmax"], keepdims=0)]
    outs = ["s", "l", "e", "p", "d", "gi", "xd", "amax", "amin", "lse", "ssq", "esum", "lmax"]
    model = helper.make_model(helper.make_graph(
        nodes, "tail", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [onnx.ValueInfoProto(name=o) for o in outs],
        [two, zero, axes]), opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_bound_ufuncs_casts_args_and_reductions_match_onnxruntime() -> None:
    """Every step bound; overflow (exp of 100), log and division at 0, NaN rows: the same
    values as onnxruntime and no NumPy warning (the plan's one errstate covers the bound
    calls that asked for it); then 0 rows (steps through ``enqueue``)."""
    model = _scoring_tail_model()
    ctx = mi.load(model).create_execution_context()
    for rows in (1, 3, 200, 0, 3):
        x = RNG.standard_normal((rows, 4)).astype(np.float32)
        if rows >= 3:
            x[0, 2], x[1] = 100.0, 0.0  # exp overflows; 0/0, log 0
        got = ctx.execute({"x": x})
        for name, want in zip([o.name for o in model.graph.output], _ort(model, {"x": x}),
                              strict=True):
            assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
            np.testing.assert_allclose(got[name], want, rtol=2e-6, atol=1e-6, err_msg=name)
        if rows:
            assert _bound_ops(ctx) == {nd.op_type for nd in ctx.engine.nodes}


def test_a_run_like_the_last_goes_straight_to_its_plan_and_others_are_checked() -> None:
    """Runs of the last run's dtypes and shapes reuse its plan without the checks; a new
    shape gets its own plan, a wrong dtype or a missing input is still refused."""
    from mini_infer_core.errors import InputError

    model = _scoring_tail_model()
    ctx = mi.load(model).create_execution_context()
    for rows in (2, 2, 5, 2):
        x = RNG.standard_normal((rows, 4)).astype(np.float32)
        got = ctx.execute({"x": x})
        np.testing.assert_allclose(got["lse"], _ort(model, {"x": x})[9], rtol=2e-6)
        assert ctx.steps[0].inputs[0].shape == (rows, 4)
    with pytest.raises(InputError, match="dtype float64"):
        ctx.execute({"x": np.zeros((2, 4))})
    with pytest.raises(InputError, match="missing"):
        ctx.execute({"y": np.zeros((2, 4), np.float32)})
    with pytest.raises(InputError, match="expects rank"):
        ctx.execute({"x": np.zeros((2, 4, 1), np.float32)})


def _log_sum_exp_model(shape: list[int], axes: list[int] | None, keepdims: int
                       ) -> onnx.ModelProto:
    inits = [] if axes is None else [numpy_helper.from_array(np.array(axes, np.int64), "ax")]
    node = helper.make_node("ReduceLogSumExp", ["x", "ax"] if axes is not None else ["x"],
                            ["y"], keepdims=keepdims)
    model = helper.make_model(helper.make_graph(
        [node], "lse", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [onnx.ValueInfoProto(name="y")], inits), opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(("shape", "axes", "keepdims"), [
    ([1, 3], [1], 1), ([5, 3], [-1], 0), ([4, 16], [1], 1),  # a few terms: logaddexp
    ([2, 1, 6], [1, 2], 1), ([1, 1, 1], None, 0), ([7], None, 1),
    ([3, 17], [1], 1), ([2, 3, 4], [1, 2], 0), ([6, 2], [0], 1)])  # more: the shifted sum
def test_bound_log_sum_exp_matches_onnxruntime(shape: list[int], axes: list[int] | None,
                                               keepdims: int) -> None:
    """ReduceLogSumExp's bound call over a few terms (one ``logaddexp.reduce``) and over
    more (the max-shifted sum): onnxruntime's values for finite rows, large values, and rows
    with -inf, +inf and NaN; all -inf is -inf."""
    model = _log_sum_exp_model(shape, axes, keepdims)
    ctx = mi.load(model).create_execution_context()
    for case in range(3):
        x = (RNG.standard_normal(shape) * (1 if case == 0 else 40)).astype(np.float32)
        flat = x.reshape(-1)
        if case == 2 and flat.size >= 3:
            flat[0], flat[-1] = -np.inf, 80.0
            if flat.size >= 6:
                flat[flat.size // 2] = np.inf
        got = ctx.execute({"x": x})["y"]
        want = _ort(model, {"x": x})[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)
        assert "ReduceLogSumExp" in _bound_ops(ctx)
    x = np.full(shape, -np.inf, np.float32)  # every term exp 0: log 0
    got = ctx.execute({"x": x})["y"]
    assert np.all(got == -np.inf)
    if len(shape) > 1 and shape[-1] > 1:  # NaN propagates to its own row only
        x = RNG.standard_normal(shape).astype(np.float32)
        x.reshape(-1, shape[-1])[0, 0] = np.nan
        got = ctx.execute({"x": x})["y"]
        want = _ort(model, {"x": x})[0]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=2e-6,
                                   atol=1e-6)
