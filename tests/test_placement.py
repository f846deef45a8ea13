"""Heterogeneous placement with a test-only second device backed by NumPy.

``fakegpu`` arrays are an ndarray subclass that refuses to mix with plain host arrays in any
ufunc, as a real GPU would: a missing copy step fails loudly instead of silently working."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.errors import MiniInferError, UnsupportedOperatorError
from mini_infer_core.plugin import BroadcastPlugin, Device, OnnxPluginCreator, Stream, UnaryPlugin
from mini_infer_core.registry import PluginRegistry, discover


class DeviceArray(np.ndarray):  # type: ignore[type-arg]
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kw: Any) -> Any:
        operands = [*inputs, *kw.get("out", ())]
        if any(type(x) is np.ndarray and x.ndim > 0 for x in operands):
            raise TypeError(f"{ufunc.__name__}: fakegpu array mixed with a host array")
        args = [np.asarray(x) if isinstance(x, DeviceArray) else x for x in inputs]
        if "out" in kw:
            kw["out"] = tuple(np.asarray(o) for o in kw["out"])
        result = getattr(ufunc, method)(*args, **kw)
        return result.view(DeviceArray) if isinstance(result, np.ndarray) else result


class FakeGpu(Device):
    def __init__(self, name: str = "fakegpu", available: bool = True) -> None:
        self.name = name
        self.available = available

    def availability(self) -> tuple[bool, str]:
        return (True, "") if self.available else (False, "no fake GPU in this test")

    def allocate(self, nbytes: int) -> Any:
        return np.zeros(nbytes, np.uint8).view(DeviceArray)

    def view(self, buffer: Any, offset: int, dtype: Any, shape: tuple[int, ...]) -> Any:
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return buffer[offset : offset + n].view(dtype).reshape(shape)

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return np.empty(shape, dtype).view(DeviceArray)

    def to_device(self, host: Any) -> Any:
        assert type(host) is np.ndarray, "to_device takes host arrays"
        return np.array(host).view(DeviceArray)

    def to_host(self, array: Any) -> Any:
        assert isinstance(array, DeviceArray), f"to_host of a non-device array {type(array)}"
        return np.array(np.asarray(array))

    def copy(self, dst: Any, src: Any, stream: Stream | None = None) -> None:
        np.copyto(np.asarray(dst), np.asarray(src))


def _check_device(*arrays: Any) -> None:
    for a in arrays:
        assert a is None or isinstance(a, DeviceArray), f"host array {type(a)} on fakegpu"


class GpuRelu(UnaryPlugin):
    op_type = "Relu"

    def compute(self, x: Any, *, out: Any) -> None:
        _check_device(x, out)
        np.maximum(x, np.zeros((), x.dtype), out=out)


class GpuAdd(BroadcastPlugin):
    op_type = "Add"

    def compute(self, a: Any, b: Any, *, out: Any) -> None:
        _check_device(a, b, out)
        np.add(a, b, out=out)


def _registry(available: bool = True) -> PluginRegistry:
    reg = discover()
    reg.register_device(FakeGpu(available=available))
    for cls in (GpuRelu, GpuAdd):
        reg.register_creator(OnnxPluginCreator(cls, namespace="fakegpu", devices=("fakegpu",)))
    return reg


def _model() -> onnx.ModelProto:
    w = np.random.default_rng(0).standard_normal((2, 2, 3, 3)).astype(np.float32)
    bias = np.arange(2, dtype=np.float32).reshape(1, 2, 1, 1)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Add", ["c", "bias"], ["a"], name="add"),
             helper.make_node("Add", ["a", "r"], ["y"], name="residual")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 5, 5])
    return make_model(nodes, [x], [y], [onnx.numpy_helper.from_array(w, "w"),
                                        onnx.numpy_helper.from_array(bias, "bias")])


def test_fallback_inserts_copies_and_matches_onnxruntime() -> None:
    reg = _registry()
    engine = mi.load(_model(), device="fakegpu", registry=reg)
    placed = [(n.name, n.device) for n in engine.nodes]
    assert placed == [("relu", "fakegpu"), ("copy r fakegpu->cpu", "cpu"), ("conv", "cpu"),
                      ("copy c cpu->fakegpu", "fakegpu"), ("add", "fakegpu"),
                      ("residual", "fakegpu")]
    assert engine.build_info["placement"] == {"fakegpu": 3, "cpu": 1}
    assert engine.build_info["copies"] == 2
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 5)).astype(np.float32)
    ours = mi.InferenceSession(engine).run(None, {"x": x})[0]
    assert type(ours) is np.ndarray
    np.testing.assert_allclose(ours, ort_run(_model(), {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_placement_survives_the_engine_file(tmp_path: Path) -> None:
    reg = _registry()
    path = tmp_path / "fake.engine"
    mi.load(_model(), device="fakegpu", registry=reg).save(str(path))
    engine = mi.Runtime(reg).load_engine(path)
    assert [n.op_type for n in engine.nodes].count("Copy") == 2
    x = np.ones((1, 2, 5, 5), np.float32)
    np.testing.assert_allclose(mi.InferenceSession(engine).run(None, {"x": x})[0],
                               ort_run(_model(), {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_strict_device_turns_fallback_into_a_build_error() -> None:
    config = mi.BuilderConfig(device="fakegpu", strict_device=True)
    with pytest.raises(UnsupportedOperatorError, match="strict") as err:
        mi.Builder(_registry()).build_engine(mi.parse_onnx(_model()), config)
    assert "Conv" in str(err.value) and "'conv'" in str(err.value)


def test_cross_build_for_an_absent_device_then_a_clear_error_at_run(tmp_path: Path) -> None:
    reg = _registry(available=False)
    engine = mi.load(_model(), device="fakegpu", registry=reg)
    path = tmp_path / "x.engine"
    engine.save(str(path))
    loaded = mi.Runtime(reg).load_engine(path)
    assert [n.device for n in loaded.nodes if n.op_type == "Conv"] == ["cpu"]
    with pytest.raises(MiniInferError, match="unavailable"):
        loaded.create_execution_context()


def test_a_missing_copy_would_be_caught_by_the_fake_device() -> None:
    dev = FakeGpu()
    with pytest.raises(TypeError, match="mixed"):
        np.add(dev.to_device(np.ones(3)), np.ones(3))


class HalfAdd(BroadcastPlugin):
    """A fakegpu Add that also runs in HALF when the builder asks for fp16."""

    op_type = "Add"

    def compute(self, a: Any, b: Any, *, out: Any) -> None:
        _check_device(a, b, out)
        seen_dtypes.add(str(np.asarray(out).dtype))
        np.add(a, b, out=out)


seen_dtypes: set[str] = set()


def test_fp16_build_casts_at_the_boundaries_and_stays_close() -> None:
    reg = discover()
    reg.register_device(FakeGpu())
    reg.register_creator(OnnxPluginCreator(GpuRelu, namespace="fakegpu", devices=("fakegpu",)))
    reg.register_creator(OnnxPluginCreator(HalfAdd, namespace="fakegpu", devices=("fakegpu",)))
    config = mi.BuilderConfig(device="fakegpu", fp16=True)
    engine = mi.Builder(reg).build_engine(mi.parse_onnx(_model()), config)
    assert engine.build_info["fp16_nodes"] == 3  # relu, add, residual; conv fell back
    casts = [n for n in engine.nodes if n.op_type == "Cast"]
    assert casts, "fp16 nodes need Cast steps at their boundaries"
    assert engine.tensors["y"].dtype.name == "FLOAT"  # the graph output keeps its type
    x = np.random.default_rng(3).standard_normal((1, 2, 5, 5)).astype(np.float32)
    seen_dtypes.clear()
    ours = mi.InferenceSession(engine).run(None, {"x": x})[0]
    assert ours.dtype == np.float32 and "float16" in seen_dtypes
    ref = ort_run(_model(), {"x": x})[0]
    np.testing.assert_allclose(ours, ref, rtol=2e-2, atol=2e-2)
    assert np.abs(ours - ref).max() > 0  # it really ran in reduced precision


class GraphGpu(FakeGpu):
    """Records a run as a replayable 'graph' the way CUDA graphs do: capture queues, launch
    runs."""

    captures = 0
    launches = 0

    def supports_graphs(self) -> bool:
        return True

    def capture_graph(self, fn: Any, stream: Stream) -> Any:
        GraphGpu.captures += 1
        return fn

    def launch_graph(self, graph: Any, stream: Stream) -> None:
        GraphGpu.launches += 1
        graph()


def test_graph_capture_replays_while_shapes_repeat() -> None:
    ctx = _graph_context(GraphGpu())
    GraphGpu.captures = GraphGpu.launches = 0
    rng = np.random.default_rng(0)
    for n in (2, 2, 2, 3, 3):
        xv = rng.standard_normal((n, 4)).astype(np.float32)
        np.testing.assert_allclose(ctx.execute({"x": xv})["y"], np.maximum(xv, 0) + xv)
    assert (GraphGpu.captures, GraphGpu.launches) == (2, 5)


class RefusingGraphGpu(GraphGpu):
    """A device whose captures fail after the eager warm-up, as CuPy's do on a cuBLAS call."""

    def capture_graph(self, fn: Any, stream: Stream) -> Any:
        fn()
        GraphGpu.captures += 1
        raise NotImplementedError("calling cuBLAS API during stream capture is unsupported")


def _graph_context(device: FakeGpu, relu: type = GpuRelu) -> Any:
    """A context of Relu then Add, both on ``device``, with graphs enabled."""
    reg = discover()
    reg.register_device(device)
    for cls in (relu, GpuAdd):
        reg.register_creator(OnnxPluginCreator(cls, namespace="fakegpu", devices=("fakegpu",)))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    model = make_model([helper.make_node("Relu", ["x"], ["r"]),
                        helper.make_node("Add", ["r", "x"], ["y"])], [x], [y])
    ctx = mi.load(model, device="fakegpu", registry=reg).create_execution_context()
    assert ctx.enable_graphs()
    return ctx


def test_a_failed_capture_runs_eagerly_warns_once_and_stays_eager() -> None:
    ctx = _graph_context(RefusingGraphGpu())
    assert ctx.graph_error is None
    GraphGpu.captures = GraphGpu.launches = 0
    xv = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    with pytest.warns(RuntimeWarning, match="capture failed.*cuBLAS"):
        got = ctx.execute({"x": xv})["y"]
    np.testing.assert_allclose(got, np.maximum(xv, 0) + xv)
    assert "NotImplementedError" in (ctx.graph_error or "")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(ctx.execute({"x": -xv})["y"], np.maximum(-xv, 0) - xv)
    assert (GraphGpu.captures, GraphGpu.launches) == (1, 0)


broken: list[bool] = []


class BrokenRelu(GpuRelu):
    """A Relu that breaks once ``broken`` holds True (after the build has placed it)."""

    op_type = "Relu"

    def compute(self, x: Any, *, out: Any) -> None:
        if broken:
            raise ValueError("broken kernel")
        super().compute(x, out=out)


def test_an_error_of_the_run_itself_is_not_taken_for_a_capture_failure() -> None:
    ctx = _graph_context(RefusingGraphGpu(), BrokenRelu)
    broken.append(True)
    try:
        with pytest.raises(mi.ExecutionError, match="broken kernel"):
            ctx.execute({"x": np.ones((2, 4), np.float32)})
    finally:
        broken.clear()
    assert ctx.graph_error is None


def test_bench_replays_a_graph_and_reports_a_failed_capture(tmp_path: Path) -> None:
    from mini_infer_core.cli.bench import bench

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    path = tmp_path / "m.onnx"
    onnx.save(make_model([helper.make_node("Relu", ["x"], ["r"]),
                          helper.make_node("Add", ["r", "x"], ["y"])], [x], [y]), str(path))
    feeds = {"x": np.ones((2, 4), np.float32)}
    for device, graphs, note in ((GraphGpu(), True, None),
                                 (RefusingGraphGpu(), False, "capture failed")):
        reg = discover()
        reg.register_device(device)
        for cls in (GpuRelu, GpuAdd):
            reg.register_creator(OnnxPluginCreator(cls, namespace="fakegpu",
                                                   devices=("fakegpu",)))
        GraphGpu.captures = GraphGpu.launches = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out = bench(str(path), reg, lambda engine: feeds, device="fakegpu", warmup=1,
                        iterations=3, graphs=True, time_tactics=False)
        assert out["graphs"] is graphs
        assert (note is None) == ("graphs" not in out["notes"]), out["notes"]
        if graphs:  # captured once, replayed by the warm-up and every timed run
            assert (GraphGpu.captures, GraphGpu.launches) == (1, 1 + 1 + 3)


def test_graphs_refused_names_the_reason() -> None:
    ctx = mi.load(_model(), device="fakegpu", registry=_registry()).create_execution_context()
    assert ctx.graphs_refused is not None and "several devices" in ctx.graphs_refused
    assert ctx.enable_graphs() is False


def test_graphs_are_refused_where_the_device_cannot() -> None:
    ctx = mi.load(_model()).create_execution_context()
    assert ctx.enable_graphs() is False
