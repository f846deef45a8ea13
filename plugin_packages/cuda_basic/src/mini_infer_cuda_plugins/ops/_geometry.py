"""Sliding-window geometry of Conv and the pools: attribute checks, output sizes (symbolic
at build time, concrete at run time), padding, and strided window views for the NumPy path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimensionOperation, DimExpr, IntLike

__all__ = ["Geometry", "Window", "make_window", "out_dims_expr", "padded_shape", "resolve",
           "window_view"]

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class Window:
    """Per spatial axis: kernel extent, stride, dilation; explicit pads (all begins, then all
    ends); auto_pad; ceil_mode."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    auto_pad: str
    ceil_mode: bool

    @property
    def nd(self) -> int:
        return len(self.kernel)

    def extent(self, i: int) -> int:
        """Span of the dilated kernel along axis ``i``."""
        return (self.kernel[i] - 1) * self.dilations[i] + 1


@dataclass(frozen=True)
class Geometry:
    """A window resolved for concrete input sizes: pads per axis and output sizes."""

    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]


def make_window(op: str, nd: int, kernel: Sequence[Any] | None, strides: Sequence[int] | None,
                dilations: Sequence[int] | None, pads: Sequence[int] | None, auto_pad: Any,
                ceil_mode: Any = 0) -> Window:
    """Check and default the window attributes of an ``nd``-dimensional operator."""
    mode = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if mode not in AUTO_PADS:
        raise PluginInterfaceError(f"{op}: auto_pad {mode!r} is not one of {AUTO_PADS}")
    if not kernel:
        raise PluginInterfaceError(f"{op}: kernel_shape is required")
    k = tuple(int(v) for v in kernel)
    s = tuple(int(v) for v in strides) if strides else (1,) * nd
    d = tuple(int(v) for v in dilations) if dilations else (1,) * nd
    p = tuple(int(v) for v in pads) if pads else (0,) * (2 * nd)
    for name, val, n in (("kernel_shape", k, nd), ("strides", s, nd), ("dilations", d, nd),
                         ("pads", p, 2 * nd)):
        if len(val) != n:
            raise PluginInterfaceError(
                f"{op}: {name} {val} should have {n} values for {nd} spatial axes")
    if min(k, default=1) < 1 or min(s, default=1) < 1 or min(d, default=1) < 1 or \
            min(p, default=0) < 0:
        raise PluginInterfaceError(
            f"{op}: invalid kernel_shape {k}, strides {s}, dilations {d} or pads {p}")
    return Window(k, s, d, p, mode, bool(ceil_mode))


def out_dims_expr(spatial: Sequence[IntLike], w: Window) -> list[DimExpr]:
    """Output spatial sizes as dimension expressions (dynamic input sizes work)."""
    out: list[DimExpr] = []
    for i, size in enumerate(DimExpr.wrap(v) for v in spatial):
        s, ext = w.strides[i], w.extent(i)
        if w.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(size.ceil_div(s))
        elif w.auto_pad == "VALID":
            out.append((size - ext) // s + 1)
        else:
            pb, pe = w.pads[i], w.pads[i + w.nd]
            c = pb + pe - ext
            span = size + c if c >= 0 else size - (-c)
            if not w.ceil_mode:
                out.append(span // s + 1)
                continue
            last = span.ceil_div(s)  # index of the last window
            o = last + 1
            # the last window must start inside the input or its begin padding
            if pe + s > ext:
                o = o - DimExpr.operation(DimensionOperation.LESS, size + pb, last * s + 1)
            out.append(o)
    return out


def resolve(spatial: Sequence[int], w: Window) -> Geometry:
    """Concrete pads and output sizes for input spatial sizes ``spatial``."""
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
            pb, pe = w.pads[i], w.pads[i + w.nd]
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


def padded_shape(spatial: Sequence[int], w: Window, g: Geometry) -> tuple[int, ...]:
    """Spatial size of a padded copy every window fits in (ceil_mode may reach past the end
    padding; that overhang is padding too)."""
    return tuple(max((g.out[i] - 1) * w.strides[i] + w.extent(i), g.begin[i] + n)
                 for i, n in enumerate(spatial))


def window_view(xp: Any, padded: Any, lead: int, w: Window, out: Sequence[int]) -> Any:
    """A strided view of every window of ``padded`` (its first ``lead`` axes kept), shaped
    ``lead axes + kernel + out`` (im2col order)."""
    sp = padded.strides[lead:]
    shape = padded.shape[:lead] + w.kernel + tuple(out)
    strides = (padded.strides[:lead] + tuple(sp[i] * w.dilations[i] for i in range(w.nd))
               + tuple(sp[i] * w.strides[i] for i in range(w.nd)))
    return xp.lib.stride_tricks.as_strided(padded, shape=shape, strides=strides)
