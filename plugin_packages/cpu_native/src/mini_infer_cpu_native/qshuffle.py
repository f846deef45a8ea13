"""ShuffleNet's channel shuffle and channel split on NHWC 8-bit tensors
(``TensorFormat.HWC``), so that the network stays in the NHWC region of the integer
convolutions (before: three reformats per block, 45 in ShuffleNetV2 x1.0).

* Reshape: cpu_basic's, which also absorbs the ``Transpose (0, 2, 1, 3, 4) -> Reshape`` that
  torch writes after it for a channel shuffle: ``(N, C, H, W) -> (N, g, C/g, H, W) ->
  (N, C/g, g, H, W) -> (N, C, H, W)`` is output channel ``j * g + i`` = input channel
  ``i * C/g + j``, one pass (``__shuffle__``: g). The fused node takes an 8-bit X and Y NHWC:
  each pixel's channels transposed as a (g, C/g) matrix; with g = 2 (ShuffleNet's) as one
  16-bit OR of the two halves (little-endian: channel 2j the low byte).
* Slice: cpu_basic's, and on an 8-bit NHWC X and Y (4-D, constant starts/ends/axes/steps):
  the same slice of the logical (N, C, H, W) view of both (a channel range is a run of bytes
  per pixel).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar

import numpy as np
from mini_infer_cpu_plugins.ops import shape as _shape
from mini_infer_cpu_plugins.ops import slicing as _slicing

from mini_infer_core.plugin import DataType, DimsExprs, Fusion, PluginTensorDesc, TensorFormat
from mini_infer_core.plugin.arrays import NDArray

from ._qformats import hwc_formats

__all__ = ["Reshape_5", "Slice"]

Array = NDArray[Any]
HWC = TensorFormat.HWC
_BYTES = (DataType.UINT8, DataType.INT8)
_LITTLE = sys.byteorder == "little"
_NCHW = (0, 3, 1, 2)  # the logical (N, C, H, W) view of a physical (N, H, W, C) array


def _hwc_ok(pos: int, in_out: Sequence[PluginTensorDesc], num_inputs: int) -> bool | None:
    """X (0) and Y (``num_inputs``) NHWC together, 8-bit and 4-D, the other inputs LINEAR;
    None where neither X nor this description is NHWC (the caller's own rules then)."""
    desc, x = in_out[pos], in_out[0]
    if x.format is not HWC and desc.format is not HWC:
        return None
    if desc.format not in (HWC, TensorFormat.LINEAR):
        return False
    if pos == 0:
        return desc.dtype in _BYTES and len(desc.shape) == 4
    if pos == num_inputs:
        return desc.format is HWC and x.format is HWC and len(desc.shape) == 4
    return desc.format is TensorFormat.LINEAR


class Reshape_5(_shape.Reshape_5):  # noqa: N801
    """cpu_basic's Reshape; fused into a channel shuffle, NHWC 8-bit too (see the module)."""

    package = "mini-infer-cpu-native"
    hidden_fields: ClassVar[tuple[str, ...]] = (*_shape.Reshape_5.hidden_fields,
                                                "__shuffle__", "__shuffle_4d__")
    fusable: ClassVar[frozenset[str]] = frozenset({"Transpose", "Reshape"})
    #: the input's dimensions and type as inference gave them (what a fusion checks)
    _x_dims: DimsExprs | None = None

    @property
    def in_place_only(self) -> bool:  # type: ignore[override]
        return "__shuffle__" not in self.hidden  # a shuffle moves bytes: never in place

    def in_place_inputs(self, inputs: Sequence[Any], outputs: Sequence[Any]
                        ) -> dict[int, tuple[int, int]]:
        return {} if "__shuffle__" in self.hidden else {0: (0, 0)}

    def get_output_dimensions(self, index: int, inputs: Sequence[DimsExprs],
                              expr_builder: Any) -> DimsExprs:
        self._x_dims = inputs[0] if inputs else None
        return super().get_output_dimensions(index, inputs, expr_builder)

    def fuse(self, op_type: str, attrs: dict[str, Any], consumer_constants: Sequence[Any],
             consumer_dims: Sequence[DimsExprs | None], position: int,
             own_constants: Sequence[Any]) -> Fusion | None:
        x, mine = self._x_dims, consumer_dims[0] if consumer_dims else None
        if x is None or mine is None or position != 0 or self.data_dependent:
            return None
        if op_type == "Transpose" and "__shuffle__" not in self.hidden:
            # this Reshape splits the channels: (N, C, H, W) -> (N, g, C/g, H, W)
            if (tuple(attrs.get("perm") or ()) != (0, 2, 1, 3, 4) or len(x) != 4
                    or len(mine) != 5 or not (mine[1].is_constant() and mine[2].is_constant()
                                              and x[1].is_constant())):
                return None
            g, k = int(mine[1].get_constant_value()), int(mine[2].get_constant_value())
            if (g * k != int(x[1].get_constant_value()) or not mine[0].same_as(x[0])
                    or not mine[3].same_as(x[2]) or not mine[4].same_as(x[3])):
                return None
            self.record("__shuffle__", g)
            return Fusion(output_dims=[mine[0], mine[2], mine[1], mine[3], mine[4]])
        if op_type == "Reshape" and "__shuffle__" in self.hidden \
                and "__shuffle_4d__" not in self.hidden and len(consumer_dims) == 2:
            target = consumer_dims[1]
            values = target.values if target is not None else None
            if (values is None or len(values) != 4 or int(attrs.get("allowzero") or 0)
                    or not all(v.same_as(d) for v, d in zip(values, x, strict=True))):
                return None
            self.record("__shuffle_4d__", 1)
            return Fusion(output_dims=list(x))
        return None

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                     num_inputs: int) -> bool:
        ok = _hwc_ok(pos, in_out, num_inputs) if "__shuffle_4d__" in self.hidden else None
        if ok is None:
            return super().supports_format_combination(pos, in_out, num_inputs)
        return ok

    def compute(self, x: Array, *values: Array | None, out: Array | None = None,
                **attrs: Any) -> Any:
        g = self.hidden.get("__shuffle__")
        if g is None or out is None:
            return super().compute(x, *values, out=out, **attrs)
        if out.size:  # an empty batch: nothing to move
            self._shuffle(x, out, int(g))()
        return None

    def _shuffle(self, x: Array, out: Array, g: int) -> Callable[[], None]:
        """The shuffle of ``x`` into ``out`` as a call (what a run does, and what
        :meth:`bind_run` binds)."""
        if hwc_formats(self)[0]:  # physical (N, H, W, C): each pixel's (g, C/g) transposed
            c = x.shape[-1]
            pixels = x.size // c
            if g == 2 and x.itemsize == 1 and _LITTLE and out.flags.c_contiguous \
                    and x.flags.c_contiguous:
                halves = x.view(np.uint8).reshape(pixels, 2, c // 2)  # int8: its bytes
                wide = out.view(np.uint16).reshape(pixels, c // 2)
                low, high = halves[:, 0], halves[:, 1]

                def interleave() -> None:
                    np.left_shift(high, 8, out=wide, dtype=np.uint16)
                    np.bitwise_or(wide, low, out=wide, dtype=np.uint16)

                return interleave
            return partial(np.copyto, out.reshape(pixels, c // g, g),
                           x.reshape(pixels, g, c // g).transpose(0, 2, 1))
        n, c = x.shape[0], x.shape[1]
        return partial(np.copyto, out.reshape(n, c // g, g, -1),
                       x.reshape(n, g, c // g, -1).transpose(0, 2, 1, 3))

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        g = self.hidden.get("__shuffle__")
        if g is None:
            return super().bind_run(inputs, outputs, workspace)
        x, out = inputs[0], outputs[0]
        if not (isinstance(x, np.ndarray) and isinstance(out, np.ndarray)
                and x.flags.c_contiguous and out.flags.c_contiguous
                and x.size == out.size and x.size):
            return None
        return self._shuffle(x, out, int(g))


class Slice(_slicing.Slice):
    """cpu_basic's Slice; of an 8-bit NHWC X into an NHWC Y too (see the module)."""

    package = "mini-infer-cpu-native"

    def supports_format_combination(self, pos: int, in_out: Sequence[PluginTensorDesc],
                                    num_inputs: int) -> bool:
        ok = None if self.data_dependent else _hwc_ok(pos, in_out, num_inputs)
        if ok is None:
            return super().supports_format_combination(pos, in_out, num_inputs)
        return ok

    def compute(self, x: Array, starts: Array, ends: Array, axes: Array | None = None,
                steps: Array | None = None, *, out: Array | None = None) -> Any:
        if out is not None and hwc_formats(self)[0]:
            return super().compute(x.transpose(_NCHW), starts, ends, axes, steps,
                                   out=out.transpose(_NCHW))
        return super().compute(x, starts, ends, axes, steps, out=out)

    def bind_run(self, inputs: Sequence[Any], outputs: Sequence[Any], workspace: Any
                 ) -> Callable[[], None] | None:
        if hwc_formats(self)[0]:
            x, out = inputs[0], outputs[0]
            if not (isinstance(x, np.ndarray) and isinstance(out, np.ndarray)
                    and x.ndim == 4 and out.ndim == 4):
                return None
            inputs = [x.transpose(_NCHW), *inputs[1:]]
            outputs = [out.transpose(_NCHW), *outputs[1:]]
        return super().bind_run(inputs, outputs, workspace)
