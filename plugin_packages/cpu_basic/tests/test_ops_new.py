"""The operators of issue 15 against independent oracles, through whole engines.

Each case is a one-node ONNX model built into a mini-infer engine (and, for some, written to
an engine file and read back) and compared with onnxruntime where it implements the
operator, else with onnx's ReferenceEvaluator: NonMaxSuppression, the signal windows and
MelWeightMatrix, Det, DeformConv, TensorScatter (onnxruntime); SwiGLU, LinearAttention,
CausalConvWithState, FlexAttention, Adagrad/Adam/Momentum, ImageDecoder (the reference).
Random operators are checked for shapes, types, statistics, and that a seed reproduces
values.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi
from mini_infer_core.errors import MiniInferError

RNG = np.random.default_rng(15)
PREVIEW = "ai.onnx.preview"
TRAINING = "ai.onnx.preview.training"


def one_node(op: str, inputs: Sequence[Any], attrs: dict[str, Any] | None = None, *,
             opset: int, n_out: int = 1, domain: str = "", consts: Sequence[int] = (),
             ir_version: int = 10) -> onnx.ModelProto:
    """A model of one node: inputs ``x{i}`` (None: an absent optional input), those in
    ``consts`` as initializers, outputs ``y{i}`` of undeclared shape."""
    names, graph_inputs, inits = [], [], []
    for i, x in enumerate(inputs):
        if x is None:
            names.append("")
            continue
        names.append(f"x{i}")
        if i in consts:
            inits.append(numpy_helper.from_array(np.asarray(x), f"x{i}"))
        else:
            elem = helper.np_dtype_to_tensor_dtype(np.asarray(x).dtype)
            graph_inputs.append(helper.make_tensor_value_info(f"x{i}", elem,
                                                              np.asarray(x).shape))
    while names and names[-1] == "":
        names.pop()
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, domain=domain, **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs,
                              [onnx.ValueInfoProto(name=o) for o in outs], inits)
    opsets = [helper.make_opsetid("", opset if not domain else 21)]
    if domain:
        opsets.append(helper.make_opsetid(domain, opset))
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)


def feeds(model: onnx.ModelProto, inputs: Sequence[Any]) -> dict[str, Any]:
    wanted = {i.name for i in model.graph.input}
    return {f"x{i}": x for i, x in enumerate(inputs) if x is not None and f"x{i}" in wanted}


def ours(model: onnx.ModelProto, inputs: Sequence[Any], tmp: Path | None = None
         ) -> list[Any]:
    """Run the model through mini-infer; with ``tmp``, through an engine file read back."""
    if tmp is None:
        return mi.InferenceSession(model).run(None, feeds(model, inputs))
    path = tmp / "model.engine"
    mi.InferenceSession(model).save_engine(path)
    return mi.InferenceSession(str(path)).run(None, feeds(model, inputs))


def onnxruntime(model: onnx.ModelProto, inputs: Sequence[Any]) -> list[Any]:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])
    return list(sess.run(None, feeds(model, inputs)))


def reference(model: onnx.ModelProto, inputs: Sequence[Any]) -> list[Any]:
    return list(ReferenceEvaluator(model).run(None, feeds(model, inputs)))


def same(got: Sequence[Any], want: Sequence[Any], rtol: float = 1e-5, atol: float = 1e-6
         ) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype.kind in "fc":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol,
                                       atol=atol)
        else:
            np.testing.assert_array_equal(g, w)


# -- NonMaxSuppression ------------------------------------------------------------------------


def nms_inputs(batches: int, classes: int, boxes: int, *, grid: bool, center: bool,
               flip: bool) -> tuple[Any, Any]:
    """Boxes that overlap a lot: corners on a coarse grid (exact ties in IoU and scores)
    or anywhere, some with their corners given in the other order."""
    if center:
        xy = RNG.uniform(0, 20, (batches, boxes, 2))
        wh = RNG.uniform(0.5, 8, (batches, boxes, 2))
        b = np.concatenate([xy, wh], axis=2)
    else:
        a = RNG.uniform(0, 20, (batches, boxes, 2))
        b = np.concatenate([a, a + RNG.uniform(0.5, 8, (batches, boxes, 2))], axis=2)
        if flip:
            swap = RNG.uniform(size=(batches, boxes)) < 0.5
            b[swap] = b[swap][:, [2, 3, 0, 1]]
    if grid:
        b = np.round(b)
    scores = RNG.uniform(0, 1, (batches, classes, boxes))
    if grid:
        scores = np.round(scores, 1)
    return b.astype(np.float32), scores.astype(np.float32)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("center", [0, 1])
def test_nms_matches_onnxruntime_on_overlapping_boxes(seed: int, center: int) -> None:
    rng = np.random.default_rng(seed)
    boxes, scores = nms_inputs(int(rng.integers(1, 3)), int(rng.integers(1, 5)),
                               int(rng.integers(5, 200)), grid=bool(seed % 2),
                               center=bool(center), flip=True)
    limit = np.array([rng.choice([1, 3, 20, 1000])], np.int64)
    iou = np.array([rng.choice([0.0, 0.2, 0.5])], np.float32)
    thr = np.array([rng.choice([0.0, 0.3])], np.float32)
    model = one_node("NonMaxSuppression", [boxes, scores, limit, iou, thr],
                     {"center_point_box": center}, opset=11)
    want = onnxruntime(model, [boxes, scores, limit, iou, thr])
    assert want[0].shape[0] > 0
    same(ours(model, [boxes, scores, limit, iou, thr]), want)


def test_nms_many_candidates_few_kept_per_class() -> None:
    """More candidates per class than the first ones taken (a few times the limit): clusters
    of identical boxes keep one box each, so the classes run out of their best candidates and
    are solved again with all of them."""
    base = np.repeat(np.arange(40, dtype=np.float32) * 10, 50)
    boxes = np.stack([base, base, base + 5, base + 5], axis=1)[None]
    scores = RNG.uniform(0, 1, (1, 3, boxes.shape[1])).astype(np.float32)
    limit, iou = np.array([10], np.int64), np.array([0.5], np.float32)
    model = one_node("NonMaxSuppression", [boxes, scores, limit, iou], opset=11)
    want = onnxruntime(model, [boxes, scores, limit, iou])
    assert want[0].shape == (30, 3)
    same(ours(model, [boxes, scores, limit, iou]), want)


@pytest.mark.parametrize("case", ["no_limit_input", "zero_limit", "everything_below_threshold",
                                  "no_thresholds", "empty_and_flipped_boxes", "no_boxes"])
def test_nms_edge_cases_match_onnxruntime(case: str) -> None:
    boxes, scores = nms_inputs(2, 3, 30, grid=True, center=False, flip=True)
    limit, iou = np.array([5], np.int64), np.array([0.4], np.float32)
    thr: Any = np.array([0.2], np.float32)
    inputs: list[Any] = [boxes, scores, limit, iou, thr]
    if case == "no_limit_input":
        inputs = [boxes, scores]
    elif case == "zero_limit":
        inputs[2] = np.array([0], np.int64)
    elif case == "everything_below_threshold":
        inputs[4] = np.array([1.0], np.float32)
    elif case == "no_thresholds":
        inputs = [boxes, scores, limit]
    elif case == "empty_and_flipped_boxes":
        boxes[:, ::3, 2] = boxes[:, ::3, 0]  # no height: never suppresses nor is suppressed
        boxes[:, 1::3] = boxes[:, 1::3][..., [2, 3, 0, 1]]
    elif case == "no_boxes":
        inputs[0], inputs[1] = boxes[:, :0], scores[:, :, :0]
    model = one_node("NonMaxSuppression", inputs, opset=11)
    want = onnxruntime(model, inputs)
    got = ours(model, inputs)
    same(got, want)
    if case in ("no_limit_input", "zero_limit", "everything_below_threshold", "no_boxes"):
        assert got[0].shape == (0, 3)


def test_nms_through_an_engine_file(tmp_path: Path) -> None:
    boxes, scores = nms_inputs(1, 4, 60, grid=False, center=True, flip=False)
    inputs = [boxes, scores, np.array([7], np.int64), np.array([0.3], np.float32),
              np.array([0.1], np.float32)]
    model = one_node("NonMaxSuppression", inputs, {"center_point_box": 1}, opset=11,
                     consts=(2, 3, 4))
    same(ours(model, inputs, tmp_path), onnxruntime(model, inputs))


def test_nms_detector_sized_input_matches_onnxruntime() -> None:
    """1 batch x 80 classes x 8400 boxes (a YOLO head), few confident boxes per class."""
    n = 8400
    xy, wh = RNG.uniform(0, 640, (n, 2)), RNG.uniform(8, 160, (n, 2))
    logits = RNG.normal(-6, 1.5, (80, n))
    for c in RNG.integers(0, 80, 25):
        k = RNG.choice(n, 40, replace=False)
        xy[k] = RNG.uniform(0, 640, 2) + RNG.normal(0, 5, (40, 2))
        logits[c, k] = RNG.normal(2, 1, 40)
    inputs = [np.concatenate([xy, wh], 1)[None].astype(np.float32),
              (1 / (1 + np.exp(-logits)))[None].astype(np.float32),
              np.array([100], np.int64), np.array([0.45], np.float32),
              np.array([0.25], np.float32)]
    model = one_node("NonMaxSuppression", inputs, {"center_point_box": 1}, opset=11)
    want = onnxruntime(model, inputs)
    assert want[0].shape[0] > 25
    same(ours(model, inputs), want)


def test_nms_refuses_malformed_boxes() -> None:
    boxes = np.zeros((1, 5, 3), np.float32)
    scores = np.zeros((1, 1, 5), np.float32)
    with pytest.raises(MiniInferError, match="last dimension must be 4"):
        mi.InferenceSession(one_node("NonMaxSuppression", [boxes, scores], opset=11))


# -- windows and MelWeightMatrix ---------------------------------------------------------------


@pytest.mark.parametrize("op", ["HannWindow", "HammingWindow", "BlackmanWindow"])
@pytest.mark.parametrize("periodic", [0, 1])
@pytest.mark.parametrize("dtype", [TensorProto.FLOAT, TensorProto.DOUBLE])
def test_windows_match_onnxruntime(op: str, periodic: int, dtype: int) -> None:
    for size in (1, 2, 10, 33):
        for const in ((), (0,)):  # a run-time size (data-dependent) and a constant one
            x = np.array(size, np.int64)
            model = one_node(op, [x], {"periodic": periodic, "output_datatype": dtype},
                             opset=17, consts=const)
            got = ours(model, [x])
            if size == 1 and not periodic:
                # 0 / 0 in the formula: onnxruntime and the reference give NaN; one sample
                # of a symmetric window is 1, as NumPy, SciPy and PyTorch have it
                assert got[0].tolist() == [1.0]
                continue
            same(got, onnxruntime(model, [x]), rtol=1e-6, atol=1e-7)


def test_window_in_another_element_type_and_from_an_engine_file(tmp_path: Path) -> None:
    x = np.array(16, np.int32)
    model = one_node("HannWindow", [x], {"output_datatype": TensorProto.FLOAT16}, opset=17,
                     consts=(0,))
    got = ours(model, [x], tmp_path)
    assert got[0].dtype == np.float16 and got[0].shape == (16,)
    same(got, onnxruntime(model, [x]), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("params", [(8, 16, 8192, 0.0, 4096.0), (40, 512, 16000, 20.0, 8000.0),
                                    (80, 400, 16000, 0.0, 8000.0), (10, 64, 22050, 300.0,
                                                                    5000.0)])
def test_mel_weight_matrix_matches_onnxruntime(params: tuple[Any, ...]) -> None:
    mels, dft, rate, lo, hi = params
    inputs = [np.array(mels, np.int64), np.array(dft, np.int64), np.array(rate, np.int64),
              np.array(lo, np.float32), np.array(hi, np.float32)]
    model = one_node("MelWeightMatrix", inputs, opset=17)
    got = ours(model, inputs)
    assert got[0].shape == (dft // 2 + 1, mels)
    same(got, onnxruntime(model, inputs))


# -- random operators ---------------------------------------------------------------------------


RANDOM_CASES: list[Any] = [
    ("RandomUniform", {"shape": [3, 4], "low": -2.0, "high": 5.0}, [], (3, 4), np.float32),
    ("RandomNormal", {"shape": [2, 5], "mean": 3.0, "scale": 0.5,
                      "dtype": TensorProto.DOUBLE}, [], (2, 5), np.float64),
    ("RandomUniformLike", {"dtype": TensorProto.DOUBLE}, [np.zeros((4, 2), np.float32)],
     (4, 2), np.float64),
    ("RandomNormalLike", {}, [np.zeros((6,), np.float32)], (6,), np.float32),
    ("Bernoulli", {}, [np.full((3, 7), 0.4, np.float64)], (3, 7), np.float64),
    ("Bernoulli", {"dtype": TensorProto.BOOL}, [np.full((9,), 0.5, np.float32)], (9,),
     np.bool_),
]


#: each case with inputs also with its inputs as initializers: constants, which the builder
#: would fold a node on were the random operators not INondeterministic
RANDOM_RUNS = [(*c, False) for c in RANDOM_CASES] + [(*c, True) for c in RANDOM_CASES if c[2]]


@pytest.mark.parametrize("op, attrs, inputs, shape, dtype, const", RANDOM_RUNS)
def test_random_ops_shapes_types_and_seeds(op: str, attrs: dict[str, Any], inputs: list[Any],
                                           shape: tuple[int, ...], dtype: Any, const: bool,
                                           tmp_path: Path) -> None:
    consts = range(len(inputs)) if const else ()
    free = one_node(op, inputs, attrs, opset=22, consts=consts)
    path = tmp_path / "free.engine"
    mi.InferenceSession(free).save_engine(path)
    for sess in (mi.InferenceSession(free), mi.InferenceSession(str(path))):
        a, b = (sess.run(None, feeds(free, inputs))[0] for _ in range(2))
        assert a.shape == shape and a.dtype == dtype
        if dtype is not np.bool_ and a.size > 4:
            assert not np.array_equal(a, b), "an unseeded generator repeats itself"
    want = reference(free, inputs)[0]
    assert want.shape == a.shape and want.dtype == a.dtype
    seeded = one_node(op, inputs, {**attrs, "seed": 5.0}, opset=22, consts=consts)
    first = ours(seeded, inputs)[0]
    # the same values on every run, from an engine file too, and the reference's stream
    same(ours(seeded, inputs, tmp_path), [first])
    same([first], reference(seeded, inputs))


def test_random_distributions() -> None:
    n = 200_000
    uni = ours(one_node("RandomUniform", [], {"shape": [n], "low": 2.0, "high": 4.0},
                        opset=22), [])[0]
    assert uni.min() >= 2.0 and uni.max() < 4.0 and abs(uni.mean() - 3.0) < 0.01
    nor = ours(one_node("RandomNormal", [], {"shape": [n], "mean": -1.0, "scale": 2.0},
                        opset=22), [])[0]
    assert abs(nor.mean() + 1.0) < 0.03 and abs(nor.std() - 2.0) < 0.03
    p = np.repeat(np.array([0.0, 0.3, 1.0], np.float32), n // 3)
    ber = ours(one_node("Bernoulli", [p], opset=22), [p])[0]
    assert set(np.unique(ber).tolist()) == {0.0, 1.0}
    thirds = ber.reshape(3, -1).mean(axis=1)
    assert thirds[0] == 0.0 and thirds[2] == 1.0 and abs(thirds[1] - 0.3) < 0.01


def test_multinomial_draws_the_softmax_distribution() -> None:
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    logits = np.log(np.maximum(probs, 1e-30)).astype(np.float32)
    model = one_node("Multinomial", [logits], {"sample_size": 60_000,
                                               "dtype": TensorProto.INT64}, opset=15)
    got = ours(model, [logits])[0]
    want = onnxruntime(model, [logits])[0]
    assert got.shape == want.shape == (2, 60_000) and got.dtype == want.dtype == np.int64
    for row in range(2):
        freq = np.bincount(got[row], minlength=3) / got.shape[1]
        np.testing.assert_allclose(freq, probs[row], atol=0.01)


def test_multinomial_of_constant_logits_draws_afresh(tmp_path: Path) -> None:
    """Logits from an initializer: every input a constant, still a new draw on every run."""
    logits = np.log(np.full((2, 4), 0.25, np.float32))
    model = one_node("Multinomial", [logits], {"sample_size": 200}, opset=15, consts=(0,))
    path = tmp_path / "m.engine"
    mi.InferenceSession(model).save_engine(path)
    sess = mi.InferenceSession(str(path))
    a, b = (sess.run(None, {})[0] for _ in range(2))
    assert a.shape == (2, 200) and a.dtype == np.int32 and set(np.unique(a)) <= {0, 1, 2, 3}
    assert not np.array_equal(a, b)


# -- Det, DeformConv, TensorScatter (onnxruntime) ------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 2), (4, 4), (3, 5, 5), (2, 3, 1, 1), (0, 3, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_det_matches_onnxruntime(shape: tuple[int, ...], dtype: Any) -> None:
    x = RNG.standard_normal(shape).astype(dtype)
    model = one_node("Det", [x], opset=22)
    oracle = onnxruntime if dtype == np.float32 else reference  # onnxruntime: float only
    same(ours(model, [x]), oracle(model, [x]), rtol=1e-4, atol=1e-5)


DEFORM_CASES = [
    # X, W, attributes, mask, bias
    ((1, 2, 6, 7), (3, 2, 3, 3), {}, False, False),
    ((2, 4, 8, 8), (4, 2, 3, 3), {"group": 2, "offset_group": 2, "pads": [1, 1, 1, 1]}, True,
     True),
    ((1, 3, 9, 10), (2, 3, 2, 3), {"strides": [2, 1], "dilations": [1, 2],
                                   "pads": [0, 1, 1, 0]}, True, False),
    ((1, 4, 5, 5), (4, 1, 3, 3), {"group": 4, "offset_group": 4, "pads": [2, 2, 2, 2],
                                  "strides": [2, 2]}, False, True),
]


@pytest.mark.parametrize("xs, ws, attrs, with_mask, with_bias", DEFORM_CASES)
def test_deform_conv_matches_onnxruntime(xs: tuple[int, ...], ws: tuple[int, ...],
                                         attrs: dict[str, Any], with_mask: bool,
                                         with_bias: bool) -> None:
    x = RNG.standard_normal(xs).astype(np.float32)
    w = RNG.standard_normal(ws).astype(np.float32)
    kh, kw = ws[2:]
    s = attrs.get("strides", [1, 1])
    d = attrs.get("dilations", [1, 1])
    p = attrs.get("pads", [0, 0, 0, 0])
    oh = (xs[2] + p[0] + p[2] - (kh - 1) * d[0] - 1) // s[0] + 1
    ow = (xs[3] + p[1] + p[3] - (kw - 1) * d[1] - 1) // s[1] + 1
    og = attrs.get("offset_group", 1)
    offset = RNG.uniform(-2.5, 2.5, (xs[0], og * kh * kw * 2, oh, ow)).astype(np.float32)
    bias = RNG.standard_normal(ws[0]).astype(np.float32) if with_bias else None
    mask = RNG.uniform(0, 1, (xs[0], og * kh * kw, oh, ow)).astype(np.float32) \
        if with_mask else None
    inputs = [x, w, offset, bias, mask]
    model = one_node("DeformConv", inputs, attrs, opset=22)
    same(ours(model, inputs), onnxruntime(model, inputs), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("past, update, attrs, starts", [
    ((2, 3, 8, 4), (2, 3, 2, 4), {}, [0, 5]),
    ((2, 3, 8, 4), (2, 3, 3, 4), {"mode": "circular"}, [6, 7]),
    ((3, 6, 5), (3, 2, 5), {"axis": 1}, [1, 4, 0]),
    ((2, 5, 4, 3), (2, 5, 4, 3), {"axis": -3}, None),
    ((1, 2, 4, 6), (1, 2, 4, 1), {"axis": 3, "mode": "circular"}, [9]),
])
def test_tensor_scatter_matches_onnxruntime(past: tuple[int, ...], update: tuple[int, ...],
                                            attrs: dict[str, Any], starts: Any) -> None:
    inputs = [RNG.standard_normal(past).astype(np.float32),
              RNG.standard_normal(update).astype(np.float32),
              None if starts is None else np.array(starts, np.int64)]
    model = one_node("TensorScatter", inputs, attrs, opset=24)
    same(ours(model, inputs), onnxruntime(model, inputs))


def test_tensor_scatter_linear_overflow_is_an_error() -> None:
    inputs = [np.zeros((1, 4, 2), np.float32), np.ones((1, 2, 2), np.float32),
              np.array([3], np.int64)]
    with pytest.raises(MiniInferError, match="outside the cache"):
        ours(one_node("TensorScatter", inputs, {"axis": 1}, opset=24), inputs)


# -- SwiGLU, LinearAttention, CausalConvWithState (the reference) ---------------------------------


@pytest.mark.parametrize("dtype, alpha", [(np.float32, 1.0), (np.float32, 1.702),
                                          (np.float16, 0.5), (np.float64, 2.0)])
def test_swiglu_matches_the_reference(dtype: Any, alpha: float) -> None:
    a = RNG.uniform(-6, 6, (3, 4, 10)).astype(dtype)
    b = RNG.standard_normal((3, 4, 10)).astype(dtype)
    model = one_node("SwiGLU", [a, b], {"alpha": alpha}, opset=28)
    tol = 2e-3 if dtype == np.float16 else 1e-6
    same(ours(model, [a, b]), reference(model, [a, b]), rtol=tol, atol=tol)


LINEAR_ATTENTION = [
    # rule, q heads, kv heads, time, dk, dv, past, decay per head, beta width
    ("linear", 2, 2, 5, 4, 3, False, False, 0),
    ("gated", 4, 2, 6, 3, 5, True, False, 0),
    ("gated", 2, 2, 4, 4, 4, False, True, 0),
    ("delta", 3, 3, 7, 4, 2, True, False, 3),
    ("gated_delta", 4, 1, 5, 3, 3, True, True, 1),
    ("gated_delta", 6, 2, 1, 4, 5, True, False, 2),
]


@pytest.mark.parametrize("rule, hq, hkv, t, dk, dv, past, per_head, beta", LINEAR_ATTENTION)
def test_linear_attention_matches_the_reference(rule: str, hq: int, hkv: int, t: int, dk: int,
                                                dv: int, past: bool, per_head: bool,
                                                beta: int) -> None:
    b = 2
    q = RNG.standard_normal((b, t, hq * dk)).astype(np.float32)
    k = RNG.standard_normal((b, t, hkv * dk)).astype(np.float32)
    k /= np.linalg.norm(k.reshape(b, t, hkv, dk), axis=-1).repeat(dk, axis=-1)
    v = RNG.standard_normal((b, t, hkv * dv)).astype(np.float32)
    state = RNG.standard_normal((b, hkv, dk, dv)).astype(np.float32) if past else None
    decay = None
    if rule in ("gated", "gated_delta"):
        decay = -RNG.uniform(0, 0.5, (b, t, hkv if per_head else hkv * dk)).astype(np.float32)
    rate = RNG.uniform(0, 1, (b, t, beta)).astype(np.float32) if beta else None
    inputs = [q, k, v, state, decay, rate]
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule}
    if rule == "delta":
        attrs["scale"] = 0.3
    model = one_node("LinearAttention", inputs, attrs, opset=27, n_out=2)
    same(ours(model, inputs), reference(model, inputs), rtol=1e-4, atol=1e-5)


def test_linear_attention_refuses_a_missing_gate() -> None:
    q = np.zeros((1, 2, 4), np.float32)
    model = one_node("LinearAttention", [q, q, q], {"q_num_heads": 2, "kv_num_heads": 2},
                     opset=27, n_out=2)  # gated_delta (the default) needs decay and beta
    with pytest.raises(MiniInferError, match="requires the decay input"):
        mi.InferenceSession(model)


@pytest.mark.parametrize("k, length, bias, past, activation", [
    (4, 10, True, True, "silu"), (3, 1, False, True, "none"), (1, 6, True, False, "swish"),
    (5, 2, False, False, "none"), (2, 7, True, True, "none"),
])
def test_causal_conv_with_state_matches_the_reference(k: int, length: int, bias: bool,
                                                      past: bool, activation: str) -> None:
    b, c = 2, 3
    inputs = [RNG.standard_normal((b, c, length)).astype(np.float32),
              RNG.standard_normal((c, 1, k)).astype(np.float32),
              RNG.standard_normal(c).astype(np.float32) if bias else None,
              RNG.standard_normal((b, c, k - 1)).astype(np.float32) if past else None]
    model = one_node("CausalConvWithState", inputs, {"activation": activation}, opset=27,
                     n_out=2)
    same(ours(model, inputs), reference(model, inputs), rtol=1e-5, atol=1e-6)


# -- FlexAttention (ai.onnx.preview) -------------------------------------------------------------


def _modifier(name: str, op: str, other: str | None = None,
              value: Any = None) -> onnx.GraphProto:
    """A modifier graph ``s -> op(s, other)``: ``other`` read from the enclosing graph, or
    an initializer of the modifier itself when ``value`` is given."""
    x = helper.make_tensor_value_info("s", TensorProto.FLOAT, None)
    y = helper.make_tensor_value_info("t", TensorProto.FLOAT, None)
    inputs = ["s"] if other is None else ["s", other]
    inits = [] if value is None else [numpy_helper.from_array(value, str(other))]
    return helper.make_graph([helper.make_node(op, inputs, ["t"])], name, [x], [y], inits)


@pytest.mark.parametrize("hq, hkv, scale, mods", [
    (2, 2, None, ()), (4, 2, 0.3, ()), (3, 1, None, ("score",)), (2, 2, 0.5, ("prob",)),
    (4, 4, None, ("score", "prob")),
])
def test_flex_attention_matches_the_reference(hq: int, hkv: int, scale: float | None,
                                              mods: tuple[str, ...], tmp_path: Path) -> None:
    b, lq, lk, e, ev = 2, 5, 7, 4, 3
    q = RNG.standard_normal((b, hq, lq, e)).astype(np.float32)
    k = RNG.standard_normal((b, hkv, lk, e)).astype(np.float32)
    v = RNG.standard_normal((b, hkv, lk, ev)).astype(np.float32)
    bias = RNG.standard_normal((lq, lk)).astype(np.float32)
    attrs: dict[str, Any] = {} if scale is None else {"scale": scale}
    inner = dict(attrs)
    if "score" in mods:
        # ours reads "bias" from the enclosing graph; the reference evaluator resolves no
        # outer-scope names in these graphs, so it gets the same bias inside the modifier
        attrs["score_mod"] = _modifier("score", "Add", "bias")
        inner["score_mod"] = _modifier("score", "Add", "bias", bias)
    if "prob" in mods:
        attrs["prob_mod"] = inner["prob_mod"] = _modifier("prob", "Sqrt")
    model = one_node("FlexAttention", [q, k, v], attrs, opset=1, domain=PREVIEW)
    model.graph.initializer.append(numpy_helper.from_array(bias, "bias"))
    want = reference(one_node("FlexAttention", [q, k, v], inner, opset=1, domain=PREVIEW),
                     [q, k, v])
    same(ours(model, [q, k, v]), want, rtol=1e-5, atol=1e-6)
    same(ours(model, [q, k, v], tmp_path), want, rtol=1e-5, atol=1e-6)


# -- optimizers (ai.onnx.preview.training) ---------------------------------------------------------


@pytest.mark.parametrize("op, attrs, states", [
    ("Adagrad", {"decay_factor": 0.1, "epsilon": 1e-5, "norm_coefficient": 0.01}, 1),
    ("Adam", {"alpha": 0.9, "beta": 0.99, "epsilon": 1e-6, "norm_coefficient": 0.01,
              "norm_coefficient_post": 0.02}, 2),
    ("Momentum", {"alpha": 0.9, "beta": 0.5, "mode": "standard", "norm_coefficient": 0.01}, 1),
    ("Momentum", {"alpha": 0.8, "beta": 1.0, "mode": "nesterov", "norm_coefficient": 0.0}, 1),
])
@pytest.mark.parametrize("step", [0, 3])
@pytest.mark.parametrize("n", [1, 2])
def test_optimizers_match_the_reference(op: str, attrs: dict[str, Any], states: int,
                                        step: int, n: int) -> None:
    shapes = [(3,), (2, 4)][:n]
    tensors = [RNG.standard_normal(s).astype(np.float32) for _ in range(2) for s in shapes]
    tensors += [RNG.uniform(0.1, 1, s).astype(np.float32) for _ in range(states)
                for s in shapes]
    inputs = [np.array(0.1, np.float32), np.array(step, np.int64), *tensors]
    model = one_node(op, inputs, attrs, opset=1, domain=TRAINING, n_out=n * (1 + states))
    got = ours(model, inputs)
    assert all(g.dtype == np.float32 for g in got)  # T3: the tensors' own type
    # the reference returns float64 for one tensor optimized by Adam after step 0
    want = [np.asarray(w, np.float32) for w in reference(model, inputs)]
    same(got, want, rtol=1e-5, atol=1e-6)


# -- ImageDecoder ---------------------------------------------------------------------------------


def _encoded(fmt: str, mode: str = "RGB") -> Any:
    image_module = pytest.importorskip(
        "PIL.Image", reason="Pillow is not installed (pip install mini-infer-cpu-plugins[image])")
    pixels = RNG.integers(0, 256, (12, 17, 3), dtype=np.uint8)
    img = image_module.fromarray(pixels).convert(mode)
    buf = io.BytesIO()
    img.save(buf, format=fmt)
    return np.frombuffer(buf.getvalue(), np.uint8)


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "BMP", "TIFF", "WEBP"])
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_image_decoder_matches_the_reference(fmt: str, pixel_format: str) -> None:
    data = _encoded(fmt)
    model = one_node("ImageDecoder", [data], {"pixel_format": pixel_format}, opset=20)
    got = ours(model, [data])
    assert got[0].shape == (12, 17, 1 if pixel_format == "Grayscale" else 3)
    same(got, reference(model, [data]))


def test_image_decoder_converts_grayscale_images_to_rgb() -> None:
    data = _encoded("PNG", mode="L")
    got = ours(one_node("ImageDecoder", [data], opset=20), [data])[0]
    assert got.shape == (12, 17, 3)
    assert np.array_equal(got[..., 0], got[..., 1]) and np.array_equal(got[..., 1], got[..., 2])


def test_image_decoder_gives_an_empty_image_for_a_broken_stream() -> None:
    pytest.importorskip("PIL.Image", reason="Pillow is not installed")
    data = np.frombuffer(b"not an image at all", np.uint8)
    got = ours(one_node("ImageDecoder", [data], {"pixel_format": "BGR"}, opset=20), [data])
    assert got[0].shape == (0, 0, 3) and got[0].dtype == np.uint8


def test_image_decoder_without_pillow_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "PIL", None)
    monkeypatch.setitem(sys.modules, "PIL.Image", None)
    data = np.zeros(8, np.uint8)
    with pytest.raises(MiniInferError, match=r"mini-infer-cpu-plugins\[image\]"):
        ours(one_node("ImageDecoder", [data], opset=20), [data])
