"""The rewrite pass: activation and normalization chains exporters write become one operator
(Swish, HardSwish from HardSigmoid or Paddle's Clip, Gelu, LayerNormalization); results match
onnxruntime on the original model, and a chain whose intermediate is used elsewhere is left
alone."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from helpers import ort_run
from onnx import TensorProto, helper, numpy_helper

import mini_infer_core as mi

C = helper.make_node


def _model(nodes: list[onnx.NodeProto], consts: dict[str, float | np.ndarray],
           outputs: tuple[str, ...] = ("y",), opset: int = 13) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])
    outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in consts.items()]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs, inits),
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


RNG = np.random.default_rng(0)
GAMMA, BETA = RNG.standard_normal(8), RNG.standard_normal(8)
PATTERNS = {
    "silu": ([C("Sigmoid", ["x"], ["s"]), C("Mul", ["s", "x"], ["y"])], {}, "Swish"),
    "hardswish": ([C("HardSigmoid", ["x"], ["s"], alpha=1 / 6, beta=0.5),
                   C("Mul", ["x", "s"], ["y"])], {}, "HardSwish"),
    "hardswish_clip": ([C("Add", ["x", "three"], ["a"]), C("Clip", ["a", "zero", "six"], ["c"]),
                        C("Mul", ["x", "c"], ["m"]), C("Div", ["m", "six"], ["y"])],
                       {"three": 3.0, "zero": 0.0, "six": 6.0}, "HardSwish"),
    "hardswish_clip_scaled_first": ([C("Add", ["three", "x"], ["a"]),
                                     C("Clip", ["a", "zero", "six"], ["c"]),
                                     C("Mul", ["sixth", "c"], ["d"]),
                                     C("Mul", ["d", "x"], ["y"])],
                                    {"three": 3.0, "zero": 0.0, "six": 6.0, "sixth": 1 / 6},
                                    "HardSwish"),
    "gelu_erf": ([C("Div", ["x", "sqrt2"], ["u"]), C("Erf", ["u"], ["e"]),
                  C("Add", ["e", "one"], ["a"]), C("Mul", ["x", "a"], ["m"]),
                  C("Mul", ["m", "half"], ["y"])],
                 {"sqrt2": math.sqrt(2), "one": 1.0, "half": 0.5}, "Gelu"),
    "gelu_erf_half_first": ([C("Mul", ["x", "half"], ["h"]), C("Mul", ["x", "isqrt2"], ["u"]),
                             C("Erf", ["u"], ["e"]), C("Add", ["one", "e"], ["a"]),
                             C("Mul", ["h", "a"], ["y"])],
                            {"isqrt2": 1 / math.sqrt(2), "one": 1.0, "half": 0.5}, "Gelu"),
    "gelu_tanh": ([C("Pow", ["x", "three"], ["p"]), C("Mul", ["p", "k"], ["c"]),
                   C("Add", ["x", "c"], ["w"]), C("Mul", ["w", "s2pi"], ["v"]),
                   C("Tanh", ["v"], ["t"]), C("Add", ["t", "one"], ["a"]),
                   C("Mul", ["x", "a"], ["m"]), C("Mul", ["m", "half"], ["y"])],
                  {"three": 3.0, "k": 0.044715, "s2pi": math.sqrt(2 / math.pi), "one": 1.0,
                   "half": 0.5}, "Gelu"),
    "gelu_tanh_jax2tf": ([C("Mul", ["k", "x"], ["c1"]), C("Mul", ["x", "c1"], ["c2"]),
                          C("Mul", ["x", "c2"], ["c"]), C("Add", ["x", "c"], ["w"]),
                          C("Mul", ["s2pi", "w"], ["v"]), C("Tanh", ["v"], ["t"]),
                          C("Add", ["one", "t"], ["a"]), C("Mul", ["half", "a"], ["h"]),
                          C("Mul", ["x", "h"], ["y"])],
                         {"k": 0.044715, "s2pi": math.sqrt(2 / math.pi), "one": 1.0,
                          "half": 0.5}, "Gelu"),
    "layer_norm": ([C("ReduceMean", ["x"], ["m"], axes=[-1]), C("Sub", ["x", "m"], ["d"]),
                    C("Pow", ["d", "two"], ["p"]), C("ReduceMean", ["p"], ["v"], axes=[-1]),
                    C("Add", ["v", "eps"], ["e"]), C("Sqrt", ["e"], ["s"]),
                    C("Div", ["d", "s"], ["n"]), C("Mul", ["n", "gamma"], ["g"]),
                    C("Add", ["g", "beta"], ["y"])],
                   {"two": 2.0, "eps": 1e-5, "gamma": GAMMA, "beta": BETA},
                   "LayerNormalization"),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_a_chain_becomes_one_operator_and_matches_onnxruntime(name: str) -> None:
    nodes, consts, op = PATTERNS[name]
    model = _model(nodes, consts)
    engine = mi.load(model)
    assert [nd.op_type for nd in engine.nodes] == [op], engine.build_info["rewritten"]
    x = (RNG.standard_normal((3, 8)) * 3).astype(np.float32)
    (want,) = ort_run(model, {"x": x})
    np.testing.assert_allclose(engine.create_execution_context().execute({"x": x})["y"],
                               want, rtol=1e-5, atol=1e-6)


def test_a_chain_whose_intermediate_is_read_elsewhere_is_left_alone() -> None:
    nodes, consts, _ = PATTERNS["silu"]
    model = _model(nodes, consts, outputs=("y", "s"))  # the sigmoid is an output too
    engine = mi.load(model)
    assert sorted(nd.op_type for nd in engine.nodes) == ["Mul", "Sigmoid"]
    assert not engine.build_info["rewritten"]


def test_a_cube_of_other_powers_is_no_gelu() -> None:
    """jax2tf's x * (x * (k * x)) is matched by its power: with x^2 in its place the chain
    stays as it is."""
    nodes, consts, _ = PATTERNS["gelu_tanh_jax2tf"]
    nodes = [C("Mul", ["k", "x"], ["c2"]), *nodes[2:]]
    engine = mi.load(_model(nodes, consts))
    assert "Gelu" not in [nd.op_type for nd in engine.nodes]
    assert not engine.build_info["rewritten"]


def test_fuse_false_turns_the_rewrites_off() -> None:
    nodes, consts, _ = PATTERNS["gelu_erf"]
    engine = mi.load(_model(nodes, consts), config=mi.BuilderConfig(fuse=False))
    assert len(engine.nodes) == 5
