"""The distribution's entry point: one lazy creator, no kernel import at listing time."""

from __future__ import annotations

from typing import Any

from mini_infer_core.plugin import LazyPluginCreator
from mini_infer_core.registry import hookimpl


@hookimpl
def mini_infer_plugin_api_version() -> str:
    return "1"


@hookimpl
def mini_infer_creators() -> list[Any]:
    return [LazyPluginCreator("mini_infer_l2norm.plugin:L2NormCreator", name="L2Norm",
                              op_type="L2Norm", domain="com.example", plugin_version="1",
                              namespace="com.example", field_names=("epsilon", "axis"),
                              devices=("cpu",))]
