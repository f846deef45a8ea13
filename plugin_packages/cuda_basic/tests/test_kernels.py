"""Every kernel on NumPy arrays (the path a machine without a GPU runs) against onnx's
ReferenceEvaluator on one-node models, in float32 (rtol 1e-4) and float16 (~1e-2, against the
float32 reference of the same values); through mini-infer's plugin kit (declared shapes and
types, serialize round trip, clones); and, marked ``gpu``, with CuPy on a GPU against the
NumPy path.

Each case runs as the engine runs a node: shape and type inference with the build-time
values of small integer inputs (as the builder gives them for constants), format
negotiation, ``configure_plugin``, then ``enqueue(inputs, outputs, None, stream)`` on
pre-allocated outputs filled with NaN (every element must be written).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from cuda_support import NumpyDevice, cupy_or_skip
from mini_infer_cuda_plugins.catalog import lazy_creators

from mini_infer_core.plugin import (
    DataType,
    DimsExprs,
    IPluginCreator,
    fields_from_values,
)
from mini_infer_core.plugin import _adapter as adapter

rng = np.random.default_rng(11)


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def pos(*shape: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape).astype(np.float32)


def i64(*values: int) -> np.ndarray:
    return np.array(values, np.int64)


def lrn_spec(x: np.ndarray, *, size: int, alpha: float, beta: float, bias: float
             ) -> np.ndarray:
    """LRN as the ONNX specification writes it (onnxruntime takes odd sizes only and the
    ReferenceEvaluator's sum differs), in float64."""
    x64 = x.astype(np.float64)
    c = x.shape[1]
    sq = np.zeros_like(x64)
    for k in range(c):
        lo, hi = max(0, k - (size - 1) // 2), min(c - 1, k + -(-(size - 1) // 2))
        sq[:, k] = (x64[:, lo:hi + 1] ** 2).sum(axis=1)
    return (x64 / (bias + alpha / size * sq) ** beta).astype(x.dtype)


def fused_conv(attrs: dict[str, Any]) -> Any:
    """The reference of a Conv with a fused residual and Relu (``__residual__``/``__relu__``):
    onnx's evaluator for the convolution, then ``relu(conv + r)``."""
    from mini_infer_core.testing.plugin_kit import reference_outputs

    plain = {k: v for k, v in attrs.items() if not k.startswith("__")}

    def ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
            r: np.ndarray | None = None) -> list[np.ndarray]:
        conv = reference_outputs("Conv", plain, [x, w, b], 1, 11)[0].astype(np.float64)
        y = conv if r is None else conv + r
        return [(np.maximum(y, 0) if attrs.get("__relu__") else y).astype(x.dtype)]

    return ref


@dataclass
class Case:
    op: str
    opset: int
    attrs: dict[str, Any]
    inputs: list[Any]
    fp16: bool = True
    name: str = ""
    #: compare only the first n outputs with the reference (Dropout's mask type differs)
    compare: int | None = None
    #: "evaluator" (onnx's ReferenceEvaluator), "ort" (onnxruntime, where the evaluator is
    #: wrong for the opset) or a function of the inputs giving the outputs
    ref: Any = "evaluator"


CASES: list[Case] = [
    # -- the operators of the nine light models ----------------------------------------
    Case("Conv", 9, {"pads": [1, 1, 1, 1], "strides": [2, 2]},
         [f32(2, 3, 7, 7), f32(4, 3, 3, 3), f32(4)], name="pad-stride-bias"),
    Case("Conv", 11, {"group": 2, "dilations": [2, 2]}, [f32(2, 4, 9, 9), f32(6, 2, 3, 3)],
         name="group-dilation"),
    Case("Conv", 11, {"group": 3, "pads": [1, 1, 1, 1]},
         [f32(1, 3, 6, 5), f32(3, 1, 3, 3), f32(3)], name="depthwise"),
    Case("Conv", 11, {"group": 2, "strides": [2, 1], "pads": [0, 1, 1, 0]},
         [f32(2, 2, 7, 6), f32(4, 1, 3, 2)], name="depthwise-multiplier"),
    Case("Conv", 11, {"group": 2, "dilations": [2, 3], "strides": [1, 2], "pads": [3, 4, 2, 1]},
         [f32(1, 2, 6, 7), f32(4, 1, 3, 3), f32(4)], name="depthwise-dilation-pads"),
    Case("Conv", 11, {"group": 3}, [f32(2, 6, 5, 5), f32(9, 2, 1, 1), f32(9)],
         name="pointwise-group"),
    Case("Conv", 11, {"kernel_shape": [11, 11], "strides": [4, 4], "pads": [2, 2, 2, 2]},
         [f32(1, 3, 31, 31, scale=0.3), f32(8, 3, 11, 11, scale=0.3), f32(8)],
         name="alexnet-stem"),
    Case("Conv", 11, {"auto_pad": "SAME_UPPER", "strides": [2]}, [f32(2, 3, 9), f32(4, 3, 4)],
         name="1d-same-upper"),
    Case("Conv", 11, {"auto_pad": "SAME_LOWER"}, [f32(1, 2, 4, 5, 3), f32(3, 2, 2, 3, 2)],
         name="3d-same-lower"),
    # -- with what the builder fuses into a Conv (ConvFusion): bias + residual + Relu ------
    Case("Conv", 11, {"pads": [1, 1, 1, 1], "__residual__": 1, "__relu__": 1},
         [f32(2, 3, 5, 5), f32(4, 3, 3, 3), f32(4), f32(2, 4, 5, 5)], name="fused-residual",
         ref=fused_conv({"pads": [1, 1, 1, 1], "__relu__": 1})),
    Case("Conv", 11, {"group": 4, "pads": [1, 1, 1, 1], "__residual__": 1, "__relu__": 1},
         [f32(1, 4, 6, 6), f32(4, 1, 3, 3), None, f32(1, 4, 6, 6)],
         name="fused-depthwise-residual",
         ref=fused_conv({"group": 4, "pads": [1, 1, 1, 1], "__relu__": 1})),
    Case("Conv", 11, {"__relu__": 1}, [f32(2, 6, 4, 4), f32(5, 6, 1, 1)],
         name="fused-pointwise-relu", ref=fused_conv({"__relu__": 1})),
    Case("Relu", 14, {}, [f32(2, 3, 4)]),
    Case("MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
         [f32(1, 2, 8, 8)], name="ceil"),
    Case("MaxPool", 12, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
         [f32(2, 3, 9, 9)], name="pads"),
    Case("MaxPool", 12, {"kernel_shape": [2, 2], "dilations": [2, 2]}, [f32(1, 2, 7, 7)],
         name="dilation"),
    Case("MaxPool", 12, {"kernel_shape": [3, 3], "dilations": [2, 3], "pads": [2, 2, 1, 2]},
         [f32(1, 2, 6, 7)], name="dilation-pads"),
    Case("MaxPool", 7, {"kernel_shape": [3], "strides": [2], "pads": [1, 1]},
         [f32(2, 2, 9)], name="v1-1d"),
    Case("MaxPool", 12, {"kernel_shape": [2, 2, 2]}, [f32(1, 2, 4, 5, 3)], name="3d"),
    Case("AveragePool", 19, {"kernel_shape": [2, 2], "pads": [1, 1, 1, 1],
                             "count_include_pad": 1}, [f32(1, 2, 5, 5)], name="include-pad"),
    Case("AveragePool", 19, {"kernel_shape": [3, 3], "dilations": [2, 3], "pads": [2, 2, 1, 2],
                             "count_include_pad": 1}, [f32(1, 2, 6, 7)],
         name="dilation-pads-include"),
    Case("AveragePool", 11, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
         [f32(2, 3, 8, 8)], name="exclude-pad"),
    Case("AveragePool", 11, {"kernel_shape": [5, 5], "strides": [3, 3]}, [f32(1, 4, 14, 14)],
         name="inception"),
    Case("AveragePool", 11, {"kernel_shape": [3], "auto_pad": "SAME_UPPER"}, [f32(2, 3, 7)],
         name="1d-same"),
    Case("GlobalAveragePool", 1, {}, [f32(2, 3, 5, 4)]),
    Case("BatchNormalization", 15, {"epsilon": 1e-3},
         [f32(2, 3, 4, 5), f32(3), f32(3), f32(3), pos(3)]),
    Case("BatchNormalization", 14, {}, [f32(2, 4), f32(4), f32(4), f32(4), pos(4)],
         name="2d"),
    Case("Gemm", 13, {"transB": 1, "alpha": 0.5}, [f32(2, 3), f32(4, 3), f32(4)],
         name="bias-row"),
    Case("Gemm", 13, {"transA": 1, "beta": 2.0}, [f32(3, 2), f32(3, 4), f32(2, 1)],
         name="bias-column-beta"),
    Case("Gemm", 13, {}, [f32(5, 3), f32(3, 4), f32(5, 4)], name="full-c"),
    Case("Gemm", 13, {}, [f32(2, 3), f32(3, 4)], name="no-c"),
    Case("Gemm", 13, {"transB": 1}, [f32(2, 64), f32(10, 64), f32(1, 10)], name="row-1xN"),
    Case("Reshape", 14, {}, [f32(2, 3, 4), i64(0, -1)]),
    Case("Reshape", 1, {"shape": [4, -1]}, [f32(2, 3, 4)], name="v1",
         ref=lambda x: [x.reshape(4, -1)]),
    Case("Softmax", 13, {"axis": 1}, [f32(2, 5, 3)]),
    Case("Softmax", 9, {"axis": 1}, [f32(2, 5, 3)], name="v1-coerced", ref="ort"),
    Case("Concat", 13, {"axis": -1}, [f32(2, 3), f32(2, 1), f32(2, 2)]),
    Case("Concat", 9, {"axis": 1}, [f32(1, 2, 3, 3), f32(1, 3, 3, 3)], name="channels"),
    Case("Sum", 13, {}, [f32(2, 3), f32(3), f32(1, 3)]),
    Case("Sum", 9, {}, [f32(2, 3, 4, 4), f32(2, 3, 4, 4)], name="resnet"),
    Case("Add", 14, {}, [f32(2, 3), f32(3)]),
    Case("Mul", 14, {}, [f32(2, 3, 4, 4), f32(3, 1, 1)]),
    Case("Unsqueeze", 9, {"axes": [1, 2]}, [f32(3)], name="v1"),
    Case("Unsqueeze", 13, {}, [f32(2, 3), i64(0, 3)]),
    Case("LRN", 9, {"size": 5, "alpha": 1e-3, "beta": 0.75, "bias": 2.0}, [f32(2, 7, 3, 3)],
         ref="ort"),
    Case("LRN", 13, {"size": 4}, [f32(1, 5, 2, 3)], name="even-size",
         ref=lambda x: [lrn_spec(x, size=4, alpha=1e-4, beta=0.75, bias=1.0)]),
    Case("Dropout", 9, {"ratio": 0.3}, [f32(2, 3)], compare=1, name="v1"),
    Case("Dropout", 13, {}, [f32(2, 3)], compare=1),
    Case("ConstantOfShape", 9, {"value": np.array([0.02], np.float32)}, [i64(2, 3)],
         fp16=False),
    Case("ConstantOfShape", 9, {}, [i64(3)], fp16=False, name="default"),
    Case("Transpose", 13, {"perm": [0, 2, 1, 3]}, [f32(2, 3, 4, 5)]),
    Case("Transpose", 13, {}, [f32(2, 3, 4)], name="reverse"),
    # -- the others ------------------------------------------------------------------------
    Case("MatMul", 13, {}, [f32(2, 3, 4), f32(4, 5)]),
    Case("MatMul", 13, {}, [f32(4), f32(2, 4, 3)], name="1d-broadcast"),
    Case("Sub", 14, {}, [f32(2, 1), f32(1, 3)]),
    Case("Div", 14, {}, [f32(2, 3), np.full((3,), 2.0, np.float32)]),
    Case("Div", 14, {}, [i64(7, -7, 7, -7, 0), i64(2, 2, -2, -2, 3)], fp16=False, name="int"),
    Case("Flatten", 13, {"axis": 2}, [f32(2, 3, 4, 5)]),
    Case("Flatten", 13, {"axis": 0}, [f32(2, 3)], name="axis0"),
    Case("Identity", 16, {}, [f32(3, 2)]),
    Case("Sigmoid", 13, {}, [f32(4, 5, scale=4.0)]),
    Case("Tanh", 13, {}, [f32(2, 2)]),
    Case("Clip", 13, {}, [f32(3, 3), np.array(-0.5, np.float32), np.array(0.5, np.float32)]),
    Case("Clip", 13, {}, [f32(3, 3), None, np.array(0.25, np.float32)], name="max-only"),
    Case("Clip", 6, {"min": -0.3}, [f32(3, 3)], name="v1"),
    Case("LeakyRelu", 16, {"alpha": 0.2}, [f32(3, 4)]),
    Case("Exp", 13, {}, [f32(3, 4)]),
    Case("Log", 13, {}, [pos(3, 4)]),
    Case("Sqrt", 13, {}, [pos(3, 4)]),
    Case("Neg", 13, {}, [f32(3, 4)]),
    Case("Abs", 13, {}, [f32(3, 4)]),
    Case("Pow", 15, {}, [pos(3, 4), f32(4)]),
    Case("Erf", 13, {}, [f32(3, 5, scale=2.0)]),
    Case("Gelu", 20, {}, [f32(3, 5, scale=2.0)]),
    Case("Gelu", 20, {"approximate": "tanh"}, [f32(3, 5, scale=2.0)], name="tanh"),
    Case("Shape", 15, {}, [f32(2, 3, 4)], fp16=False),
    Case("Shape", 15, {"start": 1, "end": -1}, [f32(2, 3, 4, 5)], fp16=False, name="range"),
    Case("Gather", 13, {"axis": 1}, [f32(2, 4, 3), i64(3, -1, 0)]),
    Case("Gather", 13, {}, [i64(5, 6, 7), np.array(1, np.int64)], fp16=False, name="scalar"),
    Case("Slice", 13, {}, [f32(4, 6), i64(1, -1), i64(4, 0), i64(0, 1), i64(2, -2)]),
    Case("Slice", 13, {}, [f32(3, 5), i64(1), i64(2**62), i64(-1)], name="int-max"),
    Case("Slice", 9, {"starts": [0, 1], "ends": [2, -1]}, [f32(3, 4)], name="v1"),
    Case("Squeeze", 13, {}, [f32(2, 1, 3, 1), i64(1)]),
    Case("Squeeze", 11, {}, [f32(1, 3, 1)], name="v1-all"),
    Case("Cast", 13, {"to": 10}, [f32(3, 4)], fp16=False, name="to-half"),
    Case("Cast", 13, {"to": 7}, [f32(3, 4, scale=10.0)], fp16=False, name="to-int64"),
    Case("Cast", 13, {"to": 1}, [i64(1, -2, 3)], fp16=False, name="int-to-float"),
    Case("ReduceSum", 13, {"keepdims": 0}, [f32(2, 3, 4), i64(1)]),
    Case("ReduceSum", 13, {}, [f32(2, 3)], name="all"),
    Case("ReduceSum", 11, {"axes": [0, 2]}, [f32(2, 3, 4)], name="v1"),
    Case("ReduceMean", 18, {}, [f32(2, 3, 4), i64(-1)]),
    Case("ReduceMean", 13, {"axes": [1], "keepdims": 0}, [f32(2, 3, 4)], name="v1"),
    Case("ReduceMax", 18, {"keepdims": 0}, [f32(2, 3, 4), i64(0, 2)]),
    Case("ReduceMax", 13, {"axes": [1]}, [f32(2, 3, 4)], name="v1"),
    Case("Where", 16, {}, [rng.random((2, 3)) > 0.5, f32(2, 3), f32(3)]),
    Case("Equal", 13, {}, [i64(1, 2, 3), i64(1, 5, 3)], fp16=False),
    Case("Equal", 13, {}, [f32(2, 3), f32(2, 3)], name="float"),
    Case("Less", 13, {}, [f32(2, 3), f32(3)]),
    Case("Greater", 13, {}, [f32(2, 3), f32(1)]),
]


def _case_id(c: Case) -> str:
    return f"{c.op}{c.opset}" + (f"-{c.name}" if c.name else "")


IDS = [_case_id(c) for c in CASES]


class NoopStream:
    """A stream stand-in: ``.stream`` is a context manager that does nothing."""

    stream = contextlib.nullcontext()

    def synchronize(self) -> None:
        pass




def creator_for(op: str, opset: int) -> IPluginCreator:
    found = [c for c in lazy_creators() if c.op_type == op and c.supports_opset(opset)]
    assert len(found) == 1, f"{len(found)} cuda creators for {op} opset {opset}"
    return found[0]


def _values(x: np.ndarray) -> list[int] | None:
    if x.dtype.kind in "iu" and x.ndim <= 1 and x.size <= 64:
        return [int(v) for v in x.reshape(-1)]
    return None


def _sentinel(dtype: np.dtype) -> Any:
    return np.nan if dtype.kind == "f" else (True if dtype.kind == "b" else -7)


def run_case(case: Case, inputs: list[Any], to_device: Any = None, stream: Any = None
             ) -> list[np.ndarray]:
    """Infer, negotiate, configure and enqueue as the engine does; host outputs."""
    plugin = creator_for(case.op, case.opset).create_plugin(
        "t", fields_from_values(case.attrs))
    in_dims = [None if x is None else DimsExprs(x.shape, values=_values(x)) for x in inputs]
    in_types = [None if x is None else DataType.from_numpy(x.dtype) for x in inputs]
    where = f"cuda {case.op}"
    out_dims, out_types = adapter.infer_outputs(plugin, in_dims, in_types, where)
    adapter.check_formats(plugin, in_types, out_types, where)
    in_descs = [None if x is None else (x.shape, t) for x, t in zip(inputs, in_types,
                                                                    strict=True)]
    out_descs = [(d.to_tuple(), t) for d, t in zip(out_dims, out_types, strict=True)]
    adapter.configure_concrete(plugin, in_descs, out_descs)  # type: ignore[arg-type]
    plugin.initialize()
    move = to_device or (lambda a: a)
    outs = [move(np.full(s, _sentinel(t.numpy), t.numpy)) for s, t in out_descs]
    plugin.enqueue([None if x is None else move(x) for x in inputs], outs, None,
                   stream or NoopStream())
    if stream is not None:
        stream.synchronize()
    plugin.terminate()
    host = [np.asarray(o.get() if hasattr(o, "get") else o) for o in outs]
    for o, (s, t) in zip(host, out_descs, strict=True):
        assert o.shape == s and o.dtype == t.numpy, (o.shape, o.dtype, s, t)
        if o.dtype.kind == "f":
            assert not np.isnan(o).any(), "enqueue left output elements unwritten"
    return host


def half(inputs: list[Any]) -> list[Any]:
    return [x.astype(np.float16) if isinstance(x, np.ndarray) and x.dtype == np.float32
            else x for x in inputs]


def widen(inputs: list[Any]) -> list[Any]:
    return [x.astype(np.float32) if isinstance(x, np.ndarray) and x.dtype == np.float16
            else x for x in inputs]


def _onnx_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    """Attributes for onnx.helper.make_node (tensor attributes as TensorProto)."""
    from onnx import numpy_helper

    return {k: numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v
            for k, v in attrs.items()}


def _ort(case: Case, inputs: list[Any], n: int) -> list[np.ndarray]:
    import onnxruntime
    from onnx import helper

    names = [f"in{k}" if x is not None else "" for k, x in enumerate(inputs)]
    outs = [f"out{k}" for k in range(n)]
    node = helper.make_node(case.op, names, outs, **_onnx_attrs(case.attrs))
    vi = [helper.make_tensor_value_info(nm, helper.np_dtype_to_tensor_dtype(x.dtype), x.shape)
          for nm, x in zip(names, inputs, strict=True) if x is not None]
    graph = helper.make_graph([node], "ref", vi,
                              [helper.make_empty_tensor_value_info(o) for o in outs])
    opsets = [helper.make_opsetid("", case.opset)]
    model = helper.make_model(graph, opset_imports=opsets)
    # the oldest IR version that holds the opset: onnxruntime may lag onnx's newest
    model.ir_version = helper.find_min_ir_version_for(opsets)
    sess = onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"])
    feeds = {nm: x for nm, x in zip(names, inputs, strict=True) if x is not None}
    return [np.asarray(r) for r in sess.run(None, feeds)]


def reference(plugin_kit: ModuleType, case: Case, inputs: list[Any], n: int
              ) -> list[np.ndarray]:
    if callable(case.ref):
        return [np.asarray(r) for r in case.ref(*inputs)]
    if case.ref == "ort":
        return _ort(case, inputs, n)
    got: list[np.ndarray] = plugin_kit.reference_outputs(case.op, _onnx_attrs(case.attrs),
                                                         inputs, n, case.opset)
    return got


def assert_close(ours: list[np.ndarray], ref: list[np.ndarray], n: int | None, rtol: float,
                 atol: float) -> None:
    for k, (a, b) in enumerate(list(zip(ours, ref, strict=False))[:n]):
        assert a.shape == b.shape, f"output {k}: shape {a.shape}, reference {b.shape}"
        if b.dtype.kind in "biu" and a.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                       atol=atol, err_msg=f"output {k}")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float32_on_numpy_matches_the_reference(case: Case, plugin_kit: ModuleType) -> None:
    ours = run_case(case, case.inputs)
    ref = reference(plugin_kit, case, case.inputs, len(ours))
    assert_close(ours, ref, case.compare, rtol=1e-4, atol=1e-5)
    for a, b in zip(ours, ref, strict=False):
        if case.compare is None:
            assert a.dtype == b.dtype, f"dtype {a.dtype}, reference {b.dtype}"


FP16 = [c for c in CASES if c.fp16]


@pytest.mark.parametrize("case", FP16, ids=[_case_id(c) for c in FP16])
def test_float16_on_numpy_matches_the_float32_reference(case: Case,
                                                        plugin_kit: ModuleType) -> None:
    inputs = half(case.inputs)
    ours = run_case(case, inputs)
    floats = [o for o in ours if o.dtype.kind == "f"]
    assert all(o.dtype == np.float16 for o in floats), [o.dtype for o in ours]
    ref = reference(plugin_kit, case, widen(inputs), len(ours))
    assert_close(ours, ref, case.compare, rtol=1e-2, atol=2e-2)


KIT = [c for c in CASES if all(x is not None for x in c.inputs)]


@pytest.mark.parametrize("case", KIT, ids=[_case_id(c) for c in KIT])
def test_plugin_kit_contract(case: Case, plugin_kit: ModuleType) -> None:
    """Declared shapes/dtypes vs what enqueue writes, serialize round trip, clones."""
    shape_inputs = getattr(creator_for(case.op, case.opset).create_plugin(
        "probe", fields_from_values(case.attrs)), "shape_inputs", ())
    report = plugin_kit.check_plugin(creator_for(case.op, case.opset), case.attrs,
                                     case.inputs, opset=case.opset, device=NumpyDevice("host"),
                                     reference=False)
    assert "serialize round trip" in report.checks and "clones independent" in report.checks
    assert shape_inputs is not None


# -- on a GPU ------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gpu_kernel_matches_the_numpy_path(case: Case, dtype: Any) -> None:
    cupy = cupy_or_skip()
    from mini_infer_cuda_plugins.device import CudaDevice

    if dtype == np.float16 and not case.fp16:
        pytest.skip("no float16 variant")
    inputs = half(case.inputs) if dtype == np.float16 else case.inputs
    expected = run_case(case, inputs)
    got = run_case(case, inputs, to_device=cupy.asarray,
                   stream=CudaDevice().create_stream())
    rtol, atol = (1e-4, 1e-5) if dtype == np.float32 else (1e-2, 2e-2)
    assert_close(got, expected, None, rtol=rtol, atol=atol)


# -- the GPU branch with the CUDA kernels compiled for the host ------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gpu_branch_with_host_compiled_kernels_matches_the_numpy_path(
        case: Case, dtype: Any, request: pytest.FixtureRequest) -> None:
    if dtype == np.float16 and not case.fp16:
        pytest.skip("no float16 variant")
    inputs = half(case.inputs) if dtype == np.float16 else case.inputs
    expected = run_case(case, inputs)
    request.getfixturevalue("emulated_gpu")
    got = run_case(case, inputs)
    rtol, atol = (1e-4, 1e-5) if dtype == np.float32 else (1e-2, 2e-2)
    assert_close(got, expected, None, rtol=rtol, atol=atol)


def test_the_cases_launch_every_raw_kernel_for_every_float_type(
        emulated_gpu: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Coverage of the emulated GPU branch: every entry point of every ``kernels/*.cu``
    source (each element type) is launched by some case above."""
    from mini_infer_cuda_plugins.ops import _raw

    launched: set[str] = set()
    real = _raw.launch

    def recording(source_name: str, function: str, dtype: Any, total: int,
                  args: tuple[Any, ...]) -> None:
        launched.add(f"{function}_{_raw.SUFFIX[np.dtype(dtype)]}")
        real(source_name, function, dtype, total, args)

    monkeypatch.setattr(_raw, "launch", recording)
    for case in CASES:
        for dtype in (np.float32, np.float16, np.float64):
            if dtype != np.float32 and not case.fp16:
                continue
            inputs = [x.astype(dtype) if isinstance(x, np.ndarray) and x.dtype == np.float32
                      else x for x in case.inputs]
            run_case(case, inputs)
    from importlib.resources import files

    sources = [p.name[:-3] for p in (files("mini_infer_cuda_plugins") / "kernels").iterdir()
               if p.name.endswith(".cu")]
    defined = {k for name in sources for k in _raw.kernel_names(name)}
    assert len(defined) == 10 * 3, sorted(defined)  # 10 kernels x (f32, f16, f64)
    assert defined <= launched, f"never launched: {sorted(defined - launched)}"


@pytest.mark.parametrize("starts, ends, axes, steps", [
    ([1, -2], [3, 0], [0, 1], [1, -1]),
    ([-100], [2**62], [1], [2]),
    ([5], [-100], [0], [-2]),
])
def test_slice_with_starts_known_only_at_run_time_gathers_on_the_device(
        starts: list[int], ends: list[int], axes: list[int], steps: list[int],
        emulated_gpu: Any) -> None:
    """Starts computed from dynamic shapes are symbolic at build time: the GPU branch reads
    them on the device (no host round trip), and agrees with NumPy slicing."""
    from mini_infer_core.plugin import DimExpr

    x = f32(6, 7)
    n = DimExpr.sym("n")
    plugin = creator_for("Slice", 13).create_plugin("s", fields_from_values({}))
    sym = [n // (n + 1) + v for v in starts]  # symbolic, and v for every dimension n
    dims = plugin.get_output_dimensions(  # type: ignore[attr-defined]
        0, [DimsExprs(x.shape), DimsExprs((len(starts),), values=sym),
            DimsExprs((len(ends),), values=ends), DimsExprs((len(axes),), values=axes),
            DimsExprs((len(steps),), values=steps)], None)
    index = [slice(None)] * 2
    for s, e, a, k in zip(starts, ends, axes, steps, strict=True):
        index[a] = slice(s, e, k)
    want = x[tuple(index)]
    assert "__starts__" not in plugin.hidden  # type: ignore[attr-defined]
    assert dims.to_tuple() == want.shape if all(d.is_constant() for d in dims) else True
    out = np.full(want.shape, np.nan, np.float32)
    plugin.enqueue([x, i64(*starts), i64(*ends), i64(*axes), i64(*steps)], [out], None,
                   NoopStream())
    np.testing.assert_array_equal(out, want)
