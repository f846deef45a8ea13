"""The small-model path (``engine/_direct.py``): a plan whose inputs and outputs all go through
its own buffers runs, from its second run on, as one generated function. Every run through it
matches onnxruntime (new values each run, shapes and dtypes changed between runs, inputs that
are views), wrong inputs still raise the checked path's errors, a failing step is named, NumPy's
warnings stay off inside and the caller's state is restored, debug runs still log every step,
and threads sharing a session each get their own results."""

from __future__ import annotations

import logging
import threading
import warnings
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.engine._direct import direct_run
from mini_infer_core.errors import ExecutionError, InputError, MiniInferError

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the oracle here")

RNG = np.random.default_rng(27)


def _model() -> onnx.ModelProto:
    """Two inputs sharing a symbolic batch, a few tiny steps (an Exp that may overflow among
    them, so the plan runs with NumPy's warnings off), three outputs: a float, an int64 and
    one computed from the second input alone."""
    c = helper.make_node
    inits = [numpy_helper.from_array(RNG.standard_normal((1, 4)).astype(np.float32), "w"),
             numpy_helper.from_array(np.array([1], np.int64), "axis")]
    nodes = [c("Sub", ["x", "w"], ["d"]), c("Mul", ["d", "y"], ["m"]), c("Exp", ["m"], ["e"]),
             c("ReduceSum", ["e", "axis"], ["s"], keepdims=1), c("ArgMax", ["m"], ["k"], axis=1),
             c("Relu", ["y"], ["r"])]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["N", 4]) for n in ("x", "y")]
    outs = [helper.make_tensor_value_info("s", TensorProto.FLOAT, ["N", 1]),
            helper.make_tensor_value_info("k", TensorProto.INT64, ["N", 1]),
            helper.make_tensor_value_info("r", TensorProto.FLOAT, ["N", 4])]
    model = helper.make_model(helper.make_graph(nodes, "small", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


MODEL = _model()
ORT = ort.InferenceSession(MODEL.SerializeToString(), providers=["CPUExecutionProvider"])


def _feeds(n: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    return {k: (RNG.standard_normal((n, 4)) * scale).astype(np.float32) for k in ("x", "y")}


def _check(got: list[Any], feeds: dict[str, np.ndarray]) -> None:
    want = ORT.run(None, feeds)
    assert len(got) == len(want)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert got[1].dtype == np.int64 and got[1].tolist() == want[1].tolist()
    np.testing.assert_array_equal(got[2], want[2])


def _ctx(sess: mi.InferenceSession) -> Any:
    return sess._local.context


def test_repeated_runs_go_direct_and_match_onnxruntime() -> None:
    sess = mi.InferenceSession(MODEL)
    seen = []
    for _ in range(4):  # new values each run
        feeds = _feeds(2)
        got = sess.run(None, feeds)
        _check(got, feeds)
        seen.append(got)
    ctx = _ctx(sess)
    assert ctx._plan.direct is not None, "the plan of a small CPU model runs directly"
    feeds = _feeds(2)
    direct = ctx.run_direct(feeds)
    assert direct is not None
    _check(direct, feeds)
    # the outputs are the caller's own arrays, not the plan's buffers
    assert not np.shares_memory(seen[-1][2], seen[-2][2])
    before = seen[-1][2].copy()
    seen[-2][2][...] = 99.0
    np.testing.assert_array_equal(seen[-1][2], before)
    # named outputs, and the context's dict, from the same path
    feeds = _feeds(2)
    k, s = sess.run(["k", "s"], feeds)
    want = ORT.run(["k", "s"], feeds)
    assert k.tolist() == want[0].tolist()
    np.testing.assert_allclose(s, want[1], rtol=1e-5, atol=1e-6)
    out = ctx.execute(feeds)
    assert list(out) == ["s", "k", "r"]
    _check([out["s"], out["k"], out["r"]], feeds)


def test_changed_shapes_and_views_between_runs() -> None:
    sess = mi.InferenceSession(MODEL)
    for n in (1, 1, 3, 3, 1, 5, 3, 1):  # each new shape: its plan, then straight runs again
        feeds = _feeds(n)
        _check(sess.run(None, feeds), feeds)
    assert _ctx(sess)._plan.direct is not None
    big = RNG.standard_normal((6, 8)).astype(np.float32)
    for _ in range(2):  # inputs that are strided views of larger arrays
        feeds = {"x": big[::2, ::2], "y": big[1::2, 1::2]}
        assert not feeds["x"].flags.c_contiguous
        _check(sess.run(None, feeds), {k: np.ascontiguousarray(v) for k, v in feeds.items()})


def test_wrong_inputs_raise_the_checked_errors_after_direct_runs() -> None:
    sess = mi.InferenceSession(MODEL)
    good = _feeds(2)
    sess.run(None, good)
    sess.run(None, good)
    assert _ctx(sess)._plan.direct is not None
    bad_dtype = {"x": good["x"].astype(np.float64), "y": good["y"]}
    with pytest.raises(InputError, match=r"input 'x' has dtype float64, the engine expects "
                                         r"float32 \(convert with \.astype"):
        sess.run(None, bad_dtype)
    with pytest.raises(InputError, match=r"missing \['y'\]"):
        sess.run(None, {"x": good["x"]})
    with pytest.raises(InputError, match=r"unknown \['z'\]"):
        sess.run(None, {"x": good["x"], "z": good["y"]})
    with pytest.raises(InputError, match=r"unknown \['z'\]"):  # as many names, one wrong
        sess.run(None, {"x": good["x"], "y": good["y"], "z": good["y"]})
    with pytest.raises(InputError, match=r"missing \['y'\]; unknown \['z'\]"):
        sess.run(None, {"x": good["x"], "z": good["y"]})
    with pytest.raises(InputError, match=r"pass an array \(got a list"):
        sess.run(None, {"x": good["x"].tolist(), "y": good["y"]})
    with pytest.raises(InputError, match=r"rank 2"):
        sess.run(None, {"x": good["x"][None], "y": good["y"]})
    with pytest.raises(InputError, match=r"dimension 'N' is 2 in another input"):
        sess.run(None, {"x": good["x"], "y": _feeds(3)["y"]})
    with pytest.raises(InputError, match=r"axis 1 is fixed at 4"):
        sess.run(None, {"x": good["x"][:, :3], "y": good["y"][:, :3]})
    # the session still runs, straight again
    for _ in range(2):
        feeds = _feeds(2)
        _check(sess.run(None, feeds), feeds)
    assert _ctx(sess).run_direct(_feeds(2)) is not None


def test_direct_run_declines_without_running_anything() -> None:
    sess = mi.InferenceSession(MODEL)
    feeds = _feeds(2)
    sess.run(None, feeds)
    sess.run(None, feeds)
    ctx = _ctx(sess)
    want = sess.run(None, feeds)
    for other in ({"x": feeds["x"]}, {"x": feeds["x"], "y": feeds["y"].astype(np.float64)},
                  {"x": feeds["x"], "y": feeds["y"][:1]}, {"x": 1.0, "y": feeds["y"]},
                  {"x": feeds["x"], "w": feeds["y"]}):
        assert ctx._plan.direct(other) is None
    # nothing was written: the plan's output buffers still hold the last run's results
    again = [buf.copy() for _, buf in ctx._plan.staged_out]
    by_name = dict(zip(["s", "k", "r"], want, strict=True))
    for (name, _), value in zip(ctx._plan.staged_out, again, strict=True):
        np.testing.assert_array_equal(value, by_name[name])


def test_a_failing_step_is_named() -> None:
    sess = mi.InferenceSession(MODEL)
    feeds = _feeds(2)
    sess.run(None, feeds)
    sess.run(None, feeds)
    ctx = _ctx(sess)
    plan = ctx._plan
    k = next(i for i, (step, _) in enumerate(plan.calls)
             if ctx.engine.nodes[step].op_type == "ReduceSum")

    def broken() -> None:
        raise ValueError("boom")

    plan.calls[k] = (plan.calls[k][0], broken)
    run = direct_run(plan, ctx.engine, ctx.devices, ctx._stream_list,
                     lambda step: ctx.engine.nodes[step].describe())
    assert run is not None
    before = np.geterr()
    with pytest.raises(ExecutionError, match=r"ReduceSum.*the plugin failed while running: "
                                             r"ValueError: boom"):
        run(feeds)
    assert np.geterr() == before  # the warnings the plan turned off are back


def test_overflow_is_quiet_inside_and_the_callers_state_is_kept() -> None:
    sess = mi.InferenceSession(MODEL)
    feeds = _feeds(2, scale=100.0)  # Exp of ~1e4: inf, as onnxruntime gives
    sess.run(None, feeds)
    with np.errstate(over="raise", invalid="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        before = np.geterr()
        for _ in range(3):
            got = sess.run(None, feeds)
            assert np.geterr() == before
        assert np.isinf(got[0]).any()
        _check(got, feeds)
    assert _ctx(sess)._plan.direct is not None


def test_debug_level_2_logs_every_step_of_every_run(monkeypatch: pytest.MonkeyPatch,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("MINI_INFER_DEBUG", "2")
    sess = mi.InferenceSession(MODEL)
    feeds = _feeds(2)
    sess.run(None, feeds)
    with caplog.at_level(logging.DEBUG, logger="mini_infer.lifecycle"):
        caplog.clear()
        _check(sess.run(None, feeds), feeds)
    enqueued = [r.getMessage() for r in caplog.records if "enqueue" in r.getMessage()]
    assert len(enqueued) == len(MODEL.graph.node), enqueued
    assert _ctx(sess)._plan.direct is None


def test_the_switch_turns_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINI_INFER_DIRECT_RUN", "0")
    sess = mi.InferenceSession(MODEL)
    for _ in range(3):
        feeds = _feeds(2)
        _check(sess.run(None, feeds), feeds)
    assert _ctx(sess)._plan.direct is None


def test_threads_sharing_a_session_get_their_own_results() -> None:
    sess = mi.InferenceSession(MODEL)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def work(n: int) -> None:
        try:
            start.wait()
            for _ in range(30):
                feeds = _feeds(n)
                _check(sess.run(None, feeds), feeds)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in (1, 2, 3, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    # one context shared by threads (execute directly): each run under the context's lock
    ctx = mi.load(MODEL).create_execution_context()
    errors.clear()

    def shared(n: int) -> None:
        try:
            for _ in range(30):
                feeds = _feeds(n)
                out = ctx.execute(feeds)
                _check([out["s"], out["k"], out["r"]], feeds)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=shared, args=(n,)) for n in (2, 2, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_closed_session_says_so() -> None:
    sess = mi.InferenceSession(MODEL)
    feeds = _feeds(1)
    sess.run(None, feeds)
    sess.run(None, feeds)
    sess.close()
    with pytest.raises(MiniInferError, match="closed"):
        sess.run(None, feeds)


def _zipmap_model() -> onnx.ModelProto:
    """A classifier's tail: Softmax of the scores, the label by ArgMax, ZipMap's dicts (the
    plan keeps them as values of its last step)."""
    c = helper.make_node
    nodes = [c("Softmax", ["x"], ["p"], axis=1), c("ArgMax", ["p"], ["label"], axis=1,
                                                   keepdims=0),
             c("ZipMap", ["p"], ["probs"], domain="ai.onnx.ml", classlabels_int64s=[3, 5, 7])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])]
    probs = helper.make_value_info("probs", helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.INT64,
                                   helper.make_tensor_type_proto(TensorProto.FLOAT, []))))
    outs = [helper.make_tensor_value_info("label", TensorProto.INT64, ["N"])]
    model = helper.make_model(helper.make_graph(nodes, "zipmap", ins, [*outs, probs]),
                              opset_imports=[helper.make_opsetid("", 13),
                                             helper.make_opsetid("ai.onnx.ml", 1)])
    model.ir_version = 8
    return model


def test_values_at_the_end_go_direct_and_match_onnxruntime() -> None:
    pytest.importorskip("mini_infer_ml_plugins", reason="ZipMap is mini-infer-ml-plugins'")
    model = _zipmap_model()
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    sess = mi.InferenceSession(model)
    rows = []
    for n in (1, 1, 1, 4, 4, 1):
        feeds = {"x": RNG.standard_normal((n, 3)).astype(np.float32)}
        label, probs = sess.run(None, feeds)
        want_label, want_probs = theirs.run(None, feeds)
        assert label.tolist() == want_label.tolist()
        assert [list(r) for r in probs] == [list(r) for r in want_probs] and len(probs) == n
        for a, b in zip(probs, want_probs, strict=True):
            np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=1e-5)
        rows.append(probs)
    assert _ctx(sess)._plan.direct is not None
    assert rows[-1] is not rows[-2] and rows[1] is not rows[2]  # each run its own list


def _segmented_model() -> onnx.ModelProto:
    """A data-dependent node (NonZero) between two runs of small steps: the engine runs in
    segments, whose small inputs and outputs go through their plans' buffers."""
    c = helper.make_node
    inits = [numpy_helper.from_array(np.array(2.0, np.float32), "two"),
             numpy_helper.from_array(np.array(1.0, np.float32), "one")]
    nodes = [c("Mul", ["x", "two"], ["m"]), c("Relu", ["m"], ["r"]), c("NonZero", ["r"], ["nz"]),
             c("Cast", ["nz"], ["f"], to=TensorProto.FLOAT), c("Add", ["f", "one"], ["g"]),
             c("Neg", ["g"], ["h"])]
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])]
    outs = [helper.make_tensor_value_info("m", TensorProto.FLOAT, ["N", 4]),
            helper.make_tensor_value_info("h", TensorProto.FLOAT, [2, "K"])]
    model = helper.make_model(helper.make_graph(nodes, "segmented", ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model


def test_segments_stage_their_small_inputs_and_outputs() -> None:
    model = _segmented_model()
    theirs = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    sess = mi.InferenceSession(model)
    seen = []
    for n in (1, 1, 3, 3, 3, 1):  # new values each run: K changes from run to run
        feeds = {"x": RNG.standard_normal((n, 4)).astype(np.float32)}
        got = sess.run(None, feeds)
        for a, b in zip(got, theirs.run(None, feeds), strict=True):
            assert a.shape == b.shape
            np.testing.assert_array_equal(a, b)
        seen.append(got)
    ctx = _ctx(sess)
    segments = ctx._segmented.segments
    assert len(segments) == 2
    assert all(seg.current.staged_in and seg.current.staged_out for seg in segments)
    # each run's outputs are its own arrays (runs 3 and 4: the same shapes, the same plans)
    assert not np.shares_memory(seen[3][0], seen[4][0])
    before = seen[4][0].copy()
    seen[3][0][...] = 7.0
    np.testing.assert_array_equal(seen[4][0], before)


def test_quiet_steps_keep_the_callers_buffer_size() -> None:
    """Inside a run the warnings are off and NumPy's other settings are the caller's (as
    ``np.errstate`` keeps them); after it, the caller's state is back."""
    from mini_infer_core.engine._direct import quiet_fp_state

    enter, leave = quiet_fp_state()
    old = np.getbufsize()
    try:
        for size in (16384, 8192 * 3):
            np.setbufsize(size)
            with np.errstate(over="raise"):
                token = enter()
                try:
                    assert np.geterr()["over"] == "ignore" and np.getbufsize() == size
                    assert np.exp(np.float32(1e4)) == np.inf  # no FloatingPointError
                finally:
                    leave(token)
                assert np.geterr()["over"] == "raise"
    finally:
        np.setbufsize(old)



def test_quiet_state_on_numpy_1() -> None:
    """Where NumPy has no context variable for its state (NumPy 1.x), np.errstate itself."""
    from mini_infer_core.engine._direct import _errstate_enter, _errstate_leave

    with np.errstate(over="raise"):
        token = _errstate_enter()
        try:
            assert np.geterr()["over"] == "ignore"
        finally:
            _errstate_leave(token)
        assert np.geterr()["over"] == "raise"


def test_an_engine_without_inputs_goes_direct() -> None:
    """Random generators: no inputs, each run's values drawn afresh (nothing folded), the
    outputs the caller's own; a feed given to it is still refused by name."""
    node = helper.make_node("RandomUniform", [], ["u"], shape=[2, 3], low=0.0, high=1.0)
    model = helper.make_model(helper.make_graph(
        [node], "noise", [], [helper.make_tensor_value_info("u", TensorProto.FLOAT, [2, 3])]),
        opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    sess = mi.InferenceSession(model)
    runs = [sess.run(None, {})[0] for _ in range(4)]
    assert _ctx(sess)._plan.direct is not None
    for u in runs:
        assert u.shape == (2, 3) and u.dtype == np.float32 and ((u >= 0) & (u < 1)).all()
    assert not np.array_equal(runs[-1], runs[-2]) and not np.shares_memory(runs[-1], runs[-2])
    with pytest.raises(InputError, match=r"unknown \['x'\]"):
        sess.run(None, {"x": np.zeros(1, np.float32)})
