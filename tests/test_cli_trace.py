"""``mini-infer bench --trace FILE.json`` (issue 17 item 23): one run as a Chrome/Perfetto trace
in the Trace Event Format (JSON object form, complete "X" events), one slice per node."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
from helpers import run_cli

import mini_infer_core


def test_trace_has_one_slice_per_node_with_plugin_device_and_shapes(
        small_cnn: onnx.ModelProto, tmp_path: Path) -> None:
    model, trace = tmp_path / "cnn.onnx", tmp_path / "run.json"
    onnx.save(small_cnn, str(model))
    proc = run_cli("bench", str(model), "--trace", str(trace), "--shape", "x=2,3,8,8",
                   "--warmup", "1", "--iterations", "2", "--no-tactic-timing")
    doc = json.loads(trace.read_text())
    events = doc["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]
    engine = mini_infer_core.build_engine(mini_infer_core.parse_onnx(small_cnn),
                                          mini_infer_core.BuilderConfig(time_tactics=False))
    assert [e["name"] for e in slices] == [n.name for n in engine.nodes]
    assert f"trace of one run ({len(slices)} node slices) written to {trace}" in proc.stdout
    # the format's required fields, with the units it prescribes (microseconds)
    for e in slices:
        assert {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert isinstance(e["ts"], float | int) and e["dur"] > 0
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
    for before, after in zip(slices, slices[1:], strict=False):  # in order, no overlap
        assert after["ts"] >= before["ts"] + before["dur"] - 1e-3
    first = slices[0]["args"]
    assert first["op"] == engine.nodes[0].qualified_op and first["device"] == "cpu"
    assert first["plugin"].startswith(engine.nodes[0].plugin_namespace + "::")
    assert first["distribution"] == engine.nodes[0].distribution
    assert first["inputs"][0] == {"name": "x", "shape": [2, 3, 8, 8], "dtype": "float32"}
    assert slices[-1]["args"]["outputs"][0]["shape"] == [2, 10]
    names = {(e["name"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names[("thread_name", slices[0]["tid"])] == "device cpu"


def test_trace_into_a_missing_folder_fails_before_timing(small_cnn: onnx.ModelProto,
                                                         tmp_path: Path) -> None:
    model = tmp_path / "cnn.onnx"
    onnx.save(small_cnn, str(model))
    proc = run_cli("bench", str(model), "--trace", str(tmp_path / "no" / "t.json"),
                   check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"--trace {tmp_path / 'no' / 't.json'}: cannot write the trace there: folder " \
           f"{tmp_path / 'no'} does not exist" in proc.stderr
    assert "median" not in proc.stdout


def test_trace_of_a_data_dependent_engine_says_why_not(tmp_path: Path) -> None:
    from helpers import make_model
    from onnx import TensorProto, helper

    model = make_model([helper.make_node("NonZero", ["x"], ["y"], name="nz")],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                       [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    path = tmp_path / "nz.onnx"
    onnx.save(model, str(path))
    proc = run_cli("bench", str(path), "--trace", str(tmp_path / "t.json"), "--iterations", "2",
                   "--json")
    assert "shapes depend on data" in json.loads(proc.stdout)["notes"]["trace"]
    assert not (tmp_path / "t.json").exists()
