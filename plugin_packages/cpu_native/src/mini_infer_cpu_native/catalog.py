"""The creators' metadata as plain data, so listing plugins imports no kernel.

Generated from the plugin classes; a test checks it still matches them. Regenerate after
changing a plugin::

    python -m mini_infer_cpu_native.catalog --write
"""

from __future__ import annotations

import sys
from typing import Any

from mini_infer_core.plugin import IPluginCreator
from mini_infer_core.plugin import catalog as _catalog

from . import NAMESPACE, PRIORITY

__all__ = ["CATALOG", "catalog_entries", "lazy_creators"]

# fmt: off
# BEGIN GENERATED
CATALOG: list[dict[str, Any]] = [
    {'target': 'mini_infer_cpu_native.plugins:Conv', 'name': 'Conv', 'op_type': 'Conv', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('group', 'pads', 'auto_pad', 'strides', 'dilations', 'kernel_shape', '__residual__', '__relu__', '__clip__', '__tactic__', '__wpacked__')},
    {'target': 'mini_infer_cpu_native.plugins:Gemm', 'name': 'Gemm', 'op_type': 'Gemm', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('beta', 'broadcast', 'transB', 'alpha', 'transA', '__relu__', '__wpacked__')},
    {'target': 'mini_infer_cpu_native.plugins:MaxPool_1', 'name': 'MaxPool', 'op_type': 'MaxPool', 'version': '1', 'min_opset': 1, 'max_opset': 7, 'fields': ('pads', 'auto_pad', 'strides', 'kernel_shape')},
    {'target': 'mini_infer_cpu_native.plugins:MaxPool', 'name': 'MaxPool', 'op_type': 'MaxPool', 'version': '8', 'min_opset': 8, 'max_opset': None, 'fields': ('storage_order', 'pads', 'auto_pad', 'strides', 'kernel_shape', 'dilations', 'ceil_mode', '__num_outputs__')},
    {'target': 'mini_infer_cpu_native.plugins:AveragePool', 'name': 'AveragePool', 'op_type': 'AveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('pads', 'auto_pad', 'strides', 'kernel_shape', 'count_include_pad', 'ceil_mode', 'dilations')},
    {'target': 'mini_infer_cpu_native.plugins:LRN', 'name': 'LRN', 'op_type': 'LRN', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('bias', 'beta', 'alpha', 'size')},
    {'target': 'mini_infer_cpu_native.plugins:BatchNormalization', 'name': 'BatchNormalization', 'op_type': 'BatchNormalization', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs', 'momentum', 'epsilon', 'is_test', 'spatial', 'training_mode', '__relu__')},
]
# END GENERATED
# fmt: on


def catalog_entries() -> list[dict[str, Any]]:
    from .plugins import LRN, AveragePool, BatchNormalization, Conv, Gemm, MaxPool, MaxPool_1

    return _catalog.catalog_entries([Conv, Gemm, MaxPool_1, MaxPool, AveragePool, LRN,
                                     BatchNormalization])


def lazy_creators() -> list[IPluginCreator]:
    from .plugins import NativeCreator

    return _catalog.lazy_creators(CATALOG, namespace=NAMESPACE, devices=("cpu",),
                                  priority=PRIORITY, creator_class=NativeCreator)


if __name__ == "__main__" and "--write" in sys.argv:
    _catalog.write_catalog(__file__, catalog_entries())
