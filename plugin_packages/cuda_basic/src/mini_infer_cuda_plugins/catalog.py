"""The creators' metadata as plain data, so listing plugins imports no kernel module (and no
CuPy).

``CATALOG`` is generated from the plugin classes; a test checks it still matches them.
Regenerate after adding or changing a kernel::

    python -m mini_infer_cuda_plugins.catalog --write
"""

from __future__ import annotations

import sys
from typing import Any

from mini_infer_core.plugin import IPluginCreator
from mini_infer_core.plugin import catalog as _catalog

from . import NAMESPACE

__all__ = ["CATALOG", "lazy_creators"]

# fmt: off
# BEGIN GENERATED
CATALOG: list[dict[str, Any]] = [
    {'target': 'mini_infer_cuda_plugins.ops.activation:Relu', 'name': 'Relu', 'op_type': 'Relu', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.activation:LeakyRelu', 'name': 'LeakyRelu', 'op_type': 'LeakyRelu', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs', 'alpha')},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Sigmoid', 'name': 'Sigmoid', 'op_type': 'Sigmoid', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Tanh', 'name': 'Tanh', 'op_type': 'Tanh', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Clip_1', 'name': 'Clip', 'op_type': 'Clip', 'version': '1', 'min_opset': 1, 'max_opset': 10, 'fields': ('min', 'max', 'consumed_inputs')},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Clip_11', 'name': 'Clip', 'op_type': 'Clip', 'version': '11', 'min_opset': 11, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Erf', 'name': 'Erf', 'op_type': 'Erf', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Gelu', 'name': 'Gelu', 'op_type': 'Gelu', 'version': '1', 'min_opset': 20, 'max_opset': None, 'fields': ('approximate',)},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Dropout_1', 'name': 'Dropout', 'op_type': 'Dropout', 'version': '1', 'min_opset': 1, 'max_opset': 9, 'fields': ('is_test', 'consumed_inputs', 'ratio')},
    {'target': 'mini_infer_cuda_plugins.ops.activation:Dropout_10', 'name': 'Dropout', 'op_type': 'Dropout', 'version': '10', 'min_opset': 10, 'max_opset': None, 'fields': ('ratio', 'seed')},
    {'target': 'mini_infer_cuda_plugins.ops.cast:Cast', 'name': 'Cast', 'op_type': 'Cast', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('to', 'saturate', 'round_mode')},
    {'target': 'mini_infer_cuda_plugins.ops.cast:ConstantOfShape', 'name': 'ConstantOfShape', 'op_type': 'ConstantOfShape', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ('value',)},
    {'target': 'mini_infer_cuda_plugins.ops.conv:Conv', 'name': 'Conv', 'op_type': 'Conv', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('group', 'pads', 'auto_pad', 'strides', 'dilations', 'kernel_shape', '__residual__', '__relu__', '__clip__')},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Add', 'name': 'Add', 'op_type': 'Add', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'consumed_inputs', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Sub', 'name': 'Sub', 'op_type': 'Sub', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'consumed_inputs', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Mul', 'name': 'Mul', 'op_type': 'Mul', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'consumed_inputs', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Div', 'name': 'Div', 'op_type': 'Div', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'consumed_inputs', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Pow', 'name': 'Pow', 'op_type': 'Pow', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Sum', 'name': 'Sum', 'op_type': 'Sum', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Exp', 'name': 'Exp', 'op_type': 'Exp', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Log', 'name': 'Log', 'op_type': 'Log', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Sqrt', 'name': 'Sqrt', 'op_type': 'Sqrt', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Neg', 'name': 'Neg', 'op_type': 'Neg', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.elementwise:Abs', 'name': 'Abs', 'op_type': 'Abs', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cuda_plugins.ops.gemm:Gemm', 'name': 'Gemm', 'op_type': 'Gemm', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('beta', 'broadcast', 'transB', 'alpha', 'transA', '__relu__')},
    {'target': 'mini_infer_cuda_plugins.ops.gemm:MatMul', 'name': 'MatMul', 'op_type': 'MatMul', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.logic:Equal', 'name': 'Equal', 'op_type': 'Equal', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.logic:Less', 'name': 'Less', 'op_type': 'Less', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.logic:Greater', 'name': 'Greater', 'op_type': 'Greater', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'broadcast')},
    {'target': 'mini_infer_cuda_plugins.ops.logic:Where', 'name': 'Where', 'op_type': 'Where', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.normalization:BatchNormalization', 'name': 'BatchNormalization', 'op_type': 'BatchNormalization', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs', 'momentum', 'epsilon', 'is_test', 'spatial', 'training_mode', '__relu__')},
    {'target': 'mini_infer_cuda_plugins.ops.normalization:LRN', 'name': 'LRN', 'op_type': 'LRN', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('bias', 'beta', 'alpha', 'size')},
    {'target': 'mini_infer_cuda_plugins.ops.pool:MaxPool_1', 'name': 'MaxPool', 'op_type': 'MaxPool', 'version': '1', 'min_opset': 1, 'max_opset': 7, 'fields': ('pads', 'auto_pad', 'strides', 'kernel_shape')},
    {'target': 'mini_infer_cuda_plugins.ops.pool:MaxPool', 'name': 'MaxPool', 'op_type': 'MaxPool', 'version': '8', 'min_opset': 8, 'max_opset': None, 'fields': ('storage_order', 'pads', 'auto_pad', 'strides', 'kernel_shape', 'dilations', 'ceil_mode')},
    {'target': 'mini_infer_cuda_plugins.ops.pool:AveragePool', 'name': 'AveragePool', 'op_type': 'AveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('pads', 'auto_pad', 'strides', 'kernel_shape', 'count_include_pad', 'ceil_mode', 'dilations')},
    {'target': 'mini_infer_cuda_plugins.ops.pool:GlobalAveragePool', 'name': 'GlobalAveragePool', 'op_type': 'GlobalAveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.reduce:ReduceSum_1', 'name': 'ReduceSum', 'op_type': 'ReduceSum', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('keepdims', 'axes')},
    {'target': 'mini_infer_cuda_plugins.ops.reduce:ReduceSum', 'name': 'ReduceSum', 'op_type': 'ReduceSum', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ('noop_with_empty_axes', 'keepdims', '__axes__')},
    {'target': 'mini_infer_cuda_plugins.ops.reduce:ReduceMean_1', 'name': 'ReduceMean', 'op_type': 'ReduceMean', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('keepdims', 'axes')},
    {'target': 'mini_infer_cuda_plugins.ops.reduce:ReduceMean', 'name': 'ReduceMean', 'op_type': 'ReduceMean', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('noop_with_empty_axes', 'keepdims', '__axes__')},
    {'target': 'mini_infer_cuda_plugins.ops.reduce:ReduceMax_1', 'name': 'ReduceMax', 'op_type': 'ReduceMax', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('keepdims', 'axes')},
    {'target': 'mini_infer_cuda_plugins.ops.reduce:ReduceMax', 'name': 'ReduceMax', 'op_type': 'ReduceMax', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('noop_with_empty_axes', 'keepdims', '__axes__')},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Reshape_1', 'name': 'Reshape', 'op_type': 'Reshape', 'version': '1', 'min_opset': 1, 'max_opset': 4, 'fields': ('shape', 'consumed_inputs')},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Reshape_5', 'name': 'Reshape', 'op_type': 'Reshape', 'version': '5', 'min_opset': 5, 'max_opset': None, 'fields': ('allowzero',)},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Flatten', 'name': 'Flatten', 'op_type': 'Flatten', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Transpose', 'name': 'Transpose', 'op_type': 'Transpose', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('perm',)},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Concat', 'name': 'Concat', 'op_type': 'Concat', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Unsqueeze_1', 'name': 'Unsqueeze', 'op_type': 'Unsqueeze', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axes',)},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Unsqueeze_13', 'name': 'Unsqueeze', 'op_type': 'Unsqueeze', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Squeeze_1', 'name': 'Squeeze', 'op_type': 'Squeeze', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axes',)},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Squeeze_13', 'name': 'Squeeze', 'op_type': 'Squeeze', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.shape:Identity', 'name': 'Identity', 'op_type': 'Identity', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cuda_plugins.ops.slicing:Shape', 'name': 'Shape', 'op_type': 'Shape', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('end', 'start')},
    {'target': 'mini_infer_cuda_plugins.ops.slicing:Gather', 'name': 'Gather', 'op_type': 'Gather', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis',)},
    {'target': 'mini_infer_cuda_plugins.ops.slicing:Slice_1', 'name': 'Slice', 'op_type': 'Slice', 'version': '1', 'min_opset': 1, 'max_opset': 9, 'fields': ('ends', 'starts', 'axes')},
    {'target': 'mini_infer_cuda_plugins.ops.slicing:Slice', 'name': 'Slice', 'op_type': 'Slice', 'version': '10', 'min_opset': 10, 'max_opset': None, 'fields': ('__starts__', '__axes__', '__steps__')},
    {'target': 'mini_infer_cuda_plugins.ops.softmax:Softmax_1', 'name': 'Softmax', 'op_type': 'Softmax', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axis',)},
    {'target': 'mini_infer_cuda_plugins.ops.softmax:Softmax_13', 'name': 'Softmax', 'op_type': 'Softmax', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ('axis',)},
]
# END GENERATED
# fmt: on


def lazy_creators() -> list[IPluginCreator]:
    """One lazy creator per catalog entry: the kernel module is imported on first use."""
    from .serialization import CudaCreator

    return _catalog.lazy_creators(CATALOG, namespace=NAMESPACE, devices=("cuda",),
                                  creator_class=CudaCreator)


if __name__ == "__main__" and "--write" in sys.argv:
    from .ops import catalog_entries

    _catalog.write_catalog(__file__, catalog_entries())
