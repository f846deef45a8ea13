"""The channel-blocked kernels (``_blocked.c``, ``blocked.py``; issue 26 item 3) against
onnxruntime: each kernel alone at both block sizes this CPU runs (CHW8 on AVX2, CHW16 on
AVX-512), at channel counts that are not multiples of 8 or 16, tiny and large maps, strides,
dilations, padding, depthwise groups, the fused epilogues; then engines whose builder chose
the blocked formats (the cost model, no timing), light CNNs among them, end to end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.plugin import TensorFormat, from_format, to_format

blocked = pytest.importorskip("mini_infer_cpu_native.blocked")
calls = pytest.importorskip("mini_infer_cpu_native._blocked_calls")

Array = np.ndarray[Any, Any]
FORMATS = [f for f, bit in ((TensorFormat.CHW8, 1), (TensorFormat.CHW16, 2))
           if calls.ISA & bit]
if not FORMATS:
    pytest.skip("this CPU has neither AVX2 + FMA nor AVX-512F: no blocked kernels run here",
                allow_module_level=True)


def _ort(model: onnx.ModelProto, feeds: dict[str, Array]) -> list[Array]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(v) for v in sess.run(None, feeds)]


def _model(nodes: list[onnx.NodeProto], inputs: dict[str, tuple[int, ...]],
           outputs: list[str], inits: dict[str, Array] | None = None) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in (inits or {}).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _rand(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape).astype(np.float32)


def _close(got: Array, want: Array) -> None:
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4 * max(1.0, float(
        np.abs(want).max(initial=0.0))))


# -- each kernel alone --------------------------------------------------------------------

CONVS = [  # (c, m, hw, kernel, strides, dilations, pads, depthwise)
    (3, 13, (17, 19), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1), False),  # a stem
    (21, 35, (9, 7), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), False),  # pointwise
    (24, 40, (56, 56), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0), False),  # pointwise, large map
    (19, 17, (11, 13), (3, 3), (1, 1), (2, 2), (2, 1, 2, 3), False),  # dilated, uneven pads
    (7, 9, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), False),  # a 1x1 map: taps on padding
    (37, 70, (5, 6), (5, 3), (2, 1), (1, 1), (2, 1, 2, 1), False),  # 5x3, stride (2, 1)
    (33, 33, (15, 14), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), True),  # depthwise
    (45, 45, (28, 28), (5, 5), (2, 2), (1, 1), (2, 2, 2, 2), True),  # depthwise 5x5 stride 2
    (11, 11, (9, 10), (3, 3), (1, 2), (2, 1), (0, 1, 3, 0), True),  # depthwise dilated
    (5, 5, (2, 3), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1), True),  # tiny map
    # depthwise stride 1 with tiles of their own (each input loaded once for its taps)
    (29, 29, (13, 21), (5, 5), (1, 1), (1, 1), (2, 2, 2, 2), True),  # 5x5
    (19, 19, (11, 17), (7, 7), (1, 1), (1, 1), (3, 3, 3, 3), True),  # 7x7
    (9, 9, (6, 30), (3, 5), (1, 1), (1, 1), (1, 2, 0, 1), True),  # 3x5, uneven pads
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[7]}")
def test_conv_kernel_against_onnxruntime(case: tuple[Any, ...], fmt: TensorFormat) -> None:
    """Conv + bias, then the residual added and Clip: the kernel's epilogue in one pass."""
    c, m, hw, kernel, strides, dilations, pads, depthwise = case
    rng = np.random.default_rng(c * 100 + m)
    group = c if depthwise else 1
    x, w, b = _rand(rng, 2, c, *hw), _rand(rng, m, c // group, *kernel), _rand(rng, m)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(kernel),
                            strides=list(strides), dilations=list(dilations), pads=list(pads),
                            group=group)
    (y,) = _ort(_model([conv], {"x": x.shape}, ["c"], {"w": w, "b": b}), {"x": x})
    r = _rand(rng, *y.shape)
    want = np.clip(y + r, -0.5, 1.5)
    k = fmt.block
    wp = calls.pack_depthwise(w, k) if depthwise else calls.pack_dense(w, k)
    xb, rb = to_format(x, fmt), to_format(r, fmt)
    out = np.full(to_format(y, fmt).shape, np.nan, np.float32)  # every lane must be written
    call = calls.conv_call(xb, wp, calls._padded_channels(b, k), rb, out, c_in=c, c_out=m,
                             kernel=kernel, strides=strides, dilations=dilations,
                             begin=pads[:2], depthwise=depthwise, lo=-0.5, hi=1.5)
    blocked.run_calls([call])
    _close(from_format(out, fmt, y.shape), want)
    assert not out[:, -1, ..., m - (out.shape[1] - 1) * k:].any()  # the padding lanes: zeros


STEMS = [  # (c, m, hw, kernel, strides, dilations, pads): a LINEAR x of at most 4 channels
    (3, 16, (33, 31), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),  # MobileNet's
    (3, 70, (23, 21), (7, 7), (2, 2), (1, 1), (3, 3, 3, 3)),  # ResNet's, odd widths
    (1, 9, (9, 10), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # stride 1
    (4, 40, (11, 12), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),  # pointwise (as one row)
    (2, 13, (15, 14), (3, 5), (3, 1), (2, 1), (2, 0, 1, 2)),  # stride 3, dilated, uneven
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", STEMS, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-{c[3]}-{c[4]}")
def test_stem_kernel_reads_a_linear_input(case: tuple[Any, ...], fmt: TensorFormat) -> None:
    """A stem's few channels read LINEAR, in their planes, into a blocked y: + bias, the
    residual, Clip, as onnxruntime's Conv then Add and Clip."""
    c, m, hw, kernel, strides, dilations, pads = case
    rng = np.random.default_rng(c * 100 + m)
    x, w, b = _rand(rng, 2, c, *hw), _rand(rng, m, c, *kernel), _rand(rng, m)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(kernel),
                            strides=list(strides), dilations=list(dilations), pads=list(pads))
    (y,) = _ort(_model([conv], {"x": x.shape}, ["c"], {"w": w, "b": b}), {"x": x})
    r = _rand(rng, *y.shape)
    k = fmt.block
    out = np.full(to_format(y, fmt).shape, np.nan, np.float32)
    blocked.run_calls([calls.conv_call(
        x, calls.pack_dense(w, k), calls._padded_channels(b, k), to_format(r, fmt), out,
        c_in=c, c_out=m, kernel=kernel, strides=strides, dilations=dilations,
        begin=pads[:2], depthwise=False, lo=-0.5, hi=1.5)])
    _close(from_format(out, fmt, y.shape), np.clip(y + r, -0.5, 1.5))
    assert not out[:, -1, ..., m - (out.shape[1] - 1) * k:].any()


def test_stem_kernel_refuses_what_it_cannot_take() -> None:
    """A LINEAR x of more channels than a block, or into a depthwise convolution."""
    k = calls.ISA & 2 and 16 or 8
    y = np.zeros((1, 2, 4, 4, k), np.float32)
    with pytest.raises(ValueError, match="LINEAR x"):
        calls.conv_call(np.zeros((1, k + 1, 4, 4), np.float32),
                        calls.pack_dense(np.zeros((2 * k, k + 1, 1, 1), np.float32), k), None,
                        None, y, c_in=k + 1, c_out=2 * k, kernel=(1, 1), strides=(1, 1),
                        dilations=(1, 1), begin=(0, 0), depthwise=False, lo=0.0, hi=1.0)
    with pytest.raises(ValueError, match="LINEAR x"):
        calls.conv_call(np.zeros((1, 3, 4, 4), np.float32),
                        calls.pack_depthwise(np.zeros((3, 1, 3, 3), np.float32), k), None,
                        None, y[:, :1], c_in=3, c_out=3, kernel=(3, 3), strides=(1, 1),
                        dilations=(1, 1), begin=(1, 1), depthwise=True, lo=0.0, hi=1.0)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_conv_kernel_residual_in_place(fmt: TensorFormat) -> None:
    """The residual's buffer as the output: the kernel sums its input blocks in passes that
    keep partial sums in y, so it must see the residual and take one pass (40 input channels:
    several blocks; 3x3 taps: one block per pass otherwise)."""
    rng = np.random.default_rng(5)
    x, w, b = _rand(rng, 1, 40, 9, 11), _rand(rng, 70, 40, 3, 3), _rand(rng, 70)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1])
    (y,) = _ort(_model([conv], {"x": x.shape}, ["c"], {"w": w, "b": b}), {"x": x})
    r = _rand(rng, *y.shape)
    k = fmt.block
    out = to_format(r, fmt)
    call = calls.conv_call(to_format(x, fmt), calls.pack_dense(w, k),
                           calls._padded_channels(b, k), out, out, c_in=40, c_out=70,
                           kernel=(3, 3), strides=(1, 1), dilations=(1, 1), begin=(1, 1),
                           depthwise=False, lo=-np.inf, hi=np.inf)
    blocked.run_calls([call])
    _close(from_format(out, fmt, y.shape), y + r)


@pytest.mark.parametrize("depthwise", [False, True], ids=["dense", "depthwise"])
@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_conv_kernel_epilogue_activation(fmt: TensorFormat, depthwise: bool) -> None:
    """A fused HardSigmoid after the clamp, no bias: onnxruntime's Conv then HardSigmoid; the
    padding lanes stay zeros though HardSigmoid(0) is not."""
    rng = np.random.default_rng(3)
    c = 27 if depthwise else 10
    x, w = _rand(rng, 1, c, 12, 14), _rand(rng, 27, 1 if depthwise else c, 3, 3)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1],
                              group=c if depthwise else 1),
             helper.make_node("HardSigmoid", ["c"], ["y"], alpha=0.3, beta=0.4)]
    (want,) = _ort(_model(nodes, {"x": x.shape}, ["y"], {"w": w}), {"x": x})
    k = fmt.block
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    from mini_infer_cpu_native._conv_extra import act_code

    act = act_code({"__act__": "HardSigmoid", "__act_args__": (0.3, 0.4)})
    wp = calls.pack_depthwise(w, k) if depthwise else calls.pack_dense(w, k)
    blocked.run_calls([calls.conv_call(
        to_format(x, fmt), wp, None, None, out, c_in=c, c_out=27, kernel=(3, 3),
        strides=(1, 1), dilations=(1, 1), begin=(1, 1), depthwise=depthwise, lo=-np.inf,
        hi=np.inf, act=act)])
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., 27 - (out.shape[1] - 1) * k:].any()


POOLS = [  # (op, attributes, c, hw)
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 19, (15, 16)),
    ("MaxPool", {"kernel_shape": [2, 2], "strides": [2, 2]}, 5, (7, 9)),
    ("MaxPool", {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]}, 9, (8, 8)),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}, 23,
     (10, 11)),
    ("AveragePool", {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1],
                     "count_include_pad": 1}, 17, (9, 6)),
    ("GlobalAveragePool", {}, 35, (7, 7)),
    ("GlobalAveragePool", {}, 3, (1, 1)),
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", POOLS, ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}")
def test_pool_kernel_against_onnxruntime(case: tuple[Any, ...], fmt: TensorFormat) -> None:
    op, attrs, c, hw = case
    rng = np.random.default_rng(c)
    x = _rand(rng, 2, c, *hw)
    (want,) = _ort(_model([helper.make_node(op, ["x"], ["y"], **attrs)], {"x": x.shape},
                          ["y"]), {"x": x})
    k = fmt.block
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    if op == "GlobalAveragePool":
        geo = {"kernel": hw, "strides": (1, 1), "dilations": (1, 1), "begin": (0, 0),
               "end": (0, 0), "average": True, "include_pad": False}
    else:
        pads = attrs.get("pads", [0, 0, 0, 0])
        geo = {"kernel": attrs["kernel_shape"], "strides": attrs.get("strides", [1, 1]),
               "dilations": attrs.get("dilations", [1, 1]), "begin": pads[:2],
               "end": pads[2:], "average": op == "AveragePool",
               "include_pad": bool(attrs.get("count_include_pad", 0))}
    blocked.run_calls([calls.pool_call(to_format(x, fmt), out, **geo)])
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., c - (out.shape[1] - 1) * k:].any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("op", ["Add", "Mul"])
@pytest.mark.parametrize("bshape", [(2, 13, 6, 5), (2, 13, 1, 1), (1, 13, 1, 1)])
def test_binary_kernel_against_onnxruntime(op: str, bshape: tuple[int, ...],
                                           fmt: TensorFormat) -> None:
    """Same shapes, and the vector per (image, channel) (or per channel) broadcast."""
    rng = np.random.default_rng(5)
    a, b = _rand(rng, 2, 13, 6, 5), _rand(rng, *bshape)
    (want,) = _ort(_model([helper.make_node(op, ["a", "b"], ["y"])],
                          {"a": a.shape, "b": b.shape}, ["y"]), {"a": a, "b": b})
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    call = calls.binary_call(to_format(a, fmt), to_format(b, fmt), out, op.lower())
    blocked.run_calls([call])
    _close(from_format(out, fmt, want.shape), want)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("cs", [(16, 16), (5, 11, 3), (8, 21), (32, 7, 9)])
def test_concat_kernel_against_onnxruntime(cs: tuple[int, ...], fmt: TensorFormat) -> None:
    rng = np.random.default_rng(sum(cs))
    xs = [_rand(rng, 2, c, 4, 3) for c in cs]
    names = [f"x{i}" for i in range(len(cs))]
    (want,) = _ort(_model([helper.make_node("Concat", names, ["y"], axis=1)],
                          {n: x.shape for n, x in zip(names, xs, strict=True)}, ["y"]),
                   dict(zip(names, xs, strict=True)))
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    blocked.run_calls([calls.concat_call([to_format(x, fmt) for x in xs], cs, out)])
    np.testing.assert_array_equal(out, to_format(want, fmt))  # copies: exact, zeros included


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("op", ["Sigmoid", "HardSwish"])
def test_activation_plugin_blocked_keeps_the_padding_zero(op: str, fmt: TensorFormat) -> None:
    """cpu_native's activation configured blocked: the function over the blocked buffer, and
    Sigmoid(0) = 0.5 written over the padding lanes zeroed again."""
    from mini_infer_cpu_native import activations

    from mini_infer_core.plugin import DataType
    from mini_infer_core.plugin import _adapter as adapter

    rng = np.random.default_rng(9)
    x = _rand(rng, 2, 13, 5, 4)
    (want,) = _ort(_model([helper.make_node(op, ["x"], ["y"])], {"x": x.shape}, ["y"]),
                   {"x": x})
    plugin = getattr(activations, op)("act")
    desc = [(x.shape, DataType.FLOAT)]
    adapter.configure_concrete(plugin, desc, desc, [fmt], [fmt])
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    plugin.enqueue([to_format(x, fmt)], [out], None, None)
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., 13 - (out.shape[1] - 1) * fmt.block:].any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("relu", [False, True])
def test_batchnorm_plugin_blocked(relu: bool, fmt: TensorFormat) -> None:
    """cpu_native's inference BatchNormalization configured blocked (21 channels: a partial
    last block at both sizes), with and without its fused Relu, against onnxruntime; every
    lane written, the padding lanes zeros (the folded scale and shift are zeros there)."""
    from mini_infer_cpu_native import normalization

    from mini_infer_core.plugin import DataType
    from mini_infer_core.plugin import _adapter as adapter

    rng = np.random.default_rng(21)
    c = 21
    x = _rand(rng, 2, c, 6, 5)
    inits = {"s": _rand(rng, c), "b": _rand(rng, c), "m": _rand(rng, c),
             "v": np.abs(_rand(rng, c)) + 0.1}
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"],
                              epsilon=1e-3)]
    nodes.append(helper.make_node("Relu", ["bn"], ["y"]) if relu
                 else helper.make_node("Identity", ["bn"], ["y"]))
    (want,) = _ort(_model(nodes, {"x": x.shape}, ["y"], inits), {"x": x})
    plugin = normalization.BatchNormalization("bn", epsilon=1e-3, __relu__=int(relu))
    vec = [((c,), DataType.FLOAT)] * 4
    adapter.configure_concrete(plugin, [(x.shape, DataType.FLOAT), *vec],
                               [(x.shape, DataType.FLOAT)], [fmt, *[TensorFormat.LINEAR] * 4],
                               [fmt])
    descs = [*plugin.input_descs, *plugin.output_descs]
    blocked.set_offered(fmt)
    try:
        assert all(plugin.supports_format_combination(i, descs, 5)  # type: ignore[arg-type]
                   for i in range(len(descs)))
        # training mode's extra outputs (running mean and var): LINEAR only
        training = [*descs, descs[1], descs[1]]
        assert not plugin.supports_format_combination(0, training, 5)  # type: ignore[arg-type]
    finally:
        blocked.set_offered(True)
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    plugin.enqueue([to_format(x, fmt), *inits.values()], [out], None, None)
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., c - (out.shape[1] - 1) * fmt.block:].any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("bounds", [None, (-0.5, 0.7), (0.25, 2.0), (-3.0, -0.5)],
                         ids=["Relu", "Clip-around-0", "Clip-above-0", "Clip-below-0"])
def test_relu_clip_plugins_blocked(bounds: tuple[float, float] | None,
                                   fmt: TensorFormat) -> None:
    """cpu_native's Relu / Clip configured blocked (13 channels) against onnxruntime: the
    function over the whole blocked buffer, the padding lanes zeros even where the bounds
    leave 0 out (Clip(0) = 0.25 or -0.5 there, zeroed again)."""
    from mini_infer_cpu_native import blocked as module

    from mini_infer_core.plugin import DataType
    from mini_infer_core.plugin import _adapter as adapter

    rng = np.random.default_rng(13)
    x = _rand(rng, 2, 13, 5, 4)
    if bounds is None:
        node, inits, plugin = helper.make_node("Relu", ["x"], ["y"]), {}, module.Relu("r")
    else:
        node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
        inits = {"lo": np.float32(bounds[0]), "hi": np.float32(bounds[1])}
        plugin = module.Clip_11("c")
    (want,) = _ort(_model([node], {"x": x.shape}, ["y"], inits), {"x": x})
    scalars = [((), DataType.FLOAT)] * len(inits)
    adapter.configure_concrete(plugin, [(x.shape, DataType.FLOAT), *scalars],
                               [(x.shape, DataType.FLOAT)],
                               [fmt, *[TensorFormat.LINEAR] * len(inits)], [fmt])
    descs = [*plugin.input_descs, *plugin.output_descs]
    blocked.set_offered(fmt)
    try:
        assert all(plugin.supports_format_combination(i, descs, 1 + len(inits))  # type: ignore[arg-type]
                   for i in range(len(descs)))
    finally:
        blocked.set_offered(True)
    xb = to_format(x, fmt)
    xb[:, -1, ..., 13 - (xb.shape[1] - 1) * fmt.block:] = 0.0
    out = np.full(xb.shape, np.nan, np.float32)
    plugin.enqueue([xb, *(np.asarray(v) for v in inits.values())], [out], None, None)
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., 13 - (out.shape[1] - 1) * fmt.block:].any()


def test_kernels_refuse_what_they_cannot_take() -> None:
    fmt = FORMATS[0]
    x = to_format(np.zeros((1, 5, 4, 4), np.float32), fmt)
    with pytest.raises(ValueError, match="packed weights"):
        calls.conv_call(x, np.zeros((1, 5, 3, 3, 4), np.float32), None, None, x.copy(),
                          c_in=5, c_out=5, kernel=(3, 3), strides=(1, 1), dilations=(1, 1),
                          begin=(1, 1), depthwise=False, lo=0.0, hi=1.0)
    with pytest.raises(ValueError, match="float32"):
        calls.pool_call(x.astype(np.float64), x, kernel=(1, 1), strides=(1, 1),
                          dilations=(1, 1), begin=(0, 0), end=(0, 0), average=False,
                          include_pad=False)


# -- engines with the blocked formats chosen -------------------------------------------------


@pytest.fixture(params=FORMATS, ids=lambda f: f.name)
def offered(request: pytest.FixtureRequest) -> Iterator[TensorFormat]:
    blocked.set_offered(request.param)
    yield request.param
    blocked.set_offered(True)


def _engine(model: onnx.ModelProto) -> Any:
    config = mi.BuilderConfig(device="cpu", time_tactics=False)
    return mi.Builder().build_engine(mi.parse_onnx(model), config)


def _run_engine(engine: Any, feeds: dict[str, Array]) -> list[Array]:
    with engine.create_execution_context() as ctx:
        out = ctx.execute(feeds)
        again = ctx.execute(feeds)  # the kept calls replayed
    names = list(out)
    for n in names:
        np.testing.assert_array_equal(out[n], again[n])
    return [np.asarray(out[n]) for n in names]


def _mobile_block(rng: np.random.Generator) -> tuple[onnx.ModelProto, dict[str, Array]]:
    """A MobileNetV3-like net of odd widths: a stem, an inverted residual with
    squeeze-and-excitation (HardSwish, HardSigmoid, Mul), max and average pooling, two
    branches concatenated and added, a global average pool and a classifier."""
    c0, c1, c2, se = 13, 37, 13, 9
    inits = {
        "w0": _rand(rng, c0, 3, 3, 3) * 0.3, "b0": _rand(rng, c0) * 0.1,
        "w1": _rand(rng, c1, c0, 1, 1) * 0.3, "b1": _rand(rng, c1) * 0.1,
        "wd": _rand(rng, c1, 1, 3, 3) * 0.3, "bd": _rand(rng, c1) * 0.1,
        "ws1": _rand(rng, se, c1, 1, 1) * 0.3, "bs1": _rand(rng, se) * 0.1,
        "ws2": _rand(rng, c1, se, 1, 1) * 0.3, "bs2": _rand(rng, c1) * 0.1,
        "w2": _rand(rng, c2, c1, 1, 1) * 0.3, "b2": _rand(rng, c2) * 0.1,
        "w3": _rand(rng, 11, c2 + c2, 3, 3) * 0.2,
        "s": _rand(rng, 1, 11, 1, 1), "wf": _rand(rng, 11, 10) * 0.3,
    }
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w0", "b0"], ["a0"], kernel_shape=[3, 3], strides=[2, 2],
          pads=[1, 1, 1, 1]),
        n("HardSwish", ["a0"], ["h0"]),
        n("Conv", ["h0", "w1", "b1"], ["a1"]), n("Relu", ["a1"], ["h1"]),
        n("Conv", ["h1", "wd", "bd"], ["a2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          group=c1),
        n("Clip", ["a2", "lo", "hi"], ["h2"]),
        n("GlobalAveragePool", ["h2"], ["g"]),
        n("Conv", ["g", "ws1", "bs1"], ["s1"]), n("Relu", ["s1"], ["s1r"]),
        n("Conv", ["s1r", "ws2", "bs2"], ["s2"]), n("HardSigmoid", ["s2"], ["s2h"]),
        n("Mul", ["h2", "s2h"], ["e"]),
        n("Conv", ["e", "w2", "b2"], ["a3"]),
        n("Add", ["a3", "h0"], ["r"]),
        n("MaxPool", ["r"], ["p1"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1]),
        n("AveragePool", ["r"], ["p2"], kernel_shape=[3, 3], strides=[1, 1],
          pads=[1, 1, 1, 1]),
        n("Add", ["p1", "p2"], ["sum0"]),
        n("Sigmoid", ["sum0"], ["sum"]),
        n("Concat", ["sum", "p2"], ["cat"], axis=1),
        n("Conv", ["cat", "w3"], ["a4"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),  # no bias
        n("GlobalAveragePool", ["a4"], ["gp"]),
        n("Mul", ["gp", "s"], ["gs"]),
        n("Flatten", ["gs"], ["f"]),
        n("MatMul", ["f", "wf"], ["y"]),
    ]
    inits["lo"], inits["hi"] = np.float32(0.0), np.float32(6.0)
    model = _model(nodes, {"x": (1, 3, 33, 31)}, ["y", "r"], {
        k: np.asarray(v, np.float32) for k, v in inits.items()})
    return model, {"x": _rand(rng, 1, 3, 33, 31)}


def test_light_cnn_with_blocked_formats_matches_onnxruntime(offered: TensorFormat) -> None:
    model, feeds = _mobile_block(np.random.default_rng(11))
    engine = _engine(model)
    formats = {t.format for t in engine.tensors.values()}
    assert offered in formats, formats
    blocked_ops = {nd.op_type for nd in engine.nodes
                   if any(engine.tensors[o].format is offered for o in nd.outputs)}
    # every kind of blocked kernel ran in this engine
    assert {"Conv", "GlobalAveragePool", "Mul", "MaxPool", "AveragePool", "Concat", "Add",
            "Sigmoid"} <= \
        blocked_ops, blocked_ops
    got = _run_engine(engine, feeds)
    want = _ort(model, feeds)
    for g, w in zip(got, want, strict=True):
        _close(g, w)


_STEM_CHILD = """
import sys
import numpy as np
import mini_infer_core as mi
engine = mi.Runtime().load_engine(sys.argv[1])
stem = next(nd for nd in engine.nodes if nd.inputs[0] == "x")
assert stem.op_type == "Conv", stem
assert engine.tensors[stem.outputs[0]].format.block, engine.tensors[stem.outputs[0]]
out = engine.create_execution_context().execute({"x": np.load(sys.argv[2])})
np.save(sys.argv[3], np.asarray(out["y"]))
"""


def test_a_stem_reads_the_graph_input_in_place(offered: TensorFormat, tmp_path: Any) -> None:
    """The 3-channel input goes to the stem LINEAR, with no Reformat step (blocked, it would
    be 16 lanes a pixel, 13 of them zeros); the stem writes the blocked format. New input
    arrays, one changed in place and one of other strides give onnxruntime's results, and
    so does the engine read back from its file in another process."""
    import subprocess
    import sys

    model, feeds = _mobile_block(np.random.default_rng(13))
    engine = _engine(model)
    readers = [nd for nd in engine.nodes if "x" in nd.inputs]
    assert [nd.op_type for nd in readers] == ["Conv"], readers
    assert engine.tensors["x"].format is TensorFormat.LINEAR
    assert engine.tensors[readers[0].outputs[0]].format is offered
    rng = np.random.default_rng(14)
    fresh = _rand(rng, 1, 3, 33, 31)
    with engine.create_execution_context() as ctx:
        for x in (feeds["x"], fresh, None, np.asfortranarray(_rand(rng, 1, 3, 33, 31))):
            if x is None:  # the same array again, its contents changed in place
                x = fresh
                x *= -1.5
            got = ctx.execute({"x": x})
            for name, want in zip(["y", "r"], _ort(model, {"x": x}), strict=True):
                _close(np.asarray(got[name]), want)
    path, xs, out = tmp_path / "stem.engine", tmp_path / "x.npy", tmp_path / "y.npy"
    engine.save(str(path))
    np.save(xs, feeds["x"])
    done = subprocess.run([sys.executable, "-c", _STEM_CHILD, str(path), str(xs), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    _close(np.load(out), _ort(model, feeds)[0])


def test_blocked_convolutions_plan_no_workspace(offered: TensorFormat) -> None:
    """A convolution running blocked needs no im2col or Winograd buffers: the plan gives it
    none (worked out at each new shape's plan, a first run's, and held in the arena), while
    the same convolution running LINEAR keeps its own; the results are onnxruntime's."""
    model, feeds = _mobile_block(np.random.default_rng(11))
    engine = _engine(model)
    with engine.create_execution_context() as ctx:
        got = ctx.execute(feeds)
        sched = ctx.schedule
    assert sched is not None
    conv_steps = [(k, nd) for k, nd in enumerate(engine.nodes) if nd.op_type == "Conv"]
    blocked_convs = [k for k, nd in conv_steps
                     if engine.tensors[nd.outputs[0]].format is offered]
    assert blocked_convs and all(sched.workspace[k] == 0 for k in blocked_convs)
    # the 3x3 convolutions (dense: the stem and w3; depthwise) blocked here plan buffers
    # when they run LINEAR
    blocked.set_offered(None)
    try:
        linear = _engine(model)
    finally:
        blocked.set_offered(offered)
    with linear.create_execution_context() as ctx:
        ctx.execute(feeds)
        assert ctx.schedule is not None and any(
            ctx.schedule.workspace[k] > 0 for k, nd in enumerate(linear.nodes)
            if nd.op_type == "Conv")
    for name, want in zip(["y", "r"], _ort(model, feeds), strict=True):
        _close(np.asarray(got[name]), want)


def test_batchnorm_relu_clip_chain_stays_blocked(offered: TensorFormat) -> None:
    """Conv, MaxPool, a standalone BatchNormalization (after the pool: not folded into a
    Conv), Clip (0.1, 4: 0 outside), Relu after a Concat, Conv: every node blocked (the
    builder's cost model), the results onnxruntime's, at 19 and 23 channels."""
    rng = np.random.default_rng(19)
    c, m = 19, 23
    inits = {"w0": _rand(rng, c, 5, 3, 3) * 0.3, "s": _rand(rng, c), "b": _rand(rng, c),
             "mu": _rand(rng, c) * 0.1, "v": np.abs(_rand(rng, c)) + 0.5,
             "lo": np.float32(0.1), "hi": np.float32(4.0),
             "w1": _rand(rng, m, 2 * c, 3, 3) * 0.2}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w0"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        n("BatchNormalization", ["p", "s", "b", "mu", "v"], ["bn"]),
        n("Clip", ["bn", "lo", "hi"], ["cl"]),
        n("Concat", ["cl", "p"], ["cat"], axis=1),
        n("Relu", ["cat"], ["r"]),
        n("Conv", ["r", "w1"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    model = _model(nodes, {"x": (1, 5, 18, 14)}, ["y"],
                   {k: np.asarray(v, np.float32) for k, v in inits.items()})
    feeds = {"x": _rand(rng, 1, 5, 18, 14)}
    engine = _engine(model)
    blocked_ops = {nd.op_type for nd in engine.nodes
                   if any(engine.tensors[o].format is offered for o in nd.outputs)}
    assert {"Conv", "MaxPool", "BatchNormalization", "Clip", "Concat", "Relu"} <= \
        blocked_ops, blocked_ops
    (got,) = _run_engine(engine, feeds)
    _close(got, _ort(model, feeds)[0])


def test_a_lone_convolution_stays_linear(offered: TensorFormat) -> None:
    """One blocked-capable node between the graph's LINEAR input and output: reformatting
    both would cost more than it saves (the cost model), so nothing changes."""
    rng = np.random.default_rng(2)
    model = _model([helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3])],
                   {"x": (1, 16, 12, 12)}, ["y"], {"w": _rand(rng, 32, 16, 3, 3)})
    engine = _engine(model)
    assert [nd.op_type for nd in engine.nodes] == ["Conv"]
    assert all(t.format is TensorFormat.LINEAR for t in engine.tensors.values())


def test_negotiation_off_gives_the_same_results(offered: TensorFormat) -> None:
    model, feeds = _mobile_block(np.random.default_rng(12))
    linear = mi.Builder().build_engine(mi.parse_onnx(model), mi.BuilderConfig(
        device="cpu", time_tactics=False, negotiate_formats=False))
    assert all(t.format is TensorFormat.LINEAR for t in linear.tensors.values())
    for g, w in zip(_run_engine(_engine(model), feeds), _run_engine(linear, feeds),
                    strict=True):
        _close(g, w)


def _aspp_block(rng: np.random.Generator) -> tuple[onnx.ModelProto, dict[str, Array]]:
    """DeepLabV3's ASPP in small: a 1x1 Conv + Relu, then a 3x3 Conv dilated 12 (pads 12:
    three quarters of its tap-output pairs read only padding over 16x16) beside an ordinary
    3x3 one, concatenated, a 1x1 Conv; 64 channels (the tap path's least)."""
    c = 64
    inits = {"w0": _rand(rng, c, c, 1, 1) * 0.2, "wd": _rand(rng, c, c, 3, 3) * 0.05,
             "bd": _rand(rng, c) * 0.1, "wo": _rand(rng, c, c, 3, 3) * 0.05,
             "w1": _rand(rng, 16, 2 * c, 1, 1) * 0.1}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w0"], ["a"]), n("Relu", ["a"], ["h"]),
        n("Conv", ["h", "wd", "bd"], ["dil"], kernel_shape=[3, 3], dilations=[12, 12],
          pads=[12, 12, 12, 12]),
        n("Conv", ["h", "wo"], ["ord"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Concat", ["dil", "ord"], ["cat"], axis=1),
        n("Conv", ["cat", "w1"], ["y"]),
    ]
    model = _model(nodes, {"x": (1, c, 16, 16)}, ["y"], inits)
    return model, {"x": _rand(rng, 1, c, 16, 16)}


def test_padding_bound_dilated_convolution_declines_blocked(offered: TensorFormat) -> None:
    """A convolution the LINEAR path runs tap by tap, skipping the taps that read only
    padding (``_tap_gemm``: DeepLabV3's ASPP), declines the blocked format (the blocked
    kernel multiplies every tap: 2x slower there) and runs LINEAR between reformats, while
    the ordinary 3x3 beside it stays blocked; the results are onnxruntime's."""
    from mini_infer_cpu_native._native import gemm_available

    if not gemm_available():
        pytest.skip("no compiled GEMM (AVX-512) here: the LINEAR path skips no taps")
    model, feeds = _aspp_block(np.random.default_rng(26))
    engine = _engine(model)
    producer = {o: nd for nd in engine.nodes for o in nd.outputs}
    assert producer["dil"].op_type == "Conv"
    assert producer["dil"].plugin_namespace == "mini_infer.cpu_native"
    assert engine.tensors["dil"].format is TensorFormat.LINEAR
    assert engine.tensors["ord"].format is offered
    (got,) = _run_engine(engine, feeds)
    _close(got, _ort(model, feeds)[0])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squeezenet", "shufflenet", "resnet50"])
def test_light_models_blocked_against_onnxruntime(name: str) -> None:
    """onnx's light CNNs (random weights, logits) built with the blocked formats the CPU's
    kernels take, end to end, with the tactic timing on (the builder times the formats)."""
    from mini_infer_core.testing.light_models import (
        default_inputs,
        light_model_path,
        logits_model,
        randomize_weights,
    )

    model = randomize_weights(logits_model(onnx.load(str(light_model_path(name)))))
    feeds = default_inputs(model)
    engine = mi.Builder().build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu"))
    with engine.create_execution_context() as ctx:
        got = list(ctx.execute(feeds).values())
    for g, w in zip(got, _ort(model, feeds), strict=True):
        _close(np.asarray(g), w)


# -- grouped convolutions, one-pass BatchNormalization, Split, Resize, ReduceMean -------------

GROUPED = [  # (c, m, group, hw, kernel, strides, dilations, pads)
    (32, 48, 2, (9, 11), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # whole blocks at 8 and 16
    (64, 64, 4, (13, 7), (3, 3), (2, 2), (1, 1), (1, 1, 1, 1)),  # 16 a group, strided
    (12, 18, 3, (10, 9), (3, 3), (1, 1), (2, 2), (2, 1, 2, 3)),  # blocks span groups, dilated
    (20, 35, 5, (6, 5), (1, 1), (1, 1), (1, 1), (0, 0, 0, 0)),  # 4 -> 7 a group, pointwise
    (5, 15, 5, (7, 8), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # depthwise, multiplier 3
    (48, 24, 3, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # a 1x1 map: taps on padding
    (32, 32, 2, (40, 38), (3, 3), (1, 1), (1, 1), (1, 1, 1, 1)),  # a large map
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", GROUPED, ids=lambda c: f"{c[0]}-{c[1]}-g{c[2]}-{c[3]}")
def test_grouped_conv_kernel_against_onnxruntime(case: tuple[Any, ...],
                                                 fmt: TensorFormat) -> None:
    """Grouped convolutions (not depthwise) with bias, residual and Clip: groups of whole
    blocks, and groups a block spans (each output block reads its groups' channels, zeros
    between), odd channels a group, strides, dilations, uneven padding, tiny and large
    maps."""
    c, m, group, hw, kernel, strides, dilations, pads = case
    rng = np.random.default_rng(c * 7 + m + group)
    x, w, b = _rand(rng, 2, c, *hw), _rand(rng, m, c // group, *kernel), _rand(rng, m)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(kernel),
                            strides=list(strides), dilations=list(dilations), pads=list(pads),
                            group=group)
    (y,) = _ort(_model([conv], {"x": x.shape}, ["c"], {"w": w, "b": b}), {"x": x})
    r = _rand(rng, *y.shape)
    want = np.clip(y + r, -0.5, 1.5)
    k = fmt.block
    out = np.full(to_format(y, fmt).shape, np.nan, np.float32)
    call = calls.conv_call(to_format(x, fmt), calls.pack_grouped(w, k, group),
                             calls._padded_channels(b, k), to_format(r, fmt), out, c_in=c,
                             c_out=m, kernel=kernel, strides=strides, dilations=dilations,
                             begin=pads[:2], depthwise=False, lo=-0.5, hi=1.5, group=group)
    blocked.run_calls([call])
    _close(from_format(out, fmt, y.shape), want)
    assert not out[:, -1, ..., m - (out.shape[1] - 1) * k:].any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_batchnorm_blocked_is_one_pass(fmt: TensorFormat) -> None:
    """The blocked BatchNormalization is one call (x * a + b and the clamp together)."""
    from mini_infer_cpu_native import normalization

    from mini_infer_core.plugin import DataType
    from mini_infer_core.plugin import _adapter as adapter

    rng = np.random.default_rng(4)
    c = 19
    x = _rand(rng, 1, c, 4, 3)
    vecs = [_rand(rng, c), _rand(rng, c), _rand(rng, c), np.abs(_rand(rng, c)) + 0.1]
    for v in vecs:
        v.setflags(write=False)  # as an engine's constants: the call is kept for them
    plugin = normalization.BatchNormalization("bn", epsilon=1e-5, __relu__=1)
    adapter.configure_concrete(plugin, [(x.shape, DataType.FLOAT), *[((c,), DataType.FLOAT)] * 4],
                               [(x.shape, DataType.FLOAT)],
                               [fmt, *[TensorFormat.LINEAR] * 4], [fmt])
    out = np.full(to_format(x, fmt).shape, np.nan, np.float32)
    xb = to_format(x, fmt)
    plugin.enqueue([xb, *vecs], [out], None, None)
    assert plugin._calls is not None and len(plugin._calls[1]) == 1
    s, b, mu, v = vecs
    want = np.maximum((x - mu[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5)
                      * s[:, None, None] + b[:, None, None], 0)
    _close(from_format(out, fmt, x.shape), want)
    out[...] = np.nan
    xb *= -1  # the kept call again, on the same arrays' new values
    plugin.enqueue([xb, *vecs], [out], None, None)
    _close(from_format(out, fmt, x.shape), np.maximum(
        (-x - mu[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * s[:, None, None]
        + b[:, None, None], 0))


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("cs", [(16, 16), (5, 11, 3), (8, 21), (1, 30, 2)])
def test_split_kernel_against_onnxruntime(cs: tuple[int, ...], fmt: TensorFormat) -> None:
    rng = np.random.default_rng(sum(cs) + 1)
    x = _rand(rng, 2, sum(cs), 5, 3)
    names = [f"y{i}" for i in range(len(cs))]
    split = helper.make_node("Split", ["x", "s"], names, axis=1)
    want = _ort(_model([split], {"x": x.shape}, names, {"s": np.asarray(cs, np.int64)}),
                {"x": x})
    outs = [np.full(to_format(w, fmt).shape, np.nan, np.float32) for w in want]
    blocked.run_calls([calls.split_call(to_format(x, fmt), outs, cs)])
    for got, w in zip(outs, want, strict=True):
        np.testing.assert_array_equal(got, to_format(w, fmt))  # copies: zeros included


def _configured(plugin: Any, ins: list[tuple[tuple[int, ...], Any] | None],
                outs: list[tuple[tuple[int, ...], Any]], fmt: TensorFormat,
                linear_inputs: int) -> None:
    """``plugin`` configured with X and the outputs in ``fmt`` (the rest LINEAR), after it
    said it takes that combination."""
    from mini_infer_core.plugin import _adapter as adapter

    in_fmts = [fmt, *[TensorFormat.LINEAR] * linear_inputs]
    adapter.configure_concrete(plugin, ins, outs, in_fmts, [fmt] * len(outs))
    descs = [*plugin.input_descs, *plugin.output_descs]
    blocked.set_offered(fmt)
    try:
        assert all(plugin.supports_format_combination(i, descs, len(ins))
                   for i in range(len(descs)) if descs[i] is not None)
    finally:
        blocked.set_offered(True)


RESIZES = [  # (attributes, c, hw, scales or sizes)
    ({"mode": "nearest"}, 13, (5, 7), {"scales": [1, 1, 2, 2]}),
    ({"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
      "nearest_mode": "floor"}, 19, (9, 6), {"sizes": [2, 19, 4, 13]}),
    ({"mode": "linear"}, 21, (6, 5), {"scales": [1, 1, 2, 3]}),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 7, (8, 9),
     {"sizes": [2, 7, 3, 17]}),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, 33,
     (1, 1), {"sizes": [2, 33, 4, 5]}),
    ({"mode": "linear"}, 17, (64, 48), {"scales": [1, 1, 0.5, 0.75]}),
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", RESIZES, ids=lambda c: f"{c[0]['mode']}-{c[1]}-{c[2]}")
def test_resize_plugin_blocked_against_onnxruntime(case: tuple[Any, ...],
                                                   fmt: TensorFormat) -> None:
    """cpu_native's Resize configured blocked: nearest and linear of the spatial axes,
    up and down, sizes and scales, a 1x1 map, over whole channel blocks."""
    from mini_infer_cpu_native import resize

    from mini_infer_core.plugin import DataType

    attrs, c, hw, given = case
    rng = np.random.default_rng(c + hw[0])
    x = _rand(rng, 2, c, *hw)
    scales = np.asarray(given.get("scales", []), np.float32)
    sizes = np.asarray(given["sizes"], np.int64) if "sizes" in given else None
    ins = ["x", "", "scales"] + (["sizes"] if sizes is not None else [])
    inits: dict[str, Array] = {"scales": scales}
    if sizes is not None:
        inits["sizes"] = sizes
    node = helper.make_node("Resize", ins, ["y"], **attrs)
    (want,) = _ort(_model([node], {"x": x.shape}, ["y"], inits), {"x": x})
    plugin = resize.Resize("rz", **attrs)
    descs: list[tuple[tuple[int, ...], Any] | None] = [
        (x.shape, DataType.FLOAT), None, (scales.shape, DataType.FLOAT)]
    if sizes is not None:
        descs.append((sizes.shape, DataType.INT64))
    _configured(plugin, descs, [(want.shape, DataType.FLOAT)], fmt, len(descs) - 1)
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    plugin.enqueue([to_format(x, fmt), None, scales, *([sizes] if sizes is not None else [])],
                   [out], None, None)
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., c - (out.shape[1] - 1) * fmt.block:].any()


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("hw", [(1, 1), (7, 9), (56, 57)])
def test_reduce_mean_plugin_blocked_against_onnxruntime(opset: int, hw: tuple[int, int],
                                                        fmt: TensorFormat) -> None:
    """cpu_native's ReduceMean over the spatial axes (keepdims) configured blocked: the axes
    an attribute (opset 13) or an input (18)."""
    from mini_infer_cpu_native import squeeze

    from mini_infer_core.plugin import DataType

    rng = np.random.default_rng(hw[0])
    c = 23
    x = _rand(rng, 2, c, *hw)
    axes = np.asarray([2, 3], np.int64)
    if opset == 13:
        node = helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3])
        plugin, inits, extra = squeeze.ReduceMean_1("rm", axes=[2, 3]), {}, []
    else:
        node = helper.make_node("ReduceMean", ["x", "axes"], ["y"])
        plugin, inits, extra = squeeze.ReduceMean("rm"), {"axes": axes}, [axes]
    model = _model([node], {"x": x.shape}, ["y"], inits)
    model.opset_import[0].version = opset
    (want,) = _ort(model, {"x": x})
    descs: list[tuple[tuple[int, ...], Any] | None] = [(x.shape, DataType.FLOAT)]
    descs += [((2,), DataType.INT64)] * len(extra)
    _configured(plugin, descs, [(want.shape, DataType.FLOAT)], fmt, len(extra))
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    plugin.enqueue([to_format(x, fmt), *extra], [out], None, None)
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., c - (out.shape[1] - 1) * fmt.block:].any()


def test_reduce_mean_over_channels_declines_the_blocked_format() -> None:
    from mini_infer_cpu_native import squeeze

    from mini_infer_core.plugin import DataType, PluginTensorDesc

    fmt = FORMATS[-1]
    plugin = squeeze.ReduceMean_1("rm", axes=[1])
    x = PluginTensorDesc((1, 5, 4, 4), DataType.FLOAT, fmt)
    y = PluginTensorDesc((1, 1, 4, 4), DataType.FLOAT, fmt)
    blocked.set_offered(fmt)
    try:
        assert not plugin.supports_format_combination(0, [x, y], 1)
        assert plugin.supports_format_combination(
            0, [PluginTensorDesc((1, 5, 4, 4), DataType.FLOAT, TensorFormat.LINEAR), y], 1)
    finally:
        blocked.set_offered(True)


def test_grouped_split_resize_reduce_chain_against_onnxruntime(
        offered: TensorFormat) -> None:
    """An engine of a grouped convolution of whole blocks, Split on channels (odd parts),
    Resize (linear and nearest), ReduceMean over space and a grouped convolution whose
    groups are not whole blocks: the first run blocked, the last declines (its node LINEAR,
    reformatted around); the results onnxruntime's."""
    rng = np.random.default_rng(31)
    k = offered.block
    c = 2 * k  # two groups of k channels
    n = helper.make_node
    inits = {"w0": _rand(rng, c, 3, 3, 3) * 0.3, "w1": _rand(rng, 2 * k, k, 3, 3) * 0.2,
             "s": np.asarray([5, 2 * k - 5], np.int64),
             "sc": np.asarray([1, 1, 2, 2], np.float32),
             "w3": _rand(rng, 13, 2 * k - 5, 3, 3) * 0.2,
             "w2": _rand(rng, 6, 10, 1, 1) * 0.3}  # 2 groups of 10 -> 3: not whole blocks
    nodes = [
        n("Conv", ["x", "w0"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Relu", ["a"], ["ar"]),
        n("Conv", ["ar", "w1"], ["g"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=2),
        n("Split", ["g", "s"], ["s0", "s1"], axis=1),
        n("Resize", ["s1", "", "sc"], ["u"], mode="linear"),
        n("Resize", ["s1", "", "sc"], ["v"], mode="nearest"),
        n("Add", ["u", "v"], ["uv"]),
        n("Conv", ["uv", "w3"], ["t"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("ReduceMean", ["t"], ["m"], axes=[2, 3]),
        n("Relu", ["s0"], ["h0"]),
        n("Concat", ["h0", "s0", "s0", "h0"], ["h1"], axis=1),
        n("Conv", ["h1", "w2"], ["h2"], group=2),
    ]
    model = _model(nodes, {"x": (1, 3, 10, 9)}, ["m", "h2"],
                   {k_: np.asarray(v) for k_, v in inits.items()})
    feeds = {"x": _rand(rng, 1, 3, 10, 9)}
    engine = _engine(model)
    fmt_of = {nd.op_type + ":" + nd.outputs[0]: engine.tensors[nd.outputs[0]].format
              for nd in engine.nodes if nd.outputs}
    blocked_ops = {nd.op_type for nd in engine.nodes
                   if any(engine.tensors[o].format is offered for o in nd.outputs)}
    assert {"Conv", "Split", "Resize", "ReduceMean"} <= blocked_ops, fmt_of
    grouped_odd = [nd for nd in engine.nodes if nd.op_type == "Conv"
                   and nd.inputs and nd.inputs[1] == "w2"]
    assert grouped_odd and all(engine.tensors[o].format is TensorFormat.LINEAR
                               for nd in grouped_odd for o in nd.outputs), fmt_of
    got = _run_engine(engine, feeds)
    want = _ort(model, feeds)
    for g_, w_ in zip(got, want, strict=True):
        _close(g_, w_)
    # the engine file keeps the formats and the plugins' fields: read back, the same results
    again = mi.Runtime().deserialize_engine(engine.serialize())
    assert {n: t.format for n, t in again.tensors.items()} == \
        {n: t.format for n, t in engine.tensors.items()}
    for g_, w_ in zip(_run_engine(again, feeds), want, strict=True):
        _close(g_, w_)


def test_a_new_blocked_plugin_declares_only_its_blocked_formats() -> None:
    """The formats template (``_Formats``): a plugin mixing it in front of a LINEAR-only one
    and declaring nothing else takes LINEAR where its base does (the base's own answer: its
    dtypes) and the offered blocked format at X and Y together, never mixed; one that
    declares its blocked positions (here: none) keeps its LINEAR answers."""
    from mini_infer_cpu_plugins.ops.activation import Tanh

    from mini_infer_core.plugin import DataType, PluginTensorDesc

    class Mine(blocked._Formats, Tanh):  # type: ignore[misc]
        pass

    class Never(blocked._Formats, Tanh):  # type: ignore[misc]
        def _blocked_combination(self, pos: int, in_out: Any, num_inputs: int) -> bool:
            return False

    fmt, lin = FORMATS[-1], TensorFormat.LINEAR

    def desc(f: TensorFormat, dtype: DataType = DataType.FLOAT) -> PluginTensorDesc:
        return PluginTensorDesc((1, 5, 3, 3), dtype, f)

    blocked.set_offered(fmt)
    try:
        for cls, takes_blocked in ((Mine, True), (Never, False)):
            p = cls("r")
            base = Tanh("r")
            for x, y in ((lin, lin), (fmt, fmt), (fmt, lin), (lin, fmt)):
                io = [desc(x), desc(y)]
                got = [p.supports_format_combination(i, io, 1) for i in range(2)]
                if x is lin:  # the base's answers at a LINEAR X, False past it if y blocked
                    want = [base.supports_format_combination(0, io, 1),
                            y is lin and base.supports_format_combination(1, io, 1)]
                else:
                    want = [takes_blocked, takes_blocked and y is fmt]
                assert got == want, (cls.__name__, x, y, got)
            # the base's dtype check still answers at LINEAR positions (Tanh: no INT8)
            io = [desc(lin, DataType.INT8), desc(lin, DataType.INT8)]
            assert not p.supports_format_combination(0, io, 1)
    finally:
        blocked.set_offered(True)


CONV1D = [  # (c, m, length, kernel, stride, dilation, pads, group)
    (5, 19, 37, 3, 1, 1, (1, 1), 1),
    (21, 13, 50, 5, 2, 1, (2, 3), 1),  # strided, uneven padding
    (19, 19, 33, 5, 1, 2, (4, 4), 19),  # depthwise, dilated
    (32, 64, 17, 3, 1, 1, (0, 2), 2),  # groups of whole blocks
    (7, 9, 1, 3, 1, 1, (1, 1), 1),  # a length-1 signal: taps on padding
    (3, 17, 3000, 10, 5, 1, (0, 0), 1),  # an audio stem: wav2vec2's first layer's shape
]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("case", CONV1D, ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}-k{c[3]}-g{c[7]}")
def test_conv1d_plugin_blocked_against_onnxruntime(case: tuple[Any, ...],
                                                   fmt: TensorFormat) -> None:
    """cpu_native's Conv configured blocked on a 1-D signal (N, C, L) held as
    (N, ceil(C/k), L, k): run as 2-D of height 1, with bias, at odd channels, strides,
    dilations, uneven padding, depthwise and grouped."""
    from mini_infer_cpu_native import conv

    from mini_infer_core.plugin import DataType

    c, m, length, kernel, stride, dilation, pads, group = case
    rng = np.random.default_rng(c + m + length)
    x, w, b = _rand(rng, 2, c, length), _rand(rng, m, c // group, kernel), _rand(rng, m)
    attrs = {"kernel_shape": [kernel], "strides": [stride], "dilations": [dilation],
             "pads": list(pads), "group": group}
    (want,) = _ort(_model([helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)],
                          {"x": x.shape}, ["y"], {"w": w, "b": b}), {"x": x})
    plugin = conv.Conv("c", **attrs)
    _configured(plugin, [(x.shape, DataType.FLOAT), (w.shape, DataType.FLOAT),
                         (b.shape, DataType.FLOAT)], [(want.shape, DataType.FLOAT)], fmt, 2)
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    plugin.enqueue([to_format(x, fmt), w, b], [out], None, None)
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., m - (out.shape[1] - 1) * fmt.block:].any()


def test_conv1d_chain_stays_blocked(offered: TensorFormat) -> None:
    """A 1-D convolution stack (a stem, Relu fused, depthwise dilated, pointwise, strided)
    built with the cost model: every Conv blocked, the results onnxruntime's. A rank-3
    elementwise node is not offered the format (a transformer's (N, sequence, hidden))."""
    rng = np.random.default_rng(17)
    n = helper.make_node
    inits = {"w0": _rand(rng, 19, 5, 3) * 0.3, "w1": _rand(rng, 19, 1, 5) * 0.3,
             "w2": _rand(rng, 23, 19, 1) * 0.3, "w3": _rand(rng, 13, 23, 3) * 0.2,
             "b3": _rand(rng, 13)}
    nodes = [
        n("Conv", ["x", "w0"], ["a"], kernel_shape=[3], pads=[1, 1]),
        n("Relu", ["a"], ["ar"]),
        n("Conv", ["ar", "w1"], ["d"], kernel_shape=[5], pads=[4, 4], dilations=[2],
          group=19),
        n("Conv", ["d", "w2"], ["p"]),
        n("Conv", ["p", "w3", "b3"], ["y"], kernel_shape=[3], strides=[2], pads=[1, 1]),
        n("Sigmoid", ["y"], ["s"]),
    ]
    model = _model(nodes, {"x": (1, 5, 41)}, ["s"], inits)
    feeds = {"x": _rand(rng, 1, 5, 41)}
    engine = _engine(model)
    convs = [nd for nd in engine.nodes if nd.op_type == "Conv"]
    assert convs and all(engine.tensors[nd.outputs[0]].format is offered for nd in convs), \
        [(nd.op_type, engine.tensors[nd.outputs[0]].format) for nd in engine.nodes]
    sig = [nd for nd in engine.nodes if nd.op_type == "Sigmoid"]
    assert all(engine.tensors[nd.outputs[0]].format is TensorFormat.LINEAR for nd in sig)
    (got,) = _run_engine(engine, feeds)
    _close(got, _ort(model, feeds)[0])


def test_resize_blocked_without_tables_goes_through_linear(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A blocked Resize whose run the two-tap tables do not cover (forced here) still gives
    onnxruntime's result: cpu_basic's over the LINEAR tensor, written back blocked."""
    from mini_infer_cpu_native import _resize, resize

    from mini_infer_core.plugin import DataType

    fmt = FORMATS[-1]
    rng = np.random.default_rng(8)
    x, scales = _rand(rng, 1, 11, 4, 5), np.asarray([1, 1, 2, 1.5], np.float32)
    (want,) = _ort(_model([helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")],
                          {"x": x.shape}, ["y"], {"s": scales}), {"x": x})
    plugin = resize.Resize("rz", mode="linear")
    _configured(plugin, [(x.shape, DataType.FLOAT), None, (scales.shape, DataType.FLOAT)],
                [(want.shape, DataType.FLOAT)], fmt, 2)
    monkeypatch.setattr(_resize, "tables", lambda *a: None)
    out = np.full(to_format(want, fmt).shape, np.nan, np.float32)
    plugin.enqueue([to_format(x, fmt), None, scales], [out], None, None)
    assert plugin._bz_last is None  # no blocked call was made
    _close(from_format(out, fmt, want.shape), want)
    assert not out[:, -1, ..., 11 - (out.shape[1] - 1) * fmt.block:].any()
