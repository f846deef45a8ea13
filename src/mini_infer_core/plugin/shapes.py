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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..errors import PluginInterfaceError
from ._base import broadcast_dims
from ._dims import DimensionOperation, DimExpr, DimsExprs, IntLike
from ._types import DataType

__all__ = [
    "AUTO_PADS",
    "FLOAT_TYPES",
    "INT_TYPES",
    "MAX_VALUES",
    "SLICE_END",
    "Geometry",
    "Shapes",
    "Values",
    "Window",
    "absent",
    "binary_dims",
    "cast_values",
    "concat_dims",
    "concat_values",
    "const",
    "const_ints",
    "dim_prod",
    "elementwise_values",
    "filled_values",
    "flat",
    "flatten_dims",
    "gather_dims",
    "gather_values",
    "gemm_dims",
    "input_values",
    "legacy_broadcast_rank",
    "matmul_dims",
    "needs_padding",
    "norm_axis",
    "padded_extent",
    "reduced_dims",
    "reshape_dims",
    "reshape_target",
    "resolve",
    "same_values",
    "shape_range",
    "shape_values",
    "slice_axes",
    "slice_dim",
    "slice_dims",
    "slice_index",
    "slice_values",
    "squeeze_dims",
    "symbolic_out_dims",
    "transpose_perm",
    "trunc_div",
    "unsqueeze_dims",
    "value_array",
    "variadic_values",
    "window_from_attrs",
    "window_params",
]

#: what ``output_shapes`` returns: one shape per output
Shapes = Sequence[Sequence[IntLike]]
#: what ``output_values`` returns: flattened values per output (None: unknown)
Values = Sequence[Sequence[IntLike] | None] | None

#: the builder keeps the values of tensors of at most this many elements
MAX_VALUES = 64

#: input types of kernels that only make sense on floating-point data
FLOAT_TYPES: tuple[DataType, ...] = (DataType.FLOAT, DataType.HALF, DataType.DOUBLE)
#: integer types: a cast between them keeps (shape) values
INT_TYPES: frozenset[DataType] = frozenset({
    DataType.INT64, DataType.INT32, DataType.INT16, DataType.INT8, DataType.UINT8,
    DataType.UINT16, DataType.UINT32, DataType.UINT64})


# -- dimensions and axes ----------------------------------------------------------------------
def dim_prod(dims: Sequence[IntLike]) -> DimExpr:
    """The product of dimension expressions (1 for none)."""
    out = DimExpr.const(1)
    for d in dims:
        out = out * d
    return out


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A possibly negative axis as a non-negative one, checked against ``rank`` (a scalar,
    rank 0, takes axis 0)."""
    a = axis + rank if axis < 0 else axis
    if not 0 <= a < max(rank, 1):
        raise PluginInterfaceError(f"{what} {axis} is out of range for rank {rank}")
    return a


def _int_product(values: Sequence[int]) -> int:
    return int(np.prod(values, dtype=np.int64)) if values else 1


# -- build-time values of inputs --------------------------------------------------------------
def absent(inputs: Sequence[DimsExprs | None], index: int) -> bool:
    """Whether optional input ``index`` is missing (the builder passes None for it, or a
    shorter list)."""
    return index >= len(inputs) or inputs[index] is None


def input_values(inputs: Sequence[DimsExprs | None], index: int
                 ) -> tuple[DimExpr, ...] | None:
    """The build-time values of input ``index`` (``()`` for an empty tensor); None when the
    input is absent or its values are unknown (computed at run time)."""
    dims = None if absent(inputs, index) else inputs[index]
    if dims is None:
        return None
    if dims.values is not None:
        return tuple(dims.values)
    if any(d.is_constant() and d.get_constant_value() == 0 for d in dims):
        return ()
    return None


def shape_values(inputs: Sequence[DimsExprs | None], index: int, op: str, what: str, *,
                 device: str = "") -> tuple[DimExpr, ...]:
    """The build-time values of input ``index`` (``()`` for an empty tensor); raises when the
    input is missing or its values are unknown. ``device`` names the device that needs them
    in the message."""
    if absent(inputs, index):
        raise PluginInterfaceError(f"{op}: its {what} input (input {index}) is missing")
    vals = input_values(inputs, index)
    if vals is None:
        where = f" for the {device} device" if device else ""
        raise PluginInterfaceError(
            f"{op}: the values of its {what} input (input {index}) must be known when the "
            f"engine is built (a constant or computed from shapes only){where}")
    return vals


def const_ints(values: Sequence[IntLike], op: str, what: str) -> list[int]:
    """Build-time constant integers from dimension expressions; raises for a symbolic one."""
    exprs = [DimExpr.wrap(v) for v in values]
    if not all(v.is_constant() for v in exprs):
        raise PluginInterfaceError(
            f"{op}: {what} must be build-time constants, got {[str(v) for v in exprs]}")
    return [v.get_constant_value() for v in exprs]


def const(v: IntLike) -> int:
    """The constant value of ``v``; ``ValueError`` when it is symbolic (for value functions:
    the result is then unknown)."""
    e = DimExpr.wrap(v)
    if not e.is_constant():
        raise ValueError(f"{e} is not a build-time constant")
    return e.get_constant_value()


# -- value inference --------------------------------------------------------------------------
def value_array(dims: DimsExprs | None) -> np.ndarray[Any, np.dtype[np.object_]] | None:
    """A tensor's build-time values as an object array of :class:`DimExpr` shaped as the
    (static) tensor, or None when they are unknown."""
    if dims is None or dims.values is None or not dims.is_static():
        return None
    shape = dims.to_tuple()
    if _int_product(shape) != len(dims.values):
        return None
    arr = np.empty(len(dims.values), dtype=object)
    arr[:] = list(dims.values)
    return arr.reshape(shape)


def flat(arr: Any) -> list[DimExpr]:
    """An object array (or scalar) of values as the flat list ``output_values`` returns."""
    return [DimExpr.wrap(v) for v in np.asarray(arr, dtype=object).reshape(-1)]


def same_values(inputs: Sequence[DimsExprs | None]) -> Values:
    """``output_values`` of an operator that keeps its input's elements in order (Reshape,
    Flatten, Squeeze, Unsqueeze, Identity)."""
    first = inputs[0] if inputs else None
    return None if first is None or first.values is None else [list(first.values)]


def elementwise_values(inputs: Sequence[DimsExprs | None], fn: Callable[..., Any]) -> Values:
    """``output_values`` of a broadcasting elementwise operator: ``fn`` applied to every
    tuple of (broadcast) input values; None when an input's values are unknown, the result
    is large, or ``fn`` raises ``ValueError`` (symbolic), ``ZeroDivisionError`` or
    ``TypeError``."""
    arrays = [value_array(d) for d in inputs]
    if not arrays or any(a is None for a in arrays):
        return None
    known = [a for a in arrays if a is not None]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in known))
    except ValueError:
        return None
    if _int_product(shape) > MAX_VALUES:
        return None
    columns = [np.broadcast_to(a, shape).reshape(-1) for a in known]
    try:
        return [[fn(*row) for row in zip(*columns, strict=True)]]
    except (ValueError, ZeroDivisionError, TypeError):
        return None


def variadic_values(inputs: Sequence[DimsExprs | None], fn: Callable[[Any, Any], Any]
                    ) -> Values:
    """:func:`elementwise_values` of a variadic operator (Sum, Max, Min) folding the binary
    ``fn`` over its inputs, left to right."""
    def fold(*vals: Any) -> Any:
        acc = vals[0]
        for v in vals[1:]:
            acc = fn(acc, v)
        return acc

    return elementwise_values(inputs, fold)


def trunc_div(a: DimExpr, b: DimExpr) -> IntLike:
    """Integer division rounding toward zero (ONNX, C). Symbolic only for a positive constant
    divisor (dimensions are never negative); ``ValueError`` otherwise and for a zero one."""
    if b.is_constant() and const(b) == 0:
        raise ValueError("division by zero")
    if a.is_constant() and b.is_constant():
        x, y = const(a), const(b)
        q = abs(x) // abs(y)
        return q if (x >= 0) == (y >= 0) else -q
    if b.is_constant() and const(b) > 0:
        return a // b
    raise ValueError("symbolic division")


def cast_values(values: Sequence[DimExpr] | None, to: DataType) -> Values:
    """``output_values`` of Cast: integer (shape) values survive a cast to an integer type
    (:data:`INT_TYPES`), and constant ones a cast to bool; other targets lose them."""
    if values is None:
        return None
    if to in INT_TYPES:
        return [list(values)]
    if to is DataType.BOOL and all(v.is_constant() for v in values):
        return [[int(v.get_constant_value() != 0) for v in values]]
    return None


def filled_values(shape: Sequence[DimExpr] | None, fill: np.ndarray[Any, Any]) -> Values:
    """``output_values`` of ConstantOfShape: ``fill`` (one integer or bool element) repeated
    over a constant ``shape`` of at most :data:`MAX_VALUES` elements, else None."""
    if shape is None or fill.dtype.kind not in "iub" or not all(
            d.is_constant() for d in shape):
        return None
    n = _int_product([d.get_constant_value() for d in shape])
    return [[int(fill)] * n] if n <= MAX_VALUES else None


# -- sliding windows (Conv, pools) ------------------------------------------------------------
#: the values of ``auto_pad``
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class Window:
    """A sliding window. Per spatial axis: kernel size, stride, dilation; explicit pads (all
    begins, then all ends); ``auto_pad`` and ``ceil_mode``.

    Kernel sizes are ints, or a :class:`DimExpr` while the engine is built from a weight of
    symbolic shape (only :func:`symbolic_out_dims` accepts that)."""

    kernel: tuple[Any, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    auto_pad: str
    ceil_mode: bool

    @property
    def nd(self) -> int:
        """The number of spatial axes."""
        return len(self.kernel)

    def extent(self, i: int) -> int:
        """Span of the dilated kernel along axis ``i`` (an int kernel)."""
        return (int(self.kernel[i]) - 1) * self.dilations[i] + 1


class Geometry(NamedTuple):
    """A window resolved for concrete input sizes: pads per axis and output sizes."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]


def _kernel_size(k: Any) -> Any:
    """A kernel size as an int, or a :class:`DimExpr` when it is symbolic."""
    if isinstance(k, DimExpr):
        return k.get_constant_value() if k.is_constant() else k
    return int(k)


def window_params(op: str, nd: int, kernel: Sequence[Any] | None,
                  strides: Sequence[int] | None, dilations: Sequence[int] | None,
                  pads: Sequence[int] | None, auto_pad: Any, ceil_mode: Any = 0) -> Window:
    """Check and default the window attributes of an ``nd``-dimensional operator (absent
    strides and dilations: 1; absent pads: 0; ``auto_pad`` may be bytes)."""
    mode = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if mode not in AUTO_PADS:
        raise PluginInterfaceError(f"{op}: auto_pad {mode!r} is not one of {AUTO_PADS}")
    if not kernel:
        raise PluginInterfaceError(f"{op}: kernel_shape is required")
    k = tuple(_kernel_size(v) for v in kernel)
    s = tuple(int(v) for v in strides) if strides else (1,) * nd
    d = tuple(int(v) for v in dilations) if dilations else (1,) * nd
    p = tuple(int(v) for v in pads) if pads else (0,) * (2 * nd)
    for name, val, n in (("kernel_shape", k, nd), ("strides", s, nd), ("dilations", d, nd),
                         ("pads", p, 2 * nd)):
        if len(val) != n:
            raise PluginInterfaceError(
                f"{op}: {name} {val} should have {n} values for {nd} spatial axes")
    ints = [v for v in k if isinstance(v, int)]
    if min(ints, default=1) < 1 or min(s, default=1) < 1 or min(d, default=1) < 1 or \
            min(p, default=0) < 0:
        raise PluginInterfaceError(
            f"{op}: invalid kernel_shape {k}, strides {s}, dilations {d} or pads {p}")
    return Window(k, s, d, p, mode, bool(ceil_mode))


def window_from_attrs(op: str, nd: int, attrs: Mapping[str, Any],
                      kernel: Sequence[Any] | None = None) -> Window:
    """:func:`window_params` from the ONNX attributes of a Conv or pooling node:
    ``kernel_shape`` (absent: ``kernel``, e.g. the weight's spatial dimensions), ``strides``,
    ``dilations``, ``pads``, ``auto_pad`` and ``ceil_mode``."""
    return window_params(op, nd, attrs.get("kernel_shape") or kernel, attrs.get("strides"),
                         attrs.get("dilations"), attrs.get("pads"),
                         attrs.get("auto_pad", "NOTSET"), attrs.get("ceil_mode", 0))


def symbolic_out_dims(spatial: Sequence[IntLike], w: Window) -> list[DimExpr]:
    """Output spatial sizes as dimension expressions (for dynamic input sizes, and symbolic
    kernel sizes)."""
    nd = len(spatial)
    out: list[DimExpr] = []
    for i, h in enumerate(DimExpr.wrap(x) for x in spatial):
        s, d = w.strides[i], w.dilations[i]
        dk = (DimExpr.wrap(w.kernel[i]) - 1) * d + 1
        if w.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = h.ceil_div(s)
        elif w.auto_pad == "VALID":
            o = (h - dk) // s + 1
        else:
            pb, pe = w.pads[i], w.pads[i + nd]
            span = h + (pb + pe) - dk
            if dk.is_constant():  # one folded constant: ``h - 1`` rather than ``(h + 2) - 3``
                c = pb + pe - dk.get_constant_value()
                span = h + c if c >= 0 else h - (-c)
            if w.ceil_mode:
                last = span.ceil_div(s)  # index of the last window
                o = last + 1
                # the last window must start inside the input or its begin padding; it can
                # only start past them when the end padding + stride exceeds the window
                if not dk.is_constant() or pe + s > dk.get_constant_value():
                    o = o - DimExpr.operation(DimensionOperation.LESS, h + pb, last * s + 1)
            else:
                o = span // s + 1
        out.append(o)
    return out


def resolve(spatial: Sequence[int], w: Window) -> Geometry:
    """Concrete pads and output sizes for input spatial sizes ``spatial`` (SAME_* pads split
    as ONNX says); raises when a window does not fit."""
    nd = len(spatial)
    begin: list[int] = []
    end: list[int] = []
    out: list[int] = []
    for i, size in enumerate(spatial):
        s, ext = w.strides[i], w.extent(i)
        if w.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-size // s)
            total = max(0, (o - 1) * s + ext - size)
            pb = total // 2 if w.auto_pad == "SAME_UPPER" else total - total // 2
            pe = total - pb
        elif w.auto_pad == "VALID":
            pb = pe = 0
            o = (size - ext) // s + 1
        else:
            pb, pe = w.pads[i], w.pads[i + nd]
            span = size + pb + pe - ext
            if w.ceil_mode:
                o = -(-span // s) + 1
                if (o - 1) * s >= size + pb:
                    o -= 1
            else:
                o = span // s + 1
        if o < 1:
            raise PluginInterfaceError(
                f"a window of extent {ext} does not fit an input of size {size} "
                f"(pads {pb}, {pe})")
        begin.append(pb)
        end.append(pe)
        out.append(o)
    return Geometry(tuple(begin), tuple(end), tuple(out))


def padded_extent(spatial: Sequence[int], w: Window, g: Geometry) -> tuple[int, ...]:
    """Spatial size of a padded copy of the input every window fits in (``ceil_mode`` may
    reach past the end padding; that overhang is padding too)."""
    return tuple(max((g.out[i] - 1) * w.strides[i] + w.extent(i), g.begin[i] + n)
                 for i, n in enumerate(spatial))


def needs_padding(spatial: Sequence[int], begin: Sequence[int], ext: Sequence[int]) -> bool:
    """Whether windows reach outside an input of size ``spatial`` (a padded copy is needed)."""
    return any(b > 0 for b in begin) or any(e > h for e, h in zip(ext, spatial, strict=True))


# -- Reshape, Flatten, Transpose, Concat, Unsqueeze, Squeeze ----------------------------------
def reshape_dims(dims: Sequence[DimExpr], target: Sequence[IntLike], allowzero: int,
                 op: str = "Reshape") -> list[DimExpr]:
    """ONNX Reshape's output shape: a 0 copies the input dimension (unless ``allowzero``),
    one -1 is inferred.

    The inferred size cancels symbolic factors common to the input and the known target
    dimensions and folds the constant ones, so ``(N, 512, 7, 7) -> (0, -1)`` infers ``25088``
    and ``(N, 2, 3, 4) -> (-1, 12)`` infers ``N * 2``, not ``(N * 24) // 12``.
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
        remaining = [d for d in dims if not d.is_constant()]
        c_total = _int_product([d.get_constant_value() for d in dims if d.is_constant()])
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


def reshape_target(shape: Sequence[int], target: Sequence[int], allowzero: int) -> list[int]:
    """Reshape's concrete output shape at run time (0 copies the input dimension unless
    ``allowzero``, -1 is inferred)."""
    out = [shape[i] if t == 0 and not allowzero else t for i, t in enumerate(target)]
    if -1 in out:
        known = _int_product([d for d in out if d != -1])
        out[out.index(-1)] = _int_product(shape) // known if known else 0
    return out


def flatten_dims(dims: Sequence[DimExpr], axis: int) -> list[DimExpr]:
    """Flatten's 2-D output shape: the product of the dimensions before ``axis`` (which may
    be the rank), and of the others."""
    a = axis + len(dims) if axis < 0 else axis
    if not 0 <= a <= len(dims):
        raise PluginInterfaceError(f"Flatten: axis {axis} out of range for rank {len(dims)}")
    return [dim_prod(dims[:a]), dim_prod(dims[a:])]


def transpose_perm(perm: Sequence[int] | None, rank: int) -> tuple[int, ...]:
    """Transpose's permutation: ``perm`` checked, or the axes reversed when it is absent."""
    if perm is None:
        return tuple(range(rank - 1, -1, -1))
    if sorted(perm) != list(range(rank)):
        raise PluginInterfaceError(f"Transpose: perm {perm} is not a permutation of {rank}")
    return tuple(perm)


def concat_dims(inputs: Sequence[Sequence[IntLike]], axis: int) -> list[IntLike]:
    """Concat's output shape: the inputs' (equal-rank) shapes, summed along ``axis``."""
    first: list[IntLike] = list(inputs[0])
    a = norm_axis(axis, len(first), "Concat axis")
    total = DimExpr.const(0)
    for dims in inputs:
        if len(dims) != len(first):
            raise PluginInterfaceError("Concat: inputs have different ranks")
        total = total + dims[a]
    return first[:a] + [total] + first[a + 1:]


def concat_values(inputs: Sequence[DimsExprs | None], axis: int) -> Values:
    """Concat's ``output_values``: the inputs' values concatenated along ``axis``."""
    arrays = [value_array(d) for d in inputs]
    known = [a for a in arrays if a is not None]
    if not arrays or len(known) != len(arrays):
        return None
    return [flat(np.concatenate(known, axis=norm_axis(axis, known[0].ndim)))]


def unsqueeze_dims(dims: Sequence[DimExpr], axes: Sequence[int] | int) -> list[DimExpr]:
    """Unsqueeze's output shape: a 1 inserted at each of ``axes`` (of the output)."""
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    rank = len(dims) + len(axes)
    at = sorted(norm_axis(a, rank, "Unsqueeze axis") for a in axes)
    if len(set(at)) != len(at):
        raise PluginInterfaceError(f"Unsqueeze: repeated axes {list(axes)}")
    rest = iter(dims)
    return [DimExpr.const(1) if i in at else next(rest) for i in range(rank)]


def squeeze_dims(dims: Sequence[DimExpr], axes: Sequence[int] | int | None) -> list[DimExpr]:
    """Squeeze's output shape: ``axes`` removed (they must not be known to differ from 1);
    with no axes, every dimension known to be 1 (a symbolic one is kept)."""
    if axes is None:
        return [d for d in dims if not (d.is_constant() and d.get_constant_value() == 1)]
    at = {norm_axis(a, len(dims), "Squeeze axis")
          for a in ((axes,) if isinstance(axes, int) else axes)}
    for a in at:
        if dims[a].is_constant() and dims[a].get_constant_value() != 1:
            raise PluginInterfaceError(f"Squeeze: dimension {a} is {dims[a]}, not 1")
    return [d for i, d in enumerate(dims) if i not in at]


# -- Shape, Gather, Slice ---------------------------------------------------------------------
#: a slice start/end at least this large (or this negative) means "to the end" (INT_MAX idioms)
SLICE_END = 2**31 - 1


def shape_range(rank: int, start: int, end: int | None) -> tuple[int, int]:
    """The part ``[start, end)`` of a rank-``rank`` shape that Shape-15 returns (negative
    bounds count from the end, both are clamped)."""
    def clamp(v: int) -> int:
        return min(max(v + rank if v < 0 else v, 0), rank)
    return clamp(start), clamp(rank if end is None else end)


def gather_dims(data: Sequence[IntLike], indices: Sequence[IntLike], axis: int
                ) -> list[IntLike]:
    """Gather's output shape: ``data[:axis] + indices + data[axis + 1:]``."""
    d, idx = list(data), list(indices)
    a = norm_axis(axis, len(d), "Gather axis")
    return d[:a] + idx + d[a + 1:]


def gather_values(data: DimsExprs | None, indices: DimsExprs | None, axis: int) -> Values:
    """Gather's ``output_values`` (negative indices count from the end); None unless the
    data's values and constant indices are known."""
    arr, idx = value_array(data), value_array(indices)
    if arr is None or idx is None or not all(DimExpr.wrap(v).is_constant()
                                             for v in idx.reshape(-1)):
        return None
    a = norm_axis(axis, arr.ndim)
    ints = np.array([DimExpr.wrap(v).get_constant_value() for v in idx.reshape(-1)], np.int64)
    ints = np.where(ints < 0, ints + arr.shape[a], ints).reshape(idx.shape)
    return [flat(np.take(arr, ints, axis=a))]


def _slice_bound(v: IntLike, dim: DimExpr, lo: int, hi: DimExpr) -> DimExpr:
    """ONNX's normalisation of a slice start/end: negative counts from the end, then clamp to
    ``[lo, hi]``. A symbolic ``v`` is taken as non-negative (it comes from shapes)."""
    e = DimExpr.wrap(v)
    if not e.is_constant():
        return e if e.same_as(hi) else e.min(hi)
    c = e.get_constant_value()
    if c >= SLICE_END:
        return hi
    if c <= -SLICE_END:
        return DimExpr.const(lo)
    if dim.is_constant():
        n = dim.get_constant_value()
        return DimExpr.const(min(max(c + n if c < 0 else c, lo), hi.get_constant_value()))
    if c < 0:
        return (dim + c).max(lo)
    return e if c == lo else e.min(hi)


def slice_dim(dim: IntLike, start: IntLike, end: IntLike, step: int) -> DimExpr:
    """The length of ``dim[start:end:step]`` with ONNX (= Python) clamping; symbolic starts
    and ends (computed from shapes) are taken as non-negative."""
    if step == 0:
        raise PluginInterfaceError("Slice: a step is 0")
    dim, s, e = DimExpr.wrap(dim), DimExpr.wrap(start), DimExpr.wrap(end)
    if dim.is_constant() and s.is_constant() and e.is_constant():
        n = len(range(*slice(s.get_constant_value(), e.get_constant_value(), step).indices(
            dim.get_constant_value())))
        return DimExpr.const(n)
    if step > 0:
        first, stop = _slice_bound(s, dim, 0, dim), _slice_bound(e, dim, 0, dim)
        span, safe = stop - first, first.is_constant() and first.get_constant_value() == 0
    else:
        # Python clamps both to [-1, dim - 1] for a negative step
        first, stop = _slice_bound(s, dim, -1, dim - 1), _slice_bound(e, dim, -1, dim - 1)
        span, safe = first - stop, stop.is_constant() and stop.get_constant_value() == -1
    if span.is_constant():
        span = DimExpr.const(max(span.get_constant_value(), 0))
    elif not safe:
        span = span.max(0)
    return span.ceil_div(abs(step))


def slice_axes(rank: int, n: int, axes: Sequence[int] | None, steps: Sequence[int] | None
               ) -> tuple[list[int], list[int]]:
    """The normalised axes and steps of a Slice with ``n`` starts (absent or empty axes:
    the first ``n``; steps: 1); raises for differing lengths, a zero step, repeated axes."""
    ax = list(range(n)) if axes is None or not len(axes) else [
        norm_axis(a, rank, "Slice axis") for a in axes]
    st = [1] * n if steps is None or not len(steps) else list(steps)
    if not len(ax) == len(st) == n:
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    if 0 in st:
        raise PluginInterfaceError("Slice: a step is 0")
    if len(set(ax)) != len(ax):
        raise PluginInterfaceError(f"Slice: repeated axes {ax}")
    return ax, st


def slice_dims(dims: Sequence[DimExpr], starts: Sequence[IntLike], ends: Sequence[IntLike],
               axes: Sequence[int] | None, steps: Sequence[int] | None) -> list[DimExpr]:
    """Slice's output shape (starts and ends may be symbolic)."""
    if len(starts) != len(ends):
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    ax, st = slice_axes(len(dims), len(starts), axes, steps)
    out = list(dims)
    for s, e, a, k in zip(starts, ends, ax, st, strict=True):
        out[a] = slice_dim(dims[a], s, e, k)
    return out


def slice_index(rank: int, starts: Sequence[int], ends: Sequence[int],
                axes: Sequence[int] | None, steps: Sequence[int] | None) -> tuple[slice, ...]:
    """The NumPy index of a Slice with constant starts and ends."""
    if len(starts) != len(ends):
        raise PluginInterfaceError("Slice: starts, ends, axes and steps differ in length")
    ax, st = slice_axes(rank, len(starts), axes, steps)
    index = [slice(None)] * rank
    for s, e, a, k in zip(starts, ends, ax, st, strict=True):
        index[a] = slice(s, e, k)
    return tuple(index)


def slice_values(data: DimsExprs | None, starts: Sequence[IntLike] | None,
                 ends: Sequence[IntLike] | None, axes: Sequence[IntLike] | None = None,
                 steps: Sequence[IntLike] | None = None) -> Values:
    """Slice's ``output_values``; None unless the data's values and constant starts, ends,
    axes and steps are known (absent axes and steps: the defaults)."""
    arr = value_array(data)
    if arr is None or starts is None or ends is None or not all(
            DimExpr.wrap(v).is_constant() for p in (starts, ends, axes, steps) if p
            for v in p):
        return None
    s, e = const_ints(starts, "Slice", "starts"), const_ints(ends, "Slice", "ends")
    ax = None if axes is None else const_ints(axes, "Slice", "axes")
    st = None if steps is None else const_ints(steps, "Slice", "steps")
    return [flat(arr[slice_index(arr.ndim, s, e, ax, st)])]


# -- Gemm, MatMul, reductions, broadcasting binary operators ----------------------------------
def gemm_dims(a: Sequence[IntLike], b: Sequence[IntLike], trans_a: int, trans_b: int
              ) -> list[IntLike]:
    """Gemm's output shape ``(M, N)`` for 2-D ``A`` and ``B`` (transposed when asked)."""
    if len(a) != 2 or len(b) != 2:
        raise PluginInterfaceError("Gemm: A and B must be 2-D")
    return [a[1] if trans_a else a[0], b[0] if trans_b else b[1]]


def matmul_dims(a: Sequence[IntLike], b: Sequence[IntLike], op: str = "MatMul"
                ) -> list[IntLike]:
    """NumPy matmul's output shape: 1-D operands promoted (and their axis dropped), batch
    dimensions broadcast."""
    if not a or not b:
        raise PluginInterfaceError(f"{op}: operands must have rank >= 1")
    shape: list[IntLike] = list(broadcast_dims(a[:-2], b[:-2]))
    if len(a) >= 2:
        shape.append(a[-2])
    if len(b) >= 2:
        shape.append(b[-1])
    return shape


def reduced_dims(dims: Sequence[DimExpr], axes: Sequence[int] | None, keepdims: bool
                 ) -> list[DimExpr]:
    """A reduction's output shape over ``axes`` (None: every axis), kept as 1s with
    ``keepdims``."""
    rank = len(dims)
    which = set(range(rank)) if axes is None else {norm_axis(a, rank, "axis") for a in axes}
    one = DimExpr.const(1)
    return [one if i in which else d for i, d in enumerate(dims) if keepdims or i not in which]


def legacy_broadcast_rank(b_rank: int, a_rank: int, broadcast: int, axis: int | None) -> int:
    """How many trailing 1-dimensions ``B`` needs for the opset<7 ``broadcast=1, axis=k``
    form of a binary operator (0 otherwise)."""
    if not broadcast or axis is None:
        return 0
    k = axis + a_rank if axis < 0 else axis
    return max(0, a_rank - k - b_rank)


def binary_dims(a: Sequence[IntLike], b: Sequence[IntLike], broadcast: int = 0,
                axis: int | None = None) -> list[DimExpr]:
    """The output shape of a broadcasting binary operator, opset<7 ``broadcast``/``axis``
    included."""
    extra = legacy_broadcast_rank(len(b), len(a), broadcast, axis)
    return broadcast_dims(a, [*b, *([1] * extra)])
