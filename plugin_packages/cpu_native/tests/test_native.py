"""mini-infer-cpu-native against onnxruntime: depthwise convolutions (strides, pads,
dilations, bias, fused Relu/Clip and residual), max and average pooling (pads, ceil_mode,
dilations, count_include_pad), the GEMM epilogue, the cases handed back to cpu_basic, and the
plugins' metadata, catalog and serialized form."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from conv_epilogues import epilogue
from mini_infer_cpu_native import (
    NAMESPACE,
    _conv_gemm,
    _conv_tactics,
    _dconv,
    _native,
    _pw,
    _winograd,
    activations,
    conv,
    gemm,
    normalization,
    pool,
    resize,
)
from mini_infer_cpu_native._act import act_isa
from mini_infer_cpu_native.catalog import NativeCreator, lazy_creators
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core
from mini_infer_core.errors import PluginInterfaceError

RNG = np.random.default_rng(5)


def _model(nodes: list[Any], x: np.ndarray, inits: dict[str, np.ndarray],
           opset: int = 17) -> onnx.ModelProto:
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", elem, list(x.shape))],
        [helper.make_tensor_value_info("y", elem, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _compare(model: onnx.ModelProto, x: np.ndarray, native_ops: set[str],
             rtol: float = 1e-5, atol: float = 1e-5) -> None:
    """Built by mini-infer (``native_ops`` taken by this distribution's plugins) and run
    against onnxruntime (onnx's ReferenceEvaluator for float64 convolutions, which
    onnxruntime lacks)."""
    # each plugin's own default path (the build's tactic timing would run kernels too)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    sess = mini_infer_core.InferenceSession(engine)
    chosen = {n.op_type for n in sess.engine.nodes if n.plugin_namespace == NAMESPACE}
    assert chosen == native_ops
    got = sess.run(None, {"x": x})[0]
    if x.dtype == np.float64:
        want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    else:
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """How often each compiled kernel ran (so a test fails if the NumPy path took over)."""
    count = {"dwconv2d": 0, "pool2d": 0, "bias_act": 0, "winograd_conv": 0, "im2col": 0,
             "lrn": 0, "scale_shift": 0, "gemm_conv": 0, "gemm": 0, "gemm_batch": 0,
             "dconv": 0}
    # (module, function) counted under each name: the compiled GEMM paths make their calls
    # once (``*_calls``, ``*_call``) and run them again while the arrays stay the same
    owners: dict[str, list[tuple[Any, str]]] = {
        "winograd_conv": [(_winograd, "winograd_calls")],
        "gemm_conv": [(_conv_gemm, "gemm_conv_calls")],
        "im2col": [(conv, "im2col"), (_conv_gemm, "im2col_call")],
        "gemm": [(_conv_gemm, "gemm_call")], "gemm_batch": [(_winograd, "gemm_batch_call")],
        "dconv": [(_dconv, "dconv2d_call")], "pool2d": [(pool, "pool2d_call")],
        "dwconv2d": [(conv, "dwconv2d")], "bias_act": [(conv, "bias_act")],
        "lrn": [(normalization, "lrn")], "scale_shift": [(normalization, "scale_shift")]}
    for name in count:
        for owner, attr in owners[name]:
            real = getattr(owner, attr)

            def counted(*args: Any, _real: Any = real, _name: str = name, **kw: Any) -> Any:
                count[_name] += 1
                return _real(*args, **kw)

            monkeypatch.setattr(owner, attr, counted)
    # the paths these tests count (GEMM, im2col): few-channel 1x1 convolutions over large
    # maps and stems would take _pw.c where AVX2 runs (tested in test_pw.py)
    monkeypatch.setattr(_pw, "applies", lambda *args: False)
    yield count


@pytest.fixture(params=["compiled GEMM", "BLAS"])
def gemm_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The GEMM convolutions run on: the compiled GEMM (AVX-512 or AVX2 CPUs) or, where it cannot
    run, cpu_basic's BLAS paths with the compiled im2col and epilogue."""
    if request.param == "compiled GEMM" and not _native.gemm_available():
        pytest.skip("this CPU has neither AVX-512 nor AVX2: the compiled GEMM does not run here")
    if request.param == "BLAS":
        monkeypatch.setattr(gemm, "gemm_available", lambda: False)
        monkeypatch.setattr(_conv_tactics, "gemm_available", lambda: False)
        monkeypatch.setattr(_winograd, "gemm_available", lambda: False)
    return str(request.param)


DEPTHWISE = [
    ((1, 8, 12, 12), (3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 5, 13, 11), (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 6, 14, 14), (5, 5), {"pads": [2, 2, 2, 2]}),
    ((1, 4, 15, 16), (3, 3), {"strides": [3, 2]}),
    ((1, 7, 12, 12), (3, 3), {"pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    ((1, 3, 9, 10), (3, 1), {"pads": [1, 0, 2, 0], "strides": [1, 2]}),
    ((1, 5, 10, 10), (3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    # over PARALLEL_MIN values: the channels split between the pool's threads
    ((2, 9, 41, 37), (3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 11, 60, 58), (5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),
]


def _same_shape(xshape: Any, kernel: Any, attrs: dict[str, Any]) -> bool:
    return kernel == (3, 3) and attrs.get("pads") == [1, 1, 1, 1] and "strides" not in attrs


@pytest.mark.parametrize("xshape, kernel, attrs, after", [
    (*case, after) for case in DEPTHWISE for after in ("", "Relu", "Clip", "Add")
    if after != "Add" or _same_shape(*case)])
def test_depthwise_conv(xshape: tuple[int, ...], kernel: tuple[int, int], attrs: dict[str, Any],
                        after: str, calls: dict[str, int]) -> None:
    c = xshape[1]
    x = RNG.standard_normal(xshape).astype(np.float32)
    inits = {"w": RNG.standard_normal((c, 1, *kernel)).astype(np.float32),
             "b": RNG.standard_normal(c).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if after else "y"], group=c,
                              kernel_shape=list(kernel), **attrs)]
    nodes += epilogue(after, inits)
    _compare(_model(nodes, x, inits), x, {"Conv"})
    # fewer than MIN_GROUPS channels, and 3x3 without the AVX2 kernels of _dconv.c: the
    # depthwise kernel's nine taps in one pass; the others summed in registers
    direct = c >= _dconv.MIN_GROUPS and (kernel != (3, 3) or act_isa() >= 1)
    assert calls["dconv" if direct else "dwconv2d"] == 1


WINOGRAD = [
    # (N, C, H, W), M, attrs, block bytes (small: several blocks of tile rows, a short last)
    ((1, 32, 16, 16), 32, {"pads": [1, 1, 1, 1]}, None),
    ((2, 40, 17, 15), 36, {"pads": [1, 1, 1, 1]}, 64 * 1024),   # odd sizes: edge tiles cut
    ((1, 32, 18, 20), 48, {}, 48 * 1024),                         # no padding
    ((1, 33, 16, 17), 32, {"pads": [2, 0, 0, 1]}, None),          # uneven pads
    ((1, 96, 14, 14), 32, {"auto_pad": "SAME_UPPER"}, None),      # 7x7 tiles, many channels
]


@pytest.fixture
def tiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The output tile size (2 or 4) of every Winograd convolution that ran."""
    seen: list[int] = []
    real = _winograd.winograd_calls

    def recorded(x: Any, u: Any, *args: Any) -> Any:
        seen.append(2 if u.shape[1] == 16 else 4)
        return real(x, u, *args)

    monkeypatch.setattr(_winograd, "winograd_calls", recorded)
    return seen


@pytest.mark.parametrize("xshape, m, attrs, block", WINOGRAD)
@pytest.mark.parametrize("after", ["", "Relu", "Clip", "Add"])
@pytest.mark.parametrize("tile", [2, 4])
def test_winograd_conv(xshape: tuple[int, ...], m: int, attrs: dict[str, Any],
                       block: int | None, after: str, tile: int, calls: dict[str, int],
                       tiles: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    if block is not None:  # blocks of that size, whatever U's
        monkeypatch.setattr(_winograd, "BLOCK_BYTES", block)
        monkeypatch.setattr(_winograd, "BLOCK_PER_WEIGHTS", 0)
    # the default takes F(4x4) from MIN_TILES_4 tiles: 1 takes it everywhere, 10**9 nowhere
    monkeypatch.setattr(_winograd, "MIN_TILES_4", 1 if tile == 4 else 10**9)
    x = RNG.standard_normal(xshape).astype(np.float32)
    inits = {"w": (RNG.standard_normal((m, xshape[1], 3, 3)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(m).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c" if after else "y"],
                              kernel_shape=[3, 3], **attrs)]
    if after == "Relu":
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    elif after == "Clip":
        inits |= {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}
        nodes.append(helper.make_node("Clip", ["c", "lo", "hi"], ["y"]))
    elif after == "Add":  # a residual of the output's shape, computed by another node
        nodes += [helper.make_node("Conv", ["x", "w"], ["d"], kernel_shape=[3, 3],
                                   strides=[1, 1], **attrs),
                  helper.make_node("Neg", ["d"], ["e"]),
                  helper.make_node("Add", ["c", "e"], ["y"])]
    # F(4x4)'s transforms multiply by up to 8: a few more float32 roundings (~1e-5 of the
    # output's scale, which is ~5 here)
    _compare(_model(nodes, x, inits), x, {"Conv", "Add"} if after == "Add" else {"Conv"},
             rtol=1e-4, atol=1e-4 if tile == 2 else 3e-4)
    assert calls["winograd_conv"] == (2 if after == "Add" else 1)
    assert tiles == [tile] * calls["winograd_conv"]


def test_winograd_is_not_taken_where_it_does_not_pay(calls: dict[str, int]) -> None:
    """Strided, dilated, grouped, few channels, small maps: cpu_basic's GEMM paths."""
    for xshape, m, attrs in [((1, 32, 16, 16), 32, {"strides": [2, 2]}),
                             ((1, 32, 16, 16), 32, {"dilations": [2, 2]}),
                             ((1, 32, 16, 16), 32, {"group": 2}),
                             ((1, 16, 16, 16), 32, {}),
                             ((1, 64, 13, 13), 64, {})]:
        x = RNG.standard_normal(xshape).astype(np.float32)
        g = attrs.get("group", 1)
        w = (RNG.standard_normal((m, xshape[1] // g, 3, 3)) * 0.2).astype(np.float32)
        node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], **attrs)
        _compare(_model([node], x, {"w": w}), x, {"Conv"}, rtol=1e-4, atol=1e-4)
    assert calls["winograd_conv"] == 0


@pytest.mark.parametrize("xshape, m, kernel, attrs", [
    ((1, 3, 23, 21), 8, (7, 7), {"strides": [2, 2], "pads": [3, 3, 3, 3]}),   # a stem
    ((2, 4, 19, 19), 6, (5, 5), {"strides": [3, 2], "pads": [1, 2, 0, 1]}),
    ((1, 5, 15, 16), 4, (3, 3), {"dilations": [2, 3], "pads": [2, 1, 2, 1]}),
    ((1, 3, 31, 31), 4, (11, 11), {"strides": [4, 4]}),                      # AlexNet's
    ((1, 6, 12, 12), 6, (3, 3), {"strides": [2, 2], "pads": [1, 1, 1, 1], "group": 2}),
])
def test_im2col_convolutions(xshape: tuple[int, ...], m: int, kernel: tuple[int, int],
                             attrs: dict[str, Any], calls: dict[str, int],
                             gemm_path: str) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    g = attrs.get("group", 1)
    inits = {"w": (RNG.standard_normal((m, xshape[1] // g, *kernel)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(m).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=list(kernel),
                              **attrs), helper.make_node("Relu", ["c"], ["y"])]
    _compare(_model(nodes, x, inits), x, {"Conv"}, rtol=1e-4, atol=1e-4)
    if gemm_path == "BLAS":
        assert (calls["im2col"], calls["gemm_conv"]) == (1, 0)  # the whole batch at once
    else:  # one band per image, one GEMM per group
        assert calls["gemm_conv"] == 1 and calls["im2col"] == xshape[0]
        assert calls["gemm"] == xshape[0] * g


ONE_D = [
    ((1, 1, 640), 258, 256, {"strides": [128]}),                    # silero's STFT
    ((1, 129, 4), 128, 3, {"pads": [1, 1]}),
    ((2, 10, 37), 12, 3, {"pads": [1, 1], "strides": [2]}),          # Whisper's stem
    ((1, 16, 41), 16, 7, {"pads": [3, 3], "dilations": [2], "group": 4}),
    ((1, 12, 50), 12, 16, {"pads": [8, 8], "group": 4}),             # wav2vec2's pos_conv
    ((1, 5, 30), 6, 4, {"auto_pad": "SAME_UPPER", "strides": [3]}),
    ((1, 4, 40), 6, 10, {"strides": [5]}),                           # wav2vec2's first
]


@pytest.mark.parametrize("xshape, m, k, attrs", ONE_D)
def test_1d_convolutions_run_as_2d_on_the_compiled_gemm(
        xshape: tuple[int, ...], m: int, k: int, attrs: dict[str, Any], calls: dict[str, int],
        gemm_path: str) -> None:
    """float32 1-D convolutions (with bias and a fused Relu) take the compiled 2-D paths as
    height-1 convolutions: the same results as onnxruntime, W packed at build time for the
    compiled GEMM, no NumPy im2col."""
    x = RNG.standard_normal(xshape).astype(np.float32)
    g = attrs.get("group", 1)
    inits = {"w": (RNG.standard_normal((m, xshape[1] // g, k)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(m).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k], **attrs),
             helper.make_node("Relu", ["c"], ["y"])]
    model = _model(nodes, x, inits)
    _compare(model, x, {"Conv"}, rtol=1e-4, atol=1e-4)
    if _dconv.applies((xshape[0], xshape[1], 1, xshape[2]), (m, xshape[1] // g, 1, k), g):
        # narrow groups (test_dconv.py): the direct path, whatever the GEMM
        assert calls["dconv"] == 1 and calls["im2col"] == calls["gemm_conv"] == 0
    elif gemm_path == "BLAS":
        assert calls["im2col"] >= 1 and calls["gemm_conv"] == 0
    else:
        assert calls["gemm_conv"] == 1 and calls["gemm"] == xshape[0] * g
        engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
            device="cpu", time_tactics=False))
        assert engine.nodes[0].plugin.hidden.get("__wpacked__") == 1


def test_1d_depthwise_convolution_runs_a_compiled_kernel(calls: dict[str, int]) -> None:
    """A 1-D depthwise convolution: the direct path (a (1, 5) window; only 3x3 windows take
    the depthwise kernel), not NumPy's."""
    x = RNG.standard_normal((2, 8, 50)).astype(np.float32)
    w = RNG.standard_normal((8, 1, 5)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], group=8, pads=[2, 2], strides=[2])
    _compare(_model([node], x, {"w": w}), x, {"Conv"}, rtol=1e-4, atol=1e-4)
    assert calls["dconv"] == 1 and calls["dwconv2d"] == calls["im2col"] == 0


def test_float64_1d_convolutions_stay_cpu_basic_s(calls: dict[str, int]) -> None:
    x = RNG.standard_normal((1, 3, 20))
    w = RNG.standard_normal((4, 3, 3))
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1])
    _compare(_model([node], x, {"w": w}), x, {"Conv"})
    assert calls["gemm_conv"] == calls["im2col"] == calls["dwconv2d"] == 0


@pytest.mark.parametrize("xshape, m, kernel, attrs", [
    ((1, 16, 40, 1), 8, (5, 1), {}),                                  # Magika's shape
    ((2, 6, 33, 1), 4, (3, 1), {"group": 2, "pads": [1, 0, 2, 0], "strides": [2, 1]}),
    ((1, 4, 21, 1), 6, (3, 1), {"dilations": [2, 1], "strides": [2, 3]}),
    ((1, 4, 21, 1), 6, (3, 1), {"pads": [1, 1, 1, 1]}),               # padded across: as is
])
def test_column_convolutions(xshape: tuple[int, ...], m: int, kernel: tuple[int, int],
                             attrs: dict[str, Any], gemm_path: str,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    """(H, 1) inputs by (KH, 1) kernels: the compiled path's im2col gathers them as the
    (1, H) rows they are in memory (not where padding reaches across); against
    onnxruntime."""
    kernels: list[tuple[int, int]] = []
    real = _conv_gemm.im2col_call

    def seen(x: Any, cols: Any, kernel: tuple[int, int], *args: Any) -> Any:
        kernels.append(tuple(kernel))
        return real(x, cols, kernel, *args)

    monkeypatch.setattr(_conv_gemm, "im2col_call", seen)
    x = RNG.standard_normal(xshape).astype(np.float32)
    g = attrs.get("group", 1)
    w = (RNG.standard_normal((m, xshape[1] // g, *kernel)) * 0.2).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=list(kernel), **attrs)
    _compare(_model([node], x, {"w": w}), x, {"Conv"}, rtol=1e-4, atol=1e-4)
    if gemm_path == "compiled GEMM":
        swapped = attrs.get("pads", [0, 0, 0, 0])[1::2] == [0, 0]
        assert kernels and set(kernels) == {(1, kernel[0]) if swapped else kernel}


def test_im2col_in_bands_writes_the_gemm_into_the_output(calls: dict[str, int],
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        gemm_path: str) -> None:
    """Columns over the budget go in bands of output rows (a short last band too)."""
    monkeypatch.setattr(conv.Conv, "row_budget", 3 * 1024)
    monkeypatch.setattr(_conv_gemm, "BAND_BYTES", 3 * 1024)
    x = RNG.standard_normal((2, 3, 21, 19)).astype(np.float32)
    inits = {"w": (RNG.standard_normal((5, 3, 5, 5)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(5).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[5, 5],
                              strides=[2, 1], pads=[2, 1, 2, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    _compare(_model(nodes, x, inits), x, {"Conv"}, rtol=1e-4, atol=1e-4)
    assert calls["im2col"] > 2  # several bands per image


def test_a_stem_over_a_large_image_runs_in_bands_of_its_default_size(
        calls: dict[str, int]) -> None:
    """A stem (3 input channels, small weights) over a 300 x 333 image, batch 2: columns of
    1 MiB per band (29 output rows of 333, 27 values each), a short last band, each band's
    GEMM writing its rows of the output."""
    if not _native.gemm_available():
        pytest.skip("this CPU has neither AVX-512 nor AVX2: the compiled GEMM does not run here")
    x = RNG.standard_normal((2, 3, 300, 333)).astype(np.float32)
    inits = {"w": (RNG.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32),
             "b": RNG.standard_normal(16).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"])]
    _compare(_model(nodes, x, inits), x, {"Conv"}, rtol=1e-4, atol=1e-4)
    assert calls["im2col"] == 2 * 11  # 300 rows in 10 bands of 29 and one of 10, per image


@pytest.mark.parametrize("xshape, relu", [((2, 6, 5, 7), False), ((1, 4, 9), True),
                                          ((3, 5), True),
                                          ((2, 7, 39, 41), True)])  # split between threads
def test_batch_normalization(xshape: tuple[int, ...], relu: bool,
                             calls: dict[str, int]) -> None:
    c = xshape[1]
    x = RNG.standard_normal(xshape).astype(np.float32)
    inits = {"s": RNG.uniform(0.5, 2, c).astype(np.float32),
             "b": RNG.standard_normal(c).astype(np.float32),
             "m": RNG.standard_normal(c).astype(np.float32),
             "v": RNG.uniform(0.1, 3, c).astype(np.float32)}
    nodes = [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"],
                              ["t" if relu else "y"], epsilon=1e-3)]
    if relu:
        nodes.append(helper.make_node("Relu", ["t"], ["y"]))
    _compare(_model(nodes, x, inits), x, {"BatchNormalization"}, rtol=1e-5, atol=1e-5)
    assert calls["scale_shift"] == 1


def _lrn_spec(x: np.ndarray, size: int, alpha: float = 1e-4, beta: float = 0.75,
              bias: float = 1.0) -> np.ndarray:
    """LRN as the ONNX spec writes it, in float64: the oracle where onnxruntime has no kernel
    (even sizes, float64) and ReferenceEvaluator's LRN sums the wrong axis (onnx 1.x loops
    over the batch instead of the channels)."""
    x64, c = x.astype(np.float64), x.shape[1]
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    s = np.stack([np.sum(x64[:, max(0, k - lo): min(c - 1, k + hi) + 1] ** 2, axis=1)
                  for k in range(c)], axis=1)
    return x64 / (bias + alpha / size * s) ** beta


@pytest.mark.parametrize("xshape, attrs", [
    ((1, 96, 13, 13), {"size": 5}),                                   # AlexNet's, defaults
    ((2, 37, 31, 29), {"size": 5}),                    # split between the pool's threads
    ((2, 7, 5, 6), {"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}),
    ((1, 6, 4, 4), {"size": 4, "alpha": 0.1, "beta": 0.6}),           # even size, any beta
    ((1, 3, 4, 5), {"size": 7, "alpha": 0.2}),                        # window over all
    ((1, 5, 3, 3), {"size": 1}),
])
def test_lrn(xshape: tuple[int, ...], attrs: dict[str, Any], calls: dict[str, int]) -> None:
    x = (RNG.standard_normal(xshape) * 3).astype(np.float32)
    model = _model([helper.make_node("LRN", ["x"], ["y"], **attrs)], x, {})
    if attrs["size"] % 2:
        _compare(model, x, {"LRN"}, rtol=1e-5, atol=1e-6)
    else:  # onnxruntime takes odd sizes only
        got = mini_infer_core.InferenceSession(model).run(None, {"x": x})[0]
        np.testing.assert_allclose(got, _lrn_spec(x, **attrs), rtol=1e-5, atol=1e-6)
    assert calls["lrn"] == 1


def test_float64_lrn_is_cpu_basic_s(calls: dict[str, int]) -> None:
    x = RNG.standard_normal((1, 6, 4, 4))
    model = _model([helper.make_node("LRN", ["x"], ["y"], size=3)], x, {})
    got = mini_infer_core.InferenceSession(model).run(None, {"x": x})[0]
    # the default alpha is ONNX's, a float32 as every float attribute of a model
    np.testing.assert_allclose(got, _lrn_spec(x, 3, alpha=float(np.float32(1e-4))), rtol=1e-12)
    assert calls["lrn"] == 0


POOLS = [
    ((1, 6, 16, 16), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((2, 5, 15, 15), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ((1, 4, 111, 111), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 4, 14, 13), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 3, 9, 10), {"kernel_shape": [5, 3], "pads": [2, 1, 2, 1]}),
    ((1, 3, 12, 12), {"kernel_shape": [3, 3], "pads": [2, 0, 0, 2], "strides": [1, 3]}),
    ((1, 3, 12, 12), {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [1, 1, 1, 1]}),
    # stride 1, output the input's size: one flat loop per tap, border columns redone
    ((1, 5, 11, 9), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((1, 3, 16, 16), {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ((1, 3, 10, 12), {"kernel_shape": [3, 5], "pads": [0, 4, 2, 0]}),
    ((1, 2, 7, 7), {"kernel_shape": [7, 7]}),
    ((1, 3, 10, 10), {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    # MaxPool's AVX2 path (_pool_avx2.h): small maps, two vectors of outputs, odd ones;
    # kernels 2-5 wide (stride 2 reads pairs); past its limits: pool2d's passes
    ((2, 8, 27, 27), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ((1, 9, 55, 57), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 4, 13, 13), {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}),  # YOLO's SPP
    ((1, 5, 20, 19), {"kernel_shape": [4, 4], "strides": [2, 2], "pads": [1, 2, 1, 2]}),
    ((1, 3, 40, 300), {"kernel_shape": [3, 3], "strides": [2, 2]}),  # 149 columns
    ((1, 4, 9, 9), {"kernel_shape": [3, 6], "strides": [2, 2]}),  # 6 wide
    # outputs of 2x2, 3x2: a row's vector reaches past the plane (stored masked there)
    ((1, 3, 4, 4), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((2, 4, 6, 5), {"kernel_shape": [2, 2], "strides": [2, 2]}),
]


@pytest.mark.parametrize("xshape, attrs", POOLS)
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool", "AveragePool+pad"])
def test_pooling(xshape: tuple[int, ...], attrs: dict[str, Any], op: str,
                 calls: dict[str, int]) -> None:
    attrs = dict(attrs)
    if op == "AveragePool+pad":
        op, attrs["count_include_pad"] = "AveragePool", 1
    x = RNG.standard_normal(xshape).astype(np.float32)
    opset = 19  # AveragePool dilations
    _compare(_model([helper.make_node(op, ["x"], ["y"], **attrs)], x, {}, opset), x,
             {op})
    assert calls["pool2d"] == 1


@pytest.mark.parametrize("hw", [10, 47])  # 47: the one-pass epilogue split between threads
@pytest.mark.parametrize("kernel, group, attrs", [
    ((1, 1), 1, {}),                                           # a plain GEMM
    ((3, 3), 1, {"pads": [1, 1, 1, 1], "strides": [2, 2]}),    # im2col
    ((1, 1), 2, {}),                                           # grouped, batched matmul
])
def test_gemm_epilogue_adds_bias_residual_and_relu_in_one_pass(
        kernel: tuple[int, int], group: int, attrs: dict[str, Any], hw: int,
        calls: dict[str, int], gemm_path: str) -> None:
    """BLAS paths: one compiled pass after the GEMM; the compiled GEMM: in its registers."""
    x = RNG.standard_normal((2, 8, hw, hw)).astype(np.float32)
    inits = {"w": RNG.standard_normal((8, 8 // group, *kernel)).astype(np.float32),
             "b": RNG.standard_normal(8).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group,
                              kernel_shape=list(kernel), **attrs)]
    if attrs:
        nodes.append(helper.make_node("Relu", ["c"], ["y"]))
    else:
        nodes += [helper.make_node("Add", ["c", "x"], ["s"]),
                  helper.make_node("Relu", ["s"], ["y"])]
    model = _model(nodes, x, inits)
    assert len(mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", negotiate_formats=False)).nodes) == 1  # everything fused into the Conv
    _compare(model, x, {"Conv"}, rtol=1e-5, atol=2e-5)
    if gemm_path == "BLAS":
        assert calls["bias_act"] >= 1
    else:
        assert calls["gemm_conv"] == 1 and calls["bias_act"] == 0


def _conv3x3(c: int, m: int, hw: int) -> tuple[onnx.ModelProto, np.ndarray]:
    x = RNG.standard_normal((1, c, hw, hw)).astype(np.float32)
    inits = {"w": (RNG.standard_normal((m, c, 3, 3)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(m).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"])]
    return _model(nodes, x, inits), x


def test_the_build_times_winograd_against_gemm_and_keeps_the_faster() -> None:
    model, x = _conv3x3(16, 16, 20)  # under the default's thresholds: timing decides
    # (LINEAR: timing the blocked format too might take the conv to blocked.py's kernel)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", negotiate_formats=False))
    report = engine.build_info["tactics"]["conv"]
    assert set(report["ms"]) == {"winograd", "winograd4", "gemm"}
    assert report["chosen"] == min(report["ms"], key=report["ms"].__getitem__)
    assert engine.nodes[0].plugin.hidden["__tactic__"] == report["chosen"]


@pytest.mark.parametrize("tactic, winograd_runs", [("winograd", [2]), ("winograd4", [4]),
                                                   ("gemm", []), ("", [])])
def test_each_tactic_computes_the_convolution(tactic: str, winograd_runs: list[int],
                                              calls: dict[str, int], tiles: list[int],
                                              gemm_path: str) -> None:
    model, x = _conv3x3(16, 24, 12)  # the default ("") takes GEMM: 16 channels < 32
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    engine.nodes[0].plugin.set_tactic(tactic)  # type: ignore[attr-defined]
    got = mini_infer_core.InferenceSession(engine).run(None, {"x": x})[0]
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=3e-4)
    assert tiles == winograd_runs
    compiled = gemm_path == "compiled GEMM"
    assert calls["gemm_batch"] == (len(winograd_runs) if compiled else 0)
    assert calls["gemm_conv"] == (int(not winograd_runs) if compiled else 0)


@pytest.mark.parametrize("tactic, tile", [("winograd", 2), ("winograd4", 4)])
@pytest.mark.parametrize("group", [2, 3])
def test_grouped_convolutions_run_winograd_group_by_group(
        tactic: str, tile: int, group: int, calls: dict[str, int], tiles: list[int],
        gemm_path: str) -> None:
    """AlexNet's two-group 3x3 layers: each group's products on its own U, with its slices
    of bias and residual."""
    c, m = 8 * group, 10 * group
    x = RNG.standard_normal((2, c, 16, 17)).astype(np.float32)
    inits = {"w": (RNG.standard_normal((m, c // group, 3, 3)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(m).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=group, pads=[1, 1, 1, 1],
                              name="conv"),
             helper.make_node("Conv", ["x", "w"], ["d"], group=group, pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c", "d"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    model = _model(nodes, x, inits)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    conv = next(n.plugin for n in engine.nodes if n.name == "conv")
    assert tactic in conv.get_tactics([x.shape, inits["w"].shape])  # type: ignore[attr-defined]
    for node in engine.nodes:
        node.plugin.set_tactic(tactic)  # type: ignore[attr-defined]
    got = mini_infer_core.InferenceSession(engine).run(None, {"x": x})[0]
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=3e-4)
    assert tiles == [tile, tile]


def test_depthwise_convolutions_are_never_winograd() -> None:
    dw = conv.Conv("c", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32)
    assert dw.get_tactics([(1, 32, 20, 20), (32, 1, 3, 3)]) == []
    dw.set_tactic("winograd")
    assert dw._wino_tile((1, 32, 20, 20), (32, 1, 3, 3), 4, 32) == 0


def test_a_node_keeps_its_compiled_calls_while_its_arrays_stay(calls: dict[str, int],
                                                               tiles: list[int]) -> None:
    """Later runs of a context replay the calls of its first (new inputs, new results); a
    tactic switched in between makes them anew. (The Conv reads an arena tensor: a node
    reading the caller's array, or writing a graph output, makes its calls each run.)"""
    x = RNG.standard_normal((1, 32, 16, 16)).astype(np.float32)
    inits = {"w": (RNG.standard_normal((32, 32, 3, 3)) * 0.2).astype(np.float32),
             "b": RNG.standard_normal(32).astype(np.float32)}
    model = _model([helper.make_node("Neg", ["x"], ["n"]),
                    helper.make_node("Conv", ["n", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                    helper.make_node("Relu", ["c"], ["r"]),
                    helper.make_node("Neg", ["r"], ["y"])], x, inits)
    engine = mini_infer_core.load(model, config=mini_infer_core.BuilderConfig(
        device="cpu", time_tactics=False))
    ctx = engine.create_execution_context()
    conv = next(p for p, nd in zip(ctx.plugins, engine.nodes, strict=True)
                if nd.op_type == "Conv")
    oracle = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    for tactic in ("gemm", "winograd", "winograd4"):
        conv.set_tactic(tactic)
        for _ in range(3):
            feed = RNG.standard_normal(x.shape).astype(np.float32)
            got = ctx.execute({"x": feed})["y"]
            np.testing.assert_allclose(got, oracle.run(None, {"x": feed})[0], rtol=1e-4,
                                       atol=3e-4)
    # once per tactic (the GEMM tactic runs compiled only where the compiled GEMM does)
    assert calls["gemm_conv"] == (1 if _native.gemm_available() else 0)
    assert calls["winograd_conv"] == 2
    assert tiles == [2, 4]
    ctx.close()


@pytest.mark.parametrize("op", ["depthwise", "MaxPool", "LRN", "winograd"])
def test_without_scratch_for_the_workers_the_caller_computes_alone(
        op: str, calls: dict[str, int]) -> None:
    """Kernels split between the pool's threads give each worker scratch of its own; when that
    cannot be allocated, the whole job runs on the calling thread (not a part left undone)."""
    x = RNG.standard_normal((1, 32, 40, 40)).astype(np.float32)  # over PARALLEL_MIN
    if op == "depthwise":
        w = RNG.standard_normal((32, 1, 3, 3)).astype(np.float32)
        model = _model([helper.make_node("Conv", ["x", "w"], ["y"], group=32,
                                         pads=[1, 1, 1, 1])], x, {"w": w})
    elif op == "winograd":
        w = (RNG.standard_normal((32, 32, 3, 3)) * 0.2).astype(np.float32)
        model = _model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], x,
                       {"w": w})
    elif op == "MaxPool":
        model = _model([helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                                         strides=[2, 2])], x, {})
    else:
        model = _model([helper.make_node("LRN", ["x"], ["y"], size=5)], x, {})
    _native.fail_pool_scratch(True)
    try:
        _compare(model, x, {"Conv" if op in ("depthwise", "winograd") else op}, rtol=1e-4,
                 atol=1e-4)
    finally:
        _native.fail_pool_scratch(False)
    ran = {"depthwise": "dconv" if act_isa() >= 1 else "dwconv2d", "MaxPool": "pool2d",
           "LRN": "lrn",
           "winograd": "winograd_conv"}[op]
    assert calls[ran] == 1


def test_an_unknown_tactic_is_refused() -> None:
    with pytest.raises(PluginInterfaceError, match="unknown tactic 'fast'"):
        conv.Conv("c").set_tactic("fast")


def test_tactics_are_offered_only_where_winograd_can_run() -> None:
    plain = conv.Conv("c", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    assert plain.get_tactics([(1, 16, 20, 20), (16, 16, 3, 3)]) == ["winograd", "winograd4",
                                                                    "gemm"]
    # 4x4 tiles of 2x2 but only 2x2 of 4x4: no F(4x4)
    assert plain.get_tactics([(1, 16, 8, 8), (16, 16, 3, 3)]) == ["winograd", "gemm"]
    assert plain.get_tactics([(1, 16, 6, 6), (16, 16, 3, 3)]) == []  # 3x3 tiles: too few
    assert plain.get_tactics([(1, 4, 20, 20), (16, 4, 3, 3)]) == []  # too few channels
    strided = conv.Conv("c", kernel_shape=[3, 3], strides=[2, 2])
    assert strided.get_tactics([(1, 16, 20, 20), (16, 16, 3, 3)]) == []


@pytest.mark.parametrize("case", ["float64 depthwise", "grouped", "3-D pool", "Indices"])
def test_cases_without_a_compiled_kernel_go_to_cpu_basic(case: str,
                                                         calls: dict[str, int]) -> None:
    if case in ("float64 depthwise", "grouped"):
        dtype = np.float64 if case == "float64 depthwise" else np.float32
        x = RNG.standard_normal((1, 4, 9, 9)).astype(dtype)
        per_group = 1 if case == "float64 depthwise" else 2
        w = RNG.standard_normal((4, per_group, 3, 3)).astype(dtype)
        node = helper.make_node("Conv", ["x", "w"], ["y"], group=4 // per_group, pads=[1] * 4)
        _compare(_model([node], x, {"w": w}), x, {"Conv"})
        assert calls["dwconv2d"] == 0
        return
    if case == "3-D pool":
        x = RNG.standard_normal((1, 2, 5, 6, 7)).astype(np.float32)
        node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2, 2])
        _compare(_model([node], x, {}), x, {"MaxPool"})
    else:
        x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
        node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2])
        model = _model([node], x, {})
        model.graph.output.append(helper.make_tensor_value_info("i", TensorProto.INT64, None))
        sess = mini_infer_core.InferenceSession(model, device="cpu")
        got = sess.run(None, {"x": x})
        want = ort.InferenceSession(model.SerializeToString(),
                                    providers=["CPUExecutionProvider"]).run(None, {"x": x})
        np.testing.assert_allclose(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert calls["pool2d"] == 0


def test_the_lazy_creators_are_the_compiled_kernel_classes(plugin_kit: ModuleType) -> None:
    from mini_infer_cpu_native import conv_transpose, matmul

    kernels = [conv.Conv, gemm.Gemm, pool.MaxPool_1, pool.MaxPool,
               pool.AveragePool, normalization.LRN, normalization.BatchNormalization]
    kernels += [matmul.MatMul, resize.Resize_11, resize.Resize, conv_transpose.ConvTranspose]
    kernels += [getattr(activations, name) for name in activations.__all__]
    from mini_infer_cpu_native import qelementwise, qlayout, softmax

    kernels += [getattr(softmax, name) for name in softmax.__all__]

    kernels += [getattr(module, name) for module in (qelementwise, qlayout)
                for name in module.__all__]
    from mini_infer_cpu_native import squeeze

    kernels += [getattr(squeeze, name) for name in squeeze.__all__]
    from mini_infer_cpu_native import concat

    kernels += [concat.Concat]
    from mini_infer_cpu_native import blocked

    kernels += [blocked.Add, blocked.Relu, blocked.Clip_1, blocked.Clip_11]
    from mini_infer_cpu_native import qconv, qlinear, quantize_linear

    kernels += [getattr(module, name) for module in (qlinear, qconv, quantize_linear)
                for name in module.__all__]
    from mini_infer_cpu_native import rnn, split

    kernels += [getattr(module, name) for module in (rnn, split) for name in module.__all__
                if name != "NativeCreator"]
    from mini_infer_cpu_native import nbits

    kernels += [nbits.MatMulNBits]
    from mini_infer_cpu_native import qpool

    kernels += [qpool.QMaxPool]
    from mini_infer_cpu_native import qshuffle

    kernels += [qshuffle.Reshape_5, qshuffle.Slice]
    from mini_infer_cpu_native import logsumexp

    kernels += [getattr(logsumexp, name) for name in logsumexp.__all__]
    plugin_kit.check_kernel_catalog(lazy_creators(), kernels)


def test_creators_pass_the_plugin_kit_and_outrank_cpu_basic(plugin_kit: ModuleType,
                                                            creator_for: Any) -> None:
    for creator in lazy_creators():
        plugin_kit.check_creator_metadata(creator)
        assert creator.priority > 0 and creator.plugin_namespace == NAMESPACE
    assert creator_for("Conv", opset=17).plugin_namespace == NAMESPACE
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = RNG.standard_normal((3, 1, 3, 3)).astype(np.float32)
    conv = creator_for("Conv", opset=17)
    report = plugin_kit.check_plugin(conv, {"group": 3, "pads": [1, 1, 1, 1]}, [x, w])
    assert "serialize round trip" in report.checks
    pool = creator_for("MaxPool", opset=17)
    report = plugin_kit.check_plugin(pool, {"kernel_shape": [3, 3], "strides": [2, 2]}, [x])
    assert "serialize round trip" in report.checks


def test_corrupt_serialized_data_names_this_distribution() -> None:
    creator = NativeCreator(conv.Conv, namespace=NAMESPACE)
    with pytest.raises(PluginInterfaceError, match=r"this plugin \(mini-infer-cpu-native\) reads"):
        creator.deserialize_plugin("n", b"\x09junk")


def test_engine_written_here_runs_in_another_process(tmp_path: Path) -> None:
    c = 6
    x = RNG.standard_normal((1, c, 12, 12)).astype(np.float32)
    w = RNG.standard_normal((c, 1, 3, 3)).astype(np.float32)
    model = _model([helper.make_node("Conv", ["x", "w"], ["c"], group=c, pads=[1] * 4),
                    helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2],
                                     strides=[2, 2])], x, {"w": w})
    engine, feed, want = tmp_path / "m.engine", tmp_path / "x.npy", tmp_path / "y.npy"
    mini_infer_core.InferenceSession(model, device="cpu").save_engine(engine)
    np.save(feed, x)
    np.save(want, ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None,
                                                                               {"x": x})[0])
    script = (
        "import sys, numpy as np, mini_infer_core\n"
        "s = mini_infer_core.InferenceSession(sys.argv[1], device='cpu')\n"
        "assert {n.plugin_namespace for n in s.engine.nodes} == {'mini_infer.cpu_native'}\n"
        "y = s.run(None, {'x': np.load(sys.argv[2])})[0]\n"
        "np.testing.assert_allclose(y, np.load(sys.argv[3]), rtol=1e-5, atol=1e-5)\n")
    subprocess.run([sys.executable, "-c", script, str(engine), str(feed), str(want)],
                   check=True)


def test_the_library_is_the_installed_extension() -> None:
    assert Path(_native.library_path()).name.startswith("_kernels")


def test_without_the_compiled_extension_the_distribution_fails_and_cpu_basic_serves(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from mini_infer_cpu_native import hooks

    from mini_infer_core.registry import discover

    monkeypatch.setattr(hooks, "_compiled_present", lambda: False)
    registry = discover()
    record = {d.name: d for d in registry.distributions}["mini-infer-cpu-native"]
    assert record.status == "failed" and "compiled extension" in str(record.error)
    (conv, *_) = registry.candidates("", "Conv", "cpu", 17)
    assert conv.distribution == "mini-infer-cpu-plugins"
