"""The mini-infer CLI, in process: plugins, inspect, run, build, bench, verbose lifecycle."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from helpers import ort_run

import mini_infer_core
from mini_infer_core.cli.main import main


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:  # type: ignore[type-arg]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_plugins_json_lists_distributions_devices_creators(
        capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, ["plugins", "--json"])
    assert {"distributions", "devices", "creators", "conflicts"} <= set(data)
    dist = {d["name"]: d for d in data["distributions"]}["mini-infer-cpu-plugins"]
    assert dist["status"] == "loaded" and dist["version"] == "0.1.0"
    cpu = {d["name"]: d for d in data["devices"]}["cpu"]
    assert cpu["available"] is True
    conv = {c["distribution"]: c for c in data["creators"]
            if c["op_type"] == "Conv" and c["device"] == "cpu"}
    assert set(conv) == {"mini-infer-cpu-plugins", "mini-infer-cpu-native"}
    assert conv["mini-infer-cpu-native"]["priority"] > conv["mini-infer-cpu-plugins"]["priority"]
    assert {"name", "version", "namespace", "domain", "device", "priority"} <= set(
        conv["mini-infer-cpu-plugins"])
    assert any("Conv" in str(c) and "mini-infer-cpu-native" in str(c)
               for c in data["conflicts"])


def test_blocking_a_plugin_with_dash_p(capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, ["plugins", "--json", "-p", "no:cpu_basic"])
    dist = {d["name"]: d for d in data["distributions"]}["mini-infer-cpu-plugins"]
    assert dist["status"] == "blocked"
    assert not [c for c in data["creators"] if c["distribution"] == "mini-infer-cpu-plugins"]


def test_inspect_shows_plugins_devices_shapes_and_memory_plan(
        small_cnn: onnx.ModelProto, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.onnx"
    small_cnn.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    onnx.save(small_cnn, str(path))
    data = _json(capsys, ["inspect", str(path), "--json"])
    conv = data["nodes"][0]
    # the compiled Conv outranks the NumPy one (both installed)
    assert conv["plugin"] == "mini_infer.cpu_native::Conv" and conv["device"] == "cpu"
    assert conv["outputs"][0]["shape"] == [2, 8, 8, 8]
    assert conv["distribution"] == "mini-infer-cpu-native"
    plan = data["memory_plan"]
    assert 0 < plan["planned_peak_bytes"] <= plan["naive_bytes"]
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    header = text.splitlines()[0]
    assert header.startswith("plugins: ") and "mini-infer-cpu-plugins-0.1.0" in header
    assert "memory plan: peak" in text and "naive sum" in text


def test_build_then_run_with_inputs_and_output_dir(small_cnn: onnx.ModelProto, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    model_path, engine_path = tmp_path / "m.onnx", tmp_path / "m.engine"
    onnx.save(small_cnn, str(model_path))
    assert main(["build", str(model_path), "-o", str(engine_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    data = _json(capsys, ["run", str(engine_path), "--input", f"x={tmp_path / 'x.npy'}",
                          "--output-dir", str(tmp_path / "out"), "--json"])
    assert data["outputs"]["y"]["shape"] == [2, 10]
    y = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_allclose(y, ort_run(small_cnn, {"x": x})[0], rtol=1e-3, atol=1e-4)


def test_run_with_random_inputs_prints_summary(small_cnn: onnx.ModelProto, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(small_cnn, str(path))
    assert main(["run", str(path), "--shape", "x=3,3,8,8"]) == 0
    out = capsys.readouterr().out
    assert "y: shape (3, 10) float32" in out


def test_verbose_shows_every_lifecycle_stage(small_cnn: onnx.ModelProto, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(small_cnn, str(path))
    monkeypatch.delenv("MINI_INFER_DEBUG", raising=False)
    assert main(["run", str(path), "--verbose"]) == 0
    err = capsys.readouterr().err
    for stage in ("construct", "configure", "initialize", "enqueue", "terminate", "destroy"):
        assert stage in err, f"{stage} missing from verbose log"


def test_errors_are_one_line_for_people(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "missing.onnx")]) == 2
    err = capsys.readouterr().err
    assert "ModelImportError" in err and "does not exist" in err


def test_cross_build_for_cuda_without_a_gpu(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from mini_infer_core.registry import discover
    from mini_infer_core.testing.light_models import light_model_path

    cuda = discover().get_device("cuda")
    if cuda is None or cuda.availability()[0]:
        pytest.skip("needs mini-infer-cuda-plugins installed and no usable GPU")
    engine = tmp_path / "sq.engine"
    assert main(["build", str(light_model_path("squeezenet")), "-o", str(engine),
                 "--device", "cuda", "--strict-device"]) == 0
    capsys.readouterr()
    data = _json(capsys, ["inspect", str(engine), "--json"])
    assert data["device"] == "cuda" and {n["device"] for n in data["nodes"]} == {"cuda"}
    assert {n["distribution"] for n in data["nodes"]} == {"mini-infer-cuda-plugins"}
    assert main(["run", str(engine)]) == 2
    err = capsys.readouterr().err
    assert "cuda" in err and "unavailable" in err


def test_run_time_plugin_errors_name_the_node_and_random_dims_are_explained(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("MaxPool", ["x"], ["y"], name="pool",
                                                kernel_shape=[2, 2])], "g", [x], [y])
    path = tmp_path / "pool.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "--shape x=" in err and "node 'pool'" in err and "MaxPool" in err
    assert main(["run", str(path), "--shape", "x=1,2,4,4"]) == 0
    assert "y: shape (1, 2, 3, 3)" in capsys.readouterr().out


@pytest.fixture
def small_cnn_file(small_cnn: onnx.ModelProto, tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(small_cnn, str(path))
    return path


def test_bench_profile_times_every_node_in_engine_order(
        small_cnn: onnx.ModelProto, small_cnn_file: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", str(small_cnn_file), "--profile", "--warmup", "1", "--iterations", "2",
            "--shape", "x=2,3,8,8"]
    data = _json(capsys, [*argv, "--json"])
    engine = mini_infer_core.load(small_cnn)
    rows = data["profile"]
    assert [r["node"] for r in rows] == [n.name for n in engine.nodes]
    assert [r["op_type"] for r in rows] == [n.op_type for n in engine.nodes]
    assert rows[0]["inputs"][0] == [2, 3, 8, 8]
    assert all(r["median_ms"] > 0 and r["plugin"].endswith(f"::{r['op_type']}") for r in rows)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"profile: {len(rows)} nodes" in text and "slowest" in text


def test_bench_cuda_graph_says_why_the_cpu_cannot_capture(
        small_cnn_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _json(capsys, ["bench", str(small_cnn_file), "--cuda-graph", "--warmup", "1",
                          "--iterations", "2", "--shape", "x=1,3,8,8", "--json"])
    assert data["graphs"] is False
    assert "device 'cpu' cannot capture graphs" in data["notes"]["graphs"]
    assert data["results"]["mini-infer"]["median_ms"] > 0
