"""The ``INondeterministic`` capability (issue 15): a node whose plugin declares that its outputs
differ from run to run is never folded into constants at build time, even when every input is
a constant or it has none; the random operators declare it, so an unseeded RandomNormal draws
afresh on every run of an engine read back from its file, and a seeded one still repeats the
reference's values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import mini_infer_core as mi
from mini_infer_core import ops
from mini_infer_core.ops import INondeterministic, may_fold, random_ops
from mini_infer_core.plugin import OnnxPlugin, OnnxPluginCreator
from mini_infer_core.registry import discover


class Ticks(OnnxPlugin):
    """x + the number of times this instance ran: a stand-in for any plugin whose outputs
    change from run to run, without declaring it."""

    domain = "com.test"

    def setup(self) -> None:
        self.ticks = 0

    def compute(self, x: Any, *, out: Any) -> None:
        self.ticks += 1
        np.add(x, np.float32(self.ticks), out=out)


class DeclaredTicks(Ticks, INondeterministic):
    """The same kernel, declaring that its outputs differ from run to run."""


def _ticks_model(op: str) -> onnx.ModelProto:
    """``op`` reads a constant (so it could fold), a runtime input is added to its result."""
    nodes = [helper.make_node(op, ["c"], ["t"], domain="com.test"),
             helper.make_node("Add", ["t", "x"], ["y"])]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.array([1, 2, 3], np.float32), "c")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.test", 1)])


@pytest.mark.parametrize("cls, declared", [(Ticks, False), (DeclaredTicks, True)])
def test_the_declaration_decides_folding(cls: type[Ticks], declared: bool,
                                         tmp_path: Path) -> None:
    """The op type plays no part: the same kernel folds (runs once at build time) unless its
    class declares INondeterministic, and the declaration holds in an engine read back."""
    reg = discover()
    reg.register_creator(OnnxPluginCreator(cls, namespace="test"))
    engine = mi.load(_ticks_model(cls.__name__), registry=reg)
    assert (cls.__name__ in [n.op_type for n in engine.nodes]) is declared
    assert engine.build_info["nodes_folded"] == (0 if declared else 1)
    assert may_fold(cls()) is not declared
    engine.save(str(tmp_path / "t.engine"))
    sess = mi.InferenceSession(mi.Runtime(reg).load_engine(tmp_path / "t.engine"))
    x = np.zeros(3, np.float32)
    first, second = (sess.run(None, {"x": x})[0] for _ in range(2))
    base = np.array([1, 2, 3], np.float32)
    if declared:  # the instance runs on every run: 1 tick, then 2
        np.testing.assert_array_equal(first, base + 1)
        np.testing.assert_array_equal(second, base + 2)
    else:  # folded once at build time: every run repeats that value
        np.testing.assert_array_equal(first, base + 1)
        np.testing.assert_array_equal(second, base + 1)


def test_every_random_schema_declares_it() -> None:
    names = set(random_ops.__all__)
    assert names == {"RandomUniform", "RandomNormal", "RandomUniformLike",
                     "RandomNormalLike", "Bernoulli", "Multinomial"}
    for name in names:
        assert issubclass(getattr(random_ops, name), INondeterministic), name
    # and no other schema does: folding everything else is unchanged
    others = [c.__name__ for c in ops.schema_classes()
              if issubclass(c, INondeterministic) and c.__name__ not in names]
    assert others == []


def _noise_model(seed: float | None, n: int) -> onnx.ModelProto:
    """RandomNormal (no inputs) * 2 + 1 with constants only: without the capability the
    whole graph would fold into one constant."""
    attrs: dict[str, Any] = {"shape": [n], "mean": 0.5, "scale": 1.5}
    if seed is not None:
        attrs["seed"] = seed
    nodes = [helper.make_node("RandomNormal", [], ["r"], **attrs),
             helper.make_node("Mul", ["r", "two"], ["m"]),
             helper.make_node("Add", ["m", "one"], ["y"])]
    graph = helper.make_graph(
        nodes, "noise", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])],
        [numpy_helper.from_array(np.array(2, np.float32), "two"),
         numpy_helper.from_array(np.array(1, np.float32), "one")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_unseeded_random_normal_draws_afresh_from_an_engine_file(tmp_path: Path) -> None:
    n = 100_000
    model = _noise_model(None, n)
    path = tmp_path / "noise.engine"
    mi.InferenceSession(model).save_engine(path)
    sess = mi.InferenceSession(str(path))
    assert [nd.op_type for nd in sess.engine.nodes][:1] == ["RandomNormal"]
    a, b = (sess.run(None, {})[0] for _ in range(2))
    assert a.shape == b.shape == (n,) and a.dtype == np.float32
    assert not np.array_equal(a, b)
    for y in (a, b):  # 2 * N(0.5, 1.5) + 1 = N(2, 3)
        assert abs(y.mean() - 2.0) < 0.05 and abs(y.std() - 3.0) < 0.05
    # two draws are independent: their correlation is near zero
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.02


def test_seeded_random_normal_repeats_the_references_values(tmp_path: Path) -> None:
    """A seed still means what it meant (cpu_basic's kernel: the reference's draw on every
    run), whether or not the node is folded."""
    model = _noise_model(7.0, 64)
    want = ReferenceEvaluator(model).run(None, {})[0]
    path = tmp_path / "seeded.engine"
    mi.InferenceSession(model).save_engine(path)
    sess = mi.InferenceSession(str(path))
    for _ in range(2):
        np.testing.assert_allclose(sess.run(None, {})[0], want, rtol=1e-6)
