"""Build-time packing: constants stored in the memory layout their kernel reads, kept by the
engine file, so that loading and the first run repack nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import make_model, ort_run
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.engine.format import memory_order, read_engine_file
from mini_infer_core.errors import BuildError
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator, Repacked
from mini_infer_core.registry import discover


def _conv_net() -> onnx.ModelProto:
    """A 3x3 convolution wide enough for the CPU plugin's tap path, then a depthwise one."""
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((24, 16, 3, 3)) * 0.2).astype(np.float32)
    dw = (rng.standard_normal((24, 1, 3, 3)) * 0.3).astype(np.float32)
    b = rng.standard_normal(24).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(a, n) for a, n in ((w, "w"), (dw, "dw"), (b, "b"))]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "dw"], ["y"], pads=[1, 1, 1, 1], group=24,
                              name="depthwise")]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 20, 20])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 24, 20, 20])
    return make_model(nodes, [x], [y], inits)


def _tap_major(arr: np.ndarray) -> bool:
    return bool(arr.transpose(2, 3, 0, 1).flags.c_contiguous) and not arr.flags.c_contiguous


def test_conv_weights_are_packed_at_build_and_kept_by_the_file(tmp_path: Path) -> None:
    model = _conv_net()
    x = np.random.default_rng(0).standard_normal((1, 16, 20, 20)).astype(np.float32)
    want = ort_run(model, {"x": x})[0]
    # cpu_basic's Conv (the compiled one of mini-infer-cpu-native would otherwise outrank it)
    engine = mi.load(model, config=mi.BuilderConfig(
        device="cpu", pins={"Conv": "mini-infer-cpu-plugins"}))
    assert engine.build_info["constants_packed"] == 2
    assert _tap_major(engine.constants["w"]) and _tap_major(engine.constants["dw"])
    np.testing.assert_allclose(engine.constants["w"], onnx.numpy_helper.to_array(
        model.graph.initializer[0]))
    path = tmp_path / "net.engine"
    engine.save(str(path))
    header = read_engine_file(path).header
    orders = {c["name"]: c.get("order") for c in header["constants"]}
    assert orders == {"w": [2, 3, 0, 1], "dw": [2, 3, 0, 1], "b": None}
    np.save(tmp_path / "x.npy", x)
    script = (
        "import json, sys, numpy as np, mini_infer_core as mi\n"
        f"e = mi.Runtime().load_engine({str(path)!r})\n"
        f"y = mi.InferenceSession(e).run(None, {{'x': np.load({str(tmp_path / 'x.npy')!r})}})[0]\n"
        f"np.save({str(tmp_path / 'y.npy')!r}, y)\n"
        "w = e.constants['w']\n"
        "print(json.dumps({'strides': list(w.strides), 'shape': list(w.shape),"
        " 'tap_major': bool(w.transpose(2, 3, 0, 1).flags.c_contiguous)}))\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=True)
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["shape"] == [24, 16, 3, 3] and seen["tap_major"]
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), want, rtol=1e-4, atol=1e-4)


def test_cpu_native_packs_for_the_kernel_each_convolution_runs() -> None:
    """mini-infer-cpu-native's Conv stores the weights of a GEMM convolution in its compiled
    GEMM's panels (reordered, ``__wpacked__``), or tap-major for cpu_basic's tap GEMMs where
    that GEMM cannot run (no AVX-512); depthwise and Winograd weights as ONNX stores them; the
    build packs after choosing tactics."""
    from mini_infer_cpu_native._native import gemm_available

    model = _conv_net()
    w_onnx = onnx.numpy_helper.to_array(model.graph.initializer[0])
    x = np.random.default_rng(1).standard_normal((1, 16, 20, 20)).astype(np.float32)
    # untimed: the default takes a GEMM for 16 channels (LINEAR: a blocked Conv keeps ONNX's
    # layout: plugin_packages/cpu_native/tests/test_blocked.py)
    engine = mi.load(model, config=mi.BuilderConfig(device="cpu", time_tactics=False,
                                                    negotiate_formats=False))
    assert {n.plugin_namespace for n in engine.nodes} == {"mini_infer.cpu_native"}
    assert engine.build_info["constants_packed"] == 1
    conv = next(n.plugin for n in engine.nodes if n.name == "conv")
    w = engine.constants["w"]
    if gemm_available():
        assert conv.hidden.get("__wpacked__") == 1  # type: ignore[attr-defined]
        assert w.flags.c_contiguous and not np.array_equal(w, w_onnx)
        np.testing.assert_array_equal(np.sort(w, axis=None), np.sort(w_onnx, axis=None))
    else:
        assert not conv.hidden.get("__wpacked__") and _tap_major(w)  # type: ignore[attr-defined]
    assert engine.constants["dw"].flags.c_contiguous
    np.testing.assert_allclose(mi.InferenceSession(engine).run(None, {"x": x})[0],
                               ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4)
    # timed: packing follows the tactic the timing chose (Winograd reads ONNX's layout)
    engine = mi.load(model, config=mi.BuilderConfig(negotiate_formats=False))
    chosen = engine.build_info["tactics"]["conv"]["chosen"]
    conv = next(n.plugin for n in engine.nodes if n.name == "conv")
    packed = conv.hidden.get("__wpacked__") or _tap_major(engine.constants["w"])  # type: ignore[attr-defined]
    assert packed == (chosen == "gemm")
    np.testing.assert_allclose(mi.InferenceSession(engine).run(None, {"x": x})[0],
                               ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("make", [
    lambda: np.arange(24, dtype=np.float32).reshape(2, 3, 4),
    lambda: np.ascontiguousarray(np.arange(24.0).reshape(2, 3, 4).transpose(1, 2, 0))
    .transpose(2, 0, 1),
    lambda: np.arange(24.0).reshape(4, 6)[::-1],  # negative strides: stored in C order
    lambda: np.broadcast_to(np.arange(3.0), (4, 3)),  # no memory order at all
    lambda: np.arange(12.0).reshape(3, 4)[:, ::2],
    lambda: np.float32(5.0).reshape(()),
])
def test_memory_order_round_trip(make: Any) -> None:
    arr = make()
    order, stored = memory_order(arr)
    assert stored.flags.c_contiguous
    np.testing.assert_array_equal(stored.transpose(np.argsort(order)), arr)


class Shift(OnnxPlugin):
    """y = x + s, whose pack_constants (wrongly) changes the constant's values."""

    domain = "com.test"

    def compute(self, x: Any, s: Any, *, out: Any) -> None:
        np.add(x, s, out=out)

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, np.ndarray]:
        return {1: constants[1] + 1}


def test_packing_that_changes_values_is_a_build_error() -> None:
    s = onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "s")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Shift", ["x", "s"], ["y"], domain="com.test", name="shift")],
        "g", [x], [y], [s]), opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.test", 1)])
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Shift, namespace="test"))
    with pytest.raises(BuildError, match=r"node 'shift'.*pack_constants changed the values"):
        mi.load(model, registry=reg)


class Reversed(OnnxPlugin):
    """y = x + s, with s stored reversed (an order only this plugin reads: ``Repacked``)."""

    domain = "com.test"
    attributes = {"reversed": 0, "bad_shape": 0}

    def compute(self, x: Any, s: Any, *, out: Any, reversed: int, bad_shape: int) -> None:
        np.add(x, s[::-1] if reversed else s, out=out)

    def pack_constants(self, inputs: Sequence[Any], constants: Sequence[Any]
                       ) -> dict[int, Repacked]:
        s = constants[1]
        values = s[::-1].reshape(1, -1) if self.attrs["bad_shape"] else s[::-1]
        return {1: Repacked(values, lambda: self.attrs.update(reversed=1))}


def _reversed_model(readers: int, bad_shape: int = 0) -> onnx.ModelProto:
    s = onnx.numpy_helper.from_array(np.arange(4, dtype=np.float32), "s")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    nodes = [helper.make_node("Reversed", ["x", "s"], [f"y{i}"], domain="com.test",
                              name=f"rev{i}", bad_shape=bad_shape) for i in range(readers)]
    outs = [helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [4])
            for i in range(readers)]
    return helper.make_model(helper.make_graph(nodes, "g", [x], outs, [s]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test", 1)])


def _reversed_registry() -> Any:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(Reversed, namespace="test"))
    return reg


def test_a_constant_one_node_reads_may_be_reordered_and_the_file_keeps_it(
        tmp_path: Path) -> None:
    engine = mi.load(_reversed_model(1), registry=_reversed_registry())
    assert engine.build_info["constants_packed"] == 1
    np.testing.assert_array_equal(engine.constants["s"], [3, 2, 1, 0])
    assert engine.nodes[0].plugin.attrs["reversed"] == 1  # type: ignore[attr-defined]
    x = np.ones(4, np.float32)
    want = x + np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(mi.InferenceSession(engine).run(None, {"x": x})[0], want)
    path = tmp_path / "rev.engine"
    engine.save(str(path))
    again = mi.Runtime(registry=_reversed_registry()).load_engine(str(path))
    np.testing.assert_array_equal(again.constants["s"], [3, 2, 1, 0])
    np.testing.assert_array_equal(mi.InferenceSession(again).run(None, {"x": x})[0], want)


def test_a_constant_other_nodes_read_is_not_reordered() -> None:
    engine = mi.load(_reversed_model(2), registry=_reversed_registry())
    assert engine.build_info["constants_packed"] == 0
    np.testing.assert_array_equal(engine.constants["s"], [0, 1, 2, 3])
    assert all(n.plugin.attrs["reversed"] == 0 for n in engine.nodes)  # type: ignore[attr-defined]
    x = np.ones(4, np.float32)
    for y in mi.InferenceSession(engine).run(None, {"x": x}):
        np.testing.assert_array_equal(y, x + np.arange(4, dtype=np.float32))


def test_a_reordering_that_changes_the_shape_is_a_build_error() -> None:
    with pytest.raises(BuildError, match=r"node 'rev0'.*reordered constant 's' into \(1, 4\)"):
        mi.load(_reversed_model(1, bad_shape=1), registry=_reversed_registry())


def test_weights_are_packed_for_the_format_the_timing_chose(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A convolution that the formats' cost model sent blocked (whose weights then stay in
    ONNX's order, packed at its first run) and that the timing brings back to LINEAR is asked
    again: the engine stores its weights in the compiled GEMM's panels, as for a convolution
    LINEAR all along, so that its first run packs nothing (issue 30)."""
    from mini_infer_cpu_native._native import gemm_available

    from mini_infer_core.builder import format_timing

    if not gemm_available():
        pytest.skip("the compiled GEMM needs AVX-512 here: no panels to pack for")
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((64, 32, 1, 1)) * 0.2).astype(np.float32)
    w2 = (rng.standard_normal((48, 64, 1, 1)) * 0.2).astype(np.float32)
    inits = [onnx.numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (w2, "w2"))]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"], name="conv1"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Conv", ["r", "w2"], ["y"], name="conv2")]
    x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 28, 28])
    y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 48, 28, 28])
    model = make_model(nodes, [x_info], [y_info], inits)
    untimed = mi.load(model, config=mi.BuilderConfig(time_tactics=False))
    if not untimed.build_info.get("formats", {}).get("tensors"):
        pytest.skip("the cost model keeps these convolutions LINEAR here: nothing to revert")

    def linear_wins(state: Any, used: set[str]) -> list[dict[str, float]]:
        plan = state.format_plan
        return [{"linear": 1.0, fmt.value: 2.0} for fmt, _ in plan.groups]

    monkeypatch.setattr(format_timing, "_measure", linear_wins)
    engine = mi.load(model, config=mi.BuilderConfig())
    assert all(r["chosen"] == "linear" for r in engine.build_info["formats"]["timed"])
    convs = [n.plugin for n in engine.nodes if n.op_type == "Conv"]
    assert [c.hidden.get("__wpacked__") for c in convs] == [1, 1]  # type: ignore[attr-defined]
    x = rng.standard_normal((1, 32, 28, 28)).astype(np.float32)
    np.testing.assert_allclose(mi.InferenceSession(engine).run(None, {"x": x})[0],
                               ort_run(model, {"x": x})[0], rtol=1e-4, atol=1e-4)
