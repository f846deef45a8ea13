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
    {'target': 'mini_infer_cpu_plugins.ops.cast:Cast', 'name': 'Cast', 'op_type': 'Cast', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('to', 'saturate', 'round_mode')},
    {'target': 'mini_infer_cpu_plugins.ops.cast:CastLike', 'name': 'CastLike', 'op_type': 'CastLike', 'version': '1', 'min_opset': 15, 'max_opset': None, 'fields': ('saturate', 'round_mode')},
    {'target': 'mini_infer_cpu_plugins.ops.control_flow:If', 'name': 'If', 'op_type': 'If', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('then_branch', 'else_branch', '__outer_scope__', '__opset_imports__')},
    {'target': 'mini_infer_cpu_plugins.ops.control_flow:Loop', 'name': 'Loop', 'op_type': 'Loop', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('body', '__outer_scope__', '__opset_imports__')},
    {'target': 'mini_infer_cpu_plugins.ops.control_flow:Scan', 'name': 'Scan', 'op_type': 'Scan', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ('body', 'num_scan_inputs', 'scan_input_axes', 'scan_input_directions', 'scan_output_axes', 'scan_output_directions', '__outer_scope__', '__opset_imports__')},
    {'target': 'mini_infer_cpu_plugins.ops.conv:Conv', 'name': 'Conv', 'op_type': 'Conv', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'dilations', 'group', 'kernel_shape', 'pads', 'strides')},
    {'target': 'mini_infer_cpu_plugins.ops.conv_transpose:ConvTranspose', 'name': 'ConvTranspose', 'op_type': 'ConvTranspose', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'dilations', 'group', 'kernel_shape', 'output_padding', 'output_shape', 'pads', 'strides')},
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
    {'target': 'mini_infer_cpu_plugins.ops.layer_norm:LayerNormalization', 'name': 'LayerNormalization', 'op_type': 'LayerNormalization', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'epsilon', 'stash_type')},
    {'target': 'mini_infer_cpu_plugins.ops.layer_norm:GroupNormalization_18', 'name': 'GroupNormalization', 'op_type': 'GroupNormalization', 'version': '18', 'min_opset': 18, 'max_opset': 20, 'fields': ('epsilon', 'num_groups')},
    {'target': 'mini_infer_cpu_plugins.ops.layer_norm:GroupNormalization', 'name': 'GroupNormalization', 'op_type': 'GroupNormalization', 'version': '21', 'min_opset': 21, 'max_opset': None, 'fields': ('epsilon', 'num_groups', 'stash_type')},
    {'target': 'mini_infer_cpu_plugins.ops.layer_norm:RMSNormalization', 'name': 'RMSNormalization', 'op_type': 'RMSNormalization', 'version': '1', 'min_opset': 23, 'max_opset': None, 'fields': ('axis', 'epsilon', 'stash_type')},
    {'target': 'mini_infer_cpu_plugins.ops.loss:NegativeLogLikelihoodLoss', 'name': 'NegativeLogLikelihoodLoss', 'op_type': 'NegativeLogLikelihoodLoss', 'version': '1', 'min_opset': 12, 'max_opset': None, 'fields': ('ignore_index', 'reduction')},
    {'target': 'mini_infer_cpu_plugins.ops.loss:SoftmaxCrossEntropyLoss', 'name': 'SoftmaxCrossEntropyLoss', 'op_type': 'SoftmaxCrossEntropyLoss', 'version': '1', 'min_opset': 12, 'max_opset': None, 'fields': ('ignore_index', 'reduction')},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Sin', 'name': 'Sin', 'op_type': 'Sin', 'version': '1', 'min_opset': 7, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Cos', 'name': 'Cos', 'op_type': 'Cos', 'version': '1', 'min_opset': 7, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Tan', 'name': 'Tan', 'op_type': 'Tan', 'version': '1', 'min_opset': 7, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Asin', 'name': 'Asin', 'op_type': 'Asin', 'version': '1', 'min_opset': 7, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Acos', 'name': 'Acos', 'op_type': 'Acos', 'version': '1', 'min_opset': 7, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Atan', 'name': 'Atan', 'op_type': 'Atan', 'version': '1', 'min_opset': 7, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Sinh', 'name': 'Sinh', 'op_type': 'Sinh', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Cosh', 'name': 'Cosh', 'op_type': 'Cosh', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Asinh', 'name': 'Asinh', 'op_type': 'Asinh', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Acosh', 'name': 'Acosh', 'op_type': 'Acosh', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Atanh', 'name': 'Atanh', 'op_type': 'Atanh', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Reciprocal', 'name': 'Reciprocal', 'op_type': 'Reciprocal', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Floor', 'name': 'Floor', 'op_type': 'Floor', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Ceil', 'name': 'Ceil', 'op_type': 'Ceil', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('consumed_inputs',)},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Round', 'name': 'Round', 'op_type': 'Round', 'version': '1', 'min_opset': 11, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Sign', 'name': 'Sign', 'op_type': 'Sign', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:Erf', 'name': 'Erf', 'op_type': 'Erf', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:IsNaN', 'name': 'IsNaN', 'op_type': 'IsNaN', 'version': '1', 'min_opset': 9, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.math_unary:IsInf', 'name': 'IsInf', 'op_type': 'IsInf', 'version': '1', 'min_opset': 10, 'max_opset': None, 'fields': ('detect_negative', 'detect_positive')},
    {'target': 'mini_infer_cpu_plugins.ops.normalization:BatchNormalization', 'name': 'BatchNormalization', 'op_type': 'BatchNormalization', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('epsilon', 'momentum', 'spatial', 'is_test', 'consumed_inputs', 'training_mode')},
    {'target': 'mini_infer_cpu_plugins.ops.normalization:InstanceNormalization', 'name': 'InstanceNormalization', 'op_type': 'InstanceNormalization', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('epsilon', 'consumed_inputs')},
    {'target': 'mini_infer_cpu_plugins.ops.normalization:LRN', 'name': 'LRN', 'op_type': 'LRN', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('alpha', 'beta', 'bias', 'size')},
    {'target': 'mini_infer_cpu_plugins.ops.pool:MaxPool', 'name': 'MaxPool', 'op_type': 'MaxPool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'ceil_mode', 'dilations', 'kernel_shape', 'pads', 'storage_order', 'strides')},
    {'target': 'mini_infer_cpu_plugins.ops.pool:AveragePool', 'name': 'AveragePool', 'op_type': 'AveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('auto_pad', 'ceil_mode', 'count_include_pad', 'dilations', 'kernel_shape', 'pads', 'strides')},
    {'target': 'mini_infer_cpu_plugins.ops.pool:GlobalAveragePool', 'name': 'GlobalAveragePool', 'op_type': 'GlobalAveragePool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.pool:GlobalMaxPool', 'name': 'GlobalMaxPool', 'op_type': 'GlobalMaxPool', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ()},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceSum_1', 'name': 'ReduceSum', 'op_type': 'ReduceSum', 'version': '1', 'min_opset': 1, 'max_opset': 12, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceSum', 'name': 'ReduceSum', 'op_type': 'ReduceSum', 'version': '13', 'min_opset': 13, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceMean_1', 'name': 'ReduceMean', 'op_type': 'ReduceMean', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceMean', 'name': 'ReduceMean', 'op_type': 'ReduceMean', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceMax_1', 'name': 'ReduceMax', 'op_type': 'ReduceMax', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceMax', 'name': 'ReduceMax', 'op_type': 'ReduceMax', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceMin_1', 'name': 'ReduceMin', 'op_type': 'ReduceMin', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceMin', 'name': 'ReduceMin', 'op_type': 'ReduceMin', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceProd_1', 'name': 'ReduceProd', 'op_type': 'ReduceProd', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceProd', 'name': 'ReduceProd', 'op_type': 'ReduceProd', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceL1_1', 'name': 'ReduceL1', 'op_type': 'ReduceL1', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceL1', 'name': 'ReduceL1', 'op_type': 'ReduceL1', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceL2_1', 'name': 'ReduceL2', 'op_type': 'ReduceL2', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceL2', 'name': 'ReduceL2', 'op_type': 'ReduceL2', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceLogSum_1', 'name': 'ReduceLogSum', 'op_type': 'ReduceLogSum', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceLogSum', 'name': 'ReduceLogSum', 'op_type': 'ReduceLogSum', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceLogSumExp_1', 'name': 'ReduceLogSumExp', 'op_type': 'ReduceLogSumExp', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceLogSumExp', 'name': 'ReduceLogSumExp', 'op_type': 'ReduceLogSumExp', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceSumSquare_1', 'name': 'ReduceSumSquare', 'op_type': 'ReduceSumSquare', 'version': '1', 'min_opset': 1, 'max_opset': 17, 'fields': ('axes', 'keepdims')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ReduceSumSquare', 'name': 'ReduceSumSquare', 'op_type': 'ReduceSumSquare', 'version': '18', 'min_opset': 18, 'max_opset': None, 'fields': ('keepdims', 'noop_with_empty_axes')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ArgMax', 'name': 'ArgMax', 'op_type': 'ArgMax', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'keepdims', 'select_last_index')},
    {'target': 'mini_infer_cpu_plugins.ops.reduce:ArgMin', 'name': 'ArgMin', 'op_type': 'ArgMin', 'version': '1', 'min_opset': 1, 'max_opset': None, 'fields': ('axis', 'keepdims', 'select_last_index')},
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
