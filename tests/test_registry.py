"""Registry rules: priority, deterministic ties, conflicts, pins, opset ranges, validation."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import make_model
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.errors import BuildError, PluginLoadError
from mini_infer_core.plugin import OnnxPluginCreator, UnaryPlugin
from mini_infer_core.registry import discover


class FastRelu(UnaryPlugin):
    op_type = "Relu"

    def compute(self, x: Any, *, out: Any) -> None:
        np.maximum(x, 0, out=out)


def _relu_model() -> Any:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])
    return make_model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [y])


def test_higher_priority_wins_and_the_conflict_is_listed() -> None:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(FastRelu, namespace="fast", priority=20))
    engine = mi.load(_relu_model(), registry=reg)
    assert engine.nodes[0].plugin_namespace == "fast"
    (conflict,) = [c for c in reg.conflicts() if c.op_type == "Relu"]
    assert conflict.chosen.creator.plugin_namespace == "fast"
    assert [o.creator.plugin_namespace for o in conflict.others] == [
        "mini_infer.cpu_native", "mini_infer.cpu"]  # priorities 10 (the blocked Relu), 0


def test_ties_are_broken_by_distribution_then_namespace_and_in_process_last() -> None:
    reg = discover()
    # priority 10, in-process: cpu_native's Relu's priority
    reg.register_creator(OnnxPluginCreator(FastRelu, namespace="aaa", priority=10))
    engine = mi.load(_relu_model(), registry=reg)
    assert engine.nodes[0].plugin_namespace == "mini_infer.cpu_native"  # a distribution first
    reg.register_creator(OnnxPluginCreator(FastRelu, namespace="aab", priority=10))
    cands = reg.candidates("", "Relu", "cpu", 14)
    assert [c.creator.plugin_namespace for c in cands] == [
        "mini_infer.cpu_native", "aaa", "aab", "mini_infer.cpu"]


def test_pin_chooses_the_provider() -> None:
    reg = discover()
    reg.register_creator(OnnxPluginCreator(FastRelu, namespace="fast", priority=10))
    pinned = mi.BuilderConfig(pins={"Relu": "mini-infer-cpu-plugins"})
    engine = mi.Builder(reg).build_engine(mi.parse_onnx(_relu_model()), pinned)
    assert engine.nodes[0].plugin_namespace == "mini_infer.cpu"
    with pytest.raises(BuildError, match="pinned provider 'nobody'"):
        mi.Builder(reg).build_engine(mi.parse_onnx(_relu_model()),
                                     mi.BuilderConfig(pins={"Relu": "nobody"}))


def test_opset_ranges_select_and_do_not_conflict() -> None:
    reg = discover()
    softmax = reg.candidates("", "Softmax", "cpu", 11)
    assert softmax[0].creator.max_opset == 12
    assert reg.candidates("", "Softmax", "cpu", 13)[0].creator.min_opset == 13
    # Softmax-1 and Softmax-13 of one distribution do not compete (cpu_native's compiled
    # Softmax does shadow cpu_basic's, of the same opset range: that is a real conflict)
    assert not [c for c in reg.conflicts() if c.op_type == "Softmax" and any(
        o.distribution == c.chosen.distribution for o in c.others)]
    assert all(o.creator.min_opset == c.chosen.creator.min_opset
               for c in reg.conflicts() if c.op_type == "Softmax" for o in c.others)


def test_same_identity_twice_is_refused_and_deregistering_works() -> None:
    reg = discover()
    c1 = OnnxPluginCreator(FastRelu, namespace="dup")
    reg.register_creator(c1)
    with pytest.raises(PluginLoadError, match="already registered"):
        reg.register_creator(OnnxPluginCreator(FastRelu, namespace="dup"))
    assert reg.deregister_creator(c1)
    assert reg.get_creator("Relu", "1", "dup") is None


def test_invalid_creator_is_refused_at_registration() -> None:
    class NoName(OnnxPluginCreator):
        pass

    bad = NoName(FastRelu, namespace="x", devices=())
    with pytest.raises(PluginLoadError, match="devices"):
        discover().register_creator(bad)


def _fake_distribution(root: Any, version: str) -> None:
    """A plugin distribution installed into ``root`` (a sys.path entry): metadata + module."""
    info = root / f"mi_test_dupe-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: mi-test-dupe\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[mini_infer.plugins]\ndupe = mi_test_dupe_hooks\n")
    (root / "mi_test_dupe_hooks.py").write_text(
        "from mini_infer_core.registry import hookimpl\n\n"
        "@hookimpl\ndef mini_infer_creators():\n    return []\n")


def test_a_distribution_found_twice_on_sys_path_counts_once(tmp_path: Any,
                                                            monkeypatch: Any) -> None:
    first, second = tmp_path / "site_a", tmp_path / "site_b"
    _fake_distribution(first, "1.0")
    _fake_distribution(second, "1.0")  # e.g. an editable and a regular install
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    reg = discover()
    dupes = [d for d in reg.distributions if d.name == "mi-test-dupe"]
    assert len(dupes) == 1 and dupes[0].status == "loaded"
