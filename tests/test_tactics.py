"""Tactic timing at build time: the builder times each tactic a plugin offers on the node's
real shapes, keeps the fastest in the plugin's fields, and the engine file carries it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.cli.main import main
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator
from mini_infer_core.registry import discover

#: passes over the tensor each tactic makes (the same values, very different times, so the
#: timing has one right answer); the attribute ``tactics`` says how many a node offers
PASSES = {"repeated": 400, "twice": 200, "direct": 1}


class Smooth(OnnxPlugin):
    """y = x + 1, computed by one of its tactics (:data:`PASSES`)."""

    domain = "com.test"
    attributes: ClassVar[dict[str, Any]] = {"__tactic__": "", "tactics": 2}

    def get_tactics(self, input_shapes: Any) -> list[str]:
        offered = ["repeated", "direct"] if self.attrs["tactics"] == 2 else list(PASSES)
        return offered if input_shapes[0] is not None else []

    def set_tactic(self, name: str) -> None:
        self.attrs["__tactic__"] = name

    def compute(self, x: Any, *, out: Any, __tactic__: str, tactics: int) -> None:
        for _ in range(PASSES[__tactic__ or "repeated"]):
            np.add(x, 1.0, out=out)


def _model(shape: list[int | str], offers: tuple[int, ...] = (2,)) -> onnx.ModelProto:
    """A chain of Smooth nodes, the i-th offering ``offers[i]`` tactics."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    names = ["x", *(f"t{i}" for i in range(len(offers) - 1)), "y"]
    nodes = [helper.make_node("Smooth", [names[i]], [names[i + 1]], domain="com.test",
                              name="smooth" if i == 0 else f"smooth{i}", tactics=n)
             for i, n in enumerate(offers)]
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])


@pytest.fixture
def registry() -> Any:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Smooth, namespace="test"))
    return reg


def test_the_fastest_tactic_is_kept_and_reported(registry: Any) -> None:
    engine = mi.load(_model([64, 256]), registry=registry)
    (report,) = engine.build_info["tactics"].values()
    assert report["chosen"] == "direct"
    assert set(report["ms"]) == {"repeated", "direct"}
    assert report["ms"]["direct"] < report["ms"]["repeated"]
    assert engine.nodes[0].plugin.attrs["__tactic__"] == "direct"
    x = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)
    np.testing.assert_array_equal(mi.InferenceSession(engine).run(None, {"x": x})[0], x + 1)


def test_nodes_offering_different_numbers_of_tactics_are_timed_in_the_same_runs(
        registry: Any) -> None:
    """Each pass of the engine runs every node's k-th tactic; a node with fewer tactics is
    timed only on its own."""
    engine = mi.load(_model([64, 256], offers=(3, 2, 3)), registry=registry)
    reports = engine.build_info["tactics"]
    assert set(reports) == {"smooth", "smooth1", "smooth2"}
    assert set(reports["smooth1"]["ms"]) == {"repeated", "direct"}
    for name in ("smooth", "smooth2"):
        ms = reports[name]["ms"]
        assert set(ms) == set(PASSES)
        assert ms["direct"] < ms["twice"] < ms["repeated"]
    assert [n.plugin.attrs["__tactic__"] for n in engine.nodes] == ["direct"] * 3
    x = np.zeros((64, 256), np.float32)
    np.testing.assert_array_equal(mi.InferenceSession(engine).run(None, {"x": x})[0], x + 3)


def test_the_choice_travels_in_the_engine_file(registry: Any, tmp_path: Path) -> None:
    engine = mi.load(_model([8, 8]), registry=registry)
    path = tmp_path / "smooth.engine"
    engine.save(str(path))
    loaded = mi.Runtime(registry).load_engine(str(path))
    assert loaded.nodes[0].plugin.attrs["__tactic__"] == "direct"


def test_timing_can_be_switched_off(registry: Any) -> None:
    engine = mi.load(_model([8, 8]), config=mi.BuilderConfig(time_tactics=False),
                     registry=registry)
    assert "tactics" not in engine.build_info
    assert engine.nodes[0].plugin.attrs["__tactic__"] == ""


def test_dynamic_shapes_are_not_timed(registry: Any) -> None:
    engine = mi.load(_model(["N", 8]), registry=registry)
    assert engine.build_info["tactics"] == {}
    assert engine.nodes[0].plugin.attrs["__tactic__"] == ""


def _conv_model(tmp_path: Path) -> Path:
    """A Conv the compiled plugin could run by Winograd (either tile size) or GEMM."""
    w = onnx.numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((32, 32, 3, 3)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")], "g",
        [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def test_bench_reports_build_load_first_run_and_the_ratio_to_onnxruntime(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # LINEAR: a blocked Conv (cpu-native's NCHWc kernels, chosen by the format timing) has
    # no tactics of its own to time
    monkeypatch.setenv("MINI_INFER_BLOCKED_FORMATS", "0")
    path = _conv_model(tmp_path)
    seen = {}
    for flag in ([], ["--no-tactic-timing"]):
        assert main(["bench", str(path), "--json", "--warmup", "1", "--iterations", "3",
                     "--compare", "onnxruntime", *flag]) == 0
        data = json.loads(capsys.readouterr().out)
        for key in ("build_seconds", "load_seconds", "first_run_seconds"):
            assert data[key] > 0
        assert data["load_plus_first_run_seconds"] == pytest.approx(
            data["load_seconds"] + data["first_run_seconds"])
        assert set(data["results"]) == {"mini-infer", "onnxruntime"}
        ratio = data["ratios"]["mini-infer/onnxruntime"]
        assert ratio == pytest.approx(data["results"]["mini-infer"]["median_ms"]
                                      / data["results"]["onnxruntime"]["median_ms"])
        seen[bool(flag)] = data["tactics"]
    assert set(seen[False]["conv"]["ms"]) == {"winograd", "winograd4", "gemm"}
    text = subprocess.run([sys.executable, "-m", "mini_infer_core.cli.main", "bench", str(path),
                           "--warmup", "0", "--iterations", "1"],
                          check=True, capture_output=True, text=True).stdout
    assert "tactics timed for 1 node(s)" in text
    assert seen[True] == {}


def test_cli_build_without_timing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--no-tactic-timing`` reaches the builder (timed by default, not with the flag)."""
    monkeypatch.setenv("MINI_INFER_BLOCKED_FORMATS", "0")  # LINEAR: the Conv's own tactics
    path = _conv_model(tmp_path)
    seen = {}
    for flag in ([], ["--no-tactic-timing"]):
        out = tmp_path / f"m{len(flag)}.engine"
        subprocess.run([sys.executable, "-m", "mini_infer_core.cli.main", "build", str(path),
                        "-o", str(out), *flag], check=True, capture_output=True)
        header = json.loads(subprocess.run(
            [sys.executable, "-m", "mini_infer_core.cli.main", "inspect", str(out), "--json"],
            check=True, capture_output=True, text=True).stdout)
        seen[bool(flag)] = header["build_info"].get("tactics")
    assert set(seen[False]["conv"]["ms"]) == {"winograd", "winograd4", "gemm"}
    assert seen[True] is None


def test_a_one_off_session_keeps_each_plugin_s_own_choice(registry: Any,
                                                          tmp_path: Path) -> None:
    """InferenceSession on an .onnx given no config builds for one session: nothing is timed
    (each plugin's default stands); a config given, or mi.load, times as before."""
    path = tmp_path / "smooth.onnx"
    onnx.save(_model([64, 256]), str(path))
    x = np.zeros((64, 256), np.float32)
    one_off = mi.InferenceSession(str(path), registry=registry)
    assert one_off.engine is not None
    assert not one_off.engine.build_info.get("tactics")
    assert one_off.engine.nodes[0].plugin.attrs["__tactic__"] == ""
    np.testing.assert_array_equal(one_off.run(None, {"x": x})[0], x + 1)
    timed = mi.InferenceSession(str(path), registry=registry, config=mi.BuilderConfig())
    assert timed.engine is not None
    assert timed.engine.nodes[0].plugin.attrs["__tactic__"] == "direct"
    assert mi.load(str(path), registry=registry).nodes[0].plugin.attrs["__tactic__"] == "direct"
