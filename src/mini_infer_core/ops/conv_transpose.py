"""ConvTranspose: shapes and the geometry of the scatter (pads and output sizes).

Output size per spatial axis: ``s*(in-1) + output_padding + (k-1)*d + 1 - pad_begin -
pad_end``; with ``output_shape`` (or SAME_* auto_pad, whose output is ``in*s``) the total
padding is derived and split: SAME_UPPER puts the smaller half first, otherwise the larger.
A negative pad (an ``output_shape`` larger than the full result) leaves zeros.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..errors import PluginInterfaceError
from ..plugin import DimExpr, DimsExprs, IntLike
from ..plugin.shapes import AUTO_PADS, Shapes
from ._schema import FLOATS, Op

__all__ = ["ConvTranspose"]


class Scatter(NamedTuple):
    """A transposed convolution's geometry for concrete sizes, per spatial axis."""

    #: where the output starts in the full result (negative: before it)
    begin: tuple[int, ...]
    out: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]


class ConvTranspose(Op):
    dtypes = FLOATS

    def setup(self) -> None:
        mode = self.attrs["auto_pad"]
        self.auto_pad = mode.decode() if isinstance(mode, bytes) else str(mode)
        if self.auto_pad not in AUTO_PADS:
            raise PluginInterfaceError(f"ConvTranspose: unknown auto_pad {self.auto_pad!r}")

    def _params(self, nd: int) -> tuple[tuple[int, ...], ...]:
        """(strides, dilations, output_padding, pads) of ``nd`` spatial axes."""
        a = self.attrs
        strides = tuple(a["strides"]) if a["strides"] else (1,) * nd
        dil = tuple(a["dilations"]) if a["dilations"] else (1,) * nd
        opad = tuple(a["output_padding"]) if a["output_padding"] else (0,) * nd
        pads = tuple(a["pads"]) if a["pads"] else (0,) * (2 * nd)
        kernel = a["kernel_shape"] or (0,) * nd
        if len(strides) != nd or len(dil) != nd or len(opad) < nd or len(pads) != 2 * nd \
                or len(kernel) != nd:
            raise PluginInterfaceError(
                f"ConvTranspose: strides/dilations/output_padding/pads/kernel_shape do not "
                f"match {nd} spatial dims")
        return strides, dil, opad[:nd], pads

    def _given(self, nd: int) -> tuple[int, ...] | None:
        """The spatial sizes of ``output_shape``, if given."""
        shape = self.attrs["output_shape"]
        if not shape:
            return None
        shape = tuple(shape)
        return shape[-nd:] if len(shape) >= nd else None

    def output_shapes(self, inputs: Sequence[DimsExprs]) -> Shapes:
        x, w = list(inputs[0]), list(inputs[1])
        if len(x) < 3 or len(w) != len(x):
            raise PluginInterfaceError(
                f"ConvTranspose: X (rank {len(x)}) and W (rank {len(w)}) must have the same "
                "rank >= 3")
        nd = len(x) - 2
        strides, dil, opad, pads = self._params(nd)
        given = self._given(nd)
        spatial: list[IntLike] = []
        for i in range(nd):
            if given is not None:
                spatial.append(given[i])
            elif self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
                spatial.append(x[2 + i] * strides[i])
            else:
                k = DimExpr.wrap(self.attrs["kernel_shape"][i] if self.attrs["kernel_shape"]
                                 else w[2 + i])
                p = 0 if self.auto_pad == "VALID" else pads[i] + pads[i + nd]
                spatial.append((x[2 + i] - 1) * strides[i] + (k - 1) * dil[i]
                               + (1 + opad[i] - p))
        return [[x[0], w[1] * self.attrs["group"], *spatial]]

    def geometry(self, in_sp: Sequence[int], k_sp: Sequence[int]) -> Scatter:
        """Where the output lies in the full result, for concrete input and kernel sizes."""
        nd = len(in_sp)
        strides, dil, opad, pads = self._params(nd)
        given = self._given(nd)
        if given is None and self.auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            given = tuple(h * s for h, s in zip(in_sp, strides, strict=True))
        begin, out = [], []
        for i in range(nd):
            full = strides[i] * (in_sp[i] - 1) + opad[i] + (k_sp[i] - 1) * dil[i] + 1
            if given is not None:
                total = full - given[i]
                begin.append(total // 2 if self.auto_pad == "SAME_UPPER"
                             else total - total // 2)
                out.append(given[i])
            else:
                pb, pe = (0, 0) if self.auto_pad == "VALID" else (pads[i], pads[i + nd])
                begin.append(pb)
                out.append(full - pb - pe)
        return Scatter(tuple(begin), tuple(out), strides, dil)
