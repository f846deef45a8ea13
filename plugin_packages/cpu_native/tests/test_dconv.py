"""mini-infer-cpu-native's direct convolution of narrow groups (``_dconv.c``) against
onnxruntime, through real ONNX models built into engines whose Conv this distribution's plugin
takes: RegNet's groups of 8, depthwise 5x5 and 7x7 (MobileNetV3, ConvNeXt), channel
multipliers, output channels per group that are not a multiple of the 8 summed at once,
strides 1-3, dilations, uneven and no padding, SAME padding, bias or none, a fused residual,
Relu and Clip, images of a few columns (one partial vector), at 1 and 2 threads; the cases
left to the other paths; the wrapper's refusals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from conv_epilogues import check_ort, epilogue, float_model, same_shape
from mini_infer_cpu_native import NAMESPACE, _dconv, _native
from onnx import helper

RNG = np.random.default_rng(31)


@pytest.fixture
def direct(count_calls: Callable[[Any, str, str], dict[str, int]]) -> dict[str, int]:
    return count_calls(_dconv, "dconv2d_call", "dconv")


def _model(x: np.ndarray, m: int, group: int, kernel: tuple[int, int], attrs: dict[str, Any],
           bias: bool, after: str) -> onnx.ModelProto:
    c = x.shape[1]
    inits = {"w": (RNG.standard_normal((m, c // group, *kernel)) * 0.3).astype(np.float32)}
    ins = ["x", "w"]
    if bias:
        inits["b"] = RNG.standard_normal(m).astype(np.float32)
        ins.append("b")
    nodes = [helper.make_node("Relu", ["x"], ["xr"]),  # an arena input, as inside a model
             helper.make_node("Conv", ["xr", *ins[1:]], ["c" if after else "y"], group=group,
                              kernel_shape=list(kernel), **attrs)]
    nodes += epilogue(after, inits)
    return float_model(nodes, inits, x.shape)


def _check(model: onnx.ModelProto, x: np.ndarray) -> None:
    engine = check_ort(model, x)
    assert {n.op_type for n in engine.nodes if n.plugin_namespace == NAMESPACE} >= {"Conv"}


CASES = [  # x shape, M, group, kernel, attrs
    ((1, 48, 20, 20), 48, 6, (3, 3), {"pads": [1, 1, 1, 1]}),  # RegNet, groups of 8
    ((1, 48, 21, 19), 48, 6, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((2, 32, 7, 7), 32, 4, (3, 3), {"pads": [1, 1, 1, 1]}),  # 7x7 maps: one partial vector
    ((1, 16, 12, 13), 48, 4, (3, 3), {"pads": [1, 1, 1, 1]}),  # 12 outputs per group: 8 + 4
    ((1, 20, 9, 11), 20, 5, (2, 3), {"pads": [0, 1, 1, 0], "strides": [1, 3]}),
    ((1, 12, 30, 30), 12, 12, (5, 5), {"pads": [2, 2, 2, 2]}),  # depthwise 5x5
    ((1, 12, 31, 29), 12, 12, (5, 5), {"pads": [2, 2, 2, 2], "strides": [2, 2]}),
    ((1, 8, 16, 16), 8, 8, (5, 5), {"pads": [4, 4, 4, 4], "dilations": [2, 2]}),  # LRASPP
    ((1, 6, 14, 14), 6, 6, (7, 7), {"pads": [3, 3, 3, 3]}),  # ConvNeXt
    ((1, 5, 10, 10), 5, 5, (5, 5), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 8, 11, 11), 16, 8, (3, 3), {"pads": [1, 1, 1, 1]}),  # channel multiplier 2
    ((1, 6, 9, 9), 6, 6, (3, 5), {}),  # no padding
    ((1, 40, 48, 48), 40, 40, (5, 5), {"pads": [2, 2, 2, 2]}),  # large: on the pool
    # groups whose copy is copied and convolved by bands of output rows (AVX2)
    ((1, 32, 99, 101), 32, 4, (3, 3), {"pads": [1, 1, 1, 1]}),
    ((1, 32, 113, 97), 32, 4, (3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
]


@pytest.mark.parametrize("xshape, m, group, kernel, attrs", CASES)
@pytest.mark.parametrize("after, bias", [("", True), ("", False), ("Relu", True),
                                         ("Clip", True), ("Add", True)])
def test_direct_convolution_matches_onnxruntime(
        xshape: tuple[int, ...], m: int, group: int, kernel: tuple[int, int],
        attrs: dict[str, Any], after: str, bias: bool, threads: int,
        direct: dict[str, int]) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    if after == "Add" and not same_shape(xshape, m, kernel, attrs):
        pytest.skip("the residual needs an output shaped like the input")
    _check(_model(x, m, group, kernel, attrs, bias, after), x)
    assert direct["dconv"] >= 1


@pytest.mark.parametrize("xshape, m, group, kernel", [
    ((1, 16, 10, 10), 16, 2, (3, 3)),  # two groups of 8: the GEMM paths
    ((1, 3, 10, 10), 3, 3, (5, 5)),  # three channels: fewer than MIN_GROUPS groups
    ((1, 72, 10, 10), 72, 4, (3, 3)),  # groups of 18 channels: wider than MAX_WIDTH
])
def test_other_convolutions_do_not_take_it(xshape: tuple[int, ...], m: int, group: int,
                                           kernel: tuple[int, int],
                                           direct: dict[str, int]) -> None:
    x = RNG.standard_normal(xshape).astype(np.float32)
    _check(_model(x, m, group, kernel, {"pads": [1, 1, 1, 1]} if kernel == (3, 3) else {},
                  True, ""), x)
    assert direct["dconv"] == 0


def test_the_call_checks_its_arrays() -> None:
    x = np.zeros((1, 8, 6, 6), np.float32)
    w = np.zeros((8, 2, 3, 3), np.float32)
    y = np.zeros((1, 8, 4, 4), np.float32)
    geo = ((3, 3), (1, 1), (1, 1), (0, 0))
    need = _dconv.work_floats(x.shape, w.shape, 4, *geo, (4, 4))
    work = np.zeros(need, np.float32)
    _native.run_calls([_dconv.dconv2d_call(x, w, None, None, y, work, 4, *geo, -1.0, 1.0)])
    with pytest.raises(ValueError, match="groups"):
        _dconv.dconv2d_call(x, w, None, None, y, work, 3, *geo, -1.0, 1.0)
    with pytest.raises(ValueError, match="residual"):
        _dconv.dconv2d_call(x, w, None, np.zeros((1, 8, 3, 3), np.float32), y, work, 4, *geo,
                            -1.0, 1.0)
    with pytest.raises(ValueError):  # work too small
        _dconv.dconv2d_call(x, w, None, None, y, work[:-1], 4, *geo, -1.0, 1.0)
    with pytest.raises(ValueError):  # y read-only
        y.flags.writeable = False
        _dconv.dconv2d_call(x, w, None, None, y, work, 4, *geo, -1.0, 1.0)


#: depthwise 3x3 / 5x5, stride 1 / 2 (_dw_avx2.h's kernels where AVX2 runs): maps of one
#: vector of columns or less (4 rows at once, 2, 1 left), two (2 x 2, a row left), three,
#: four, and wider ones (strips of 4 vectors, a partial last one); pads that are not k // 2
DW_CASES = [  # x shape, kernel, stride, pads
    ((1, 9, 7, 7), 3, 1, [1, 1, 1, 1]),
    ((1, 9, 7, 7), 5, 1, [2, 2, 2, 2]),
    ((1, 9, 5, 6), 3, 1, [1, 1, 1, 1]),  # 5 rows: 4 + 1
    ((1, 9, 14, 14), 5, 2, [2, 2, 2, 2]),  # 7x7 out: 4 + 2 + 1 rows
    ((1, 9, 13, 15), 3, 1, [1, 1, 1, 1]),  # 2 vectors, odd rows
    ((1, 9, 28, 28), 3, 2, [1, 1, 1, 1]),  # 14x14 out
    ((1, 9, 27, 29), 3, 2, [0, 1, 2, 1]),
    ((1, 9, 20, 22), 5, 1, [2, 2, 2, 2]),  # 3 vectors
    ((1, 9, 32, 32), 3, 1, [1, 1, 1, 1]),  # 4 vectors exactly
    ((1, 9, 57, 57), 3, 1, [1, 1, 1, 1]),  # strips 4 + 4 (partial)
    ((1, 9, 57, 58), 5, 2, [1, 2, 2, 1]),
    ((2, 16, 113, 111), 3, 2, [1, 1, 1, 1]),  # wide: strips 4 x 7, two images
    ((1, 8, 3, 3), 3, 1, [1, 1, 1, 1]),  # 3x3, 2x2 outputs: a row's vector reaches past
    ((1, 8, 4, 4), 3, 2, [1, 1, 1, 1]),  # the plane (stored masked there)
]


@pytest.mark.parametrize("xshape, k, s, pads", DW_CASES)
@pytest.mark.parametrize("after", ["", "Relu", "HardSwish", "Add"])
def test_depthwise_tiles_match_onnxruntime(xshape: tuple[int, ...], k: int, s: int,
                                           pads: list[int], after: str, threads: int,
                                           direct: dict[str, int]) -> None:
    attrs: dict[str, Any] = {"pads": pads, **({"strides": [s, s]} if s > 1 else {})}
    if after == "Add" and not same_shape(xshape, xshape[1], (k, k), attrs):
        pytest.skip("the residual needs an output shaped like the input")
    x = RNG.standard_normal(xshape).astype(np.float32)
    _check(_model(x, xshape[1], xshape[1], (k, k), attrs, True, after), x)
    assert direct["dconv"] >= 1
