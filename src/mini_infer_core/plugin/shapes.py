"""Shape, type and value inference helpers for plugin authors.

Device-independent (NumPy only, no kernels): what ``output_shapes``, ``output_types`` and
``output_values`` of a plugin compute, written once for every plugin package.

- **dimensions and axes**: :func:`dim_prod`, :func:`norm_axis`;
- **build-time values of inputs** (``DimsExprs.values``): :func:`absent`, :func:`input_values`,
  :func:`shape_values`, :func:`const_ints`, :func:`const`;
- **value inference** (so ``Shape -> Gather -> Concat -> Reshape`` stays known while the engine
  is built): :func:`value_array` / :func:`flat` (values as an object array shaped as the
  tensor, so NumPy does the indexing, and back), :func:`same_values`,
  :func:`elementwise_values`, :func:`variadic_values`, :func:`trunc_div`,
  :func:`cast_values`, :func:`filled_values`;
- **sliding windows** of Conv and the pools: :class:`Window`, :func:`window_params` /
  :func:`window_from_attrs`, :func:`symbolic_out_dims` (build time), :func:`resolve`,
  :func:`padded_extent`, :func:`needs_padding` (run time);
- **output shapes of common operators**: :func:`reshape_dims` / :func:`reshape_target`,
  :func:`flatten_dims`, :func:`transpose_perm`, :func:`concat_dims` / :func:`concat_values`,
  :func:`unsqueeze_dims`, :func:`squeeze_dims`, :func:`gather_dims` / :func:`gather_values`,
  :func:`shape_range`, :func:`slice_dims` / :func:`slice_index` / :func:`slice_values`,
  :func:`gemm_dims`, :func:`matmul_dims`, :func:`reduced_dims`, :func:`binary_dims`.
  Broadcasting is :func:`mini_infer_core.plugin.broadcast_dims`.

Dimensions are :class:`~mini_infer_core.plugin.DimExpr` (possibly symbolic, never negative);
shape errors raise :class:`~mini_infer_core.errors.PluginInterfaceError`. Value functions
given to :func:`elementwise_values` raise ``ValueError`` for a result that cannot be known at
build time (:func:`const` does so for a symbolic operand); the values are then unknown (None).
"""

from __future__ import annotations

from . import _shape_ops, _shape_values, _shape_window
from ._shape_ops import *  # noqa: F403 - this module is their public face
from ._shape_values import *  # noqa: F403
from ._shape_window import *  # noqa: F403

__all__ = [*_shape_ops.__all__, *_shape_values.__all__, *_shape_window.__all__]
