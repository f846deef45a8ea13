"""The build checks each node's types against its plugin (``supports_format_combination`` in
the LINEAR format): a plugin class that keeps OnnxPlugin's own answer is checked from its
``dtypes`` without being asked (issue 30: a build checks every node), one that overrides it is
asked position by position; both refuse with the node, the type and the position named, and
accept what they take (the result checked against NumPy)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import mini_infer_core as mi
from mini_infer_core.errors import BuildError, PluginInterfaceError
from mini_infer_core.plugin import DataType, OnnxPlugin, OnnxPluginCreator, PluginTensorDesc


class Halve(OnnxPlugin):
    """y = x / 2, for the types ``dtypes`` lists (OnnxPlugin's own format answer)."""

    domain = "com.test.types"
    dtypes = (DataType.DOUBLE,)

    def compute(self, x: Any, out: Any) -> None:
        np.divide(x, 2, out=out)


class Third(OnnxPlugin):
    """y = x / 3; asked itself: takes FLOAT inputs, refuses a FLOAT output."""

    domain = "com.test.types"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        return pos < num_inputs and in_out[pos].dtype is DataType.FLOAT

    def compute(self, x: Any, out: Any) -> None:
        np.divide(x, 3, out=out)


def _model(op: str, elem: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", elem, [2, 3])
    y = helper.make_tensor_value_info("y", elem, [2, 3])
    node = helper.make_node(op, ["x"], ["y"], name="n1", domain="com.test.types")
    return helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.test.types", 1)])


def _registry() -> Any:
    reg = mi.discover()
    reg.register_creator(OnnxPluginCreator(Halve, namespace="test.types"))
    reg.register_creator(OnnxPluginCreator(Third, namespace="test.types"))
    return reg


def test_dtypes_refuse_an_input_type_they_do_not_list_and_take_one_they_do() -> None:
    reg = _registry()
    with pytest.raises((BuildError, PluginInterfaceError),
                       match=r"node 'n1'.*does not support FLOAT in linear format at input 0"):
        mi.load(_model("Halve", TensorProto.FLOAT), registry=reg)
    x = np.arange(6, dtype=np.float64).reshape(2, 3)
    engine = mi.load(_model("Halve", TensorProto.DOUBLE), registry=reg)
    with engine.create_execution_context() as ctx:
        np.testing.assert_allclose(ctx.execute({"x": x})["y"], x / 2)


def test_an_overridden_answer_is_asked_and_names_the_output_it_refuses() -> None:
    with pytest.raises((BuildError, PluginInterfaceError),
                       match=r"node 'n1'.*does not support FLOAT in linear format at output 0"):
        mi.load(_model("Third", TensorProto.FLOAT), registry=_registry())
