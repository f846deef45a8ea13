"""Cold start (issue 30): a fresh process that opens an engine file the way users do --
``InferenceSession``, ``mini-infer run ENGINE``, the Ray predictor -- imports neither onnx nor
ml_dtypes (half a second) unless the engine holds a narrow float type; one that does still
runs, and gives what onnx's reference evaluator gives."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi

_NARROW = ("onnx", "ml_dtypes")

#: opens the engine file argv[1] through InferenceSession, `mini-infer run` and (where Ray is
#: installed) the Ray predictor, runs it on argv[2] (an .npy file), prints what it got and
#: which of onnx, ml_dtypes and the builder the process imported
_CHILD = textwrap.dedent("""
    import contextlib, io, json, sys
    import numpy as np
    import mini_infer_core as mi

    x = np.load(sys.argv[2])
    sess = mi.InferenceSession(sys.argv[1])
    (y,) = sess.run(None, {sess.get_inputs()[0].name: x})
    seen = {"session": sorted(m for m in ("onnx", "ml_dtypes") if m in sys.modules)}
    from mini_infer_core.cli.main import main
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["run", sys.argv[1]])
    assert not code, code
    seen["run"] = sorted(m for m in ("onnx", "ml_dtypes") if m in sys.modules)
    if sys.argv[3] == "ray":
        from mini_infer_core.ray import EnginePredictor
        name = sess.get_inputs()[0].name
        out = EnginePredictor(sys.argv[1])({name: x})
        assert np.array_equal(out[sess.get_outputs()[0].name], y)
        seen["ray"] = sorted(m for m in ("onnx", "ml_dtypes") if m in sys.modules)
    seen["builder"] = "mini_infer_core.builder" in sys.modules
    print(json.dumps({"y": y.astype(np.float64).tolist(), "seen": seen}))
""")


def _run_child(engine: Path, x: np.ndarray, tmp_path: Path, *, ray: bool = False
               ) -> tuple[np.ndarray, dict[str, Any]]:
    np.save(tmp_path / "x.npy", x)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(engine), str(tmp_path / "x.npy"),
                           "ray" if ray else "-"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    return np.asarray(found["y"]), found["seen"]


def test_a_float32_engine_imports_neither_onnx_nor_ml_dtypes(small_cnn: onnx.ModelProto,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "cnn.engine"
    mi.build_engine(mi.parse_onnx(small_cnn), mi.BuilderConfig(device="cpu")).save(str(path))
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    with_ray = importlib.util.find_spec("ray") is not None
    y, seen = _run_child(path, x, tmp_path, ray=with_ray)
    (expected,) = ort.InferenceSession(small_cnn.SerializeToString(),
                                       providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)
    steps = ["session", "run", *(["ray"] if with_ray else [])]
    assert seen == {**{s: [] for s in steps}, "builder": False}, seen


def test_a_range_computed_at_run_time_imports_no_ml_dtypes(tmp_path: Path) -> None:
    """A float Range whose limit is known only at run time (the position ids of a transformer
    with a symbolic sequence length): telling float16/bfloat16 apart once imported ml_dtypes
    on the first run, half a second of a .onnx start (issue 30)."""
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
             helper.make_node("Range", ["start", "nf", "step"], ["r"]),
             helper.make_node("Add", ["x", "r"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array(0.5, np.float32), "start"),
             numpy_helper.from_array(np.array(1.0, np.float32), "step")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["n"])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, ["n"])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "range.engine"
    mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu")).save(str(path))
    x = np.random.default_rng(3).standard_normal(7).astype(np.float32)
    y, seen = _run_child(path, x, tmp_path)
    np.testing.assert_allclose(y, ReferenceEvaluator(model).run(None, {"x": x})[0], rtol=1e-6)
    assert seen["session"] == [] and seen["run"] == [], seen


def _bfloat16_model() -> tuple[onnx.ModelProto, np.ndarray]:
    """y = x * Cast(w: bfloat16 → float) + Cast(Cast(x → bfloat16) → float): a bfloat16
    constant and a bfloat16 activation."""
    w = np.linspace(-2.0, 3.0, 8).astype(ml_dtypes.bfloat16)
    nodes = [
        helper.make_node("Cast", ["w"], ["wf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["x", "wf"], ["m"]),
        helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["xb"], ["xf"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["m", "xf"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "bf16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    return model, np.asarray(w)


def test_a_bfloat16_engine_still_runs(tmp_path: Path) -> None:
    model, w = _bfloat16_model()
    path = tmp_path / "bf16.engine"
    engine = mi.build_engine(mi.parse_onnx(model), mi.BuilderConfig(device="cpu", fuse=False))
    engine.save(str(path))
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    y, seen = _run_child(path, x, tmp_path)
    expected: Any = ReferenceEvaluator(model).run(None, {"x": x})
    expected = expected[0]
    # and the same from plain NumPy: bfloat16 keeps float32's 8 high bits of mantissa
    by_hand: Any = x * w.astype(np.float32) + x.astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_allclose(expected, by_hand, rtol=1e-6)
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    # the engine holds a narrow float type: that is where ml_dtypes is imported
    assert "ml_dtypes" in seen["session"], seen


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.bool_, np.complex128])
def test_a_numpy_dtype_is_mapped_without_ml_dtypes(dtype: type) -> None:
    code = ("import sys, numpy as np; from mini_infer_core.plugin import DataType; "
            f"t = DataType.from_numpy(np.dtype({np.dtype(dtype).name!r})); "
            "print(t.name, 'ml_dtypes' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=300).stdout.split()
    assert out == [mi.plugin.DataType.from_numpy(dtype).name, "False"]


def test_every_type_is_found_again_from_its_numpy_dtype() -> None:
    """The narrow types too (ml_dtypes' float8_e5m2 is NumPy kind "f", the others "V")."""
    for t in mi.plugin.DataType:
        if t is not mi.plugin.DataType.STRING:
            assert mi.plugin.DataType.from_numpy(t.numpy) is t, t
