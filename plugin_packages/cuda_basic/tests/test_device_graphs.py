"""The cuda device's stream helper and CUDA-graph methods, without a GPU (stand-in streams),
and, marked ``gpu``, a real capture and replay of a plugin."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mini_infer_cuda_plugins.device import CudaDevice, CudaStream, on_stream, probe_cuda

from mini_infer_core.errors import DeviceError
from mini_infer_core.plugin import Stream


class RecordingStream:
    """Stands for a ``cupy.cuda.Stream``: records what the device asks of it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin_capture(self) -> None:
        self.calls.append("begin")

    def end_capture(self) -> str:
        self.calls.append("end")
        return "graph"

    def synchronize(self) -> None:
        self.calls.append("sync")

    def __enter__(self) -> RecordingStream:
        self.calls.append("enter")
        return self

    def __exit__(self, *exc: object) -> None:
        self.calls.append("exit")


class RecordingGraph:
    def __init__(self) -> None:
        self.launched_on: list[Any] = []

    def launch(self, stream: Any = None) -> None:
        self.launched_on.append(stream)


def test_on_stream_enters_the_cupy_stream_or_nothing() -> None:
    raw = RecordingStream()
    with on_stream(CudaStream(raw)):
        pass
    assert raw.calls == ["enter", "exit"]
    for plain in (None, Stream(), object()):
        assert isinstance(on_stream(plain), contextlib.nullcontext)


def test_graph_methods_delegate_to_the_stream() -> None:
    dev, raw = CudaDevice(), RecordingStream()
    stream = CudaStream(raw)
    dev.begin_capture(stream)
    assert dev.end_capture(stream) == "graph"
    graph = RecordingGraph()
    dev.launch_graph(graph, stream)
    assert raw.calls == ["begin", "end"] and graph.launched_on == [raw]
    with pytest.raises(DeviceError, match="not a stream of the cuda device"):
        dev.begin_capture(Stream())


def test_capture_graph_runs_the_work_once_eagerly_before_capturing_it() -> None:
    dev, raw = CudaDevice(), RecordingStream()
    stream = CudaStream(raw)
    graph = dev.capture_graph(lambda: raw.calls.append("work"), stream)
    assert graph == "graph"
    assert raw.calls == ["work", "sync", "begin", "work", "end"]

    def failing() -> None:  # fails while being captured
        raw.calls.append("work")
        if "begin" in raw.calls:
            raise RuntimeError("boom")

    raw.calls.clear()
    with pytest.raises(RuntimeError, match="boom"):
        dev.capture_graph(failing, stream)
    assert raw.calls[-1] == "end", "a failed capture must still be ended"


def test_graphs_are_unsupported_without_a_gpu() -> None:
    if probe_cuda()[0]:
        pytest.skip("a GPU is present")
    assert CudaDevice().supports_graphs() is False
    assert "cupy" not in sys.modules


def test_plugins_say_whether_graph_replay_is_safe() -> None:
    from mini_infer_cuda_plugins.catalog import lazy_creators

    from mini_infer_core.plugin import DimsExprs, fields_from_values

    conv = next(c for c in lazy_creators() if c.op_type == "Conv")
    assert conv.create_plugin("c", fields_from_values({})).graph_safe  # type: ignore[attr-defined]
    bn = next(c for c in lazy_creators() if c.op_type == "BatchNormalization")
    assert bn.create_plugin("b", fields_from_values({})).graph_safe  # type: ignore[attr-defined]
    assert not bn.create_plugin(  # type: ignore[attr-defined]
        "b", fields_from_values({"training_mode": 1})).graph_safe
    sl = next(c for c in lazy_creators() if c.op_type == "Slice" and c.supports_opset(13))
    plugin = sl.create_plugin("s", fields_from_values({}))
    plugin.get_output_dimensions(  # type: ignore[attr-defined]
        0, [DimsExprs((4, 6)), DimsExprs((1,), values=[1]), DimsExprs((1,), values=[3])], None)
    assert plugin.graph_safe  # type: ignore[attr-defined]  # constant starts: recorded
    from mini_infer_core.plugin import DimExpr

    n = DimExpr.sym("N")
    plugin.get_output_dimensions(  # type: ignore[attr-defined]
        0, [DimsExprs((n, 6)), DimsExprs((1,), values=[0]), DimsExprs((1,), values=[n - 1])],
        None)
    assert plugin.graph_safe  # type: ignore[attr-defined]  # constant start, symbolic end
    plugin.get_output_dimensions(  # type: ignore[attr-defined]
        0, [DimsExprs((n, 6)), DimsExprs((1,), values=[n - 2]), DimsExprs((1,), values=[n])],
        None)
    assert not plugin.graph_safe  # type: ignore[attr-defined]  # symbolic start: a gather


def test_wheel_ships_the_cuda_sources(tmp_path: Path) -> None:
    pytest.importorskip("hatchling")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", str(root), "-w", str(tmp_path), "-q"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"pip cannot build the wheel here: {proc.stderr.strip()[-300:]}")
    (wheel,) = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for src in ("activation.cu", "conv.cu", "epilogue.cu", "lrn.cu", "pool.cu", "common.cuh"):
        assert f"mini_infer_cuda_plugins/kernels/{src}" in names


@pytest.mark.gpu
def test_a_captured_graph_replays_a_plugin_on_new_inputs() -> None:
    ok, reason = probe_cuda()
    if not ok:
        pytest.skip(f"no usable CUDA device: {reason}")
    import cupy
    from mini_infer_cuda_plugins.catalog import lazy_creators

    from mini_infer_core.plugin import DimsExprs, fields_from_values

    dev = CudaDevice()
    assert dev.supports_graphs()
    conv = next(c for c in lazy_creators() if c.op_type == "Conv").create_plugin(
        "c", fields_from_values({"pads": [1, 1, 1, 1]}))
    conv.get_output_dimensions(  # type: ignore[attr-defined]
        0, [DimsExprs((1, 3, 8, 8)), DimsExprs((4, 3, 3, 3))], None)
    rng = np.random.default_rng(0)
    x = cupy.asarray(rng.standard_normal((1, 3, 8, 8)).astype(np.float32))
    w = cupy.asarray(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    b = cupy.asarray(rng.standard_normal(4).astype(np.float32))
    y = cupy.empty((1, 4, 8, 8), np.float32)
    stream = dev.create_stream()
    conv.enqueue([x, w, b], [y], None, stream)  # eager run: scratch buffers are made
    stream.synchronize()
    eager = cupy.asnumpy(y)
    dev.begin_capture(stream)
    try:
        conv.enqueue([x, w, b], [y], None, stream)
    finally:  # a failed enqueue must not leave the stream capturing for the next tests
        graph = dev.end_capture(stream)
    y.fill(0)
    x *= 2  # new input values, same buffer
    stream.synchronize()
    dev.launch_graph(graph, stream)
    stream.synchronize()
    bias = cupy.asnumpy(b).reshape(1, 4, 1, 1)
    np.testing.assert_allclose(cupy.asnumpy(y) - bias, 2 * (eager - bias), rtol=1e-4,
                               atol=1e-4)
