"""Models built in the repository with onnx.helper, each checked against onnxruntime:
control flow (If, Loop), an LSTM, a detector-style head with shapes computed from Shape, and
a transformer encoder block, plus one engine run at three input shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import ort_run
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

F = TensorProto.FLOAT
rng = np.random.default_rng(42)


def _init(name: str, arr: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(arr, name)


def _rand(*shape: int, scale: float = 0.5) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any],
           opset: int = 17) -> onnx.ModelProto:
    m = helper.make_model(helper.make_graph(nodes, "m", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _check(model: onnx.ModelProto, feeds_list: list[dict[str, np.ndarray]], tmp_path: Path,
           rtol: float = 1e-3, atol: float = 1e-4) -> None:
    """Run through an engine file (written, then loaded) and compare with onnxruntime."""
    path = tmp_path / "m.engine"
    mi.load(model).save(str(path))
    sess = mi.InferenceSession(str(path))
    for feeds in feeds_list:
        ours = sess.run(None, feeds)
        ref = ort_run(model, feeds)
        for a, b in zip(ours, ref, strict=True):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def test_if_model_with_outer_scope_reads(tmp_path: Path) -> None:
    w = _rand(4)
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", F, [None, 4])])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "one"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", F, [None, 4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    inits = [_init("w", w), _init("one", np.ones(1, np.float32)),
             _init("zero", np.zeros((), np.float32))]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, ["N", 4])],
                   [helper.make_tensor_value_info("y", F, ["N", 4])], inits)
    _check(model, [{"x": np.abs(_rand(3, 4))}, {"x": -np.abs(_rand(2, 4))}], tmp_path)


def test_loop_model_with_carried_state_and_scan_output(tmp_path: Path) -> None:
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["v_in", "two"], ["v2"]),
         helper.make_node("Add", ["v2", "x"], ["v_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Mul", ["v_out", "i_f"], ["scan"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", F, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", F, [3]),
         helper.make_tensor_value_info("scan", F, [3])])
    nodes = [helper.make_node("Loop", ["trip", "cond", "v0"], ["v_final", "scans"], body=body)]
    inits = [_init("two", np.array(2, np.float32)), _init("cond", np.array(True)),
             _init("v0", np.zeros(3, np.float32))]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [3]),
                           helper.make_tensor_value_info("trip", TensorProto.INT64, [])],
                   [helper.make_tensor_value_info("v_final", F, [3]),
                    helper.make_tensor_value_info("scans", F, [None, 3])], inits)
    _check(model, [{"x": _rand(3), "trip": np.array(n, np.int64)} for n in (0, 1, 5)], tmp_path)


def test_bidirectional_lstm_model(tmp_path: Path) -> None:
    seq, batch, inp, hid = 5, 2, 4, 3
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["Y", "Yh", "Yc"],
                              hidden_size=hid, direction="bidirectional")]
    inits = [_init("W", _rand(2, 4 * hid, inp)), _init("R", _rand(2, 4 * hid, hid)),
             _init("B", _rand(2, 8 * hid, scale=0.1)), _init("h0", _rand(2, batch, hid)),
             _init("c0", _rand(2, batch, hid))]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [seq, batch, inp])],
                   [helper.make_tensor_value_info("Y", F, [seq, 2, batch, hid]),
                    helper.make_tensor_value_info("Yh", F, [2, batch, hid]),
                    helper.make_tensor_value_info("Yc", F, [2, batch, hid])], inits)
    _check(model, [{"x": _rand(seq, batch, inp)}], tmp_path)


def test_detector_head_with_shape_computed_reshape(tmp_path: Path) -> None:
    """Conv → Resize ×2 → Concat with a skip branch → Sigmoid → Split into boxes and scores
    → Reshape to [N, -1, k] with the target shape built by Shape → Gather → Concat."""
    c = 6
    nodes = [
        helper.make_node("Conv", ["feat", "w1"], ["f1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Resize", ["f1", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Concat", ["up", "feat"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "w2", "b2"], ["head"]),
        helper.make_node("Sigmoid", ["head"], ["sig"]),
        helper.make_node("Split", ["sig", "split"], ["boxes", "scores"], axis=1),
        helper.make_node("Shape", ["feat"], ["shp"]),
        helper.make_node("Gather", ["shp", "zero"], ["n"], axis=0),
        helper.make_node("Concat", ["n", "minus1", "four"], ["box_shape"], axis=0),
        helper.make_node("Concat", ["n", "minus1", "two"], ["score_shape"], axis=0),
        helper.make_node("Transpose", ["boxes"], ["boxes_t"], perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["scores"], ["scores_t"], perm=[0, 2, 3, 1]),
        helper.make_node("Reshape", ["boxes_t", "box_shape"], ["box_out"]),
        helper.make_node("Reshape", ["scores_t", "score_shape"], ["score_out"]),
    ]
    inits = [_init("w1", _rand(c, c, 3, 3)), _init("w2", _rand(6, 2 * c, 1, 1)),
             _init("b2", _rand(6)), _init("scales", np.array([1, 1, 2, 2], np.float32)),
             _init("split", np.array([4, 2], np.int64)), _init("zero", np.array([0], np.int64)),
             _init("minus1", np.array([-1], np.int64)), _init("four", np.array([4], np.int64)),
             _init("two", np.array([2], np.int64))]
    model = _model(nodes, [helper.make_tensor_value_info("feat", F, ["N", c, "H", "W"])],
                   [helper.make_tensor_value_info("box_out", F, ["N", None, 4]),
                    helper.make_tensor_value_info("score_out", F, ["N", None, 2])], inits)
    feeds = [{"feat": _rand(n, c, h, w)} for n, h, w in ((1, 8, 8), (2, 16, 12), (3, 6, 10))]
    _check(model, feeds, tmp_path)
    engine = mi.load(model)
    assert engine.tensors["box_out"].shape[0] == "N"  # the Reshape target stayed symbolic
    # constant float scales give Resize exact symbolic output dims: nothing data-dependent
    assert not any(getattr(n.plugin, "data_dependent", False) for n in engine.nodes)
    up = engine.tensors["up"].dims[2]  # H after the stride-2 conv, times 2
    assert [up.evaluate({"H": h}) for h in (8, 9, 16)] == [2 * ((h - 1) // 2 + 1)
                                                           for h in (8, 9, 16)]


def test_transformer_encoder_block(tmp_path: Path) -> None:
    vocab, d, heads, ff = 50, 16, 2, 32
    dh = d // heads
    nodes = [
        helper.make_node("Gather", ["emb", "ids"], ["x"]),
        helper.make_node("LayerNormalization", ["x", "ln1_g", "ln1_b"], ["h"], axis=-1),
        # the projections q, k and v, split into heads (k transposed for the product)
        *(helper.make_node("MatMul", ["h", f"w{t}"], [t]) for t in "qkv"),
        helper.make_node("Shape", ["ids"], ["bt"]),
        helper.make_node("Concat", ["bt", "heads_dh"], ["split_shape"], axis=0),
        *(helper.make_node("Reshape", [t, "split_shape"], [f"{t}4"]) for t in "qkv"),
        *(helper.make_node("Transpose", [f"{t}4"], [f"{t}h"], perm=perm)
          for t, perm in zip("qkv", ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]), strict=True)),
        helper.make_node("MatMul", ["qh", "kh"], ["scores"]),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
        helper.make_node("Softmax", ["scaled"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "vh"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Concat", ["bt", "dmodel"], ["merge_shape"], axis=0),
        helper.make_node("Reshape", ["ctx_t", "merge_shape"], ["merged"]),
        helper.make_node("MatMul", ["merged", "wo"], ["proj"]),
        helper.make_node("Add", ["x", "proj"], ["res1"]),
        helper.make_node("LayerNormalization", ["res1", "ln2_g", "ln2_b"], ["h2"], axis=-1),
        helper.make_node("MatMul", ["h2", "w1"], ["f1"]),
        helper.make_node("Add", ["f1", "b1"], ["f1b"]),
        helper.make_node("Div", ["f1b", "sqrt2"], ["f1s"]),
        helper.make_node("Erf", ["f1s"], ["erf"]),
        helper.make_node("Add", ["erf", "one"], ["erf1"]),
        helper.make_node("Mul", ["f1b", "erf1"], ["g0"]),
        helper.make_node("Mul", ["g0", "half"], ["gelu"]),
        helper.make_node("MatMul", ["gelu", "w2"], ["f2"]),
        helper.make_node("Add", ["res1", "f2"], ["y"]),
    ]
    inits = [_init("emb", _rand(vocab, d)), _init("ln1_g", 1 + _rand(d, scale=0.1)),
             _init("ln1_b", _rand(d, scale=0.1)), _init("ln2_g", 1 + _rand(d, scale=0.1)),
             _init("ln2_b", _rand(d, scale=0.1)),
             *[_init(n, _rand(d, d)) for n in ("wq", "wk", "wv", "wo")],
             _init("w1", _rand(d, ff)), _init("b1", _rand(ff, scale=0.1)),
             _init("w2", _rand(ff, d)),
             _init("heads_dh", np.array([heads, dh], np.int64)),
             _init("dmodel", np.array([d], np.int64)),
             _init("scale", np.array(1 / np.sqrt(dh), np.float32)),
             _init("sqrt2", np.array(np.sqrt(2), np.float32)),
             _init("one", np.array(1, np.float32)), _init("half", np.array(0.5, np.float32))]
    model = _model(nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, ["B", "T"])],
                   [helper.make_tensor_value_info("y", F, ["B", "T", d])], inits)
    feeds = [{"ids": rng.integers(0, vocab, (b, t)).astype(np.int64)}
             for b, t in ((1, 7), (3, 5), (2, 12))]
    _check(model, feeds, tmp_path)


@pytest.mark.parametrize("shape", [(1, 3, 8, 8), (2, 3, 12, 6), (4, 3, 17, 9)])
def test_one_engine_many_shapes_matches_onnxruntime(shape: tuple[int, ...],
                                                    tmp_path: Path) -> None:
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                              ceil_mode=1),
             helper.make_node("GlobalAveragePool", ["p"], ["g"]),
             helper.make_node("Flatten", ["g"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, ["N", 3, "H", "W"])],
                   [helper.make_tensor_value_info("y", F, ["N", 5])],
                   [_init("w", _rand(5, 3, 3, 3))])
    _check(model, [{"x": _rand(*shape)}], tmp_path)


def test_data_dependent_shapes_nonzero_and_topk_with_runtime_k(tmp_path: Path) -> None:
    """NonZero's output length and TopK's K come from the data; later nodes use them."""
    nodes = [
        helper.make_node("Greater", ["x", "zero"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["idx"]),
        helper.make_node("Transpose", ["idx"], ["idx_t"], perm=[1, 0]),
        helper.make_node("GatherND", ["x", "idx_t"], ["pos"]),
        helper.make_node("Shape", ["pos"], ["npos"]),
        helper.make_node("Min", ["npos", "three"], ["k"]),
        helper.make_node("TopK", ["pos", "k"], ["top", "top_i"], largest=1),
        helper.make_node("Mul", ["top", "two"], ["y"]),
    ]
    inits = [_init("zero", np.zeros((), np.float32)), _init("two", np.array(2, np.float32)),
             _init("three", np.array([3], np.int64))]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, 4])],
                   [helper.make_tensor_value_info("y", F, [None]),
                    helper.make_tensor_value_info("top_i", TensorProto.INT64, [None])], inits)
    feeds = [{"x": v.astype(np.float32)} for v in (
        np.array([[1, -1, 2, 5], [0, 3, -2, 4]]), np.array([[-1, -1, -1, 2], [-1] * 4]),
        np.array([[-1] * 4, [-2] * 4]))]
    _check(model, feeds, tmp_path)
