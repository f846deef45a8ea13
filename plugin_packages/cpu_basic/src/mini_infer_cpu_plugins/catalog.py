"""The creators' metadata as plain data, so listing plugins imports no kernel module.

``CATALOG`` is generated from the plugin classes; a test checks it still matches them.
Regenerate after adding or changing a kernel::

    python -m mini_infer_cpu_plugins.catalog --write
"""

from __future__ import annotations

import pprint
import sys
from pathlib import Path
from typing import Any

from mini_infer_core.plugin import IPluginCreator, LazyPluginCreator

from . import NAMESPACE

__all__ = ["CATALOG", "lazy_creators"]

# fmt: off
# BEGIN GENERATED
CATALOG: list[dict[str, Any]] = [
    {'target': 'mini_infer_cpu_plugins.ops.activation:Relu', 'name': 'Relu', 'op_type': 'Relu', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:LeakyRelu', 'name': 'LeakyRelu', 'op_type': 'LeakyRelu', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('alpha', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Sigmoid', 'name': 'Sigmoid', 'op_type': 'Sigmoid', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Tanh', 'name': 'Tanh', 'op_type': 'Tanh', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Clip_1', 'name': 'Clip', 'op_type': 'Clip', 'version': '1', 'min_opset': 1, 'max_opset': 10, 'fields': ('min', 'max', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Clip_11', 'name': 'Clip', 'op_type': 'Clip', 'version': '11', 'min_opset': 11, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Softmax_1', 'name': 'Softmax', 'op_type': 'Softmax', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axis',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Softmax_13', 'name': 'Softmax', 'op_type': 'Softmax', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:LogSoftmax_1', 'name': 'LogSoftmax', 'op_type': 'LogSoftmax', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axis',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:LogSoftmax_13', 'name': 'LogSoftmax', 'op_type': 'LogSoftmax', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Dropout_1', 'name': 'Dropout', 'op_type': 'Dropout', 'version': '1', 'min_opset': 1, 'max_opset': 9, 'fields': ('ratio', 'is_test', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.activation:Dropout_10', 'name': 'Dropout', 'op_type': 'Dropout', 'version': '10', 'min_opset': 10, 'max_opset': None, 'fields': ('ratio', 'seed')},
    {'target': 'mini_infer_cpu_plugins.ops.conv:Conv', 'name': 'Conv', 'op_type': 'Conv', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'dilations', 'group', 'kernel_shape', 'pads', 'strides')},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Add', 'name': 'Add', 'op_type': 'Add', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('broadcast', 'axis', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Sub', 'name': 'Sub', 'op_type': 'Sub', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('broadcast', 'axis', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Mul', 'name': 'Mul', 'op_type': 'Mul', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('broadcast', 'axis', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Div', 'name': 'Div', 'op_type': 'Div', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('broadcast', 'axis', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Pow', 'name': 'Pow', 'op_type': 'Pow', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('broadcast', 'axis')},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Sum', 'name': 'Sum', 'op_type': 'Sum', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Exp', 'name': 'Exp', 'op_type': 'Exp', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Log', 'name': 'Log', 'op_type': 'Log', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Sqrt', 'name': 'Sqrt', 'op_type': 'Sqrt', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Neg', 'name': 'Neg', 'op_type': 'Neg', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.elementwise:Abs', 'name': 'Abs', 'op_type': 'Abs', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.gemm:Gemm', 'name': 'Gemm', 'op_type': 'Gemm', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('alpha', 'beta', 'transA', 'transB', 'broadcast')},
    {'target': 'mini_infer_cpu_plugins.ops.gemm:MatMul', 'name': 'MatMul', 'op_type': 'MatMul', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.generator:ConstantOfShape', 'name': 'ConstantOfShape', 'op_type': 'ConstantOfShape', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ('value',)},
    {'target': 'mini_infer_cpu_plugins.ops.normalization:BatchNormalization', 'name': 'BatchNormalization', 'op_type': 'BatchNormalization', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('epsilon', 'momentum', 'spatial', 'is_test', 'consumed_inputs', 'training_mode')},
    {'target': 'mini_infer_cpu_plugins.ops.normalization:LRN', 'name': 'LRN', 'op_type': 'LRN', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('alpha', 'beta', 'bias', 'size')},
    {'target': 'mini_infer_cpu_plugins.ops.pool:MaxPool', 'name': 'MaxPool', 'op_type': 'MaxPool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'ceil_mode', 'dilations', 'kernel_shape', 'pads', 'storage_order', 'strides')},
    {'target': 'mini_infer_cpu_plugins.ops.pool:AveragePool', 'name': 'AveragePool', 'op_type': 'AveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'ceil_mode', 'count_include_pad', 'dilations', 'kernel_shape', 'pads', 'strides')},
    {'target': 'mini_infer_cpu_plugins.ops.pool:GlobalAveragePool', 'name': 'GlobalAveragePool', 'op_type': 'GlobalAveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.pool:GlobalMaxPool', 'name': 'GlobalMaxPool', 'op_type': 'GlobalMaxPool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Reshape_1', 'name': 'Reshape', 'op_type': 'Reshape', 'version': '1', 'min_opset': 1, 'max_opset': 4, 'fields': ('shape', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Reshape_5', 'name': 'Reshape', 'op_type': 'Reshape', 'version': '5', 'min_opset': 5, 'max_opset': None, 'fields': ('allowzero',)},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Flatten', 'name': 'Flatten', 'op_type': 'Flatten', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Transpose', 'name': 'Transpose', 'op_type': 'Transpose', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('perm',)},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Concat', 'name': 'Concat', 'op_type': 'Concat', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Unsqueeze_1', 'name': 'Unsqueeze', 'op_type': 'Unsqueeze', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axes',)},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Unsqueeze_13', 'name': 'Unsqueeze', 'op_type': 'Unsqueeze', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Squeeze_1', 'name': 'Squeeze', 'op_type': 'Squeeze', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axes',)},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Squeeze_13', 'name': 'Squeeze', 'op_type': 'Squeeze', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.shape:Identity', 'name': 'Identity', 'op_type': 'Identity', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
]
# END GENERATED
# fmt: on


def lazy_creators() -> list[IPluginCreator]:
    from .serialization import CpuCreator

    return [LazyPluginCreator(e["target"], name=e["name"], op_type=e["op_type"],
                              plugin_version=e["version"], namespace=NAMESPACE,
                              field_names=tuple(e["fields"]), devices=("cpu",),
                              min_opset=e["min_opset"], max_opset=e["max_opset"],
                              creator_class=CpuCreator) for e in CATALOG]


def _write() -> None:
    from .ops import catalog_entries

    path = Path(__file__)
    text = path.read_text()
    start = text.index("# BEGIN GENERATED\n") + len("# BEGIN GENERATED\n")
    end = text.index("# END GENERATED")
    lines = [f"    {pprint.pformat(e, width=1000, sort_dicts=False)}," for e in catalog_entries()]
    body = "CATALOG: list[dict[str, Any]] = [\n" + "\n".join(lines) + "\n]\n"
    path.write_text(text[:start] + body + text[end:])


if __name__ == "__main__" and "--write" in sys.argv:
    _write()
