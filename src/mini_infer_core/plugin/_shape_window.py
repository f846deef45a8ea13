"""Sliding-window geometry of Conv and the pools (part of :mod:`mini_infer_core.plugin.shapes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .._record import record
from ..errors import PluginInterfaceError
from ._dims import DimensionOperation, DimExpr, IntLike

__all__ = [
    "AUTO_PADS",
    "Geometry",
    "Window",
    "needs_padding",
    "padded_extent",
    "resolve",
    "symbolic_out_dims",
    "window_from_attrs",
    "window_params",
]

# -- sliding windows (Conv, pools) ------------------------------------------------------------
#: the values of ``auto_pad``
AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@record(frozen=True)
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
