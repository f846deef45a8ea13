"""The activations mini-infer-cpu-native's Conv absorbs after its clamp (ConvFusion's
``__act__``: HardSwish, HardSigmoid, Sigmoid, Swish as exporters write it), against
onnxruntime (onnx's ReferenceEvaluator for float64) on real ONNX models built into engines:
on every path of the plugin (the direct convolution's AVX2 depthwise tiles and its grouped
sums, the compiled GEMM's epilogue for 1x1 and im2col convolutions, Winograd's output rows,
the depthwise kernel of ``_kernels.c`` and cpu_basic's NumPy paths with the activation after
them), with and without a residual before the activation, strides 2, 5x5, dilation, odd sizes
and uneven padding, at 1 and 2 threads; and that the builder fuses these activations only
into a plugin that declares them (cpu_basic's Conv does not), and that the fusion survives an
engine written to disk and read back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conv_epilogues import ACTIVATIONS, epilogue, ort_y, run_twice
from mini_infer_cpu_native import NAMESPACE, _act, _conv_gemm, _dconv, _winograd, conv
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core

RNG = np.random.default_rng(57)


class _Counts:
    """How often each Conv path made its calls: ``ran["dconv"]``..."""

    def __init__(self, counters: list[dict[str, int]]) -> None:
        self.counters = counters

    def __getitem__(self, key: str) -> int:
        return next(c[key] for c in self.counters if key in c)


@pytest.fixture
def ran(count_calls: Callable[[Any, str, str], dict[str, int]]) -> _Counts:
    return _Counts([count_calls(module, name, key) for module, name, key in (
        (_dconv, "dconv2d_call", "dconv"), (_conv_gemm, "gemm_conv_calls", "gemm"),
        (_winograd, "winograd_calls", "winograd"), (conv, "dwconv2d", "dwconv2d"))])


def _model(xshape: tuple[int, ...], m: int, group: int, kernel: tuple[int, int],
           attrs: dict[str, Any], after: str, dtype: Any = np.float32) -> onnx.ModelProto:
    c = xshape[1]
    scale = 1.0 / np.sqrt(c // group * kernel[0] * kernel[1])
    inits: dict[str, Any] = {
        "w": (RNG.standard_normal((m, c // group, *kernel)) * 2 * scale).astype(dtype),
        "b": (RNG.standard_normal(m) * 0.5).astype(dtype)}
    nodes = [helper.make_node("Relu", ["x"], ["xr"]),  # an arena input, as inside a model
             helper.make_node("Conv", ["xr", "w", "b"], ["c"], group=group,
                              kernel_shape=list(kernel), **attrs)]
    nodes += epilogue(after, inits)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, list(xshape))],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(np.asarray(v, dtype) if k in ("w", "b") else v, k)
         for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run(model: onnx.ModelProto, x: np.ndarray, **config: Any) -> tuple[Any, np.ndarray]:
    return run_twice(model, x, time_tactics=False, **config)


def _want(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float64:
        return np.asarray(ReferenceEvaluator(model).run(None, {"x": x})[0])
    return ort_y(model, x)


def _check(xshape: tuple[int, ...], m: int, group: int, kernel: tuple[int, int],
           attrs: dict[str, Any], after: str, dtype: Any = np.float32) -> None:
    """Built, run, compared; the Conv took the activation (and the residual): one node."""
    model = _model(xshape, m, group, kernel, attrs, after, dtype)
    x = RNG.standard_normal(xshape).astype(dtype)
    engine, got = _run(model, x)
    convs = [n for n in engine.nodes if n.op_type == "Conv"]
    assert [n.op_type for n in engine.nodes] == ["Relu", "Conv"]
    assert convs[0].plugin_namespace == NAMESPACE
    assert convs[0].plugin.hidden["__act__"] == after.split("+")[-1]
    want = _want(model, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


AFTER = [*ACTIVATIONS, "Add+HardSwish", "Add+Swish"]

DIRECT = [  # x shape, M, group, kernel, attrs: the direct convolution (_dconv.c)
    ((1, 16, 20, 20), 16, 16, (3, 3), {"pads": [1, 1, 1, 1]}),  # depthwise 3x3
    ((1, 16, 21, 19), 16, 16, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 12, 14, 14), 12, 12, (5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),  # 7x7 out
    ((1, 8, 7, 7), 8, 8, (5, 5), {"pads": [2, 2, 2, 2]}),  # rows of 4 and then 3
    ((1, 8, 9, 15), 8, 8, (3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),  # DeepLab
    ((1, 6, 11, 37), 6, 6, (3, 5), {"pads": [0, 1, 2, 3]}),  # odd, uneven pads: 1-5 vectors
    ((1, 10, 5, 13), 10, 10, (3, 3), {"pads": [1, 1, 1, 1]}),  # 2 vectors: rows of 2, then 1
    ((1, 48, 14, 14), 48, 6, (3, 3), {"pads": [1, 1, 1, 1]}),  # RegNet's groups of 8
    ((1, 48, 15, 15), 48, 6, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    # copies over BAND_MIN: by bands of rows, Sigmoid / Swish applied to each band after it
    ((1, 8, 190, 170), 8, 8, (3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 8, 201, 190), 8, 8, (5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),
]


def _residual_fits(xshape: tuple[int, ...], m: int, attrs: dict[str, Any]) -> bool:
    return m == xshape[1] and "strides" not in attrs and xshape != (1, 6, 11, 37)


@pytest.mark.parametrize("xshape, m, group, kernel, attrs", DIRECT)
@pytest.mark.parametrize("after", AFTER)
def test_direct_convolution_applies_the_activation(
        xshape: tuple[int, ...], m: int, group: int, kernel: tuple[int, int],
        attrs: dict[str, Any], after: str, ran: _Counts) -> None:
    if after.startswith("Add") and not _residual_fits(xshape, m, attrs):
        pytest.skip("the residual needs an output shaped like the input")
    _check(xshape, m, group, kernel, attrs, after)
    assert ran["dconv"] >= 1


@pytest.mark.parametrize("after", ["HardSwish", "Add+Swish"])
def test_direct_convolution_on_the_pool(after: str, threads: int, ran: _Counts) -> None:
    _check((2, 40, 33, 35), 40, 40, (5, 5), {"pads": [2, 2, 2, 2]}, after)
    _check((1, 64, 28, 28), 64, 8, (3, 3), {"pads": [1, 1, 1, 1]}, after)
    assert ran["dconv"] >= 1


GEMM = [  # the compiled GEMM: 1x1 (the input read in place) and im2col convolutions
    ((1, 24, 12, 12), 40, (1, 1), {}),
    ((2, 16, 9, 7), 16, (1, 1), {}),  # odd columns: masked vectors; two images
    ((1, 16, 15, 15), 32, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    # a stem-like im2col (3 and 4 input channels take _pw.c where AVX2 runs: test_pw.py)
    ((1, 5, 31, 31), 16, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 96, 7, 7), 960, (1, 1), {}),  # MobileNetV3's last 1x1: several tiles on the pool
]


@pytest.mark.parametrize("xshape, m, kernel, attrs", GEMM)
@pytest.mark.parametrize("after", AFTER)
def test_gemm_epilogue_applies_the_activation(
        xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
        after: str, ran: _Counts) -> None:
    if not _conv_gemm_runs():
        pytest.skip("the compiled GEMM has no vector kernels on this CPU")
    if after.startswith("Add") and not (m == xshape[1] and "strides" not in attrs):
        pytest.skip("the residual needs an output shaped like the input")
    _check(xshape, m, 1, kernel, attrs, after)
    assert ran["gemm"] >= 1


def _conv_gemm_runs() -> bool:
    from mini_infer_cpu_native._native import gemm_available
    return gemm_available()


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("after", AFTER)
def test_winograd_output_applies_the_activation(tile: int, after: str, ran: _Counts,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_winograd, "MIN_TILES_4", 1 if tile == 4 else 10**9)
    _check((1, 32, 17, 15), 32, 1, (3, 3), {"pads": [1, 1, 1, 1]}, after)
    assert ran["winograd"] >= 1


@pytest.mark.parametrize("after", ["HardSigmoid", "Add+Swish"])
def test_the_depthwise_kernel_without_avx2_applies_it_after(after: str,
                                                            ran: _Counts) -> None:
    """The plain copies (mi_act_set_isa(0)): 3x3 depthwise on _kernels.c's kernel, the
    activation after it; the direct convolution's plain sums and rows."""
    _act.set_act_isa(0)
    try:
        _check((1, 16, 20, 20), 16, 16, (3, 3), {"pads": [1, 1, 1, 1]}, after)
        _check((1, 16, 20, 20), 16, 16, (5, 5), {"pads": [2, 2, 2, 2]}, after)
    finally:
        _act.set_act_isa(None)
    assert ran["dwconv2d"] >= 1
    assert ran["dconv"] >= 1


@pytest.mark.parametrize("after", AFTER)
def test_float64_convolutions_apply_it_after_cpu_basic_s(after: str) -> None:
    _check((1, 8, 9, 9), 8, 1, (3, 3), {"pads": [1, 1, 1, 1]}, after, np.float64)
    _check((1, 8, 9, 9), 8, 8, (3, 3), {"pads": [1, 1, 1, 1]}, after, np.float64)


def test_nothing_after_the_activation_is_fused() -> None:
    """Conv, HardSwish, Relu: the Relu stays a node of its own (it comes after)."""
    model = _model((1, 8, 10, 10), 8, 8, (3, 3), {"pads": [1, 1, 1, 1]}, "HardSwish+Relu")
    x = RNG.standard_normal((1, 8, 10, 10)).astype(np.float32)
    engine, got = _run(model, x)
    # (the Relu, Conv, Relu run may go blocked: Reformat nodes at its edges)
    assert [n.op_type for n in engine.nodes if n.op_type != "Reformat"] == [
        "Relu", "Conv", "Relu"]
    np.testing.assert_allclose(got, _want(model, x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("after", ACTIVATIONS)
def test_only_a_plugin_that_declares_them_absorbs_them(after: str) -> None:
    """cpu_basic's Conv (pinned) keeps its Relu/Clip-only fusion: the activation stays a node,
    and the result is the same."""
    model = _model((1, 8, 10, 10), 8, 1, (3, 3), {"pads": [1, 1, 1, 1]}, after)
    x = RNG.standard_normal((1, 8, 10, 10)).astype(np.float32)
    engine, got = _run(model, x, pins={"Conv": "mini-infer-cpu-plugins"})
    kinds = [n.op_type for n in engine.nodes]
    assert kinds[:2] == ["Relu", "Conv"] and len(kinds) == 3
    assert kinds[2] == ("Swish" if after == "Swish" else after)
    assert "__act__" not in engine.nodes[1].plugin.fields_to_serialize()
    np.testing.assert_allclose(got, _want(model, x), rtol=1e-4, atol=1e-5)
    native, _ = _run(model, x)
    assert [n.op_type for n in native.nodes] == ["Relu", "Conv"]


def test_the_fused_activation_survives_the_engine_file(tmp_path: Path) -> None:
    model = _model((1, 8, 10, 10), 8, 8, (5, 5), {"pads": [2, 2, 2, 2]}, "HardSigmoid")
    x = RNG.standard_normal((1, 8, 10, 10)).astype(np.float32)
    engine, got = _run(model, x)
    path = tmp_path / "m.engine"
    path.write_bytes(engine.serialize())
    back = mini_infer_core.Runtime().deserialize_engine(path.read_bytes())
    conv = [n for n in back.nodes if n.op_type == "Conv"][0]
    assert conv.plugin.hidden["__act__"] == "HardSigmoid"
    np.testing.assert_allclose(conv.plugin.hidden["__act_args__"], (0.3, 0.45), rtol=1e-6)
    np.testing.assert_array_equal(back.create_execution_context().execute({"x": x})["y"], got)
