"""Data movement: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity.

Each copies into the pre-allocated output (one device copy; no host round trip) and passes
the build-time values of small integer tensors through (``output_values``). Targets and axes
given as inputs (Reshape-5, Unsqueeze-13, Squeeze-13) must be known when the engine is built
(``shape_inputs``): the kernels never read them back from the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DimExpr, DimsExprs, IntLike, UnaryPlugin

from ..serialization import CudaPlugin
from ._common import (
    Shapes,
    absent,
    array_module,
    const_ints,
    copy_into,
    dim_prod,
    norm_axis,
    shape_values,
)
from ._values import Values, flat, same_values, value_array

__all__ = ["Reshape_1", "Reshape_5", "Flatten", "Transpose", "Concat", "Unsqueeze_1",
           "Unsqueeze_13", "Squeeze_1", "Squeeze_13", "Identity"]



def _product(values: Sequence[int]) -> int:
    return int(np.prod(values, dtype=np.int64)) if values else 1


def reshape_dims(dims: Sequence[DimExpr], target: Sequence[IntLike], allowzero: int
                 ) -> list[DimExpr]:
    """ONNX Reshape's output shape: a 0 copies the input dimension (unless ``allowzero``),
    one -1 is inferred. The inferred size cancels symbolic factors the input and the known
    target dimensions share, so ``(N, 512, 7, 7) -> (0, -1)`` infers 25088 and
    ``(N, 2, 3, 4) -> (-1, 12)`` infers ``N * 2``."""
    shape: list[DimExpr | None] = []
    infer: int | None = None
    for i, t in enumerate(DimExpr.wrap(v) for v in target):
        c = t.get_constant_value() if t.is_constant() else None
        if c == 0 and not allowzero:
            if i >= len(dims):
                raise PluginInterfaceError(
                    f"Reshape: target dimension {i} is 0 (copy) but the input has rank "
                    f"{len(dims)}")
            shape.append(dims[i])
        elif c == -1:
            if infer is not None:
                raise PluginInterfaceError("Reshape: more than one -1 in the target shape")
            infer = i
            shape.append(None)
        elif c is not None and c < -1:
            raise PluginInterfaceError(f"Reshape: invalid target dimension {c}")
        else:
            shape.append(t)
    if infer is not None:
        unmatched = [d for d in dims if not d.is_constant()]
        in_const = _product([d.get_constant_value() for d in dims if d.is_constant()])
        out_sym: list[DimExpr] = []
        out_const = 1
        for k in shape:
            if k is None:
                continue
            if k.is_constant():
                out_const *= k.get_constant_value()
                continue
            j = next((j for j, d in enumerate(unmatched) if d.same_as(k)), None)
            if j is None:
                out_sym.append(k)
            else:
                unmatched.pop(j)
        if not out_sym and out_const and in_const % out_const == 0:
            num, den = dim_prod(unmatched) * (in_const // out_const), DimExpr.const(1)
        else:
            num, den = dim_prod(unmatched) * in_const, dim_prod(out_sym) * out_const
        if num.is_constant() and den.is_constant() and (
                den.get_constant_value() == 0
                or num.get_constant_value() % den.get_constant_value()):
            raise PluginInterfaceError(
                f"Reshape: cannot reshape {[str(d) for d in dims]} to "
                f"{[str(DimExpr.wrap(t)) for t in target]}")
        shape[infer] = num // den
    result = [d for d in shape if d is not None]
    before, after = dim_prod(dims), dim_prod(result)
    if before.is_constant() and after.is_constant() and \
            before.get_constant_value() != after.get_constant_value():
        raise PluginInterfaceError(
            f"Reshape: cannot reshape {[str(d) for d in dims]} ({before} elements) to "
            f"{[str(d) for d in result]} ({after} elements)")
    return result


class _Copy(CudaPlugin, UnaryPlugin):
    """An operator whose output holds the input's elements in order, in another shape."""

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Any, *_inputs: Any, out: Any, **_: Any) -> None:
        copy_into(array_module(x, out), out, x)


class Reshape_1(_Copy):  # noqa: N801
    """Reshape before opset 5: the target is the ``shape`` attribute."""

    op_type = "Reshape"
    plugin_version = "1"
    max_opset = 4
    attributes: ClassVar[dict[str, Any]] = {"shape": REQUIRED, "consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(reshape_dims(list(inputs[0]), self.attrs["shape"], 0))]


class Reshape_5(_Copy):  # noqa: N801
    """Reshape from opset 5: the target is input 1 (``allowzero`` from opset 14)."""

    op_type = "Reshape"
    plugin_version = "5"
    min_opset = 5
    shape_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"allowzero": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        target = shape_values(inputs, 1, "Reshape", "shape")
        return [list(reshape_dims(list(inputs[0]), target, self.attrs["allowzero"]))]


class Flatten(_Copy):
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        axis = self.attrs["axis"]
        a = axis + len(dims) if axis < 0 else axis
        if not 0 <= a <= len(dims):
            raise PluginInterfaceError(f"Flatten: axis {axis} out of range for rank {len(dims)}")
        return [[dim_prod(dims[:a]), dim_prod(dims[a:])]]


def _unsqueezed(dims: Sequence[DimExpr], axes: Sequence[int] | int) -> list[DimExpr]:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    rank = len(dims) + len(axes)
    at = sorted(norm_axis(a, rank, "Unsqueeze axis") for a in axes)
    if len(set(at)) != len(at):
        raise PluginInterfaceError(f"Unsqueeze: repeated axes {list(axes)}")
    rest = iter(dims)
    return [DimExpr.const(1) if i in at else next(rest) for i in range(rank)]


def _squeezed(dims: Sequence[DimExpr], axes: Sequence[int] | int | None) -> list[DimExpr]:
    if axes is None:  # every dimension known to be 1 (a dynamic one is kept)
        return [d for d in dims if not (d.is_constant() and d.get_constant_value() == 1)]
    at = {norm_axis(a, len(dims), "Squeeze axis")
          for a in ((axes,) if isinstance(axes, int) else axes)}
    for a in at:
        if dims[a].is_constant() and dims[a].get_constant_value() != 1:
            raise PluginInterfaceError(f"Squeeze: dimension {a} is {dims[a]}, not 1")
    return [d for i, d in enumerate(dims) if i not in at]


class Unsqueeze_1(_Copy):  # noqa: N801
    op_type = "Unsqueeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": REQUIRED}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [_unsqueezed(list(inputs[0]), self.attrs["axes"])]


class Unsqueeze_13(_Copy):  # noqa: N801
    """Unsqueeze from opset 13: ``axes`` is input 1."""

    op_type = "Unsqueeze"
    plugin_version = "13"
    min_opset = 13
    shape_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        axes = const_ints(shape_values(inputs, 1, "Unsqueeze", "axes"), "Unsqueeze", "axes")
        return [_unsqueezed(list(inputs[0]), axes)]


class Squeeze_1(_Copy):  # noqa: N801
    op_type = "Squeeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [_squeezed(list(inputs[0]), self.attrs["axes"])]


class Squeeze_13(_Copy):  # noqa: N801
    """Squeeze from opset 13: optional ``axes`` input 1."""

    op_type = "Squeeze"
    plugin_version = "13"
    min_opset = 13
    shape_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        axes = None
        if not absent(inputs, 1):
            axes = const_ints(shape_values(inputs, 1, "Squeeze", "axes"), "Squeeze", "axes")
        return [_squeezed(list(inputs[0]), axes)]


class Identity(_Copy):
    pass


class Transpose(CudaPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"perm": None}

    def _perm(self, rank: int) -> tuple[int, ...]:
        perm = self.attrs["perm"]
        if perm is None:
            return tuple(range(rank - 1, -1, -1))
        if sorted(perm) != list(range(rank)):
            raise PluginInterfaceError(f"Transpose: perm {perm} is not a permutation of {rank}")
        return tuple(perm)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        return [[dims[p] for p in self._perm(len(dims))]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arr = value_array(inputs[0])
        return None if arr is None else [flat(arr.transpose(self._perm(arr.ndim)))]

    def compute(self, x: Any, *, out: Any, perm: Any) -> None:
        array_module(x, out).copyto(out, x.transpose(self._perm(x.ndim)))


class Concat(CudaPlugin):
    """Concatenation along ``axis`` (negative allowed)."""

    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        first: list[IntLike] = list(inputs[0])
        a = norm_axis(self.attrs["axis"], len(first), "Concat axis")
        total = DimExpr.const(0)
        for dims in inputs:
            if len(dims) != len(first):
                raise PluginInterfaceError("Concat: inputs have different ranks")
            total = total + dims[a]
        return [first[:a] + [total] + first[a + 1:]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        arrays = [value_array(d) for d in inputs]
        if not arrays or any(a is None for a in arrays):
            return None
        a = norm_axis(self.attrs["axis"], arrays[0].ndim)  # type: ignore[union-attr]
        return [flat(np.concatenate(arrays, axis=a))]  # type: ignore[arg-type]

    def compute(self, *xs: Any, out: Any, axis: int) -> None:
        array_module(*xs, out).concatenate(xs, axis=norm_axis(axis, out.ndim), out=out)
