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
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator
from mini_infer_core.registry import discover


class Smooth(OnnxPlugin):
    """y = x + 1, computed once ("direct") or as 400 repeated passes ("repeated"): the same
    values, very different times, so the timing has one right answer."""

    domain = "com.test"
    attributes: ClassVar[dict[str, Any]] = {"__tactic__": ""}

    def get_tactics(self, input_shapes: Any) -> list[str]:
        return ["repeated", "direct"] if input_shapes[0] is not None else []

    def set_tactic(self, name: str) -> None:
        self.attrs["__tactic__"] = name

    def compute(self, x: Any, *, out: Any, __tactic__: str) -> None:
        for _ in range(400 if __tactic__ in ("", "repeated") else 1):
            np.add(x, 1.0, out=out)


def _model(shape: list[int | str]) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)
    return helper.make_model(helper.make_graph(
        [helper.make_node("Smooth", ["x"], ["y"], domain="com.test", name="smooth")],
        "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17),
                                       helper.make_opsetid("com.test", 1)])


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


def test_cli_build_without_timing(tmp_path: Path) -> None:
    """``--no-tactic-timing`` reaches the builder (a Conv the compiled plugin could run by
    Winograd or GEMM: timed by default, not with the flag)."""
    w = onnx.numpy_helper.from_array(
        np.random.default_rng(0).standard_normal((32, 32, 3, 3)).astype(np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1], name="conv")], "g",
        [x], [y], [w]), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    seen = {}
    for flag in ([], ["--no-tactic-timing"]):
        out = tmp_path / f"m{len(flag)}.engine"
        subprocess.run([sys.executable, "-m", "mini_infer_core.cli.main", "build", str(path),
                        "-o", str(out), *flag], check=True, capture_output=True)
        header = json.loads(subprocess.run(
            [sys.executable, "-m", "mini_infer_core.cli.main", "inspect", str(out), "--json"],
            check=True, capture_output=True, text=True).stdout)
        seen[bool(flag)] = header["build_info"].get("tactics")
    assert set(seen[False]["conv"]["ms"]) == {"winograd", "gemm"}
    assert seen[True] is None
