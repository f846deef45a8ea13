"""Window geometry shared by Conv and the pools: padding, output sizes, strided windows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided
from numpy.typing import NDArray

from mini_infer_core.errors import PluginInterfaceError
from mini_infer_core.plugin import DimensionOperation, DimExpr

from ._util import IntLike

__all__ = [
    "Window",
    "needs_padding",
    "pad_into",
    "padded_extent",
    "resolve",
    "symbolic_out_dims",
    "window_params",
    "windows_view",
]

_AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")


@dataclass(frozen=True)
class Window:
    """Per-spatial-dimension kernel, strides, dilations and explicit pads (begin, end)."""

    kernel: tuple[Any, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads: tuple[int, ...]
    auto_pad: str
    ceil_mode: bool


def window_params(op: str, nd: int, kernel: Sequence[Any], strides: Sequence[int] | None,
                  dilations: Sequence[int] | None, pads: Sequence[int] | None,
                  auto_pad: str, ceil_mode: int = 0) -> Window:
    """Check and default the window attributes of an ``nd``-D operator."""
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else str(auto_pad)
    if auto_pad not in _AUTO_PADS:
        raise PluginInterfaceError(f"{op}: auto_pad {auto_pad!r} is not one of {_AUTO_PADS}")
    strides = tuple(strides) if strides else (1,) * nd
    dilations = tuple(dilations) if dilations else (1,) * nd
    pads = tuple(pads) if pads else (0,) * (2 * nd)
    for name, val, n in (("kernel_shape", kernel, nd), ("strides", strides, nd),
                         ("dilations", dilations, nd), ("pads", pads, 2 * nd)):
        if len(val) != n:
            raise PluginInterfaceError(
                f"{op}: {name} {tuple(val)} should have {n} values for {nd} spatial dims")
    if any(s < 1 for s in strides) or any(d < 1 for d in dilations) or any(p < 0 for p in pads):
        raise PluginInterfaceError(f"{op}: invalid strides/dilations/pads")
    return Window(tuple(kernel), strides, dilations, pads, auto_pad, bool(ceil_mode))


def symbolic_out_dims(spatial: Sequence[IntLike], w: Window) -> list[DimExpr]:
    """Output spatial dims as expressions (dynamic input sizes work)."""
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
                # the last window must start inside the input or the left padding; it can
                # only start past them when the end padding + stride exceeds the window
                if not dk.is_constant() or pe + s > dk.get_constant_value():
                    o = o - DimExpr.operation(DimensionOperation.LESS, h + pb, last * s + 1)
            else:
                o = span // s + 1
        out.append(o)
    return out


def resolve(spatial: Sequence[int], w: Window) -> tuple[list[int], list[int], list[int]]:
    """Concrete (pads_begin, pads_end, out_dims) for an input of spatial size ``spatial``."""
    nd = len(spatial)
    begin, end, out = [], [], []
    for i, h in enumerate(spatial):
        k, s, d = int(w.kernel[i]), w.strides[i], w.dilations[i]
        dk = (k - 1) * d + 1
        if w.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-h // s)
            total = max(0, (o - 1) * s + dk - h)
            small = total // 2
            pb = small if w.auto_pad == "SAME_UPPER" else total - small
            pe = total - pb
        elif w.auto_pad == "VALID":
            pb = pe = 0
            o = (h - dk) // s + 1
        else:
            pb, pe = w.pads[i], w.pads[i + nd]
            span = h + pb + pe - dk
            if w.ceil_mode:
                o = -(-span // s) + 1
                if (o - 1) * s >= h + pb:
                    o -= 1
            else:
                o = span // s + 1
        if o < 1:
            raise PluginInterfaceError(
                f"window of extent {dk} does not fit an input of size {h} (pads {pb}, {pe})")
        begin.append(pb)
        end.append(pe)
        out.append(o)
    return begin, end, out


def windows_view(xp: NDArray[Any], lead: int, w: Window, out_dims: Sequence[int],
                 kernel_first: bool = True) -> NDArray[Any]:
    """A read-only strided view of every window of ``xp`` (its first ``lead`` dims kept).

    ``kernel_first``: shape ``lead + kernel + out_dims`` (im2col order), else
    ``lead + out_dims + kernel``.
    """
    nd = len(out_dims)
    sp = xp.strides[lead:]
    k_shape = tuple(int(k) for k in w.kernel)
    k_strides = tuple(sp[i] * w.dilations[i] for i in range(nd))
    o_strides = tuple(sp[i] * w.strides[i] for i in range(nd))
    if kernel_first:
        shape = xp.shape[:lead] + k_shape + tuple(out_dims)
        strides = xp.strides[:lead] + k_strides + o_strides
    else:
        shape = xp.shape[:lead] + tuple(out_dims) + k_shape
        strides = xp.strides[:lead] + o_strides + k_strides
    return as_strided(xp, shape=shape, strides=strides, writeable=False)


def padded_extent(spatial: Sequence[int], w: Window, begin: Sequence[int],
                  out_dims: Sequence[int]) -> list[int]:
    """Size of the padded input every window fits in (ceil_mode may need extra at the end)."""
    ext = []
    for i, h in enumerate(spatial):
        dk = (int(w.kernel[i]) - 1) * w.dilations[i] + 1
        need = (out_dims[i] - 1) * w.strides[i] + dk
        ext.append(max(need, begin[i] + h))
    return ext


def needs_padding(spatial: Sequence[int], begin: Sequence[int], ext: Sequence[int]) -> bool:
    return any(b > 0 for b in begin) or any(e > h for e, h in zip(ext, spatial, strict=True))


def pad_into(buf: NDArray[Any], x: NDArray[Any], begin: Sequence[int]) -> NDArray[Any]:
    """Copy ``x`` into the interior of ``buf`` (its border was filled once, when made)."""
    lead = x.ndim - len(begin)
    idx = (slice(None),) * lead + tuple(
        slice(b, b + n) for b, n in zip(begin, x.shape[lead:], strict=True))
    np.copyto(buf[idx], x)
    return buf
