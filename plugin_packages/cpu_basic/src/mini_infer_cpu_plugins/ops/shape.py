"""Data-movement operators: Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze, Identity.

All of them are dtype-agnostic and copy into the pre-allocated output. Each also passes the
build-time values of small integer tensors through (``output_values``), so shape computations
(``Shape -> Gather -> Unsqueeze -> Concat -> Reshape``) stay known when the engine is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import REQUIRED, DimExpr, DimsExprs, UnaryPlugin

from ..serialization import CpuPlugin
from ._dynamic import Shapes, ValuePlugin, Values, as_ints, flat, value_array
from ._util import IntLike, absent, const_ints, copy_into, dim_prod, norm_axis

__all__ = [
    "Reshape_1",
    "Reshape_5",
    "Flatten",
    "Transpose",
    "Concat",
    "Unsqueeze_1",
    "Unsqueeze_13",
    "Squeeze_1",
    "Squeeze_13",
    "Identity",
]

Array = NDArray[Any]


def same_values(inputs: Sequence[DimsExprs | None]) -> Values:
    """``output_values`` of an operator that keeps its input's elements in order."""
    first = inputs[0] if inputs else None
    return None if first is None or first.values is None else [list(first.values)]


def reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: int) -> list[int]:
    """Reshape's concrete output shape (0 copies the input dim unless allowzero, -1 infers)."""
    out = [shape[i] if t == 0 and not allowzero else t for i, t in enumerate(target)]
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        total = int(np.prod(shape, dtype=np.int64))
        out[out.index(-1)] = total // known if known else 0
    return out


def reshape_dims(dims: Sequence[DimExpr], target: Sequence[IntLike], allowzero: int,
                 op: str = "Reshape") -> list[DimExpr]:
    """ONNX Reshape's output shape: 0 copies the input dim (unless allowzero), -1 is inferred.

    The inferred dimension cancels symbolic factors common to the input and the known target
    dims and folds the constant ones, so ``(N, 512, 7, 7) -> (0, -1)`` infers ``25088`` and
    ``(N, 2, 3, 4) -> (-1, 12)`` infers ``N * 2``, not ``(N * 24) // 12``.
    """
    out: list[DimExpr | None] = []
    infer_at: int | None = None
    for i, v in enumerate(DimExpr.wrap(t) for t in target):
        c = v.get_constant_value() if v.is_constant() else None
        if c == 0 and not allowzero:
            if i >= len(dims):
                raise PluginInterfaceError(
                    f"{op}: target shape {[str(t) for t in target]} copies dimension {i} "
                    f"(0) of a rank-{len(dims)} input")
            out.append(dims[i])
        elif c == -1:
            if infer_at is not None:
                raise PluginInterfaceError(f"{op}: more than one -1 in the target shape")
            infer_at = i
            out.append(None)
        elif c is not None and c < -1:
            raise PluginInterfaceError(f"{op}: invalid target dimension {c}")
        else:
            out.append(v)
    if infer_at is not None:
        # cancel symbolic factors common to both sides, fold the constant ones
        remaining = [d for d in dims if not d.is_constant()]
        c_total = int(np.prod([d.get_constant_value() for d in dims if d.is_constant()]))
        rest: list[DimExpr] = []
        c_known = 1
        for k in out:
            if k is None:
                continue
            if k.is_constant():
                c_known *= k.get_constant_value()
                continue
            j = next((j for j, d in enumerate(remaining) if d.same_as(k)), None)
            if j is None:
                rest.append(k)
            else:
                remaining.pop(j)
        if not rest and c_known and c_total % c_known == 0:
            total, known = dim_prod(remaining) * (c_total // c_known), DimExpr.const(1)
        else:
            total, known = dim_prod(remaining) * c_total, dim_prod(rest) * c_known
        if total.is_constant() and known.is_constant():
            tv, kv = total.get_constant_value(), known.get_constant_value()
            if kv == 0 or tv % kv:
                raise PluginInterfaceError(
                    f"{op}: cannot reshape {[str(d) for d in dims]} to "
                    f"{[str(t) for t in target]}")
        out[infer_at] = total // known
    result = [d for d in out if d is not None]
    before, after = dim_prod(dims), dim_prod(result)
    if before.is_constant() and after.is_constant() and (
            before.get_constant_value() != after.get_constant_value()):
        raise PluginInterfaceError(
            f"{op}: cannot reshape {[str(d) for d in dims]} ({before} elements) to "
            f"{[str(t) for t in target]} ({after} elements)")
    return result


class Reshape_1(CpuPlugin, UnaryPlugin):  # noqa: N801
    """Reshape before opset 5: the target shape is the ``shape`` attribute."""

    op_type = "Reshape"
    plugin_version = "1"
    max_opset = 4
    attributes: ClassVar[dict[str, Any]] = {"shape": REQUIRED, "consumed_inputs": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(reshape_dims(list(inputs[0]), self.attrs["shape"], 0))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        copy_into(out, x)


class Reshape_5(ValuePlugin, UnaryPlugin):  # noqa: N801
    """Reshape from opset 5: the target shape is input 1; ``allowzero`` from opset 14.

    A target known when the engine is built gives exact shapes; a run-time target makes the
    node data-dependent."""

    op_type = "Reshape"
    plugin_version = "5"
    min_opset = 5
    value_inputs = (1,)
    attributes: ClassVar[dict[str, Any]] = {"allowzero": 0}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        target = self.values(inputs, 1)
        if self.runtime(target is None):
            n = inputs[1][0] if len(inputs[1]) else DimExpr.const(1)
            return [list(self.unknown_dims(const_ints([n], "Reshape", "the target rank")[0]))]
        assert target is not None
        return [list(reshape_dims(list(inputs[0]), target, self.attrs["allowzero"]))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, shape: Array, *, out: Array | None = None,
                allowzero: int = 0) -> Any:
        if out is None:
            return x.reshape(reshape_target(x.shape, as_ints(shape), allowzero)).copy()
        copy_into(out, x)
        return None


class Flatten(CpuPlugin, UnaryPlugin):
    attributes: ClassVar[dict[str, Any]] = {"axis": 1}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        dims = list(inputs[0])
        axis = self.attrs["axis"]
        a = axis + len(dims) if axis < 0 else axis
        if not 0 <= a <= len(dims):
            raise PluginInterfaceError(f"Flatten: axis {axis} out of range for rank {len(dims)}")
        return [[dim_prod(dims[:a]), dim_prod(dims[a:])]]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, *, out: Array, axis: int) -> None:
        copy_into(out, x)


class Transpose(CpuPlugin, UnaryPlugin):
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

    def compute(self, x: Array, *, out: Array, perm: tuple[int, ...] | None) -> None:
        np.copyto(out, x.transpose(self._perm(x.ndim)))


class Concat(CpuPlugin):
    """Concatenation along ``axis`` (negative allowed; opset 1 defaulted it to 1)."""

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
        arrs = [value_array(d) for d in inputs]
        if not arrs or any(a is None for a in arrs):
            return None
        axis = norm_axis(self.attrs["axis"], arrs[0].ndim)  # type: ignore[union-attr]
        return [flat(np.concatenate(arrs, axis=axis))]  # type: ignore[arg-type]

    def compute(self, *xs: Array, out: Array, axis: int) -> None:
        np.concatenate(xs, axis=norm_axis(axis, out.ndim), out=out)


def _unsqueeze(dims: Sequence[DimExpr], axes: Sequence[int] | int) -> list[DimExpr]:
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    rank = len(dims) + len(axes)
    norm = sorted(norm_axis(a, rank, "Unsqueeze axis") for a in axes)
    if len(set(norm)) != len(norm):
        raise PluginInterfaceError(f"Unsqueeze: repeated axes {list(axes)}")
    it = iter(dims)
    return [DimExpr.const(1) if i in norm else next(it) for i in range(rank)]


def _squeeze(dims: Sequence[DimExpr], axes: Sequence[int] | int | None) -> list[DimExpr]:
    axes = (axes,) if isinstance(axes, int) else axes
    if axes is None:
        # only dims known to be 1 are removed; a dynamic dim is kept
        return [d for d in dims if not (d.is_constant() and d.get_constant_value() == 1)]
    norm = {norm_axis(a, len(dims), "Squeeze axis") for a in axes}
    for a in norm:
        if dims[a].is_constant() and dims[a].get_constant_value() != 1:
            raise PluginInterfaceError(f"Squeeze: dimension {a} is {dims[a]}, not 1")
    return [d for i, d in enumerate(dims) if i not in norm]


class Unsqueeze_1(CpuPlugin, UnaryPlugin):  # noqa: N801
    """Unsqueeze before opset 13: ``axes`` attribute."""

    op_type = "Unsqueeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": REQUIRED}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(_unsqueeze(list(inputs[0]), self.attrs["axes"]))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        copy_into(out, x)


class Unsqueeze_13(ValuePlugin, UnaryPlugin):  # noqa: N801
    """Unsqueeze from opset 13: ``axes`` is input 1 (a run-time one makes the node
    data-dependent)."""

    op_type = "Unsqueeze"
    plugin_version = "13"
    min_opset = 13
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        vals = self.values(inputs, 1)
        if self.runtime(vals is None):
            n = const_ints([inputs[1][0] if len(inputs[1]) else DimExpr.const(1)],
                           "Unsqueeze", "the number of axes")[0]
            return [list(self.unknown_dims(len(inputs[0]) + n))]
        assert vals is not None
        axes = const_ints(vals, "Unsqueeze", "axes")
        return [list(_unsqueeze(list(inputs[0]), axes))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, axes: Array, *, out: Array | None = None) -> Any:
        if out is None:
            return np.expand_dims(x, tuple(as_ints(axes))).copy()
        copy_into(out, x)
        return None


class Squeeze_1(CpuPlugin, UnaryPlugin):  # noqa: N801
    """Squeeze before opset 13: optional ``axes`` attribute (absent: every 1 dim)."""

    op_type = "Squeeze"
    plugin_version = "1"
    max_opset = 12
    attributes: ClassVar[dict[str, Any]] = {"axes": None}

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        return [list(_squeeze(list(inputs[0]), self.attrs["axes"]))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, *, out: Array, **_: Any) -> None:
        copy_into(out, x)


class Squeeze_13(ValuePlugin, UnaryPlugin):  # noqa: N801
    """Squeeze from opset 13: optional ``axes`` input 1 (a run-time one makes the
    node data-dependent)."""

    op_type = "Squeeze"
    plugin_version = "13"
    min_opset = 13
    value_inputs = (1,)

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        axes: list[int] | None = None
        if not absent(inputs, 1):
            vals = self.values(inputs, 1)
            if self.runtime(vals is None):
                n = const_ints([inputs[1][0] if len(inputs[1]) else DimExpr.const(1)],
                               "Squeeze", "the number of axes")[0]
                return [list(self.unknown_dims(len(inputs[0]) - n))]
            assert vals is not None
            axes = const_ints(vals, "Squeeze", "axes")
        else:
            self.runtime(False)
        return [list(_squeeze(list(inputs[0]), axes))]

    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, axes: Array | None = None, *, out: Array | None = None) -> Any:
        if out is None:
            ax = tuple(as_ints(axes)) if axes is not None else None
            return np.squeeze(x, ax).copy()
        copy_into(out, x)
        return None


class Identity(CpuPlugin, UnaryPlugin):
    def output_values(self, inputs: Sequence[DimsExprs]) -> Values:
        return same_values(inputs)

    def compute(self, x: Array, *, out: Array) -> None:
        np.copyto(out, x)
