"""Resize (opsets 10, 11-17, 18+) and the deprecated Upsample (opsets 7-8, 9): attributes
checked once, and the output size of every resized axis from ``scales`` or ``sizes`` (with
``keep_aspect_ratio_policy``), with its scale factor and region of interest.

The output shape depends on the values of ``scales``/``sizes``: build-time ``sizes`` give a
static shape, constant whole-number ``scales`` an exact symbolic one; otherwise (run-time
tensors, fractional scales of symbolic dims) the node turns data-dependent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..errors import PluginInterfaceError
from ..plugin import DimExpr, DimsExprs, IntLike
from ._common import Versioned
from ._schema import ValueOp

__all__ = ["Resize_10", "Resize_11", "Resize", "Upsample_7", "Upsample_9"]

MODES = ("nearest", "linear", "cubic")
TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
              "asymmetric", "tf_crop_and_resize")
#: ``simple`` is Resize-10's and Upsample's rounding: down when upsampling, up when
#: downsampling (onnxruntime's behaviour)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")
POLICIES = ("stretch", "not_larger", "not_smaller")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _floats(x: Any) -> list[float] | None:
    """An optional 1-D input (NumPy or CuPy array) as floats; None when absent or empty."""
    return None if x is None or x.size == 0 else [float(v) for v in x.reshape(-1)]


class AxisPlan(NamedTuple):
    """How one axis is resized: its output ``size``, ``scale`` factor and ``roi`` (start and
    end, normalised; tf_crop_and_resize only)."""

    axis: int
    size: int
    scale: float
    roi: tuple[float, float]


class ResizeBase(Versioned, ValueOp):
    """Resize and Upsample, every opset. ``opts`` holds the checked attributes the kernel
    interpolates with: ``mode`` (nearest, linear, cubic), ``ctm`` (coordinate transformation
    mode), ``nearest_mode``, ``cubic_coeff_a``, ``exclude_outside``, ``extrapolation_value``,
    ``antialias`` (linear/cubic only) and ``policy`` (keep_aspect_ratio_policy)."""

    #: input positions of roi, scales, sizes (None: absent in this opset)
    slots: ClassVar[tuple[int | None, int | None, int | None]] = (1, 2, 3)
    value_inputs: ClassVar[tuple[int, ...]] = (3,)

    def setup(self) -> None:
        a = self.attrs
        mode = _text(a.get("mode", "nearest")).lower()
        mode = "linear" if mode == "bilinear" else mode
        self.opts: dict[str, Any] = {
            "mode": mode,
            "ctm": _text(a.get("coordinate_transformation_mode", "asymmetric")),
            "nearest_mode": _text(a.get("nearest_mode", "simple")),
            "cubic_coeff_a": float(a.get("cubic_coeff_a", -0.75)),
            "exclude_outside": bool(a.get("exclude_outside", 0)),
            "extrapolation_value": float(a.get("extrapolation_value", 0.0)),
            "antialias": bool(a.get("antialias", 0)) and mode != "nearest",
            "policy": _text(a.get("keep_aspect_ratio_policy", "stretch")),
        }
        for key, name, known in (("mode", "mode", MODES),
                                 ("ctm", "coordinate_transformation_mode", TRANSFORMS),
                                 ("nearest_mode", "nearest_mode", NEAREST_MODES),
                                 ("policy", "keep_aspect_ratio_policy", POLICIES)):
            if self.opts[key] not in known:
                raise PluginInterfaceError(
                    f"{self.op_type} {self.name!r}: unknown {name} {self.opts[key]!r} "
                    f"(known: {', '.join(known)})")

    def axes(self, rank: int) -> list[int]:
        """The resized axes (``axes`` from opset 18; every axis by default)."""
        return [a + rank if a < 0 else a for a in (self.attrs.get("axes") or range(rank))]

    def operands(self, *inputs: Any) -> tuple[Any, Any, Any]:
        """roi, scales and sizes among the inputs (X first); None where absent."""
        return tuple(None if k is None or k >= len(inputs) else inputs[k]  # type: ignore[return-value]
                     for k in self.slots)

    def output_sizes(self, shape: Sequence[int], scales: Sequence[float] | None,
                     sizes: Sequence[int] | None, axes: Sequence[int]
                     ) -> tuple[list[int], list[float]]:
        """Output sizes and scale factors of the resized ``axes``."""
        if sizes is not None:
            if len(sizes) != len(axes):
                raise PluginInterfaceError(f"Resize: {len(sizes)} sizes for {len(axes)} axes")
            f = [sizes[i] / shape[a] for i, a in enumerate(axes)]
            policy = self.opts["policy"]
            if policy == "stretch":
                return list(sizes), f
            s = min(f) if policy == "not_larger" else max(f)
            return [int(s * shape[a] + 0.5) for a in axes], [s] * len(axes)
        if scales is None or len(scales) != len(axes):
            raise PluginInterfaceError(
                f"Resize: needs {len(axes)} scales or sizes (rank {len(shape)})")
        return [int(s * shape[a]) for s, a in zip(scales, axes, strict=True)], list(scales)

    def plan(self, shape: Sequence[int], roi: Any, scales: Any, sizes: Any
             ) -> list[AxisPlan]:
        """The axes to resize (those that change), from the run-time roi, scales and sizes
        (NumPy or CuPy arrays, or None)."""
        axes = self.axes(len(shape))
        sz = _floats(sizes)
        n, factors = self.output_sizes(shape, _floats(scales),
                                       None if sz is None else [int(v) for v in sz], axes)
        rv = _floats(roi)
        steps = []
        for i, a in enumerate(axes):
            lohi = (0.0, 1.0) if rv is None else (rv[i], rv[len(axes) + i])
            if n[i] != shape[a] or not math.isclose(factors[i], 1.0) or lohi != (0.0, 1.0):
                steps.append(AxisPlan(a, n[i], factors[i], lohi))
        return steps

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        axes = self.axes(len(x))
        out: list[IntLike] = list(x)
        k_sizes = self.slots[2]
        given = self.values(inputs, k_sizes) if k_sizes is not None else None
        if given and self.opts["policy"] == "stretch" and len(given) == len(axes):
            for a, d in zip(axes, given, strict=True):  # symbolic sizes are exact too
                out[a] = d
            return [out]
        sizes = self.ints(inputs, k_sizes) if k_sizes is not None else None
        if sizes and x.is_static():
            n, _ = self.output_sizes(x.to_tuple(), None, sizes, axes)
            for a, v in zip(axes, n, strict=True):
                out[a] = v
            return [out]
        scaled = self._scaled(inputs, out, axes)
        if scaled is not None:
            return [scaled]
        self.runtime(True)
        for a in axes:
            out[a] = self.dynamic_dim(f"d{a}")
        return [out]

    def _scaled(self, inputs: Sequence[DimsExprs | None], out: list[IntLike],
                axes: Sequence[int]) -> list[IntLike] | None:
        """Output dims from constant float ``scales`` (floor(dim * scale)): exact at build time
        for constant dims, and for symbolic ones when the scale is a whole number."""
        k = self.slots[1]
        scales = inputs[k] if k is not None and k < len(inputs) else None
        arr = getattr(scales, "array", None)
        if arr is None or arr.size != len(axes) or self.opts["ctm"] == "tf_crop_and_resize":
            return None
        dims = list(out)
        for a, s in zip(axes, (float(v) for v in np.asarray(arr).reshape(-1)), strict=True):
            d = DimExpr.wrap(dims[a])
            if s > 0 and s == int(s):
                dims[a] = d * int(s)
            elif d.is_constant():
                dims[a] = int(np.floor(d.get_constant_value() * s))
            else:
                return None
        return dims


class Resize_10(ResizeBase, opsets=(10, 10)):  # noqa: N801
    """Opset 10: (X, scales), asymmetric coordinates, nearest rounds down when upsampling
    and up when downsampling."""

    slots = (None, 1, None)
    value_inputs = ()


class Resize_11(ResizeBase, opsets=(11, 17)):  # noqa: N801
    """Opsets 11-17: (X, roi, scales, sizes); one of scales/sizes (the other may be empty)."""


class Resize(ResizeBase, opsets=(18, None)):
    """Opset 18+: also ``antialias``, ``axes`` and ``keep_aspect_ratio_policy`` (19 adds
    the half_pixel_symmetric coordinate mode, accepted here)."""


class Upsample_9(ResizeBase, opsets=(9, 9)):  # noqa: N801
    """Upsample (deprecated in opset 10): X, scales; nearest or (bi)linear, asymmetric."""

    slots = (None, 1, None)
    value_inputs = ()


class Upsample_7(ResizeBase, opsets=(7, 8)):  # noqa: N801
    """Opsets 7-8: the scales are an attribute, so the output shape is static (Upsample-1,
    with height_scale/width_scale, is not implemented)."""

    slots = (None, None, None)
    value_inputs = ()

    def operands(self, *inputs: Any) -> tuple[Any, Any, Any]:
        return None, np.asarray(self.attrs["scales"], np.float32), None

    def output_shapes(self, inputs: Sequence[DimsExprs | None]) -> list[list[IntLike]]:
        x = inputs[0]
        assert x is not None
        sc = list(self.attrs["scales"])
        if len(sc) != len(x):
            raise PluginInterfaceError(f"Upsample: {len(sc)} scales for rank {len(x)}")
        out: list[IntLike] = []
        for d, s in zip(x, sc, strict=True):
            if float(s) == int(s):
                out.append(d * int(s))
            elif d.is_constant():
                out.append(int(float(s) * d.get_constant_value()))
            else:
                raise PluginInterfaceError(
                    "Upsample: a fractional scale needs a build-time constant dimension")
        return [out]
