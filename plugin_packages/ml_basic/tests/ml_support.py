"""What the ml_basic tests share: single-node ``ai.onnx.ml`` models, and running a model through
mini-infer (the installed plugins, the public session API), onnxruntime and onnx's
ReferenceEvaluator on the same inputs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi

__all__ = ["ML", "assert_same", "ml_model", "ort_session", "run_mi", "run_ort", "run_ref"]

ML = "ai.onnx.ml"


def _elem(x: np.ndarray[Any, Any]) -> int:
    return TensorProto.STRING if x.dtype == object else helper.np_dtype_to_tensor_dtype(x.dtype)


def _attr(v: Any) -> Any:
    return numpy_helper.from_array(v) if isinstance(v, np.ndarray) else v


def ml_model(op: str, inputs: Sequence[np.ndarray[Any, Any]], attrs: Mapping[str, Any], *,
             outputs: int = 1, ml_opset: int = 3, opset: int = 17) -> onnx.ModelProto:
    """One ``ai.onnx.ml`` node reading inputs ``x0, x1, ...`` (typed and shaped like the
    given arrays) into outputs ``y0, y1, ...`` (types left to inference)."""
    names = [f"x{i}" for i in range(len(inputs))]
    outs = [f"y{i}" for i in range(outputs)]
    node = helper.make_node(op, names, outs, domain=ML,
                            **{k: _attr(v) for k, v in attrs.items()})
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(n, _elem(x), x.shape)
         for n, x in zip(names, inputs, strict=True)],
        [onnx.ValueInfoProto(name=o) for o in outs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid(ML, ml_opset)])
    model.ir_version = 10
    return model


def _feeds(model: onnx.ModelProto, inputs: Sequence[Any] | Mapping[str, Any]
           ) -> dict[str, Any]:
    if isinstance(inputs, Mapping):
        return dict(inputs)
    return {i.name: x for i, x in zip(model.graph.input, inputs, strict=True)}


def run_mi(model: onnx.ModelProto, inputs: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    sess = mi.InferenceSession(model)
    return list(sess.run(None, _feeds(model, inputs)))


def ort_session(model: onnx.ModelProto) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), so,
                                providers=["CPUExecutionProvider"])


def run_ort(model: onnx.ModelProto, inputs: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    return list(ort_session(model).run(None, _feeds(model, inputs)))


def run_ref(model: onnx.ModelProto, inputs: Sequence[Any] | Mapping[str, Any]) -> list[Any]:
    return list(ReferenceEvaluator(model).run(None, _feeds(model, inputs)))


def assert_same(ours: Sequence[Any], theirs: Sequence[Any], rtol: float = 1e-4,
                atol: float = 1e-5, columns: Sequence[int | None] | None = None) -> None:
    """Labels and strings exactly, numbers at ``rtol``/``atol``, shapes equal; ``columns``
    limits output i to its first ``columns[i]`` columns (None: all). A list of dicts (ZipMap's
    output) must be a list of dicts with the same keys, of the same types and in the same
    order, and values (Python floats) as close."""
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if isinstance(b, list) and b and isinstance(b[0], dict):
            _same_maps(i, a, b, rtol, atol)
            continue
        a, b = np.asarray(a), np.asarray(b)
        if columns is not None and columns[i] is not None:
            a, b = a[..., :columns[i]], b[..., :columns[i]]
        assert a.shape == b.shape, f"output {i}: shape {a.shape} != {b.shape}"
        if b.dtype.kind in "OUS":
            assert a.tolist() == b.tolist(), f"output {i}: strings differ"
        elif b.dtype.kind == "f":
            assert a.dtype == b.dtype, f"output {i}: dtype {a.dtype} != {b.dtype}"
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {i}")
        else:
            assert a.dtype == b.dtype, f"output {i}: dtype {a.dtype} != {b.dtype}"
            np.testing.assert_array_equal(a, b, err_msg=f"output {i}")


def _same_maps(i: int, ours: Any, theirs: list[dict[Any, Any]], rtol: float,
               atol: float) -> None:
    assert isinstance(ours, list), f"output {i}: {type(ours).__name__}, expected a list"
    assert len(ours) == len(theirs), f"output {i}: {len(ours)} maps != {len(theirs)}"
    for row, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert isinstance(a, dict), f"output {i}[{row}]: {type(a).__name__}, expected a dict"
        assert list(a) == list(b), f"output {i}[{row}]: keys {list(a)} != {list(b)}"
        assert [type(k) for k in a] == [type(k) for k in b], f"output {i}[{row}]: key types"
        assert all(type(v) is type(w) for v, w in zip(a.values(), b.values(), strict=True)), \
            f"output {i}[{row}]: value types differ"
        np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=rtol, atol=atol,
                                   err_msg=f"output {i}[{row}]")
