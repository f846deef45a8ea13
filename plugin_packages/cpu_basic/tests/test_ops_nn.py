"""Neural-network layer kernels against onnxruntime / onnx.reference (task C).

ConvTranspose, pools (LpPool, MaxPool Indices, MaxUnpool, RoiAlign, MaxRoiPool),
normalisations, Resize/Upsample, RNN/GRU/LSTM, Attention, RotaryEmbedding, GridSample,
AffineGrid, losses, DFT/STFT. Each case is a single-node model; the plugin runs directly
(``compute`` with ``out``, or without it when the instance is data-dependent), plus a few
end-to-end runs through the engine for the data-dependent paths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from cpu_support import execute, in_dims, make_model, make_plugin
from cpu_support import run_oracle as oracle
from onnx import helper

import mini_infer_core as mi
from mini_infer_core.plugin import DimsExprs, ExprBuilder

RNG = np.random.default_rng(7)


def rand(*shape: int, dtype: Any = np.float32, lo: float = -1.0, hi: float = 1.0) -> Any:
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


# -- running a plugin directly ---------------------------------------------------------------










def check(op: str, inputs: Sequence[Any], attrs: dict[str, Any] | None = None,
          opset: int = 22, n_out: int = 1, oracles: Sequence[str] = ("ref", "ort"),
          rtol: float = 1e-4, atol: float = 1e-5, out_names: Sequence[str] | None = None,
          hidden: dict[str, Any] | None = None) -> list[Any]:
    attrs = attrs or {}
    got = execute(make_plugin(op, attrs, opset, **(hidden or {})), inputs)
    names = list(out_names) if out_names else [f"y{i}" for i in range(n_out)]
    keep = [i for i, n in enumerate(names) if n]
    model = make_model(op, inputs, attrs, opset, names)
    for kind in oracles:
        want = oracle(kind, model, inputs)
        for i, w in zip(keep, want, strict=True):
            w = np.asarray(w)
            assert got[i].shape == w.shape, (kind, i, got[i].shape, w.shape)
            assert got[i].dtype == w.dtype, (kind, i, got[i].dtype, w.dtype)
            np.testing.assert_allclose(got[i].astype(np.float64), w.astype(np.float64),
                                       rtol=rtol, atol=atol, err_msg=f"{kind} output {i}")
    return got


# -- convolution -----------------------------------------------------------------------------
@pytest.mark.parametrize(("xs", "ws", "attrs"), [
    ((1, 2, 5), (2, 3, 3), {"strides": [2], "pads": [1, 0]}),
    ((2, 3, 4, 5), (3, 2, 3, 3), {}),
    ((1, 2, 4, 4), (2, 3, 3, 2), {"strides": [2, 3], "pads": [1, 0, 0, 1],
                                  "output_padding": [1, 1]}),
    ((1, 2, 4, 4), (2, 2, 2, 2), {"dilations": [2, 2], "strides": [2, 1]}),
    ((1, 4, 3, 3), (4, 2, 3, 3), {"group": 2, "strides": [2, 2]}),
    ((1, 4, 3, 3), (4, 1, 3, 3), {"group": 4}),
    ((1, 2, 3, 3), (2, 3, 3, 3), {"strides": [2, 2], "output_shape": [8, 7]}),
    ((1, 2, 3, 3), (2, 3, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 3, 4), (2, 3, 2, 3), {"strides": [2, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 3, 3, 2), (2, 2, 2, 3, 2), {"strides": [1, 2, 2], "pads": [0, 1, 0, 1, 0, 1]}),
])
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose(xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any],
                        bias: bool) -> None:
    group = attrs.get("group", 1)
    inputs = [rand(*xs), rand(*ws)] + ([rand(ws[1] * group)] if bias else [])
    # onnx.reference splits SAME_LOWER pads the other way and fails on groups of several
    # output channels; onnxruntime follows the spec
    ref_ok = attrs.get("auto_pad") != "SAME_LOWER" and group == 1
    oracles = ("ref", "ort") if ref_ok else ("ort",)
    check("ConvTranspose", inputs, attrs, oracles=oracles)


def test_conv_transpose_float16_and_dynamic_shape() -> None:
    x, w = rand(1, 2, 4, 4, dtype=np.float16), rand(2, 2, 3, 3, dtype=np.float16)
    check("ConvTranspose", [x, w], {"strides": [2, 2]}, rtol=1e-2, atol=1e-2)
    plugin = make_plugin("ConvTranspose", {"strides": [2, 2], "pads": [1, 1, 1, 1]}, 22)
    from mini_infer_core.plugin import DimExpr
    n = DimExpr.sym("n")
    dims = plugin.get_output_dimensions(0, [DimsExprs([n, 2, DimExpr.sym("h"), 4]),
                                            DimsExprs([2, 3, 3, 3])], ExprBuilder())
    assert str(dims[0]) == "n" and dims[1].get_constant_value() == 3
    assert dims[3].get_constant_value() == 7


@pytest.mark.parametrize(("xs", "ws", "attrs"), [
    ((1, 2, 9), (3, 2, 3), {"auto_pad": "SAME_LOWER", "strides": [2], "dilations": [2]}),
    ((1, 2, 8), (3, 2, 4), {"auto_pad": "SAME_UPPER", "dilations": [2]}),
    ((1, 2, 5, 6, 4), (3, 2, 3, 2, 2), {"auto_pad": "SAME_UPPER", "strides": [1, 2, 1]}),
    ((1, 4, 5, 5, 5), (4, 1, 3, 3, 3), {"group": 4, "pads": [1] * 6, "dilations": [1, 2, 1]}),
])
def test_conv_1d_3d(xs: tuple[int, ...], ws: tuple[int, ...], attrs: dict[str, Any]) -> None:
    inputs = [rand(*xs), rand(*ws), rand(ws[0])]
    auto = attrs.get("auto_pad", "NOTSET")
    if auto == "NOTSET" or "dilations" not in attrs:
        check("Conv", inputs, attrs, oracles=("ort",))
        return
    # onnxruntime refuses SAME_* with dilations: compare with the explicit pads it implies
    nd = len(xs) - 2
    s, d = attrs.get("strides", [1] * nd), attrs["dilations"]
    begin, end = [], []
    for i in range(nd):
        out = -(-xs[2 + i] // s[i])
        total = max(0, (out - 1) * s[i] + (ws[2 + i] - 1) * d[i] + 1 - xs[2 + i])
        small = total // 2
        begin.append(small if auto == "SAME_UPPER" else total - small)
        end.append(total - begin[-1])
    explicit = {k: v for k, v in attrs.items() if k != "auto_pad"} | {"pads": begin + end}
    want = check("Conv", inputs, explicit, oracles=("ort",))[0]
    got = execute(make_plugin("Conv", attrs, 22), inputs)[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- pooling ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("xs", "attrs"), [
    ((1, 2, 6, 6), {"kernel_shape": [3, 3], "p": 2}),
    ((1, 2, 7, 6), {"kernel_shape": [3, 2], "p": 1, "pads": [1, 0, 1, 1], "strides": [2, 1]}),
    ((1, 2, 7, 7), {"kernel_shape": [2, 2], "p": 3, "strides": [2, 2], "ceil_mode": 1}),
    ((1, 2, 9), {"kernel_shape": [3], "p": 2, "auto_pad": "SAME_UPPER", "strides": [2]}),
    ((1, 2, 4, 5, 4), {"kernel_shape": [2, 2, 2], "p": 2}),
])
def test_lppool(xs: tuple[int, ...], attrs: dict[str, Any]) -> None:
    check("LpPool", [rand(*xs)], attrs, opset=18, oracles=("ort",))


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lppool(p: int) -> None:
    check("GlobalLpPool", [rand(2, 3, 4, 5)], {"p": p}, opset=2, oracles=("ort",))


@pytest.mark.parametrize(("xs", "attrs"), [
    ((1, 2, 6, 6), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 3, 5, 7), {"kernel_shape": [2, 3], "storage_order": 1, "strides": [1, 2]}),
    ((1, 2, 7, 7), {"kernel_shape": [3, 3], "dilations": [2, 2], "ceil_mode": 1}),
    ((1, 2, 8), {"kernel_shape": [3], "strides": [2], "auto_pad": "SAME_LOWER"}),
    ((1, 2, 4, 5, 6), {"kernel_shape": [2, 2, 3], "strides": [2, 2, 2]}),
])
def test_maxpool_indices(xs: tuple[int, ...], attrs: dict[str, Any]) -> None:
    x = rand(*xs)
    x[..., 0] = x[..., 1]  # ties: the first maximum in scan order wins
    # the second output exists when the importer tells the node has two outputs
    assert make_plugin("MaxPool", attrs, 12).num_outputs == 1
    assert make_plugin("MaxPool", attrs, 12, __num_outputs__=2).clone().num_outputs == 2
    check("MaxPool", [x], attrs, opset=12, n_out=2, oracles=("ort",),
          hidden={"__num_outputs__": 2})


def test_maxunpool() -> None:
    x = rand(1, 2, 6, 6)
    pool = make_plugin("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, 12,
                       __num_outputs__=2)
    y, idx = execute(pool, [x])
    for extra in ([], [np.array([1, 2, 7, 7], np.int64)]):
        check("MaxUnpool", [y, idx, *extra], {"kernel_shape": [2, 2], "strides": [2, 2]},
              opset=11, oracles=("ref",))


@pytest.mark.parametrize("attrs", [
    {"output_height": 3, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 0.5},
    {"output_height": 2, "output_width": 4, "mode": "max", "sampling_ratio": 2},
    {"output_height": 3, "output_width": 3, "coordinate_transformation_mode":
     "output_half_pixel"},
])
def test_roi_align(attrs: dict[str, Any]) -> None:
    x = rand(2, 3, 10, 8)
    rois = np.array([[0, 0, 7, 9], [1.5, 2.2, 6.1, 5.3], [-1, -1, 3, 4]], np.float32)
    bi = np.array([0, 1, 1], np.int64)
    check("RoiAlign", [x, rois, bi], attrs, opset=16, oracles=("ort",))


def test_roi_align_opset10_and_max_roi_pool() -> None:
    x = rand(2, 3, 10, 8)
    rois = np.array([[0, 0, 7, 9], [1.5, 2.2, 6.1, 5.3]], np.float32)
    check("RoiAlign", [x, rois, np.array([0, 1], np.int64)],
          {"output_height": 2, "output_width": 2}, opset=10, oracles=("ort",))
    rois5 = np.array([[0, 0, 0, 7, 9], [1, 1.5, 2.2, 6.1, 5.3], [1, 4, 4, 4, 4]], np.float32)
    check("MaxRoiPool", [x, rois5], {"pooled_shape": [3, 2], "spatial_scale": 0.8},
          opset=1, oracles=("ort",))


# -- normalisation ---------------------------------------------------------------------------
@pytest.mark.parametrize(("xs", "axis"), [((2, 3, 4), -1), ((2, 3, 4, 5), 1), ((4, 6), 0)])
def test_layer_normalization(xs: tuple[int, ...], axis: int) -> None:
    x = rand(*xs)
    tail = xs[axis:] if axis >= 0 else xs[axis:]
    for b in (rand(*tail), None):
        check("LayerNormalization", [x, rand(*tail), b], {"axis": axis, "epsilon": 1e-3},
              opset=17, n_out=3)


def test_layer_normalization_of_no_rows() -> None:
    check("LayerNormalization", [rand(0, 8), rand(8)], {}, opset=17, n_out=3, oracles=("ort",))


def test_layer_normalization_float16() -> None:
    x, s = rand(2, 5, 8, dtype=np.float16), rand(8, dtype=np.float16)
    check("LayerNormalization", [x, s], {}, opset=17, n_out=3, oracles=("ort",),
          rtol=2e-3, atol=2e-3)


def test_group_and_instance_normalization() -> None:
    x = rand(2, 6, 3, 4)
    check("GroupNormalization", [x, rand(6), rand(6)], {"num_groups": 3}, opset=21,
          oracles=("ref",))
    # opset 18: one scale/bias per group
    got = execute(make_plugin("GroupNormalization", {"num_groups": 2}, 18),
                  [x, np.array([2.0, 3.0], np.float32), np.array([0.5, -1.0], np.float32)])[0]
    g = x.reshape(2, 2, -1).astype(np.float64)
    norm = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    want = norm * np.array([2.0, 3.0])[None, :, None] + np.array([0.5, -1.0])[None, :, None]
    np.testing.assert_allclose(got, want.reshape(x.shape), rtol=1e-4, atol=1e-5)
    check("InstanceNormalization", [x, rand(6), rand(6)], {"epsilon": 1e-3})
    check("InstanceNormalization", [rand(2, 3, 7), rand(3), rand(3)], {}, opset=6)
    # wav2vec2's GroupNorm(512, 512) as exported (one channel per group), centred in place in
    # the output; float16 through a float32 temporary
    check("InstanceNormalization", [rand(1, 8, 3199) * 3 + 1, rand(8), rand(8)], {})
    check("InstanceNormalization", [(rand(2, 4, 33) * 2).astype(np.float16),
                                    rand(4).astype(np.float16), rand(4).astype(np.float16)],
          {}, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize(("xs", "axis"), [((2, 3, 4), -1), ((2, 3, 4, 5), 2)])
def test_rms_normalization(xs: tuple[int, ...], axis: int) -> None:
    check("RMSNormalization", [rand(*xs), rand(*xs[axis:])], {"axis": axis}, opset=23)


def test_batchnorm_training_mode() -> None:
    x = rand(3, 4, 5, 2)
    inputs = [x, rand(4), rand(4), rand(4), rand(4, lo=0.5, hi=2.0)]
    check("BatchNormalization", inputs, {"training_mode": 1, "momentum": 0.7}, opset=15,
          n_out=3, oracles=("ref",))


# -- resize ----------------------------------------------------------------------------------
RESIZE = [
    ({"mode": "nearest"}, [1.0, 1.0, 2.0, 3.0], None),
    ({"mode": "nearest", "nearest_mode": "ceil", "coordinate_transformation_mode":
      "align_corners"}, None, [1, 2, 7, 4]),
    ({"mode": "linear"}, [1.0, 1.0, 0.6, 1.7], None),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, None,
     [1, 2, 3, 1]),
    ({"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, [1.0, 1.0, 1.5, 0.8],
     None),
    ({"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, None, [1, 2, 9, 5]),
    ({"mode": "linear", "antialias": 1}, [1.0, 1.0, 0.5, 0.4], None),
    ({"mode": "cubic", "antialias": 1}, None, [1, 2, 3, 2]),
    ({"mode": "nearest", "axes": [3, 2], "keep_aspect_ratio_policy": "not_larger"}, None,
     [9, 3]),
]


@pytest.mark.parametrize(("attrs", "scales", "sizes"), RESIZE)
def test_resize(attrs: dict[str, Any], scales: list[float] | None,
                sizes: list[int] | None) -> None:
    x = rand(1, 2, 5, 6)
    inputs = [x, None, None if scales is None else np.array(scales, np.float32),
              None if sizes is None else np.array(sizes, np.int64)]
    oracles = ("ref",) if attrs.get("antialias") or "axes" in attrs else ("ref", "ort")
    check("Resize", inputs, attrs, opset=19, oracles=oracles)


def test_resize_tf_crop_and_old_opsets() -> None:
    x = rand(1, 1, 6, 5)
    roi = np.array([0, 0, 0.2, 0.3, 1, 1, 1.2, 0.8], np.float32)
    check("Resize", [x, roi, np.array([], np.float32), np.array([1, 1, 4, 6], np.int64)],
          {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
           "extrapolation_value": 3.0}, opset=13, oracles=("ref",))
    ints = RNG.integers(0, 255, size=(1, 1, 4, 4)).astype(np.uint8)
    check("Resize", [ints, None, np.array([1, 1, 1.5, 2], np.float32)], {"mode": "linear"},
          opset=19, oracles=("ort",), atol=1)
    check("Resize", [x, np.array([1, 1, 2, 1.5], np.float32)], {"mode": "nearest"},
          opset=10, oracles=("ort",))
    check("Resize", [x, np.array([1, 1, 0.5, 0.6], np.float32)], {"mode": "nearest"},
          opset=10, oracles=("ort",))
    check("Upsample", [x, np.array([1, 1, 2, 3], np.float32)], {"mode": "nearest"}, opset=9,
          oracles=("ort",))
    check("Upsample", [x], {"mode": "linear", "scales": [1.0, 1.0, 2.0, 2.0]}, opset=7,
          oracles=("ort",))


def test_resize_static_sizes_and_runtime_scales_end_to_end() -> None:
    plugin = make_plugin("Resize", {"mode": "nearest"}, 19)
    dims = in_dims([rand(1, 2, 3, 4), None, None, np.array([1, 2, 6, 8], np.int64)])
    assert plugin.get_output_dimensions(0, dims, ExprBuilder()).to_tuple() == (1, 2, 6, 8)
    assert not plugin.data_dependent
    x, scales = rand(1, 2, 3, 4), np.array([1, 1, 2, 0.5], np.float32)
    model = make_model("Resize", [x, None, scales], {"mode": "linear"}, 19, 1)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y0", onnx.TensorProto.FLOAT,
                                                                 None))
    got = mi.InferenceSession(model).run(None, {"x0": x, "x2": scales})[0]
    np.testing.assert_allclose(got, oracle("ort", model, [x, None, scales])[0], rtol=1e-5)


# -- recurrent -------------------------------------------------------------------------------
def _rnn_inputs(op: str, nd: int, t: int = 4, b: int = 3, i: int = 5, h: int = 4,
                full: bool = True, layout: int = 0) -> list[Any]:
    g = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    x = rand(b, t, i) if layout else rand(t, b, i)
    ins = [x, rand(nd, g * h, i), rand(nd, g * h, h)]
    if not full:
        return ins
    st = (b, nd, h) if layout else (nd, b, h)
    ins += [rand(nd, 2 * g * h), np.array([4, 2, 3][:b], np.int32), rand(*st)]
    if op == "LSTM":
        ins += [rand(*st), rand(nd, 3 * h)]
    return ins


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize(("attrs", "full"), [
    ({}, False),
    ({"direction": "reverse"}, True),
    ({"direction": "bidirectional", "clip": 0.7}, True),
])
def test_recurrent(op: str, attrs: dict[str, Any], full: bool) -> None:
    nd = 2 if attrs.get("direction") == "bidirectional" else 1
    ins = _rnn_inputs(op, nd, full=full)
    n_out = 3 if op == "LSTM" else 2
    check(op, ins, {**attrs, "hidden_size": 4}, n_out=n_out, oracles=("ort",), rtol=1e-4,
          atol=1e-5)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
def test_recurrent_batch_first_layout(op: str) -> None:
    """layout=1 (which onnxruntime does not run) equals layout=0 on transposed tensors."""
    ins = _rnn_inputs(op, 2)
    attrs = {"direction": "bidirectional", "hidden_size": 4}
    want = execute(make_plugin(op, attrs, 14), ins)
    swapped = [ins[0].transpose(1, 0, 2), *ins[1:5], ins[5].transpose(1, 0, 2)]
    if op == "LSTM":
        swapped += [ins[6].transpose(1, 0, 2), ins[7]]
    got = execute(make_plugin(op, {**attrs, "layout": 1}, 14), swapped)
    np.testing.assert_allclose(got[0], want[0].transpose(2, 0, 1, 3), rtol=1e-6)
    for g, w in zip(got[1:], want[1:], strict=True):
        np.testing.assert_allclose(g, w.transpose(1, 0, 2), rtol=1e-6)


@pytest.mark.parametrize("attrs", [
    {"direction": "bidirectional"},  # the one-sigmoid gates, both directions
    {"activations": ["Sigmoid", "Tanh", "Tanh"]},  # named as the defaults: the same
    {"activations": ["HardSigmoid", "Tanh", "Relu"]},  # others: gate by gate
])
def test_lstm_gates(attrs: dict[str, Any]) -> None:
    """An LSTM without peepholes, clip or coupled gates computes i, o and f in one sigmoid;
    against onnxruntime, as every other activation choice."""
    nd = 2 if attrs.get("direction") == "bidirectional" else 1
    ins = _rnn_inputs("LSTM", nd, full=False)
    check("LSTM", ins, {**attrs, "hidden_size": 4}, n_out=3, oracles=("ort",), rtol=1e-4,
          atol=1e-5)
    plugin = make_plugin("LSTM", {**attrs, "hidden_size": 4}, 14)
    assert plugin._plain == ("HardSigmoid" not in attrs.get("activations", []))


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("t", "b", "states"), [(1, 1, True), (5, 3, True), (4, 2, False)])
def test_plain_lstm_writes_its_outputs_directly(direction: str, dtype: Any, t: int, b: int,
                                                states: bool, monkeypatch: Any) -> None:
    """The plain LSTM (default activations, no lengths or peepholes: silero-vad's) runs the
    in-place loop, never the general one; equal to onnxruntime with biases and initial
    states, one or several steps, each direction, float32 and float64."""
    from mini_infer_cpu_plugins.ops import rnn

    def general(*_: Any, **__: Any) -> None:
        raise AssertionError("the general LSTM loop ran")

    monkeypatch.setattr(rnn.LSTM, "_run", general)
    nd, h = (2 if direction == "bidirectional" else 1), 6
    ins = [rand(t, b, 5, dtype=dtype), rand(nd, 4 * h, 5, dtype=dtype),
           rand(nd, 4 * h, h, dtype=dtype), rand(nd, 8 * h, dtype=dtype)]
    if states:
        ins += [None, rand(nd, b, h, dtype=dtype), rand(nd, b, h, dtype=dtype)]
    # onnxruntime has no float64 LSTM: onnx's reference implementation there
    check("LSTM", ins, {"direction": direction, "hidden_size": h}, n_out=3,
          oracles=("ort",) if dtype == np.float32 else ("ref",), rtol=1e-4, atol=1e-5)


def test_recurrent_options() -> None:
    ins = _rnn_inputs("GRU", 1)
    check("GRU", ins, {"hidden_size": 4, "linear_before_reset": 1}, n_out=2,
          oracles=("ort",))
    ins = _rnn_inputs("LSTM", 1)
    check("LSTM", ins, {"hidden_size": 4, "input_forget": 1}, n_out=3, oracles=("ort",))
    ins = _rnn_inputs("RNN", 2, full=False)
    check("RNN", ins, {"direction": "bidirectional", "activations": ["Relu", "LeakyRelu"],
                       "activation_alpha": [0.2], "hidden_size": 4}, n_out=2,
          oracles=("ort",))


# -- attention -------------------------------------------------------------------------------
@pytest.mark.parametrize(("shapes", "attrs", "extra"), [
    (((2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 6)), {"is_causal": 1}, "past"),
    (((2, 3, 16), (2, 5, 8), (2, 5, 12)), {"q_num_heads": 4, "kv_num_heads": 2,
                                            "softcap": 3.0, "qk_matmul_output_mode": 2},
     "float_mask"),
    (((1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)), {"qk_matmul_output_mode": 3,
                                                  "scale": 0.3}, "bool_mask"),
    (((1, 2, 4, 8), (1, 2, 6, 8), (1, 2, 6, 8)), {"is_causal": 1,
                                                  "qk_matmul_output_mode": 1}, "bool_mask"),
])
def test_attention(shapes: Any, attrs: dict[str, Any], extra: str) -> None:
    q, k, v = (rand(*s) for s in shapes)
    b = q.shape[0]
    kvh = k.shape[1] if k.ndim == 4 else attrs["kv_num_heads"]
    dk = k.shape[3] if k.ndim == 4 else k.shape[2] // kvh
    dv = v.shape[3] if v.ndim == 4 else v.shape[2] // kvh
    sq, skv = (q.shape[2], k.shape[2]) if q.ndim == 4 else (q.shape[1], k.shape[1])
    mask = past_k = past_v = None
    if extra == "past":
        past_k, past_v = rand(b, kvh, 3, dk), rand(b, kvh, 3, dv)
    elif extra == "float_mask":
        mask = rand(sq, skv)
    else:
        mask = RNG.random((sq, skv - 1)) > 0.3
    check("Attention", [q, k, v, mask, past_k, past_v], attrs, opset=23, n_out=4,
          oracles=("ref",), out_names=["y0", "y1", "y2", "y3"])


def test_attention_window_and_nonpad() -> None:
    q, k, v = rand(2, 2, 3, 4), rand(2, 2, 6, 4), rand(2, 2, 6, 4)
    nonpad = np.array([6, 4], np.int64)
    check("Attention", [q, k, v, None, None, None, nonpad], {"is_causal": 1}, opset=24,
          n_out=4, oracles=("ref",))
    check("Attention", [q, k, v], {"left_window_size": 2, "right_window_size": 1}, opset=25,
          n_out=4, oracles=("ref",))


@pytest.mark.parametrize("attrs", [{}, {"interleaved": 1}, {"rotary_embedding_dim": 4},
                                   {"interleaved": 1, "rotary_embedding_dim": 4}])
def test_rotary_embedding(attrs: dict[str, Any]) -> None:
    d = attrs.get("rotary_embedding_dim", 8)
    cos, sin = rand(10, d // 2), rand(10, d // 2)
    pos = np.array([[0, 3, 5], [9, 1, 2]], np.int64)
    check("RotaryEmbedding", [rand(2, 2, 3, 8), cos, sin, pos], attrs, opset=23,
          oracles=("ref",))
    check("RotaryEmbedding", [rand(2, 3, 16), rand(2, 3, d // 2), rand(2, 3, d // 2)],
          {**attrs, "num_heads": 2}, opset=23, oracles=("ref",))


# -- sampling --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [0, 1])
def test_grid_sample(mode: str, padding: str, align: int) -> None:
    x, grid = rand(2, 3, 5, 6), rand(2, 4, 3, 2, lo=-1.3, hi=1.3)
    attrs = {"mode": mode, "padding_mode": padding, "align_corners": align}
    # onnxruntime's bicubic border padding differs from onnx's reference (and spec)
    oracles = ("ref",) if (mode, padding) == ("cubic", "border") else ("ort",)
    want = check("GridSample", [x, grid], attrs, opset=20, oracles=oracles)[0]
    old = {"linear": "bilinear", "cubic": "bicubic", "nearest": "nearest"}[mode]
    got = execute(make_plugin("GridSample", {**attrs, "mode": old}, 16), [x, grid])[0]
    np.testing.assert_array_equal(got, want)


def test_grid_sample_3d_and_affine_grid() -> None:
    x, grid = rand(1, 2, 4, 5, 3), rand(1, 3, 2, 4, 3, lo=-1.2, hi=1.2)
    check("GridSample", [x, grid], {"mode": "linear"}, opset=20, oracles=("ref",))
    for align in (0, 1):
        check("AffineGrid", [rand(2, 2, 3), np.array([2, 3, 4, 5], np.int64)],
              {"align_corners": align}, opset=20)
        check("AffineGrid", [rand(1, 3, 4), np.array([1, 1, 2, 3, 4], np.int64)],
              {"align_corners": align}, opset=20, oracles=("ref",))


# -- losses ----------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize(("weight", "ignore"), [(False, None), (True, None), (True, 1),
                                                (False, 2)])
def test_losses(reduction: str, weight: bool, ignore: int | None) -> None:
    x = rand(3, 4, 2, 5)
    t = RNG.integers(0, 4, size=(3, 2, 5)).astype(np.int64)
    w = rand(4, lo=0.2, hi=1.0) if weight else None
    attrs: dict[str, Any] = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    check("NegativeLogLikelihoodLoss", [x, t, w], attrs)
    check("SoftmaxCrossEntropyLoss", [x, t.astype(np.int32), w], attrs, n_out=2)


# -- spectral --------------------------------------------------------------------------------
@pytest.mark.parametrize(("attrs", "shape", "length"), [
    ({}, (2, 8, 1), None),
    ({"onesided": 1}, (2, 8, 1), 6),
    ({"inverse": 1}, (2, 8, 2), None),
    ({"inverse": 1, "onesided": 1}, (2, 5, 2), None),
])
def test_dft(attrs: dict[str, Any], shape: tuple[int, ...], length: int | None) -> None:
    x = rand(*shape)
    n = None if length is None else np.array(length, np.int64)
    check("DFT", [x, n, np.array(1, np.int64)], attrs, opset=20, oracles=("ref",))
    check("DFT", [x, n], {**attrs, "axis": 1}, opset=17, oracles=("ref",))


def test_stft() -> None:
    x = rand(2, 32, 1)
    check("STFT", [x, np.array(4, np.int64), rand(8)], {}, opset=17, oracles=("ref",))
    check("STFT", [x, np.array(5, np.int64), None, np.array(6, np.int64)],
          {"onesided": 0}, opset=17, oracles=("ref",))
