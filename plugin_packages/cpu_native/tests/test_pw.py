"""mini-infer-cpu-native's short products over large maps (``_pw.c``) against onnxruntime,
through real ONNX models built into engines whose Conv this distribution's plugin takes: 1x1
convolutions of few channels (output channels that are not a multiple of the 4 summed at
once, maps whose size is not a multiple of the 24-column tile, batches of 2) and the stems of
1-4 input channels (3x3 and 7x7, strides 1-3, dilation, uneven and no padding, SAME
padding), bias or none, a fused residual, Relu, Clip and every activation the Conv plugin
absorbs, at 1 and 2 threads; engines written to disk and read back; the cases left to the
other paths; the wrapper's refusals."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from conv_epilogues import ACTIVATIONS, check_ort, epilogue, float_model, ort_y, same_shape
from mini_infer_cpu_native import NAMESPACE, _native, _pw
from mini_infer_cpu_native._act import act_isa
from onnx import helper

import mini_infer_core

RNG = np.random.default_rng(47)

pytestmark = pytest.mark.skipif(act_isa() != 1, reason="_pw.c runs where the AVX2 kernels do "
                                "(not on CPUs without AVX2, nor where AVX-512's GEMM runs)")


@pytest.fixture
def short(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    return count_calls(_pw, "pwconv2d_call", "pw")


def _model(xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
           bias: bool, after: str) -> onnx.ModelProto:
    c = xshape[1]
    inits = {"w": (RNG.standard_normal((m, c, *kernel)) * 0.3).astype(np.float32)}
    ins = ["x", "w"]
    if bias:
        inits["b"] = RNG.standard_normal(m).astype(np.float32)
        ins.append("b")
    nodes = [helper.make_node("Relu", ["x"], ["xr"]),  # an arena input, as inside a model
             helper.make_node("Conv", ["xr", *ins[1:]], ["c" if after else "y"],
                              kernel_shape=list(kernel), **attrs)]
    nodes += epilogue(after, inits)
    return float_model(nodes, inits, xshape)


def _check(model: onnx.ModelProto, x: np.ndarray) -> mini_infer_core.Engine:
    engine = check_ort(model, x)
    assert {n.op_type for n in engine.nodes if n.plugin_namespace == NAMESPACE} >= {"Conv"}
    return engine


POINTWISE = [  # x shape, M
    ((1, 16, 40, 40), 64),  # MobileNetV3's 16->64 (1600 pixels: 66 tiles and 16 columns)
    ((1, 32, 29, 31), 48),  # 899 pixels: a tile of 11 columns at the end
    ((2, 24, 28, 28), 72),  # a batch of 2
    ((1, 40, 28, 29), 118),  # 118 channels: blocks of 4 and one of 2
    ((1, 7, 30, 30), 5),  # 5 channels: 4 + 1; 7 input channels
    ((1, 128, 28, 28), 128),
    ((1, 256, 28, 28), 256),  # the largest taken
]
STEMS = [  # x shape, M, kernel, attrs
    ((1, 3, 64, 64), 16, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),  # MobileNetV3
    ((1, 3, 65, 63), 24, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),  # odd sizes
    ((1, 3, 61, 61), 64, (3, 3), {"strides": [2, 2]}),  # SqueezeNet: no padding
    ((1, 3, 70, 70), 64, (7, 7), {"pads": [3, 3, 3, 3], "strides": [2, 2]}),  # ResNet
    ((2, 1, 33, 47), 10, (3, 3), {"pads": [0, 1, 2, 0]}),  # one channel, uneven padding
    ((1, 4, 40, 40), 13, (5, 3), {"pads": [2, 1, 2, 1], "strides": [3, 1],
                                  "dilations": [1, 2]}),
    ((1, 2, 37, 41), 8, (3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 3, 40, 9), 32, (3, 3), {"pads": [1, 1, 1, 1]}),  # 9 output columns: 8 + 1
]
AFTER = [("", True), ("", False), ("Relu", True), ("Clip", True), ("Add", True),
         *((a, True) for a in ACTIVATIONS), ("Add+HardSwish", False), ("Add+Swish", True)]


@pytest.mark.parametrize("xshape, m", POINTWISE)
@pytest.mark.parametrize("after, bias", AFTER)
def test_pointwise_convolution_matches_onnxruntime(
        xshape: tuple[int, ...], m: int, after: str, bias: bool, threads: int,
        short: dict[str, int]) -> None:
    if "Add" in after and m != xshape[1]:
        m = xshape[1]  # the residual needs an output shaped like the input
    x = RNG.standard_normal(xshape).astype(np.float32)
    _check(_model(xshape, m, (1, 1), {}, bias, after), x)
    assert short["pw"] >= 1


@pytest.mark.parametrize("xshape, m, kernel, attrs", STEMS)
@pytest.mark.parametrize("after, bias", AFTER)
def test_stem_convolution_matches_onnxruntime(
        xshape: tuple[int, ...], m: int, kernel: tuple[int, int], attrs: dict[str, Any],
        after: str, bias: bool, threads: int, short: dict[str, int]) -> None:
    if "Add" in after:
        xshape, m = (1, 3, 30, 29), 3  # a stem shaped like its input: 3 -> 3, stride 1
        kernel, attrs = (3, 3), {"pads": [1, 1, 1, 1]}
        assert same_shape(xshape, m, kernel, attrs)
    x = RNG.standard_normal(xshape).astype(np.float32)
    _check(_model(xshape, m, kernel, attrs, bias, after), x)
    assert short["pw"] >= 1


@pytest.mark.parametrize("xshape, m, kernel, attrs", [
    ((1, 16, 20, 20), 64, (1, 1), {}),  # 400 pixels: the short-row GEMM's
    ((1, 8, 30, 30), 300, (1, 1), {}),  # 300 output channels: the GEMM's
    ((1, 300, 30, 30), 16, (1, 1), {}),  # 300 input channels: over MAX_K
    ((1, 16, 40, 40), 64, (1, 1), {"strides": [2, 2]}),  # strided 1x1
    ((1, 8, 40, 40), 16, (3, 3), {"pads": [1, 1, 1, 1]}),  # 8 input channels
    ((1, 3, 20, 5), 8, (3, 3), {"pads": [1, 1, 1, 1]}),  # 5 output columns
])
def test_other_convolutions_do_not_take_it(xshape: tuple[int, ...], m: int,
                                           kernel: tuple[int, int], attrs: dict[str, Any],
                                           short: dict[str, int]) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    _check(_model(xshape, m, kernel, attrs, True, "Relu"), x)
    assert short["pw"] == 0


@pytest.mark.parametrize("xshape, m, kernel, attrs", [
    ((1, 16, 40, 40), 64, (1, 1), {}),
    ((1, 3, 64, 64), 16, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]})])
def test_the_engine_file_keeps_the_weights(xshape: tuple[int, ...], m: int,
                                           kernel: tuple[int, int], attrs: dict[str, Any],
                                           tmp_path: Path, short: dict[str, int]) -> None:
    """Written to disk and read back: the weights as ONNX stores them (not the GEMM's
    panels), the fused activation kept, the same output."""
    model = _model(xshape, m, kernel, attrs, True, "HardSwish")
    x = RNG.standard_normal(xshape).astype(np.float32)
    engine = _check(model, x)
    path = tmp_path / "m.engine"
    engine.save(str(path))
    back = mini_infer_core.Runtime().deserialize_engine(path.read_bytes())
    conv = [n for n in back.nodes if n.op_type == "Conv"][0]
    assert not conv.plugin.hidden.get("__wpacked__")
    before = short["pw"]
    got = back.create_execution_context().execute({"x": x})["y"]
    assert short["pw"] > before
    np.testing.assert_allclose(got, ort_y(model, x), rtol=1e-4, atol=1e-4)


def test_the_call_checks_its_arrays() -> None:
    x = np.zeros((1, 3, 10, 10), np.float32)
    w = np.ones((8, 3, 3, 3), np.float32)
    y = np.zeros((1, 8, 5, 5), np.float32)
    geo = ((3, 3), (2, 2), (1, 1), (1, 1))
    need = _pw.work_floats(x.shape, w.shape, *geo, (5, 5))
    work = np.zeros(need, np.float32)
    _native.run_calls([_pw.pwconv2d_call(x + 1, w, None, None, y, work, *geo, -1.0, 1.0)])
    assert (y == 1.0).all()  # clamped to hi
    with pytest.raises(ValueError, match="one group"):
        _pw.pwconv2d_call(x, w[:, :2], None, None, y, work, *geo, -1.0, 1.0)
    with pytest.raises(ValueError, match="residual"):
        _pw.pwconv2d_call(x, w, None, np.zeros((1, 8, 3, 3), np.float32), y, work, *geo,
                          -1.0, 1.0)
    with pytest.raises(ValueError):  # work too small
        _pw.pwconv2d_call(x, w, None, None, y, work[:-1], *geo, -1.0, 1.0)
    with pytest.raises(ValueError):  # y read-only
        y.flags.writeable = False
        _pw.pwconv2d_call(x, w, None, None, y, work, *geo, -1.0, 1.0)
