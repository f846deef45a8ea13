"""The convolution, pooling, normalisation, matrix-product and quantization families are
described once, in :mod:`mini_infer_core.ops`: the device packages' kernels for them carry no
attributes and no shape or type inference of their own, and what their schemas compute from
attributes (window geometry, AveragePool's divisors, ConvTranspose's pads) agrees with
onnxruntime."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi
from mini_infer_core.ops import conv, conv_transpose, find_schema, pool, qlinear
from mini_infer_core.plugin import DimExpr, DimsExprs, shapes

#: the families and, per device package, the kernel modules that implement them
FAMILIES = ("conv", "conv_transpose", "pool", "normalization", "norms", "layer_norm", "gemm",
            "qlinear", "quantize")
CUDA_FAMILIES = ("conv", "pool", "normalization", "gemm")
SCHEMA_MEMBERS = {"attributes", "output_shapes", "output_types", "output_values"}


def _kernels(package: str, modules: tuple[str, ...]) -> list[Any]:
    pkg = pytest.importorskip(package)
    found = []
    for name in modules:
        mod = importlib.import_module(f"{pkg.__name__}.ops.{name}")
        found += [getattr(mod, n) for n in mod.__all__]
    return found


@pytest.mark.parametrize("package, modules", [
    ("mini_infer_cpu_plugins", FAMILIES), ("mini_infer_cuda_plugins", CUDA_FAMILIES)])
def test_the_kernels_take_attributes_and_shapes_from_their_schema(
        package: str, modules: tuple[str, ...]) -> None:
    for kernel in _kernels(package, modules):
        schema = find_schema(kernel.op_type, kernel.min_opset)
        assert schema is not None and issubclass(kernel, schema), kernel
        assert (kernel.min_opset, kernel.max_opset) == (schema.min_opset, schema.max_opset)
        assert kernel.attributes == schema.attributes, kernel
        for cls in kernel.__mro__:
            if cls.__module__.startswith(package):
                assert not SCHEMA_MEMBERS & set(cls.__dict__), (kernel, cls)


def _node_model(nodes: list[Any], inputs: list[Any], output: Any, inits: list[Any],
                opset: int) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, [output], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _both(model: Any, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, Any]:
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    sess = mi.InferenceSession(model, config=mi.BuilderConfig(device="cpu"))
    return sess.run(None, feeds)[0], want, sess


def test_an_integer_convolution_absorbs_no_relu() -> None:
    """ConvInteger's kernel applies nothing after the product: a Relu after it stays a node
    of its own (it used to be absorbed, and ignored, through Conv's fusion)."""
    pytest.importorskip("mini_infer_cpu_plugins")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 255, (1, 2, 5, 5), dtype=np.uint8)
    w = rng.integers(0, 255, (3, 2, 3, 3), dtype=np.uint8)
    zp = np.array(128, np.uint8)
    model = _node_model(
        [helper.make_node("ConvInteger", ["x", "w", "zp", "zp"], ["c"]),
         helper.make_node("Relu", ["c"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        helper.make_tensor_value_info("y", TensorProto.INT32, None),
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(zp, "zp")], 14)
    got, want, sess = _both(model, {"x": x})
    assert (want == 0).any() and (np.asarray(got) >= 0).all()
    np.testing.assert_array_equal(got, want)
    assert [n.op_type for n in sess.engine.nodes] == ["ConvInteger", "Relu"]


@pytest.mark.parametrize("include_pad", [0, 1])
@pytest.mark.parametrize("ceil_mode", [0, 1])
def test_average_pool_divisors_match_onnxruntime(include_pad: int, ceil_mode: int) -> None:
    """The schema's taps and divisors: an AveragePool of ones is, per output, the number of
    its taps inside the input over the divisor (taps inside the input, or inside input +
    pads); onnxruntime's says the same."""
    attrs = {"kernel_shape": [3, 2], "strides": [2, 2], "pads": [1, 0, 1, 1],
             "count_include_pad": include_pad, "ceil_mode": ceil_mode}
    x = np.ones((1, 1, 6, 5), np.float32)
    model = _node_model([helper.make_node("AveragePool", ["x"], ["y"], **attrs)],
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                        helper.make_tensor_value_info("y", TensorProto.FLOAT, None), [], 19)
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    plugin = pool.AveragePool("p", **attrs)
    win, geo = plugin.geometry(x.shape[2:])
    padded = np.zeros(shapes.padded_extent(x.shape[2:], win, geo), np.float32)
    padded[geo.begin[0]:geo.begin[0] + 6, geo.begin[1]:geo.begin[1] + 5] = 1
    inside = sum(padded[tap[1:]] for tap in plugin.taps(win, geo))
    divisor = plugin.divisor(x.shape[2:], win, geo)
    if divisor is None:  # every window counts all its taps
        assert include_pad and not ceil_mode
        divisor = np.full(geo.out, 6)
    assert divisor.shape == geo.out == want.shape[2:]
    np.testing.assert_allclose(inside / divisor, want[0, 0], rtol=1e-6)


def test_conv_geometry_names_the_operator() -> None:
    plugin = qlinear.QLinearConv("q", group=2)
    with pytest.raises(mi.MiniInferError, match="QLinearConv: X .* and group 2 do not match"):
        plugin.geometry((1, 3, 5, 5), (4, 1, 3, 3))
    win, geo = conv.Conv("c", pads=[1, 1, 1, 1], strides=[2, 2]).geometry(
        (1, 3, 7, 7), (4, 3, 3, 3))
    assert win.kernel == (3, 3) and geo.out == (4, 4) and geo.begin == (1, 1)


def test_symbolic_kernel_sizes_give_symbolic_output_sizes() -> None:
    """W of symbolic spatial size at build time: the output size is an expression."""
    k = DimExpr.sym("k")
    shape = conv.Conv("c").output_shapes([DimsExprs([1, 3, 9, 9]), DimsExprs([4, 3, k, k])])
    assert [str(d) for d in shape[0][:2]] == ["1", "4"] and not shape[0][2].is_constant()


@pytest.mark.parametrize("auto_pad, output_shape", [
    ("SAME_UPPER", None), ("SAME_LOWER", None), ("NOTSET", [10, 9])])
def test_conv_transpose_geometry_matches_onnxruntime(auto_pad: str,
                                                     output_shape: list[int] | None) -> None:
    """Where the output lies in the full result (pads split as ONNX says), checked through
    the cpu kernel against onnxruntime."""
    pytest.importorskip("mini_infer_cpu_plugins")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = rng.standard_normal((2, 3, 3, 2)).astype(np.float32)
    attrs: dict[str, Any] = {"strides": [2, 2], "auto_pad": auto_pad}
    if output_shape:
        attrs["output_shape"] = output_shape
    model = _node_model([helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)],
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                        [numpy_helper.from_array(w, "w")], 13)
    got, want, _ = _both(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    scatter = conv_transpose.ConvTranspose("t", **attrs).geometry((4, 4), (3, 2))
    assert scatter.out == want.shape[2:]
